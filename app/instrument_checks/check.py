"""One check of one instrument plugin: its name, the plugin, the function that runs it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlmodel import Session

from driftlens_plugins import InstrumentPlugin
from storage.settings import Settings


@dataclass(frozen=True)
class InstrumentCheck:
    """One check of one plugin: ``run(session)`` raises ``AssertionError`` when it fails."""

    name: str
    plugin: InstrumentPlugin
    func: Callable[[InstrumentPlugin, Session, Settings], None]

    def run(self, session: Session, *, settings: Settings | None = None) -> None:
        """Run the check on a workspace session (a fresh, empty workspace).

        Args:
            session: a session on the workspace's database.
            settings: that workspace's settings (background jobs and shard workers open
                their own sessions with them); default: the environment's
                (``DRIFTLENS_WORKSPACE``, ``DRIFTLENS_DB_URL``).
        """
        from storage.settings import resolve_settings

        self.func(self.plugin, session, settings or resolve_settings())
