"""XSS probes stay inert in a real browser: the Analysis page and the report file.

A workspace with an analysed simulated run whose questions contain
``<script>alert(1)</script>`` and whose steps and answers contain
``<img src=x onerror=alert(1)>`` is served by ``driftlens app``; chromium opens the
Analysis page and ``report.html``. No dialog may open, no element built from the probes may
exist, and the probes must be visible as text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from storage.workspace import open_workspace_session
from study.reasoning.analysis import analyze_run
from tests.analysis._sim_workspace import IMG_PROBE, LABELER, RUN, SCRIPT_PROBE, build_sim_workspace
from tests.app.browser_support import PageOptions, browser_workspace, serve_app, wait_for_streamlit

if TYPE_CHECKING:
    from playwright.sync_api import Dialog, Page

pytestmark = pytest.mark.browser


@dataclass(frozen=True)
class Served:
    url: str
    report: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    settings = browser_workspace(
        tmp_path_factory,
        "browser-analysis-ws",
        fill=lambda s: build_sim_workspace(s, n_questions=6),
    )
    ws = settings.workspace
    with open_workspace_session(settings) as session:
        result = analyze_run(
            RUN, LABELER, session=session, out_dir=ws / "report", bootstrap=200, seed=1
        )
    with serve_app(ws) as url:
        yield Served(url=url, report=result.files["report_html"])


@pytest.fixture(scope="module")
def chromium_args() -> list[str]:
    return ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _recorder(dialogs: list[str]) -> Callable[[Dialog], None]:
    """A dialog handler that records the message and dismisses the dialog."""

    def handle(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    return handle


def _assert_inert(page: Page, dialogs: list[str]) -> None:
    # an <img src=x> built from the probe would exist in the DOM (and fire onerror)
    assert page.locator('img[src="x"]').count() == 0
    assert page.locator("[onerror]").count() == 0
    scripts = page.eval_on_selector_all("script", "els => els.map(e => e.textContent)")
    assert not [s for s in scripts if "alert(1)" in (s or "")]
    page.wait_for_timeout(500)
    assert not dialogs, dialogs


@pytest.fixture(scope="module")
def page_options() -> PageOptions:
    return PageOptions(height=1000, page_errors=False)


def test_analysis_page_shows_probes_as_text(served: Served, page: Page) -> None:
    dialogs: list[str] = []
    page.on("dialog", _recorder(dialogs))
    page.goto(f"{served.url}/analysis", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Analysis")
    page.get_by_text("Example response pairs").first.wait_for(timeout=60_000)
    # The subheader shows before the script has finished; clicks on expanders that a
    # rerun replaces are lost, so wait until the run is over before opening them.
    wait_for_streamlit(page, "Example response pairs")
    summaries = page.locator('[data-testid="stExpander"] summary')
    summaries.first.wait_for(timeout=60_000)
    for _ in range(5):
        for header in summaries.all():
            if header.evaluate("el => !el.parentElement.open"):
                header.click()
        try:
            page.get_by_text("With memory").first.wait_for(timeout=10_000)
            break
        except Exception:  # playwright TimeoutError: the click landed during a rerun
            wait_for_streamlit(page, "Example response pairs")
    page.get_by_text("With memory").first.wait_for(timeout=30_000)
    page.get_by_text(IMG_PROBE, exact=False).first.wait_for(timeout=30_000)
    body = page.inner_text("body")
    assert SCRIPT_PROBE in body
    assert IMG_PROBE in body
    assert "SIMULATED DATA" in body
    _assert_inert(page, dialogs)


def test_report_html_shows_probes_as_text(served: Served, page: Page) -> None:
    dialogs: list[str] = []
    requests: list[str] = []
    page.on("dialog", _recorder(dialogs))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(served.report.resolve().as_uri(), wait_until="load")
    body = page.inner_text("body")
    assert SCRIPT_PROBE in body and IMG_PROBE in body and "SIMULATED DATA" in body
    # the figures are embedded: nothing but the file itself and data: URIs is requested
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    assert page.locator("figure img").count() == 3
    assert all(
        page.evaluate("img => img.complete && img.naturalWidth > 0", img.element_handle())
        for img in page.locator("figure img").all()
    )
    _assert_inert(page, dialogs)
