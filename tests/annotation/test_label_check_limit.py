"""A limited label check is chosen over keys in the query, before any task is built (#20 E).

The keys-first path must give exactly the tasks of the old one (build every task, then keep
the first ``limit`` in the seeded order), count what the old one counted, and leave out a
label whose step is no longer among its response's parsed steps. Checked on SQLite and,
where ``DRIFTLENS_TEST_PG_URL`` is set, PostgreSQL (its steps column is ``jsonb``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event
from sqlmodel import Session, select

from annotation.kinds import get_kind
from annotation.offline import preview_tasks
from annotation.selection import TaskSpec, parse_selection
from annotation.tasks import INCLUSION_FIELD, build_tasks, count_tasks, order_key
from storage.errors import NotFoundError
from storage.models import LabelerSpec, OntologyVersion, Response, StepLabel
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.annotation.seed import _id, seed
from tests.storage.conftest import pg_url  # noqa: F401  (the fixture, shared)


def _more_labels(session: Session) -> None:
    """Labels on every step of the seeded run (two repeats), and one on a step not parsed."""
    version = _id(session.exec(select(OntologyVersion)).one().id)
    labeler = _id(session.exec(select(LabelerSpec)).one().id)
    taken = {
        (lab.response_id, lab.step_index, lab.repeat) for lab in session.exec(select(StepLabel))
    }
    for resp in session.exec(select(Response)).all():
        for step in range(len(resp.steps)):
            for repeat in (0, 1):
                if (resp.id, step, repeat) not in taken:
                    session.add(
                        StepLabel(
                            response_id=_id(resp.id),
                            step_index=step,
                            labeler_id=labeler,
                            ontology_version_id=version,
                            repeat=repeat,
                            category="Protective",
                            symbol="Security and stability",
                        )
                    )
        session.add(  # step 9 of a three-step response: no task
            StepLabel(
                response_id=_id(resp.id),
                step_index=9,
                labeler_id=labeler,
                ontology_version_id=version,
                category="Protective",
                symbol="Security and stability",
            )
        )
    session.flush()


def _old_way(everything: list[TaskSpec], limit: int, seed: int) -> list[str]:
    """What build_tasks returned before the keys-first path: every task built, then, when
    the limit cuts, sorted in the seeded order and cut."""
    if len(everything) <= limit:
        return [t.key for t in everything]
    return [t.key for t in sorted(everything, key=lambda t: order_key(seed, t.key))[:limit]]


def _check(session: Session) -> None:
    seed(session)
    _more_labels(session)
    assert get_kind("label_check").keyed is not None  # else this tests the old path twice
    everything = build_tasks("label_check", parse_selection([]), session=session)
    # 4 responses x 3 parsed steps x 2 repeats; the step-9 labels make no task
    assert len(everything) == 24
    assert all(t.data["step"] and t.data["step_index"] < 3 for t in everything)
    for limit, seed_value in ((1, 0), (5, 0), (5, 7), (24, 3), (30, 1)):
        sel = parse_selection([f"limit={limit}", f"seed={seed_value}", "run=demo"])
        tasks = build_tasks("label_check", sel, session=session)
        assert [t.key for t in tasks] == _old_way(everything, limit, seed_value)
        by_key = {t.key: t.data for t in everything}
        # the same task, not only its key; only its inclusion probability is the limit's
        assert all({**t.data, INCLUSION_FIELD: 1.0} == by_key[t.key] for t in tasks)
        assert {t.data[INCLUSION_FIELD] for t in tasks} == {min(1.0, limit / 24)}
        assert count_tasks("label_check", sel, session=session) == 24
        preview = preview_tasks("label_check", sel, session=session)
        assert (preview.tasks, preview.available) == (min(limit, 24), 24)
    # only the chosen labels' responses are read (the old path read every label's)
    loaded: list[int] = []

    def _seen(target: Response, _context: object) -> None:
        loaded.append(int(target.id or 0))

    session.expunge_all()  # so a read loads rows again instead of finding them in the session
    event.listen(Response, "load", _seen)
    try:
        one = build_tasks("label_check", parse_selection(["limit=1"]), session=session)
        assert count_tasks("label_check", parse_selection(["limit=1"]), session=session) == 24
    finally:
        event.remove(Response, "load", _seen)
    assert len(one) == 1 and len(loaded) == 1, loaded
    # the filters apply to the count as to the tasks
    nothing = parse_selection(["run=elsewhere", "limit=5"])
    assert count_tasks("label_check", nothing, session=session) == 0
    assert build_tasks("label_check", nothing, session=session) == []
    one_labeler = parse_selection(["labeler=keywords", "ontology=driftlens@1", "limit=3"])
    assert count_tasks("label_check", one_labeler, session=session) == 24
    assert len(build_tasks("label_check", one_labeler, session=session)) == 3


def test_limited_label_check_equals_building_every_task_sqlite() -> None:
    with open_workspace_session(resolve_settings()) as session:
        _check(session)


def test_limited_label_check_equals_building_every_task_postgres(
    pg_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    settings = resolve_settings(workspace=tmp_path, db_url=pg_url)
    with open_workspace_session(settings) as session:
        _check(session)


def test_unknown_ontology_version_is_one_sentence() -> None:
    with open_workspace_session(resolve_settings()) as session:
        seed(session)
        sel = parse_selection(["ontology=driftlens@9", "limit=2"])
        with pytest.raises(NotFoundError, match="No ontology version 'driftlens@9'"):
            count_tasks("label_check", sel, session=session)
        with pytest.raises(NotFoundError, match="No ontology version 'driftlens@9'"):
            build_tasks("label_check", sel, session=session)
