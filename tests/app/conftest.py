"""Fixtures of the app tests: one headless chromium per browser-test module, a page a test,
and the loop's served copy of the demo workspace (shared by the package's modules)."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

import pytest

from tests.app.browser_support import (
    ARTIFACTS_ROOT,
    CHROMIUM,
    CHROMIUM_ARGS,
    PageOptions,
    browser_page,
    page_state,
    require_chromium,
)
from tests.app.loop_support import Loop, served_loop

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """When a browser test fails, attach what its page showed and save a screenshot.

    CI keeps only the log's tail, so a timeout without the page's text cannot be told apart
    from a slow machine; the section names the screenshot under ``test-artifacts/failures/``.
    """
    report = yield
    page = getattr(item, "funcargs", {}).get("page")
    # only a Playwright page: a test may name any other argument ``page`` (a page file, an
    # AppTest page), and reading that as a browser page hid the test's own failure
    if report.failed and call.when == "call" and _is_browser_page(page):
        shot = ARTIFACTS_ROOT / "failures" / f"{item.name}.png"
        report.sections.append(("what the page showed", page_state(page, shot)))
    return report


def _is_browser_page(value: object) -> TypeGuard[Page]:
    """Whether ``value`` is a Playwright page (Playwright may not even be importable)."""
    if value is None:
        return False
    try:
        from playwright.sync_api import Page as PlaywrightPage
    except ImportError:
        return False
    return isinstance(value, PlaywrightPage)


@pytest.fixture(scope="module")
def chromium_args() -> list[str]:
    """Command-line flags of the module's chromium (a module may override this fixture)."""
    return CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser(chromium_args: list[str]) -> Iterator[Browser]:
    """One headless chromium for the module."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=chromium_args)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def page_options() -> PageOptions:
    """How the module's pages open (a module may override this fixture)."""
    return PageOptions()


@pytest.fixture
def page(browser: Browser, page_options: PageOptions) -> Iterator[Page]:
    """A page of the module's chromium in a fresh context, for one test."""
    with browser_page(browser, page_options) as p:
        yield p


@pytest.fixture(scope="package")
def loop(
    demo_workspace: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Loop]:
    """The served copy of the demo workspace with a second round, once for the package
    (the loop's chromium test modules share it: one copy, one server)."""
    with served_loop(demo_workspace[0], tmp_path_factory) as served:
        yield served
