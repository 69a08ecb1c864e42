"""The toy instrument's page: pick a simulated coin, see the share of yes (thin page)."""

from __future__ import annotations

import streamlit as st

from tests.toy_instrument.service import coin_study

st.header("Coin (toy)")
model = st.selectbox("Model", ["sim/coin-yes", "sim/coin-fair"], key="toy_model")
res = coin_study(model, samples=10)
st.metric("Share of yes", f"{res.share:.2f}", help=f"{res.yes} of {res.n} answers")
st.caption(f"95% interval {res.ci_low:.2f} to {res.ci_high:.2f}")
