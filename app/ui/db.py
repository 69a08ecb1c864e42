"""Database access for Streamlit pages: settings from the environment, one session per call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlmodel import Session

from storage.settings import Settings, resolve_settings
from storage.workspace import open_workspace_session


def page_settings() -> Settings:
    """Workspace settings for the app (``DRIFTLENS_WORKSPACE`` / ``DRIFTLENS_DB_URL``)."""
    return resolve_settings()


@contextmanager
def page_session() -> Iterator[Session]:
    """Open a session for one page action (commit on success, rollback on error)."""
    with open_workspace_session(page_settings()) as session:
        yield session
