"""Streamlit router (what ``AppTest`` opens); ``driftlens app`` serves ``app/ui/serve_main.py``.

Both run :func:`app.ui.router.main`; pages are listed in ``app/ui/navigation.py``.
"""

from __future__ import annotations

from app.ui.router import PAGES_DIR, main

__all__ = ["PAGES_DIR", "main"]

main()
