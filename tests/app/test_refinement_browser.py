"""The Refinement page in chromium: start a small loop as a job, see it, deep-link to it.

One served workspace (sample questions and a small ``sim/default`` run). The page's form
starts a three-round loop with the simulated labeler trio and the operational rewriter; the
job ends, the page opens the loop it stored (``?loop=N``) with the agreement curve and the
rewrites table. A second, newer loop (from the CLI) then becomes the page's default, and the
first loop's URL opened afresh must still show the first. Every wait is on a condition (the
URL, a text, an element) with a generous deadline: the machine running the suite is
loaded. Screenshots go to ``test-artifacts/refinement/``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlmodel import Session, select

from llm.specs import ModelSpec
from storage.refinement_models import RefinementLoop
from storage.workspace import open_workspace_session
from tests.app.browser_support import (
    ARTIFACTS_ROOT,
    Served,
    app_env,
    main_text,
    no_exception,
    served_workspace,
    wait_for_streamlit,
)
from tests.study.jobs_support import wait_for_jobs

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

ARTIFACTS = ARTIFACTS_ROOT / "refinement"
TITLE = "Refinement loop"


def _fill(session: Session) -> None:
    from study.questions import import_sample_questions
    from study.reasoning.generation import GenerationOptions, run_generation

    import_sample_questions(session=session)
    session.commit()
    run_generation(
        GenerationOptions(
            model=ModelSpec.parse("sim/default"), run="demo", perturbations="filler", samples=1
        ),
        session=session,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_workspace(tmp_path_factory, "refinement", fill=_fill) as served:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        yield served
    wait_for_jobs(served.settings)  # no loop job outlives the module


def _set_number(page: Page, label: str, value: str) -> None:
    """Type a form's number and leave the box (Tab), which commits it to the form."""
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Tab")


def _open(page: Page, url: str) -> None:
    """Open the page and wait until a loop's rewrites table is drawn and the page settles."""
    page.goto(url, wait_until="domcontentloaded")
    wait_for_streamlit(page, TITLE)
    page.locator('[data-testid="stMain"]').get_by_text("Rewrites tried", exact=True).wait_for(
        timeout=120_000
    )
    wait_for_streamlit(page, TITLE)
    no_exception(page)


def test_start_a_loop_from_the_page_then_deep_link_to_it(served: Served, page: Page) -> None:
    page.goto(f"{served.url}/ontology_refinement", wait_until="domcontentloaded")
    wait_for_streamlit(page, TITLE)
    main = page.locator('[data-testid="stMain"]')
    # the page ends with this line when no loop is stored (wait for it: the form above it
    # is drawn first, and a loaded machine may pause between the two)
    main.get_by_text("No refinement loop yet", exact=False).wait_for(timeout=120_000)
    _set_number(page, "Max rounds", "3")
    _set_number(page, "Sample", "30")
    page.get_by_role("button", name="Start loop").click()
    # The job runs in its own process; when it ends the page opens the loop it stored.
    page.wait_for_url(re.compile(r"[?&]loop=\d+"), timeout=420_000)
    main.get_by_text("Rewrites tried", exact=True).wait_for(timeout=120_000)
    wait_for_streamlit(page, TITLE)
    no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "after-loop.png"), full_page=True)
    loop_id = int(re.search(r"[?&]loop=(\d+)", page.url).group(1))  # type: ignore[union-attr]
    with open_workspace_session(served.settings) as session:
        stored = session.exec(select(RefinementLoop)).all()
    assert [r.id for r in stored] == [loop_id]
    config = stored[0].config
    # the form's values reached the job (not the defaults of 78 rounds of 100 responses)
    assert config["max_rounds"] == 3 and config["sample"] == 30, config
    assert stored[0].stop_reason is not None, stored[0]
    # the curve (a Vega-Lite chart) and the rewrites table are drawn
    assert main.locator('[data-testid="stVegaLiteChart"]').count() >= 1
    assert main.locator('[data-testid="stDataFrame"]').count() >= 1
    text = main_text(page)
    assert "original@1 →" in text and "· 3 rounds ·" in text
    assert f"stopped: {stored[0].stop_reason}" in text

    # A second, newer loop (two rounds) from the CLI, in its own process: Playwright's sync
    # API runs an event loop in this thread, inside which the labelers refuse to batch.
    argv = [
        str(Path(sys.executable).with_name("driftlens")), "ontology", "refine", "--run", "demo",
        "--labelers", ",".join(config["labelers"]), "--rewriter", "sim/rewriter-blur",
        "--ontology-version", "original@1", "--sample", "30", "--max-rounds", "2",
    ]  # fmt: skip
    done = subprocess.run(
        argv, env=app_env(served.settings.workspace), capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open_workspace_session(served.settings) as session:
        assert len(session.exec(select(RefinementLoop)).all()) == 2
    _open(page, f"{served.url}/ontology_refinement")
    assert "· 2 rounds ·" in main_text(page)  # the newest loop is the default
    # the first loop's deep link, opened afresh, shows the first loop
    _open(page, f"{served.url}/ontology_refinement?loop={loop_id}")
    text = main_text(page)
    assert "· 3 rounds ·" in text and "· 2 rounds ·" not in text
    assert main.locator('[data-testid="stVegaLiteChart"]').count() >= 1
    assert f"loop={loop_id}" in page.url
    page.screenshot(path=str(ARTIFACTS / "deep-link.png"), full_page=True)
    # the final version's agreement tables, computed in the served page (it labels again)
    page.get_by_role("button", name="Compute the final version's agreement tables").click()
    main.get_by_text("agreement (%)", exact=False).first.wait_for(timeout=300_000)
    wait_for_streamlit(page, TITLE)
    no_exception(page)
    text = main_text(page)
    assert "Within-model (same labeler, labeled twice)" in text
    assert "Robustness (every definition paraphrased)" in text
    page.screenshot(path=str(ARTIFACTS / "final-tables.png"), full_page=True)
