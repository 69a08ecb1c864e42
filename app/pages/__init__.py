"""Thin Streamlit pages: read widgets, call one service function, render the result."""
