"""Stored file paths are workspace-relative, so a copied workspace reads its own files."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session

from storage.paths import resolve_stored_path, stored_path
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session


def test_paths_inside_the_workspace_are_stored_relative_and_resolve_in_a_copy(
    tmp_path: Path,
) -> None:
    original, copy = tmp_path / "a", tmp_path / "b"
    with open_workspace_session(resolve_settings(workspace=original)) as session:
        text = stored_path(original / "reports" / "demo", session=session)
        outside = stored_path(tmp_path / "elsewhere", session=session)
    assert text == "reports/demo"
    assert outside == str((tmp_path / "elsewhere").resolve())
    with open_workspace_session(resolve_settings(workspace=copy)) as session:
        assert resolve_stored_path(text, session=session) == copy.resolve() / "reports" / "demo"
        assert resolve_stored_path(outside, session=session) == Path(outside)
        # An absolute path stored by an older version, into the original's reports/ folder:
        legacy = str(original.resolve() / "reports" / "demo" / "report.html")
        assert resolve_stored_path(legacy, session=session) == Path(legacy)  # copy lacks it
        (copy / "reports" / "demo").mkdir(parents=True)
        (copy / "reports" / "demo" / "report.html").write_text("x", encoding="utf-8")
        assert resolve_stored_path(legacy, session=session) == (
            copy.resolve() / "reports" / "demo" / "report.html"
        )


def test_a_session_without_a_workspace_keeps_paths_as_given(tmp_path: Path) -> None:
    session = Session()
    assert stored_path(tmp_path / "x", session=session) == str((tmp_path / "x").resolve())
    assert resolve_stored_path("reports/x", session=session) == Path("reports/x")
