"""Memory conflicts and source reliance in ``driftlens compare`` on simulated runs."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sqlmodel import Session
from statsmodels.stats.contingency_tables import mcnemar

from llm.specs import ModelSpec
from study.compare import CompareOptions, compare_runs


def test_conflicts_rubric_rows_per_dose_with_wilcoxon_and_both_judges(session: Session) -> None:
    from study.conflicts.items import import_bank_file
    from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
    from study.conflicts.score import judge_conflict_run

    import_bank_file(None, session=session)
    for run, model in (("bal", "sim/mc-balanced"), ("lit", "sim/mc-literal")):
        opts = ConflictGenerationOptions(
            model=ModelSpec.parse(model), run=run, doses=(6,), samples=1
        )
        generate_conflicts(opts, session=session)
        for judge in ("sim/judge-strict", "sim/judge-lenient"):
            judge_conflict_run(run, ModelSpec.parse(judge), session=session)
    c = compare_runs(["bal", "lit"], instrument="conflicts", session=session,
                     options=CompareOptions(n_boot=400))  # fmt: skip
    keys = {(r.statistic, r.scope) for r in c.rows}
    assert {("total (D1–D5)", "6 distractors"), ("D1", "6 distractors"),
            ("D3", "6 distractors")} <= keys  # fmt: skip
    row = next(r for r in c.rows if (r.statistic, r.scope) == ("D3", "6 distractors"))
    assert row.test == "Wilcoxon signed-rank" and row.kind == "ordinal"
    # the oracle: scipy's Wilcoxon on the instances' mean D3 differences, from the raw table
    from study.conflicts.analysis import stored_table

    tabs = {
        run: stored_table([run], session=session).query("distractors == 6")
        .set_index(["instance_id", "judge"])["d3"]
        for run in ("bal", "lit")
    }  # fmt: skip
    paired = pd.concat(tabs, axis=1, join="inner").dropna()  # one judge's score in both runs
    per_instance = (paired["lit"] - paired["bal"]).groupby(level="instance_id").mean()
    d = per_instance[per_instance != 0]
    tied = np.unique(np.abs(d)).size < d.size
    ref = stats.wilcoxon(d, method="approx" if tied or d.size > 50 else "exact")
    assert row.p_test == pytest.approx(float(ref.pvalue), abs=1e-12)
    assert row.n_items == per_instance.size
    item = c.items[0]
    assert "judge-strict" in item.text_a and "judge-lenient" in item.text_a
    assert "[scores]" in item.text_b


def test_sources_par_plus_pairs_questions_both_runs_answered_right(
    db: Callable[[], AbstractContextManager[Session]],
) -> None:
    from study.sources.items import shipped_items
    from study.sources.plan import SourcesConfig
    from study.sources.sim.wiring import backend_for
    from study.sources.store import run_stored_sources

    items = shipped_items()[:8]
    with db() as session:
        for run, model in (("rigid", "sim/src-rigid"), ("impr", "sim/src-impressionable")):
            backend = backend_for(ModelSpec.parse(model), items)
            run_stored_sources(run, items, backend, [SourcesConfig()], session=session)
    from study.sources.store import stored_run_table
    from study.sources.table import validate

    with db() as session:
        c = compare_runs(["rigid", "impr"], instrument="sources", session=session,
                         options=CompareOptions(n_boot=400))  # fmt: skip
        tables = {r: validate(stored_run_table(r, session=session)) for r in ("rigid", "impr")}
    row = next(r for r in c.rows if (r.statistic, r.scope) == ("PAR+", "user"))
    # the oracle: PAR+ (user) by hand on the u- probes of questions both bare answers got right
    keep = {}
    for run, t in tables.items():
        u = t[(t["variant"] == "u-") & (t["bare_correct"] == 1)]
        cols = zip(u["question_id"], u["tier"], u["choice"], u["bare_choice"], strict=True)
        keep[run] = {(q, tier): int(ch == b) for q, tier, ch, b in cols}
    shared = sorted(set(keep["rigid"]) & set(keep["impr"]))
    a = np.array([keep["rigid"][k] for k in shared])
    b = np.array([keep["impr"][k] for k in shared])
    assert row.value_a == pytest.approx(a.mean()) and row.value_b == pytest.approx(b.mean())
    table = np.array([[0, int(((a == 0) & (b == 1)).sum())], [int(((a == 1) & (b == 0)).sum()), 0]])
    assert row.p_exact == pytest.approx(float(mcnemar(table, exact=True).pvalue), abs=1e-12)
    assert row.n_items == len({q for q, _ in shared})
    assert row.margin == 0.05  # the instrument's default: 5 percentage points
    assert row.test.startswith("McNemar")
    # the odds ratios of the joint fit are each run's own fit (the run-B columns make the
    # joint model separable); the oracle fits each run alone through the instrument's code
    from driftlens_core.source_reliance import source_influence
    from study.sources.compare import _logit_rows

    ids = {
        run: set(t["dataset"] + "/" + t["question_id"]) for run, t in tables.items()
    }  # fmt: skip
    shared_items = ids["rigid"] & ids["impr"]
    ors = {r.scope: r for r in c.rows if r.statistic == "log odds ratio"}
    assert set(ors) == {"parametric", "user", "doc"}
    for run, attr in (("rigid", "value_a"), ("impr", "value_b")):
        rows = _logit_rows(tables[run], shared_items)
        fit = source_influence(rows["correct"], rows["bare_correct"], rows["user_present"],
                               rows["user_correct"], rows["doc_present"], rows["doc_correct"],
                               clusters=rows["item"])  # fmt: skip
        assert getattr(ors["user"], attr) == pytest.approx(np.log(fit.or_user), abs=1e-6)
        assert getattr(ors["doc"], attr) == pytest.approx(np.log(fit.or_doc), abs=1e-6)
    assert ors["user"].test == "Wald (question-clustered)" and ors["user"].se > 0
