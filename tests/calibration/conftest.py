"""A simulated conflicts run, judged by a biased judge, with a human slice from the pool."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import pytest
from sqlmodel import Session

from llm.specs import ModelSpec

RUN = "calibrated-sim"


@dataclass(frozen=True)
class Slice:
    """What the fixture pushed and pulled."""

    run: str
    answers: int
    tasks: int
    project_id: int


def make_slice(
    session: Session,
    *,
    limit: int | None,
    flip: float = 0.2,
    samples: int = 2,
    questions: tuple[str, ...] = (),
) -> Slice:
    """Generate, judge (sim/judge-lenient), push a slice, let the pool answer it, pull it."""
    from annotation.selection import Selection
    from annotation.simulated import AnnotatorPool, OfflineLabelStudio
    from annotation.sync import ensure_project, pull, push, tasks_to_push
    from study.conflicts.items import import_bank_file
    from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
    from study.conflicts.score import judge_conflict_run

    import_bank_file(None, session=session)
    generate_conflicts(
        ConflictGenerationOptions(
            model=ModelSpec.parse("sim/mc-balanced"), run=RUN, doses=(0, 6), samples=samples, seed=3
        ),
        session=session,
    )
    judge_conflict_run(RUN, ModelSpec.parse("sim/judge-lenient"), session=session)
    session.commit()
    client = OfflineLabelStudio()
    sel = Selection(run=RUN, limit=limit, seed=1, questions=questions)
    tasks = tasks_to_push("conflict_rubric", sel, session=session)
    project = ensure_project("conflict_rubric", client=client, session=session)
    session.commit()
    push("conflict_rubric", tasks, client=client, session=session)
    session.commit()
    AnnotatorPool(flip=flip, seed=2).annotate(client, "conflict_rubric", project.project_id)
    pull("conflict_rubric", client=client, session=session)
    session.commit()
    from annotation.tasks import count_tasks

    answers = count_tasks("conflict_rubric", Selection(run=RUN), session=session)
    return Slice(RUN, answers, len(tasks), project.project_id)


@pytest.fixture
def pulled_slice(
    db: Callable[[], AbstractContextManager[Session]],
) -> Callable[..., Slice]:
    """``pulled_slice(limit=..., ...)`` builds the run and its human slice in the workspace."""

    def build(**kwargs: object) -> Slice:
        with db() as session:
            return make_slice(session, **kwargs)  # type: ignore[arg-type]

    return build
