"""Streamlit plumbing shared by the pages (sessions, safe rendering, navigation registry)."""
