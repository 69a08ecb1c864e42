"""Open a workbench page through Streamlit's ``AppTest`` (shared by the page tests)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


def open_page(
    page: str, *, timeout: float = 120, params: Mapping[str, str] | None = None
) -> AppTest:
    """Run the app, switch to ``pages/<page>`` and check that it rendered without exception.

    Args:
        page: The page's file name under ``app/pages/``.
        timeout: Seconds a run may take.
        params: Query parameters the page opens with (a link to it).
    """
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.run()
    at.switch_page(f"pages/{page}")
    for name, value in (params or {}).items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def unescape(markdown: str) -> str:
    """The text a message shows: Markdown backslash escapes (``app.ui.safe``) removed."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown)
