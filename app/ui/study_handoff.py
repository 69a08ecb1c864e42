"""Hand a Label Studio study and its selection over to the Human studies page.

A page that prepares a human check (Validation's label check) opens the Human studies page
with the study and the selection already filled in, so the researcher pushes it from the
browser instead of copying a CLI command.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from app.ui.router import PAGES_DIR

#: Session-state key the Human studies page reads (once) before drawing its push form.
HANDOFF_KEY = "human_studies_handoff"


def open_human_studies(study: str, selection: Sequence[str]) -> None:
    """Switch to the Human studies page with ``study`` and ``selection`` (key=value lines)."""
    st.session_state[HANDOFF_KEY] = {"study": study, "selection": "\n".join(selection)}
    st.switch_page(str(PAGES_DIR / "human_studies.py"))
