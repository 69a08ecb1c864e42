"""The workbench in a real headless browser (Debian chromium driven by Playwright).

`driftlens app` is started as a real server on 127.0.0.1; every registered page is
opened, awaited until Streamlit has finished running it, screenshotted into
``test-artifacts/browser/`` and checked for Streamlit's exception box.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from app.ui.navigation import DEFAULT_PAGE, SECTIONS
from tests.app.browser_support import (
    ARTIFACTS_ROOT,
    PageOptions,
    Served,
    browser_page,
    fill_text,
    main_text,
    no_exception,
    served_workspace,
    wait_for_streamlit,
)
from tests.study.jobs_support import wait_for_jobs

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ARTIFACTS = ARTIFACTS_ROOT / "browser"
PAGES = [(file, title) for pages in SECTIONS.values() for file, title, _ in pages]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_url(
    demo_workspace: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """Start ``driftlens app`` on a copy of the demo workspace; yield its URL and settings.

    The primary actions below launch runs and rounds; on a copy they cannot change what
    later modules see in the session's shared demo workspace.
    """
    with served_workspace(tmp_path_factory, "browser", copy_of=demo_workspace[0]) as served:
        yield served


def _click(page: Page, name: str) -> None:
    page.get_by_role("button", name=name).first.click()


def _expand(page: Page, label: str) -> None:
    page.get_by_text(label, exact=True).first.click()


def _expand_and_click(page: Page, section: str, button: str) -> None:
    _expand(page, section)
    wait_for_streamlit(page, button)  # a click during the expander's rerun can be lost
    _click(page, button)


def _launch_small_run(page: Page) -> None:
    _expand(page, "Launch a run")
    fill_text(page, "Run name", "browser-run")
    fill_text(page, "Perturbations (all, none, a class, a category, keys)", "filler")
    _click(page, "Generate and label")


def _progress_if_connected(page: Page) -> None:
    button = page.get_by_role("button", name="Show progress in Label Studio")
    if button.is_enabled():
        button.click()


# One primary action per page (what a researcher does first there); the expected text
# proves the action ran. Pages that only show state navigate instead.
def _type_a_margin(page: Page) -> None:
    page.get_by_role("textbox", name="Equivalence margin").first.fill("mdd")
    page.keyboard.press("Enter")


ACTIONS: dict[str, tuple[Callable[[Page], None], str | None]] = {
    "home.py": (lambda p: p.get_by_role("link", name="Runs").first.click(), "Launch a run"),
    "benchmark.py": (
        lambda p: _expand_and_click(p, "Run the LLM filter", "Run the filter"),
        "already screened.",
    ),
    "perturbations.py": (lambda p: _click(p, "Save edits as a new version"), "Nothing changed"),
    "runs.py": (_launch_small_run, "Generate and label 'browser-run': done."),
    "analysis.py": (lambda p: _expand_and_click(p, "New analysis", "Run analysis"), None),
    "settings.py": (lambda p: p.get_by_role("link", name="Home").first.click(), "Next step"),
    "jobs.py": (lambda p: p.get_by_role("link", name="Home").first.click(), "Next step"),
    "ontology_versions.py": (
        lambda p: _expand_and_click(p, "The whole document (YAML)", "Save as new version"),
        None,
    ),
    "ontology_rounds.py": (lambda p: _click(p, "Run round"), None),
    "ontology_rewrite.py": (lambda p: _click(p, "Propose rewrite"), None),
    "ontology_validation.py": (lambda p: _click(p, "Start experiment"), None),
    # its primary action starts a loop as a job (a process that would outlive the test:
    # tests/app/test_refinement_browser.py runs one); here the start form is folded and
    # unfolded, and the page must still show itself without an exception
    "ontology_refinement.py": (lambda p: p.get_by_text("Start a loop").first.click(), None),
    "human_studies.py": (_progress_if_connected, None),
    # The instrument pages show the demo's stored results; their primary action sets up a
    # study (no job: a background process would outlive the test). The walkthroughs in
    # test_instrument_walkthroughs.py run each instrument's jobs.
    "disposition.py": (
        lambda p: _expand_and_click(p, "Set up a study", "Add arms to the study"),
        "Added 2 arm(s) to study my-study.",
    ),
    # its set-up box is open on a workspace without stored runs: the click folds it
    "sources.py": (lambda p: _expand(p, "Set up a run"), None),
    "conflicts.py": (lambda p: p.get_by_role("link", name="Home").first.click(), "Next step"),
    # the demo has one run of each instrument, so the Compare page can only be set up: a
    # margin typed in keeps it asking for a second run
    "compare.py": (_type_a_margin, "Pick at least two runs to compare."),
}


@pytest.mark.parametrize(("file", "title"), PAGES)
def test_page_loads_in_chromium_without_exception(
    app_url: Served, browser: Browser, file: str, title: str
) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with browser_page(browser, PageOptions(height=1000)) as page:
        _check_page(page, app_url.url, file, title)
    # A job this page's action started ends before the next page opens, so no page's
    # check competes with an earlier page's background work for the shared SQLite file.
    wait_for_jobs(app_url.settings)


def _check_page(page: Page, url: str, file: str, title: str) -> None:
    """Open ``file``'s page, then do its primary action: neither may show an exception."""
    path = "" if file == DEFAULT_PAGE else Path(file).stem
    page.goto(f"{url}/{path}", wait_until="domcontentloaded")
    heading = "DriftLens Workbench" if file == DEFAULT_PAGE else title
    wait_for_streamlit(page, heading)
    page.screenshot(path=str(ARTIFACTS / f"{Path(file).stem}.png"), full_page=True)
    no_exception(page)
    action, expect = ACTIONS.get(file, (None, None))
    if action is not None:
        action(page)
        page.wait_for_timeout(500)
        try:
            wait_for_streamlit(page, expect or heading)
        except Exception as exc:  # say what the page showed instead (CI has no screenshots)
            page.screenshot(path=str(ARTIFACTS / f"{Path(file).stem}-stuck.png"), full_page=True)
            shown = main_text(page)[-1500:]
            pytest.fail(f"{file}: {expect or heading!r} not shown ({exc!s:.200}); page:\n{shown}")
        page.screenshot(path=str(ARTIFACTS / f"{Path(file).stem}-action.png"), full_page=True)
        no_exception(page)


def test_every_registered_page_has_a_primary_action() -> None:
    assert {file for file, _ in PAGES} <= set(ACTIONS)
