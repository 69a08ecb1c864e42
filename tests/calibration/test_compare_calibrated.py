"""``driftlens compare`` of two conflicts runs adds B − A calibrated to both runs' human slices."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from sqlmodel import Session

from llm.specs import ModelSpec


def _two_runs_with_slices(session: Session, *, limit_b: int) -> None:
    from annotation.selection import Selection
    from annotation.simulated import AnnotatorPool, OfflineLabelStudio
    from annotation.sync import ensure_project, pull, push, tasks_to_push
    from study.conflicts.items import import_bank_file
    from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
    from study.conflicts.score import judge_conflict_run

    import_bank_file(None, session=session)
    client = OfflineLabelStudio()
    project = ensure_project("conflict_rubric", client=client, session=session)
    session.commit()
    for run, model, limit in (
        ("cmp-a", "sim/mc-balanced", 40),
        ("cmp-b", "sim/mc-literal", limit_b),
    ):
        generate_conflicts(
            ConflictGenerationOptions(
                model=ModelSpec.parse(model), run=run, doses=(6,), samples=2, seed=4
            ),
            session=session,
        )
        judge_conflict_run(run, ModelSpec.parse("sim/judge-lenient"), session=session)
        session.commit()
        sel = Selection(run=run, limit=limit, seed=1)
        push("conflict_rubric", tasks_to_push("conflict_rubric", sel, session=session),
             client=client, session=session)  # fmt: skip
        session.commit()
    AnnotatorPool(seed=3).annotate(client, "conflict_rubric", project.project_id)
    pull("conflict_rubric", client=client, session=session)
    session.commit()


def test_compare_adds_calibrated_rows_beside_the_model_only_ones(
    db: Callable[[], AbstractContextManager[Session]],
) -> None:
    from study.compare.service import compare_runs
    from study.compare.types import CompareOptions

    with db() as session:
        _two_runs_with_slices(session, limit_b=40)
        result = compare_runs(
            ["cmp-a", "cmp-b"], instrument="conflicts", session=session,
            options=CompareOptions(n_boot=200),
        )  # fmt: skip
    rows = result.rows
    d2 = [r for r in rows if r.statistic == "D2 calibrated (sim/judge-lenient)"]
    assert len(d2) == 1 and d2[0].test == "PPI++ z"
    plain = [r for r in rows if r.statistic == "D2" and r.scope == d2[0].scope]
    assert plain, sorted({r.statistic for r in rows})
    # mc-literal explains less than mc-balanced: B − A is negative either way
    assert d2[0].diff < 0 and d2[0].ci_low < d2[0].diff < d2[0].ci_high
    assert "human labels" in d2[0].test_detail


def test_too_few_humans_in_one_run_leave_only_the_model_only_rows(
    db: Callable[[], AbstractContextManager[Session]],
) -> None:
    from study.compare.service import compare_runs
    from study.compare.types import CompareOptions

    with db() as session:
        _two_runs_with_slices(session, limit_b=8)
        result = compare_runs(
            ["cmp-a", "cmp-b"], instrument="conflicts", session=session,
            options=CompareOptions(n_boot=200),
        )  # fmt: skip
    assert not [r for r in result.rows if "calibrated" in r.statistic]
    assert [r for r in result.rows if r.statistic == "D2"]
