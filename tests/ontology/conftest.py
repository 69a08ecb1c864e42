"""Fixtures: a simulated generation run, built once per session and copied per test."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from sqlmodel import Session

from llm.specs import ModelSpec

RUN = "demo"


def _make_run(ws: Path) -> None:
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.questions import import_sample_questions
    from study.reasoning.generation import GenerationOptions, run_generation

    settings = resolve_settings(workspace=ws)
    with open_workspace_session(settings) as session:
        import_sample_questions(session=session)
        session.commit()
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"),
                run=RUN,
                perturbations="noise,bereavement,age,job_loss",
                samples=2,
            ),
            session=session,
        )


@pytest.fixture(scope="session")
def _sim_run_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("sim-run-template")
    _make_run(ws)
    return ws


@pytest.fixture
def sim_run(_sim_run_template: Path, workspace: Path) -> str:
    """The test workspace holds a simulated run named ``demo`` (its name is returned)."""
    from storage.workspace import reset_migration_memo

    for item in _sim_run_template.iterdir():
        if item.is_file():
            shutil.copy2(item, workspace / item.name)
    reset_migration_memo()
    return RUN


@pytest.fixture
def session(db: Callable[[], AbstractContextManager[Session]]) -> Iterator[Session]:
    """One session for the whole test."""
    with db() as s:
        from ontology.versions import seed_ontologies

        seed_ontologies(session=s)
        s.commit()
        yield s


def cli_json(result: Result) -> Any:
    """The JSON a ``--json`` command printed (fails the test with the output otherwise)."""
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def hold_lease(session: Session, number: int, pid: int) -> None:
    """Mark round ``number`` running under a lease held by process ``pid`` on this host."""
    import socket

    from sqlmodel import select

    from ontology.rounds import lease_key
    from storage.models import LabelingRound, WorkLease

    row = session.exec(select(LabelingRound).where(LabelingRound.number == number)).one()
    row.status = "running"
    session.add(row)
    session.add(
        WorkLease(key=lease_key(row.id or 0), host=socket.gethostname(), pid=pid, token="test")
    )
    session.commit()
