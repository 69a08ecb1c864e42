"""In chromium: a linked Analysis view (URL query parameters) and the report-folder download.

A workspace with two stored analyses of a simulated run is served by ``driftlens app``.
Opening ``/analysis?analysis=<older id>`` must show the older analysis (not the newest,
which opens without parameters), and the *Report folder (.zip)* button must download a zip
of that analysis's report folder through the browser.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from storage.settings import default_db_url, resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.analysis import analyze_run
from tests.analysis._sim_workspace import LABELER, RUN, build_sim_workspace
from tests.app.browser_support import require_chromium, serve_app, wait_for_streamlit

pytestmark = pytest.mark.browser


@dataclass(frozen=True)
class Served:
    url: str
    older: int
    newest: int


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    require_chromium()
    ws = tmp_path_factory.mktemp("browser-pages-ws")
    settings = resolve_settings(workspace=ws, db_url=default_db_url(ws))
    with open_workspace_session(settings) as session:
        build_sim_workspace(session, n_questions=5)
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
    with serve_app(ws) as url:
        yield Served(url=url, older=ids[0], newest=ids[1])


def test_linked_analysis_opens_and_its_report_folder_downloads(
    served: Served, browser: object, tmp_path: Path
) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        # without parameters the newest opens, and the address bar names it
        page.goto(f"{served.url}/analysis", wait_until="domcontentloaded")
        wait_for_streamlit(page, f"Analysis {served.newest} ·")
        assert f"analysis={served.newest}" in page.url

        # a link with query parameters opens the analysis it names
        page.goto(f"{served.url}/analysis?analysis={served.older}", wait_until="domcontentloaded")
        wait_for_streamlit(page, f"Analysis {served.older} ·")
        body = page.inner_text('[data-testid="stMain"]')
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
        assert "older/figures/forest.png" in names
    finally:
        context.close()
