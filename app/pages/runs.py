"""Runs: every instrument's stored runs, then each instrument's own section of the page.

A shared room: the listings and the sections come from the instrument registry (each
plugin's ``run_listing`` and ``runs_panel``, drawn by :mod:`app.ui.run_listing`), so this
page names no instrument.
"""

from __future__ import annotations

import streamlit as st

from app.ui.run_listing import run_listings, runs_panels

st.title("Runs")
run_listings()
runs_panels()
