"""Fixtures of the app tests: one headless chromium per browser-test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.app.browser_support import CHROMIUM, CHROMIUM_ARGS, require_chromium


@pytest.fixture(scope="module")
def chromium_args() -> list[str]:
    """Command-line flags of the module's chromium (a module may override this fixture)."""
    return CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser(chromium_args: list[str]) -> Iterator[object]:
    """One headless chromium for the module."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=chromium_args)
        try:
            yield b
        finally:
            b.close()
