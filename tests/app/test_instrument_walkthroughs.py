"""Each instrument end to end in chromium on a fresh workspace, with no CLI detour.

For disposition drift, memory conflicts and source reliance a researcher sets up a tiny
study on the simulator (uploading a file, and first a broken one that is refused naming the
file and line), runs it as a background job, reads the report's tables and figures marked
simulated, opens one item, and downloads the answers / probes, the statistics and the
report folder. Then, on the same server, the Disposition drift and Source reliance pages'
demo buttons (``app.ui.job_panel.demo_button``) are clicked: each simulated demo runs as a
job and the page opens its results, marked simulated. No step may show Streamlit's
exception box; screenshots go to ``test-artifacts/walkthroughs/``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from study.conflicts.items import sample_banks_path
from tests.app.browser_support import (
    ARTIFACTS_ROOT,
    IDLE_JS,
    PageOptions,
    download_bytes,
    fill_text,
    main_text,
    no_exception,
    served_workspace,
    wait_for_streamlit,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

ARTIFACTS = ARTIFACTS_ROOT / "walkthroughs"
TINY_BATTERIES = Path(__file__).resolve().parents[1] / "disposition" / "tiny_batteries.yaml"
#: How long a tiny simulated study may take as a background job on a loaded machine.
JOB_MS = 90_000
#: How long an instrument's simulated demo (a full study) may take on a loaded machine.
DEMO_MS = 420_000


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``driftlens app`` on a fresh, empty workspace (one server for the three instruments:
    each walkthrough starts from its own instrument's empty state)."""
    with served_workspace(tmp_path_factory, "walkthrough-ws") as served:
        yield served.url


@pytest.fixture(scope="module")
def page_options() -> PageOptions:
    return PageOptions(downloads=True)


def _shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    no_exception(page)


def _click(page: Page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).first.click()
    page.wait_for_timeout(300)


def _upload(page: Page, path: Path, *, nth: int = 0) -> None:
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').nth(nth).set_input_files(str(path))
    page.wait_for_timeout(500)
    wait_for_streamlit(page, path.name)  # the upload reruns the page: a click now is lost


def _open_empty(page: Page, app: str, path: str, title: str) -> None:
    """Open an instrument's page (``/<path>``, headed ``title``) and shoot its empty state."""
    page.goto(f"{app}/{path}", wait_until="domcontentloaded")
    wait_for_streamlit(page, title)
    _shot(page, f"{path}-0-empty")


def _choose_upload(page: Page, file_label: str) -> None:
    """Pick "upload a file" over the shipped sample; wait for the uploader ``file_label``."""
    page.get_by_text("upload a file", exact=True).click()
    wait_for_streamlit(page, file_label)


def _wait_text(page: Page, text: str, *, timeout: int = JOB_MS) -> None:
    """Wait until the main area shows ``text`` (a background job's result appearing)."""
    try:
        page.get_by_text(text, exact=False).first.wait_for(timeout=timeout)
    except Exception:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "timeout.png"), full_page=True)
        raise AssertionError(
            f"{text!r} never appeared; the page said:\n{main_text(page)}"
        ) from None
    wait_for_streamlit(page, text)


def test_disposition_walkthrough(app: str, page: Page, tmp_path: Path) -> None:
    _open_empty(page, app, "disposition", "Disposition drift")
    fill_text(page, "Study name", "walk")
    _choose_upload(page, "Battery file")
    bad = tmp_path / "broken.yaml"
    bad.write_text(TINY_BATTERIES.read_text().replace("aligned: true", "aligned: maybe"))
    _upload(page, bad)
    _click(page, "Add arms to the study")
    _wait_text(page, "broken.yaml line 8")
    _upload(page, TINY_BATTERIES)
    _click(page, "Add arms to the study")
    _wait_text(page, "Added 2 arm(s) to study walk.")
    assert "study=walk" in page.url
    _shot(page, "disposition-1-setup")

    fill_text(page, "Bootstrap resamples (stems)", "200")
    _click(page, "Run (generate, classify, analyse)")
    _wait_text(page, "SIMULATED DATA")
    _shot(page, "disposition-2-results")
    body = main_text(page)
    assert "Drift" in body and "Null test" in body
    assert page.locator('[data-testid="stImage"]').count() >= 1  # the dose curve

    # one stem across the arms (its URL names it), with the classifier's verdicts
    assert "item=self_interest%2Fsi-01" in page.url or "item=self_interest/si-01" in page.url
    assert "8 answers from 2 arm(s)" in body and "verdicts:" in body

    answers = list(csv.reader(io.StringIO(download_bytes(page, "Answers (.csv)").decode())))
    assert answers[0][:5] == ["study", "arm", "model", "battery", "stem"]
    assert len(answers) == 17  # 2 arms x 4 probes x 2 samples
    stats = json.loads(download_bytes(page, "Statistics (.json)"))
    assert stats["stats_on"]["batteries"]["self_interest"]["arms"]
    names = zipfile.ZipFile(io.BytesIO(download_bytes(page, "Report folder (.zip)"))).namelist()
    assert any(n.endswith("/disposition.html") for n in names)
    assert b"<html" in download_bytes(page, "disposition.html").lower()
    _shot(page, "disposition-3-downloads")

    # its human study: the Human studies page opens with the selection filled in
    _click(page, "Check the classifier (disposition_check)")
    _wait_text(page, "disposition_check tasks")
    assert "This selection makes 16 disposition_check tasks" in main_text(page)
    _shot(page, "disposition-4-human-study")


def test_sources_walkthrough(app: str, page: Page, tmp_path: Path) -> None:
    _open_empty(page, app, "sources", "Source reliance")
    fill_text(page, "Run name", "walk")
    _choose_upload(page, "Items file")
    rows = [
        {"id": f"q{k}", "question": f"Which option is number {k}?",
         "choices": ["one", "two", "three"], "answer": "ABC"[k % 3], "dataset": "tiny"}
        for k in range(3)
    ]  # fmt: skip
    bad = tmp_path / "broken.jsonl"
    bad.write_text("".join(json.dumps({**r, "answer": "Z"}) + "\n" for r in rows))
    _upload(page, bad)
    _click(page, "Run (probe, read letters, analyse)")
    _wait_text(page, "broken.jsonl, line 1")
    fill_text(page, "Bootstrap replicates", "200")
    good = tmp_path / "items.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _upload(page, good)
    _click(page, "Run (probe, read letters, analyse)")
    _wait_text(page, "SIMULATED DATA")
    assert "results=run" in page.url
    _shot(page, "sources-1-results")
    body = main_text(page)
    assert "Source influence" in body and "Behaviour quadrant" in body

    # one item's probe variants (its URL names it)
    assert "item=q0" in page.url
    assert "One item's probe variants" in body

    probes = list(csv.reader(io.StringIO(download_bytes(page, "Probes (.csv)").decode())))
    assert probes[0][:6] == ["model", "dataset", "tier", "ordering", "question_id", "variant"]
    assert len(probes) == 1 + 3 * 13
    records = download_bytes(page, "Probes with logprobs (.jsonl)").decode().splitlines()
    assert len(records) == 39 and json.loads(records[0])["top"]
    assert "models" in json.loads(download_bytes(page, "Statistics (.json)"))
    names = zipfile.ZipFile(io.BytesIO(download_bytes(page, "Report folder (.zip)"))).namelist()
    assert any(n.endswith("/report.html") for n in names)
    _shot(page, "sources-2-downloads")


def test_conflicts_walkthrough(app: str, page: Page, tmp_path: Path) -> None:
    _open_empty(page, app, "conflicts", "Memory conflicts")
    lines = sample_banks_path().read_text(encoding="utf-8").splitlines()[:3]
    broken = json.loads(lines[2])
    del broken["core_memories"]
    bad = tmp_path / "broken.jsonl"
    bad.write_text("\n".join([*lines[:2], json.dumps(broken)]) + "\n")
    _upload(page, bad)
    _click(page, "Import the uploaded file")
    _wait_text(page, "broken.jsonl line 3")
    good = tmp_path / "three.jsonl"
    good.write_text("\n".join(lines) + "\n")
    _upload(page, good)
    _click(page, "Import the uploaded file")
    _wait_text(page, "Imported 3 bank instance(s) from three.jsonl")
    fill_text(page, "Run name", "walk")
    fill_text(page, "Bootstrap replicates", "200")
    _click(page, "Run (answer, judge, report)")
    _wait_text(page, "Rubric scores")
    assert "run=walk" in page.url
    _shot(page, "conflicts-1-results")
    body = main_text(page)
    assert "SIMULATED DATA" in body
    assert page.locator('[data-testid="stImage"]').count() >= 1  # the distractor curve

    # one case with both judges (its URL names it)
    assert "case=" in page.url
    assert "sim/judge-lenient" in body and "sim/judge-strict" in body and "Request:" in body

    answers = list(
        csv.reader(io.StringIO(download_bytes(page, "Answers and scores (.csv)").decode()))
    )
    assert {"instance_id", "judge", "answer"} <= set(answers[0])
    # 3 banks x 2 doses, each scored by two judges (an unreadable judge reply is left out)
    assert 10 <= len(answers) - 1 <= 12
    stats = json.loads(download_bytes(page, "Statistics (.json)"))
    assert {r["judge"] for r in stats["scores"]} == {"sim/judge-lenient", "sim/judge-strict"}
    names = zipfile.ZipFile(io.BytesIO(download_bytes(page, "Report folder (.zip)"))).namelist()
    assert any(n.endswith("/conflicts_report.html") for n in names)
    _shot(page, "conflicts-2-downloads")

    _click(page, "Score these answers by hand (conflict_rubric)")
    _wait_text(page, "conflict_rubric tasks")
    assert "This selection makes 6 conflict_rubric tasks" in main_text(page)
    _shot(page, "conflicts-3-human-study")


# ------------------------------------------------------------------- demo buttons
# After the walkthroughs (they expect each instrument's empty state): the workspace holds
# their studies, not the demos'.


@pytest.mark.parametrize(
    ("path", "title", "button", "job", "opened", "shown"),
    [
        (
            "disposition",
            "Disposition drift",
            "Run the simulated demo study",
            "Disposition demo",
            "study=demo-disposition",
            "answers from",  # one stem's answers across the demo's arms
        ),
        (
            "sources",
            "Source reliance",
            "Run the simulated demo",
            "Source-reliance demo",
            "results=folder%3Asources-demo",
            "One item's probe variants",
        ),
    ],
    ids=["disposition", "sources"],
)
def test_the_demo_button_opens_the_simulated_demo(
    app: str, page: Page, path: str, title: str, button: str, job: str, opened: str, shown: str
) -> None:
    page.goto(f"{app}/{path}", wait_until="domcontentloaded")
    wait_for_streamlit(page, title)
    assert opened not in page.url.replace(":", "%3A")  # the walkthrough's study, not the demo
    page.wait_for_function(IDLE_JS, timeout=60_000)  # a click during a rerun is lost
    _click(page, button)
    # The finished demo job opens its results (the URL names them); a failed one says so.
    failed = page.get_by_text(re.compile(rf"^{re.escape(job)} (failed|interrupted|cancelled)"))
    page.wait_for_function(
        "([opened, job]) => location.search.replace(/:/g, '%3A').includes(opened) || "
        "document.body.innerText.includes(job + ' failed') || "
        "document.body.innerText.includes(job + ' interrupted')",
        arg=[opened, job],
        timeout=DEMO_MS,
    )
    assert failed.count() == 0, main_text(page)
    _wait_text(page, shown)
    _shot(page, f"{path}-demo")
    body = main_text(page)
    assert "SIMULATED DATA" in body, body[:3000]
    assert page.locator('[data-testid="stImage"]').count() >= 1  # the report's figures
    assert failed.count() == 0, body[:3000]
