"""The calibration planner on an instrument page: human labels for a target half-width.

An instrument page passes the calibrated rows of its report's statistics (each with the
slice's pilot: ``rectifier_sd``, ``model_sd``, ``lam``, ``n_items``); the panel asks for a
target half-width and shows, per row, the human labels a simple random slice needs
(:func:`driftlens_core.ppi.humans_for_half_width`, the rule of ``driftlens plan
calibration``). It names no instrument: the page says what its rows are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from driftlens_core.ppi import humans_for_half_width


def planner_frame(rows: Sequence[Mapping[str, Any]], half_width: float) -> pd.DataFrame:
    """One line per row with a pilot: what it is, its humans now and the humans needed."""
    out = []
    for r in rows:
        pilot = [r.get(k) for k in ("rectifier_sd", "model_sd", "lam", "n_items")]
        if any(v is None for v in pilot) or not pilot[3]:
            continue
        sd_r, sd_f, lam, n = (float(v) for v in pilot)  # type: ignore[arg-type]
        need = humans_for_half_width(
            rectifier_sd=sd_r, model_sd=sd_f, n_items=int(n), lam=lam, half_width=half_width
        )
        out.append(
            {
                "what": str(r.get("label", "")),
                "humans now": int(r.get("n_human") or 0),
                "items": int(n),
                "humans needed": "unreachable" if need is None else str(need),
            }
        )
    return pd.DataFrame(out)


def planner_panel(rows: Sequence[Mapping[str, Any]], *, key: str, default: float) -> None:
    """The planner's input and table (nothing when no row carries a pilot)."""
    with st.expander("Plan the human slice (calibration planner)"):
        if not any(r.get("rectifier_sd") is not None for r in rows):
            st.caption(
                "No pulled human slice yet: the planner reads a pilot slice's spread. Push a "
                "small slice, pull it, analyse again."
            )
            return
        hw = st.number_input(
            "Target half-width of the 95% interval", min_value=0.0001, value=default,
            format="%.4f", key=f"{key}-hw",
        )  # fmt: skip
        st.dataframe(planner_frame(rows, float(hw)), hide_index=True)
        st.caption(
            "Human labels a simple random slice needs for that half-width, from the pulled "
            "slice as a pilot (SD of the human-minus-lambda-model residual, SD of the model "
            "labels, lambda, items); 'unreachable': not even every item gets there."
        )
