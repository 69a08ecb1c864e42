"""Fixtures of the app tests: one headless chromium per browser-test module, a page a test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.app.browser_support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PageOptions,
    browser_page,
    require_chromium,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


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
