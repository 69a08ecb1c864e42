"""File paths stored in the database are relative to the workspace they belong to.

A workspace is a folder plus its database; copying or moving the folder must keep every
stored path pointing inside the copy. :func:`stored_path` turns a path under the workspace
into a relative one for storing; :func:`resolve_stored_path` turns a stored path back into
a path under the session's workspace. Sessions opened by
:func:`storage.workspace.open_workspace_session` carry their workspace in
``session.info["workspace"]``.
"""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session


def _workspace(session: Session) -> Path | None:
    ws = session.info.get("workspace")
    return Path(ws).resolve() if ws is not None else None


def stored_path(path: str | Path, *, session: Session) -> str:
    """The form of ``path`` to store: relative (POSIX) when it is inside the workspace."""
    full = Path(path).resolve()
    ws = _workspace(session)
    if ws is not None and full.is_relative_to(ws):
        return full.relative_to(ws).as_posix()
    return str(full)


def resolve_stored_path(text: str, *, session: Session) -> Path:
    """The path a stored path means in this session's workspace.

    Relative paths are joined to the workspace. An absolute path stored before paths were
    relative, and pointing into another workspace's ``reports`` folder (the workspace was
    copied), is mapped to the same place in this workspace when that exists.
    """
    path = Path(text)
    ws = _workspace(session)
    if ws is None:
        return path
    if not path.is_absolute():
        return ws / path
    if path.is_relative_to(ws) or "reports" not in path.parts:
        return path
    index = len(path.parts) - 1 - path.parts[::-1].index("reports")
    mapped = ws.joinpath(*path.parts[index:])
    return mapped if mapped.exists() else path
