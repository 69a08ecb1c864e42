"""A Streamlit progress bar exposed as the ``(done, total)`` callback the services accept."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st


def progress_bar(label: str) -> Callable[[int, int], None]:
    """Show an empty bar labelled ``label`` and return ``update(done, total)`` for it."""
    bar = st.progress(0.0, text=label)

    def update(done: int, total: int) -> None:
        bar.progress(done / total if total else 1.0, text=f"{label} {done}/{total}")

    return update
