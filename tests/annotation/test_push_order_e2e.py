"""``annotate push`` checks the selection before Label Studio sees anything, and a push
that fails midway is one line and completed by the next push (``@pytest.mark.labelstudio``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest
from sqlmodel import select

from annotation.client import LabelStudioClient, LabelStudioConnection
from storage.errors import ServiceError
from storage.models import Study, StudyTask
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.seed import seed

pytestmark = pytest.mark.labelstudio


def _projects_of(conn: LabelStudioConnection, study: str) -> set[int]:
    """Ids of the server's projects made for ``study`` (plain HTTP, not our client)."""
    resp = httpx.get(
        f"{conn.url}/api/projects",
        params={"page_size": 1000},
        headers={"Authorization": f"Token {conn.api_key}"},
        timeout=60,
    )
    resp.raise_for_status()
    body = resp.json()
    rows: Sequence[Mapping[str, Any]] = body["results"] if isinstance(body, dict) else body
    tag = f"(driftlens study: {study})"
    return {int(p["id"]) for p in rows if tag in str(p.get("description") or "")}


@pytest.mark.parametrize(
    ("select_arg", "says"),
    [
        ("questions=nope", "No question with external id 'nope'"),
        ("tier=core", "The selection makes no question_checks task"),
    ],
)
def test_a_bad_or_empty_selection_creates_no_project(
    run_cli: Any, ls_connection: LabelStudioConnection, select_arg: str, says: str
) -> None:
    """On the old code the project was created (and recorded) before the tasks were built."""
    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    before = _projects_of(ls_connection, "question_checks")
    res = run_cli("annotate", "push", "question_checks", "--select", select_arg)
    assert res.code != 0
    (line,) = res.err.strip().splitlines()
    assert says in line, line
    with open_workspace_session(resolve_settings()) as s:
        assert s.exec(select(Study)).all() == []
    assert _projects_of(ls_connection, "question_checks") <= before


def test_a_push_failing_midway_mocked_fault_is_one_line_and_the_next_push_completes_it(
    run_cli: Any, ls_client: LabelStudioClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mocked fault: Label Studio takes two of four tasks and then fails (a real server that
    fails on cue mid-import cannot be had); everything else is the real server."""
    with open_workspace_session(resolve_settings()) as s:
        seed(s)
    real_import = LabelStudioClient.import_tasks

    def fails_midway(
        self: LabelStudioClient, project_id: int, tasks: Sequence[Mapping[str, Any]]
    ) -> int:
        real_import(self, project_id, tasks[:2])
        raise ServiceError(f"Label Studio at {self.url} refused to import tasks (HTTP 500).")

    monkeypatch.setattr(LabelStudioClient, "import_tasks", fails_midway)
    failed = run_cli("annotate", "push", "question_checks")
    assert failed.code != 0
    (line,) = failed.err.strip().splitlines()
    with open_workspace_session(resolve_settings()) as s:
        (study,) = s.exec(select(Study)).all()
        assert s.exec(select(StudyTask)).all() == []  # the failed push linked nothing
    project_id = study.ls_project_id
    assert project_id is not None
    assert f"Project {project_id} is kept" in line and "push again" in line, line
    assert len(ls_client.list_tasks(project_id)) == 2

    monkeypatch.setattr(LabelStudioClient, "import_tasks", real_import)
    again = run_cli("annotate", "push", "question_checks", "--json")
    assert again.code == 0, again.err
    done = again.json()
    assert (done["project_id"], done["project_created"]) == (project_id, False)
    assert (done["selected"], done["imported"], done["already_present"]) == (4, 2, 2)
    assert done["linked"] == 2
    tasks = ls_client.list_tasks(project_id)
    assert sorted(t.data["external_key"] for t in tasks) == [f"question:q{i}" for i in range(4)]
    with open_workspace_session(resolve_settings()) as s:
        assert len(s.exec(select(StudyTask)).all()) == 4
