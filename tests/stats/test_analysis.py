"""The orchestration: schema, flags, multiple models, both implementations."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from driftlens_core.analysis import analyze_table
from tests.stats.sim import CONDITION_KEYS, simulate_table


def _study(seed: int = 0, **kw: object) -> tuple[pd.DataFrame, dict[str, float]]:
    return simulate_table(
        np.random.default_rng(seed),
        n_questions=kw.pop("n_questions", 50),
        attributes={"lonely": 0.0, "rich": 0.4},
        life_events={"divorce": 1.2},
        n_noise=2,
        **kw,
    )


def test_schema_and_values(impl: str) -> None:
    df, truth = _study(samples=2)
    res = analyze_table(df, bootstrap=2000, seed=3)
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    model = d["models"]["model"]
    assert set(model["metrics"]) == {"dtw", "sri"}
    assert {"spearman", "pearson"} <= set(model["convergent_validity"])
    m = model["metrics"]["dtw"]
    assert {"noise_floor", "conditions", "mixed_model", "null_test", "validity"} <= set(m)
    assert set(m["noise_floor"]) >= {"mean", "sd"}
    assert set(m["conditions"]) == set(truth)
    for c in m["conditions"].values():
        assert set(c) >= CONDITION_KEYS
    mm = m["mixed_model"]
    assert {"intercept", "fixed", "var_question", "var_residual"} <= set(mm)
    assert set(mm["fixed"]) == set(truth) - {"none"}
    assert {"estimate", "se"} <= set(mm["fixed"]["rich"])
    div = m["conditions"]["divorce"]
    assert div["ci_low"] > 0 and div["p_adjusted"] < 0.001 and div["equivalence_bound"] is None
    assert m["conditions"]["none"]["p_adjusted"] is None  # not in the BH family
    assert m["validity"]["sensitivity"]["passed"] is True
    assert m["null_test"]["available"] is True
    assert d["meta"]["implementation"] in {"python", "compiled"}


def test_same_seed_same_json_across_implementations() -> None:
    from driftlens_core import use_implementation

    df, _ = _study(1)
    with use_implementation("python"):
        a = analyze_table(df, bootstrap=1000, seed=9).to_dict()
    with use_implementation("compiled"):
        b = analyze_table(df, bootstrap=1000, seed=9).to_dict()
    a["meta"].pop("implementation")
    b["meta"].pop("implementation")
    assert a == b


def test_d_rel_point_estimate_matches_pandas() -> None:
    df, _ = _study(2)
    res = analyze_table(df, bootstrap=50, seed=0)
    noise = df.loc[df["condition_class"] == "noise", "dtw"]
    rich = df.loc[df["condition"] == "rich", "dtw"]
    c = res.models[0].metric("dtw").condition("rich")
    assert c.d_rel == pytest.approx((rich.mean() - noise.mean()) / noise.std(ddof=1), rel=1e-10)
    none = df.loc[df["condition"] == "none", "dtw"]
    pooled = np.sqrt(
        ((len(rich) - 1) * rich.var() + (len(none) - 1) * none.var()) / (len(rich) + len(none) - 2)
    )
    assert c.cohens_d == pytest.approx((rich.mean() - none.mean()) / pooled, rel=1e-10)


def test_condition_with_one_question_is_flagged() -> None:
    df, _ = _study(3)
    extra = pd.DataFrame(
        {
            "question_id": ["q0"],
            "condition": ["solo"],
            "condition_class": ["attribute"],
            "dtw": [0.5],
            "sri": [0.4],
        }
    )
    res = analyze_table(pd.concat([df, extra], ignore_index=True), bootstrap=200, seed=0)
    solo = res.models[0].metric("dtw").condition("solo")
    assert solo.flags and "two questions" in solo.flags[0]
    assert np.isnan(solo.ci_low) and np.isnan(solo.p_adjusted)
    assert solo.to_dict()["ci_low"] is None


def test_several_models_independent_and_reproducible() -> None:
    a, _ = _study(4)
    b, _ = _study(5)
    df = pd.concat([a.assign(model="m1"), b.assign(model="m2")], ignore_index=True)
    r1 = analyze_table(df, bootstrap=500, seed=7)
    r2 = analyze_table(df, bootstrap=500, seed=7)
    assert [m.model for m in r1.models] == ["m1", "m2"]
    assert r1.to_dict() == r2.to_dict()
    alone = analyze_table(a, bootstrap=50, seed=7).models[0].metric("dtw").condition("rich")
    assert r1.model("m1").metric("dtw").condition("rich").d_rel == pytest.approx(alone.d_rel)


def test_without_none_condition_uses_noise_reference() -> None:
    df, _ = _study(6, with_none=False)
    res = analyze_table(df, bootstrap=200, seed=0)
    m = res.models[0].metric("dtw")
    assert m.mixed_model is not None and m.mixed_model.reference == "noise0"
    assert any("reference" in f for f in m.flags)
    assert np.isnan(m.condition("rich").cohens_d)


def test_missing_noise_raises() -> None:
    df, _ = _study(7)
    with pytest.raises(ValueError, match="noise"):
        analyze_table(df[df["condition_class"] != "noise"], bootstrap=10, seed=0)


def test_label_runs_give_labeler_share() -> None:
    df, _ = _study(8, samples=2)
    rng = np.random.default_rng(0)
    twice = pd.concat([df.assign(label_run=0), df.assign(label_run=1)], ignore_index=True)
    twice["dtw"] = twice["dtw"] + rng.normal(0.0, 0.3, len(twice))
    res = analyze_table(twice, bootstrap=100, seed=0).models[0].metric("dtw")
    nd = res.noise_decomposition
    assert nd is not None
    assert nd.labeler == pytest.approx(0.09, rel=0.25)
    assert np.isfinite(nd.model) and np.isfinite(nd.between_question)


def test_an_mdd_from_fewer_than_30_questions_is_flagged_as_approximate() -> None:
    """#23 item 5: at 8 questions the MDD's power depends on the pilot draw."""
    from driftlens_core.analysis import MDD_RELIABLE_QUESTIONS

    for n_q, flagged in ((8, True), (MDD_RELIABLE_QUESTIONS, False)):
        df, _ = _study(seed=11, n_questions=n_q)
        d = analyze_table(df, bootstrap=200, seed=1).to_dict()
        conds = d["models"]["model"]["metrics"]["dtw"]["conditions"].values()
        hit = [any("MDD from" in f for f in c["flags"]) for c in conds]
        assert all(hit) if flagged else not any(hit)
