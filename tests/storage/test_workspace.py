"""Workspace creation, session scoping and the info summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from storage.migrate import head_revision
from storage.models import Question
from storage.settings import resolve_settings
from storage.workspace import init_workspace, open_workspace_session, workspace_info


def test_init_workspace_is_idempotent(tmp_path: Path) -> None:
    settings = resolve_settings(workspace=tmp_path / "ws")
    info = init_workspace(settings)
    assert (tmp_path / "ws" / "driftlens.db").exists()
    assert info.revision == head_revision() and info.up_to_date
    assert info.counts["question"] == 0 and "response" in info.counts
    again = init_workspace(settings)
    assert again.revision == info.revision and again.counts == info.counts


def test_session_commits_on_success_and_rolls_back_on_error(tmp_path: Path) -> None:
    settings = resolve_settings(workspace=tmp_path / "ws")
    with open_workspace_session(settings) as session:
        session.add(Question(external_id="a", text="kept"))
    with pytest.raises(RuntimeError), open_workspace_session(settings) as session:
        session.add(Question(external_id="b", text="lost"))
        session.flush()
        raise RuntimeError("boom")
    with open_workspace_session(settings) as session:
        ids = [q.external_id for q in session.exec(select(Question))]
        info = workspace_info(session=session, settings=settings)
    assert ids == ["a"]
    assert info.counts["question"] == 1


def test_objects_stay_readable_after_the_session(tmp_path: Path) -> None:
    settings = resolve_settings(workspace=tmp_path / "ws")
    with open_workspace_session(settings) as session:
        q = Question(external_id="a", text="t")
        session.add(q)
    assert q.id is not None and q.text == "t"


def test_info_redacts_the_password(tmp_path: Path) -> None:
    settings = resolve_settings(workspace=tmp_path / "ws")
    init_workspace(settings)
    from storage.workspace import WorkspaceInfo

    info = WorkspaceInfo(
        workspace=tmp_path, db_url="x", revision=None, head=head_revision(), counts={}
    )
    assert not info.up_to_date
