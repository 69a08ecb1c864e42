"""Every Streamlit page renders through ``AppTest`` without an exception."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.ui.navigation import DEFAULT_PAGE, SECTIONS

APP = Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py"
PAGES = [file for pages in SECTIONS.values() for file, _, _ in pages]


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_without_exception(page: str) -> None:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    if page != DEFAULT_PAGE:
        at.switch_page(f"pages/{page}")
        at.run()
    assert not at.exception, [e.value for e in at.exception]
