"""The Runs page's shared parts: every instrument's runs listed, then each one's own section.

Both loop over the instrument registry (:func:`driftlens_plugins.instruments`): a plugin's
``run_listing`` gives its stored runs as :class:`~driftlens_plugins.RunLine` rows, shown as
one table per instrument with a link to the page that opens each run; its ``runs_panel``
draws what only that instrument has on the page (a launch form, a run browser). Nothing
here names an instrument.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from app.ui.db import page_session
from app.ui.safe import escape_markdown
from driftlens_plugins import InstrumentPlugin, RunLine, instruments, load_ref

#: The column that links each run to its page.
OPEN = "open"


def page_url(module: str, query: Sequence[tuple[str, str]] = ()) -> str | None:
    """The address of a page script (relative to the app's root) with its query.

    The router registers each page under its file's stem (``app/pages/sources.py`` is
    ``sources``), which is what Streamlit's navigation serves it at. ``None`` when no module
    of that name is installed.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    stem = Path(spec.origin).stem
    return f"{stem}?{urlencode(list(query))}" if query else stem


def listing_frame(lines: Sequence[RunLine]) -> pd.DataFrame:
    """One instrument's runs as a table: the common columns, its own, then the link.

    Every cell is data (``st.dataframe`` shows text as text), so a hostile run name stays
    inert; the link's query is URL-encoded.
    """
    rows = []
    for line in lines:
        rows.append(
            {
                "name": line.name,
                "model": line.model,
                "status": line.status,
                "simulated": line.simulated,
                **dict(line.details),
                "created": line.created,
                OPEN: page_url(line.page, line.query) if line.page is not None else None,
            }
        )
    return pd.DataFrame(rows)


def listed_runs() -> list[tuple[InstrumentPlugin, list[RunLine]]]:
    """Every instrument with a listing and its runs, in listing order (one session)."""
    with page_session() as session:
        return [
            (plugin, list(load_ref(plugin.run_listing)(session=session)))
            for plugin in instruments()
            if plugin.run_listing is not None
        ]


def run_listings() -> None:
    """Every instrument's stored runs, one table each (instruments with none left out).

    Drawn in one keyed container, so what follows (a launch form) keeps its place on the
    page whether an instrument has runs yet or not.
    """
    with st.container(key="runs-listing"):
        with st.spinner("Reading the runs…", show_time=True):
            listed = listed_runs()
        for plugin, lines in listed:
            if not lines:
                continue
            st.caption(f"{escape_markdown(plugin.title)} runs: {len(lines):,}")
            st.dataframe(
                listing_frame(lines),
                hide_index=True,
                column_config={OPEN: st.column_config.LinkColumn(OPEN, display_text="open")},
            )


def runs_panels() -> None:
    """Each instrument's own section of the Runs page, in listing order."""
    for plugin in instruments():
        if plugin.runs_panel is not None:
            load_ref(plugin.runs_panel)()
