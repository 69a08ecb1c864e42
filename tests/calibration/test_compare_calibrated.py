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
    assert len(d2) == 1 and d2[0].test == "PPI++ jackknife t"
    plain = [r for r in rows if r.statistic == "D2" and r.scope == d2[0].scope]
    assert plain, sorted({r.statistic for r in rows})
    # mc-literal explains less than mc-balanced: B − A is negative either way
    assert d2[0].diff < 0 and d2[0].ci_low < d2[0].diff < d2[0].ci_high
    assert "human labels" in d2[0].test_detail


def test_compare_row_is_each_runs_own_calibrated_headline(
    db: Callable[[], AbstractContextManager[Session]],
) -> None:
    """One code path: A and B of a calibrated row are the report's own headlines, intervals
    included (the question jackknife, not a second estimator), and its p inverts its
    (accelerated t) interval."""
    import math

    from scipy import stats as sps

    from study.compare.service import compare_runs
    from study.compare.types import CompareOptions
    from study.conflicts.calibrated import calibrated_scores

    with db() as session:
        _two_runs_with_slices(session, limit_b=40)
        result = compare_runs(
            ["cmp-a", "cmp-b"], instrument="conflicts", session=session,
            options=CompareOptions(n_boot=200),
        )  # fmt: skip
        own = {}
        for run in ("cmp-a", "cmp-b"):
            cal = calibrated_scores([run], session=session, bootstrap=200, seed=0)
            assert cal is not None
            own[run] = {(r.judge, r.what): r for r in cal.rows}
    checked = 0
    for row in result.rows:
        if " calibrated (" not in row.statistic:
            continue
        stat, judge = row.statistic.split(" calibrated (")
        what = "total" if stat.startswith("total") else stat.lower()
        ha, hb = own["cmp-a"][(judge.rstrip(")"), what)], own["cmp-b"][(judge.rstrip(")"), what)]
        assert ha.headline == hb.headline == "calibrated"
        assert ha.calibrated is not None and hb.calibrated is not None
        # the same items in another order: equal to the last bits of a float sum
        assert math.isclose(row.value_a, ha.calibrated, rel_tol=1e-12)
        assert math.isclose(row.value_b, hb.calibrated, rel_tol=1e-12)
        assert ha.calibrated_ci is not None and hb.calibrated_ci is not None
        for h in (ha, hb):
            assert h.calibrated_ci is not None
            lo, hi = h.calibrated_ci
            assert f"{h.calibrated:.2f} [{lo:.2f}, {hi:.2f}]" in row.test_detail
        # the p-value inverts the row's own interval: its ends are d + SE · z / (1 − a z) at
        # z = ∓q (the jackknife's acceleration a), so q and a are read back from the ends
        lo_, hi_ = (row.diff - row.ci_low) / row.se, (row.ci_high - row.diff) / row.se
        q = 2 * lo_ * hi_ / (lo_ + hi_)
        acc = (1 / lo_ - 1 / hi_) / 2
        df = next(k for k in range(1, 400) if math.isclose(sps.t.ppf(0.975, k), q, rel_tol=1e-9))
        r = -row.diff / row.se
        assert math.isclose(row.p_boot, 2 * sps.t.sf(abs(r / (1 + acc * r)), df), rel_tol=1e-9)
        assert (row.p_boot < 0.05) == (not row.ci_low <= 0.0 <= row.ci_high)
        checked += 1
    assert checked >= 5, [r.statistic for r in result.rows]


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
