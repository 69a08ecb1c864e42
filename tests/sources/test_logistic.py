"""The core's clustered logit against statsmodels (the oracle) and its failure modes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm

from driftlens_core.logistic import fit_logit
from driftlens_core.source_reliance import influence_design, source_influence
from study.sources.sim.probe import SOURCE_PRESETS
from tests.sources.simtable import probe_table


def _statsmodels(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> Any:
    """statsmodels' clustered logit fit (its results object is untyped)."""
    return sm.Logit(y, x).fit(
        disp=0,
        method="newton",
        tol=1e-12,
        maxiter=200,
        cov_type="cluster",
        cov_kwds={"groups": groups},
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_statsmodels_on_random_clustered_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, g = 2000, 150
    q = rng.integers(0, g, n)
    x = np.column_stack(
        [np.ones(n), rng.integers(0, 2, n), rng.integers(0, 2, n), rng.normal(size=n)]
    )
    eta = x @ np.array([-0.3, 1.1, -0.8, 0.5]) + rng.normal(scale=0.8, size=g)[q]
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    ours = fit_logit(x, y, clusters=q)
    ref = _statsmodels(x, y, q)
    np.testing.assert_allclose(ours.coef, ref.params, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours.se, ref.bse, rtol=1e-6)
    np.testing.assert_allclose(ours.cov, ref.cov_params(), rtol=1e-6, atol=1e-12)
    assert ours.converged and not ours.separation
    assert ours.n_clusters == g
    assert ours.log_likelihood == pytest.approx(ref.llf, rel=1e-9)


def test_model_based_covariance_without_clusters() -> None:
    rng = np.random.default_rng(5)
    x = np.column_stack([np.ones(500), rng.normal(size=500)])
    y = (rng.random(500) < 0.4).astype(float)
    ours = fit_logit(x, y)
    ref = sm.Logit(y, x).fit(disp=0)
    np.testing.assert_allclose(ours.se, ref.bse, rtol=1e-6)
    assert ours.n_clusters is None


@pytest.mark.parametrize("preset", ["src-paper", "src-selective", "src-impressionable"])
def test_source_odds_ratios_equal_statsmodels_on_the_same_rows(preset: str) -> None:
    df = probe_table(SOURCE_PRESETS[preset], n_questions=300, seed=4)
    bare = df[df["variant"] == "bare"].set_index("question_id")
    par = (bare["choice"] == bare["correct_choice"]).astype(int)
    # one regression: bare + single-source + the user-first double-source rows
    rows = df[df["ordering"].isin(["", "user_first"])]
    v = rows["variant"]
    cols = {
        "parametric": rows["question_id"].map(par).to_numpy(),
        "user_present": v.str.contains("u").to_numpy(),
        "user_correct": v.str.contains(r"u\+").to_numpy(),
        "doc_present": v.str.contains("d").to_numpy(),
        "doc_correct": v.str.contains(r"d\+").to_numpy(),
    }
    y = (rows["choice"] == rows["correct_choice"]).to_numpy().astype(float)
    q = rows["question_id"].to_numpy()
    for include_bare in (True, False):
        ours = source_influence(y, **cols, clusters=q, include_bare=include_bare)
        x = influence_design(*cols.values())
        keep = np.ones(len(y), bool) if include_bare else (x[:, 2] + x[:, 4]) > 0
        ref = _statsmodels(x[keep], y[keep], q[keep])
        b = ref.params
        expected = np.exp([b[1], b[2] + b[3], b[4] + b[5]])
        got = np.array([ours.or_parametric, ours.or_user, ours.or_doc])
        np.testing.assert_allclose(got, expected, rtol=1e-6)
        cov = ref.cov_params()
        se_user = np.sqrt(cov[2, 2] + cov[3, 3] + 2 * cov[2, 3])
        assert ours.log_or_se[1] == pytest.approx(se_user, rel=1e-6)
        assert ours.self_pct == pytest.approx(100 * got[0] / got.sum(), rel=1e-12)
        assert ours.u_over_d == pytest.approx(got[1] / got[2], rel=1e-12)


def test_separation_is_flagged_not_silenced() -> None:
    x = np.column_stack([np.ones(40), np.repeat([0.0, 1.0], 20)])
    y = np.repeat([0.0, 1.0], 20)  # the column predicts y perfectly: no finite MLE
    res = fit_logit(x, y, clusters=np.arange(40) // 2)
    assert res.separation


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.ones((3, 2)), np.array([0, 1, 0]), "rank-deficient"),
        (np.ones((2, 2)), np.array([0, 1]), "more than 2 rows"),
        (np.column_stack([np.ones(4), [0, 1, 2, 3]]), np.array([0, 1, 2, 0]), "0 or 1"),
    ],
)
def test_bad_designs_are_refused(x: np.ndarray, y: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_logit(x, y)
