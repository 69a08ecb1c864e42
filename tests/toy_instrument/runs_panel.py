"""The toy's section of the Runs page (its plugin's ``runs_panel``): one coin run's share."""

from __future__ import annotations

import streamlit as st

from app.ui.db import page_session
from storage.repo.instrument_runs import list_instrument_runs, read_records
from tests.toy_instrument.store import INSTRUMENT


def runs_panel() -> None:
    """Pick a stored coin run and see its share of yes among its readable answers."""
    st.subheader("Coin runs")
    with page_session() as session:
        runs = {r.name: r.id for r in list_instrument_runs(INSTRUMENT, session=session)}
    if not runs:
        st.caption("No coin run stored yet.")
        return
    # a run name is untrusted text: the select box shows it as text
    name = st.selectbox("Coin run", list(runs), key="toy-runs-panel")
    run_id = runs[name]
    assert run_id is not None
    with page_session() as session:
        values = [r.value for r in read_records(run_id, session=session) if r.value is not None]
    share = sum(values) / len(values) if values else float("nan")
    st.metric("Share of yes", f"{share:.2f}", help=f"{len(values)} readable answers")
