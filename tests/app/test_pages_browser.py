"""In chromium: linked views (URL query parameters), the report-folder download, the
Ontology page's rebase-or-branch choice (issue #20 B, K, item 4) and the Compare page
(issue #21), all on one served workspace (a Streamlit server starts once for them).

A workspace with two stored analyses of a simulated run is served by ``driftlens app``.
Opening ``/analysis?analysis=<older id>`` must show the older analysis (not the newest,
which opens without parameters), and the *Report folder (.zip)* button must download a zip
of that analysis's report folder through the browser.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ontology.versions import seed_ontologies
from storage.models import GenerationRun, ModelSpecRow
from storage.workspace import open_workspace_session
from study.reasoning.analysis import analyze_run
from tests.analysis._sim_workspace import LABELER, RUN, build_sim_workspace
from tests.app.browser_support import (
    ARTIFACTS_ROOT,
    PageOptions,
    browser_workspace,
    download_bytes,
    main_text,
    pick_option,
    serve_app,
    wait_for_streamlit,
)
from tests.compare.conftest import build_disposition_study
from tests.ontology.leaf_edits import reword_leaf

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

ARTIFACTS = ARTIFACTS_ROOT / "url-state"
OTHER = "other-run"


@dataclass(frozen=True)
class Served:
    url: str
    older: int
    newest: int


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    settings = browser_workspace(
        tmp_path_factory, "browser-pages-ws", fill=lambda s: build_sim_workspace(s, n_questions=5)
    )
    ws = settings.workspace
    ids = []
    for seed, folder in ((1, "older"), (2, "newest")):
        with open_workspace_session(settings) as session:
            result = analyze_run(
                RUN,
                LABELER,
                session=session,
                out_dir=ws / "reports" / folder,
                bootstrap=200,
                seed=seed,
            )
        ids.append(result.analysis_id)
    with open_workspace_session(settings) as session:
        # For the URL-state tests: a second run, and driftlens@2 made after @1.
        seed_ontologies(session=session)
        spec = ModelSpecRow(spec="sim/other", provider="sim", model="other", simulated=True)
        session.add(spec)
        session.flush()
        assert spec.id is not None
        session.add(GenerationRun(name=OTHER, model_spec_id=spec.id, prompt_version="steps-v1"))
        reword_leaf(session, "Accepted rewrite of the first leaf.")  # work that @1 lacks
        session.commit()
    build_disposition_study(ws)  # for the Compare page: the simulated disposition arms
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve_app(ws) as url:
        yield Served(url=url, older=ids[0], newest=ids[1])


@pytest.fixture(scope="module")
def page_options() -> PageOptions:
    return PageOptions(height=1000, downloads=True, page_errors=False)


def test_linked_analysis_opens_and_its_report_folder_downloads(
    served: Served, page: Page, tmp_path: Path
) -> None:
    # without parameters the newest opens, and the address bar names it
    page.goto(f"{served.url}/analysis", wait_until="domcontentloaded")
    wait_for_streamlit(page, f"Analysis {served.newest} ·")
    assert f"analysis={served.newest}" in page.url

    # a link with query parameters opens the analysis it names
    page.goto(f"{served.url}/analysis?analysis={served.older}", wait_until="domcontentloaded")
    wait_for_streamlit(page, f"Analysis {served.older} ·")
    body = main_text(page)
    assert f"Analysis {served.older} ·" in body
    assert f"Analysis {served.newest} ·" not in body
    assert f"analysis={served.older}" in page.url

    button = page.get_by_role("button", name="Report folder (.zip)")
    with page.expect_download(timeout=60_000) as info:
        button.click()
    saved = tmp_path / "report.zip"
    info.value.save_as(saved)
    assert info.value.suggested_filename == "older.zip"
    names = zipfile.ZipFile(io.BytesIO(saved.read_bytes())).namelist()
    assert "older/report.html" in names
    # the report.html button downloads the older analysis's own file
    html = download_bytes(page, "Download report.html")
    assert html == zipfile.ZipFile(io.BytesIO(saved.read_bytes())).read("older/report.html")
    assert "older/figures/forest.png" in names


def test_runs_url_follows_the_picked_run_and_unknown_ids_say_so(served: Served, page: Page) -> None:
    page.goto(f"{served.url}/runs?run={RUN}", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Responses")
    assert f"run={RUN}" in page.url
    box = page.get_by_test_id("stSelectbox").filter(has_text="Run").first
    pick_option(page, box, re.compile(f"^{OTHER}$"))
    wait_for_streamlit(page, "Responses")
    page.wait_for_function(f"() => location.search.includes('run={OTHER}')", timeout=30_000)
    assert f"run={RUN}" not in page.url  # K: it used to keep ?run=<first run>
    page.goto(f"{served.url}/runs?run=no-such-run", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Responses")
    assert "unknown run 'no-such-run'" in main_text(page)
    page.goto(f"{served.url}/analysis?analysis=999", wait_until="domcontentloaded")
    wait_for_streamlit(page, f"Analysis {served.newest} ·")
    assert "unknown analysis '999'" in main_text(page)  # K: it used to open the newest silently
    page.wait_for_function(
        f"() => location.search.includes('analysis={served.newest}')", timeout=30_000
    )
    page.screenshot(path=str(ARTIFACTS / "unknown-analysis.png"), full_page=True)


def test_ontology_asks_before_saving_an_edit_of_an_old_version(served: Served, page: Page) -> None:
    page.goto(f"{served.url}/ontology_versions?version=driftlens@1", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Edit as a new version")
    assert "driftlens@1 is not the newest version of driftlens: driftlens@2 is" in main_text(page)
    save = page.get_by_role("button", name="Save leaf as new version")
    assert save.is_disabled()  # B: it used to save a branch of @1 without a word
    page.get_by_text("Rebase: apply my edit on top of driftlens@2").click()
    wait_for_streamlit(page, "Edit as a new version")
    assert page.get_by_role("button", name="Save leaf as new version").is_enabled()
    page.screenshot(path=str(ARTIFACTS / "ontology-old-version.png"), full_page=True)


def test_ontology_picked_old_version_in_the_box_asks_before_saving(
    served: Served, page: Page
) -> None:
    """B as a researcher meets it: the old version is picked in the Version box, no link.

    (The linked form above could not fail on the old page, which had no ``?version=``.)
    """
    page.goto(f"{served.url}/ontology_versions", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Edit as a new version")
    box = page.get_by_test_id("stSelectbox").filter(has_text="Version").first
    pick_option(page, box, re.compile(r"^driftlens@1 \(id"))
    wait_for_streamlit(page, "Edit as a new version")
    assert "driftlens@1 is not the newest version of driftlens: driftlens@2 is" in main_text(page)
    assert page.get_by_role("button", name="Save leaf as new version").is_disabled()


def test_compare_page_shows_the_paired_table_items_and_downloads(
    served: Served,
    page: Page,
    tmp_path: Path,
) -> None:
    """The Compare page on the simulated disposition arms, linked through the URL.

    It must show the paired table of the two arms (marked simulated), the items sorted by
    how much they differ with the first one opened side by side, keep the selection in the
    address bar, and download the comparison report as a zip.
    """
    link = f"{served.url}/compare?instrument=disposition&run=cmp:d025-s1&run=cmp:d075-s1"
    page.goto(link, wait_until="domcontentloaded")
    wait_for_streamlit(page, "Items that differ most")
    main = main_text(page)
    assert "SIMULATED" in main
    assert "aligned rate per tendency" in main
    assert "80 shared item(s)" in main
    # the first item is opened: both arms' answers side by side
    assert "cmp:d025-s1" in main and "cmp:d075-s1" in main
    assert "sample" in main
    assert "run=cmp%3Ad025-s1" in page.url or "run=cmp:d025-s1" in page.url
    assert "item=" in page.url
    # the paired table and the forest plot are there
    assert page.locator('[data-testid="stDataFrame"]').count() >= 1
    assert page.locator('[data-testid="stImage"] img, [data-testid="stPyplot"] img').count() >= 1
    saved = tmp_path / "report.zip"
    saved.write_bytes(download_bytes(page, "Report (.zip)"))
    names = zipfile.ZipFile(io.BytesIO(saved.read_bytes())).namelist()
    assert "comparison/report.html" in names and "comparison/tables/items.csv" in names
