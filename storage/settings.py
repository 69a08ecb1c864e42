"""Where the workspace and its database live: arguments, then environment, then defaults."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

ENV_WORKSPACE = "DRIFTLENS_WORKSPACE"
ENV_DB_URL = "DRIFTLENS_DB_URL"
DEFAULT_WORKSPACE = Path("driftlens-workspace")
DB_FILENAME = "driftlens.db"


class Settings(BaseModel):
    """Resolved storage settings. Holds no secrets beyond what the user put in ``db_url``."""

    model_config = ConfigDict(frozen=True)

    version: int = 1
    workspace: Path
    db_url: str

    @property
    def is_sqlite(self) -> bool:
        """Whether the database is an SQLite file (or memory) rather than a server."""
        return self.db_url.startswith("sqlite")

    def display_url(self) -> str:
        """The database URL with any password hidden, for logs and screens."""
        return redacted_url(self.db_url)


def default_db_url(workspace: Path) -> str:
    """The embedded default: an SQLite file inside the workspace (absolute path)."""
    return f"sqlite:///{(workspace / DB_FILENAME).resolve()}"


def resolve_settings(*, workspace: Path | None = None, db_url: str | None = None) -> Settings:
    """Resolve the settings.

    Args:
        workspace: the workspace folder; else ``$DRIFTLENS_WORKSPACE``; else
            ``./driftlens-workspace``. Always made absolute.
        db_url: an SQLAlchemy URL; else ``$DRIFTLENS_DB_URL``; else
            ``sqlite:///<workspace>/driftlens.db``.

    Returns:
        The frozen :class:`Settings`.
    """
    if workspace is None:
        env_ws = os.environ.get(ENV_WORKSPACE, "").strip()
        workspace = Path(env_ws) if env_ws else DEFAULT_WORKSPACE
    workspace = Path(workspace).expanduser().resolve()
    if not db_url:
        db_url = os.environ.get(ENV_DB_URL, "").strip() or default_db_url(workspace)
    return Settings(workspace=workspace, db_url=db_url)


_PASSWORD_RE = re.compile(r"(?P<head>^[a-zA-Z][\w+.-]*://[^:/@?#]*:)(?P<pw>[^@/?#]*)(?P<at>@)")


def redacted_url(url: str) -> str:
    """Return ``url`` with its password (if any) replaced by ``***``.

    Works on strings SQLAlchemy cannot parse too, so it is safe to use in error messages.
    """
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:
        return _PASSWORD_RE.sub(r"\g<head>***\g<at>", url)
    if parsed.password is None:
        return parsed.render_as_string(hide_password=False)
    return parsed.render_as_string(hide_password=True)
