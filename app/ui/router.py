"""The workbench's router: the navigation built from ``app.ui.navigation`` runs the page."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.ui.navigation import DEFAULT_PAGE, sections

PAGES_DIR = Path(__file__).resolve().parents[1] / "pages"


def main() -> None:
    """Build the navigation and run the selected page."""
    st.set_page_config(page_title="DriftLens Workbench", layout="wide")
    nav = {
        section: [
            st.Page(str(path), title=title, icon=icon, default=(path.name == DEFAULT_PAGE))
            for path, title, icon in pages
        ]
        for section, pages in sections().items()
    }
    st.navigation(nav).run()
