"""The workbench's router: the navigation built from ``app.ui.navigation`` runs the page."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.ui.navigation import DEFAULT_PAGE, sections

PAGES_DIR = Path(__file__).resolve().parents[1] / "pages"
#: The browser tab's icon on every page (see :func:`main`).
FAVICON = "🔬"


def main() -> None:
    """Build the navigation and run the selected page."""
    # A favicon of our own: without one, the browser tab takes the page's ``:material/…:``
    # icon, which Streamlit's front end fetches from fonts.gstatic.com (traffic leaves
    # 127.0.0.1 and fails offline). An emoji becomes a ``data:`` URL, fetched from nowhere;
    # the sidebar's Material icons come from the font Streamlit serves itself.
    st.set_page_config(page_title="DriftLens Workbench", page_icon=FAVICON, layout="wide")
    nav = {
        section: [
            st.Page(str(path), title=title, icon=icon, default=(path.name == DEFAULT_PAGE))
            for path, title, icon in pages
        ]
        for section, pages in sections().items()
    }
    st.navigation(nav).run()
