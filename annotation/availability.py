"""Whether the human-study actions can reach a Label Studio server now, and if not, why.

The Human studies page disables its server actions with this one-sentence reason and
offers to start the workspace's own server (``annotation.server``) when the environment
names no other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from annotation import server
from annotation.client import ENV_URL, resolve_connection
from storage.errors import ConfigError


@dataclass(frozen=True)
class Availability:
    """Where Label Studio is and whether it answers.

    Attributes:
        url: the server's URL (``None``: none configured).
        source: ``environment`` or ``local server`` (``None``: none configured).
        ready: it answers its health check.
        reason: why the server actions are unavailable (``None`` when ready).
        can_start: the workspace's own server can be started (the environment names none).
    """

    url: str | None
    source: str | None
    ready: bool
    reason: str | None
    can_start: bool


def availability(workspace: Path) -> Availability:
    """Check the server the human-study actions would use (one health request at most)."""
    try:
        conn = resolve_connection(workspace)
    except ConfigError as exc:
        if os.environ.get(ENV_URL, "").strip():  # a URL without its token
            return Availability(None, None, False, str(exc), can_start=False)
        return Availability(
            None,
            None,
            False,
            "Label Studio is not running in this workspace: press Start Label Studio.",
            can_start=True,
        )
    if conn.source == "environment":
        if server.answers(conn.url):
            return Availability(conn.url, conn.source, True, None, can_start=False)
        return Availability(
            conn.url,
            conn.source,
            False,
            f"The Label Studio server named by {ENV_URL} ({conn.url}) does not answer.",
            can_start=False,
        )
    state = server.status(workspace)
    if state.healthy:
        return Availability(conn.url, conn.source, True, None, can_start=False)
    return Availability(
        conn.url,
        conn.source,
        False,
        "This workspace's Label Studio is stopped: press Start Label Studio.",
        can_start=True,
    )
