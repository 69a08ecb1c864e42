"""Ending a page's run early, with a note saying why it shows nothing more."""

from __future__ import annotations

from typing import NoReturn

import streamlit as st


def stop_with_info(message: str) -> NoReturn:
    """Show ``message`` in an info box and end this run of the page.

    For a page with nothing (more) to show yet: no runs, no study, a choice still to make.
    ``message`` is the page's own Markdown, saying what to do next; never untrusted text.
    """
    st.info(message)
    st.stop()
