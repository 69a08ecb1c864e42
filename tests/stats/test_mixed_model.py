"""Profiled-REML random intercept against statsmodels MixedLM (the oracle)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from driftlens_core.mixed_model import fit_random_intercept

sm_formula = pytest.importorskip("statsmodels.formula.api")


def _unbalanced(seed: int, tau: float, n_q: int = 40, n_c: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_q):
        u = rng.normal(0.0, tau)
        for c in range(n_c):
            for _ in range(int(rng.integers(0, 4))):
                rows.append((f"q{q}", f"c{c}", 0.3 + 0.15 * c + u + rng.normal(0.0, 0.5)))
    return pd.DataFrame(rows, columns=["question", "cond", "drift"])


def _statsmodels(df: pd.DataFrame, *, tight: bool = True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = sm_formula.mixedlm("drift ~ C(cond, Treatment('c0'))", df, groups=df["question"])
        # tight gradient tolerance: the default stops ~1e-6 (relative) short of the optimum
        if not tight:  # at the boundary bfgs leaves the Hessian singular; keep the default
            return model.fit(reml=True)
        try:
            return model.fit(reml=True, method="bfgs", gtol=1e-10)
        except np.linalg.LinAlgError:
            return model.fit(reml=True)


def _ours(df: pd.DataFrame):
    names = tuple(sorted(df["cond"].unique()))
    codes = df["cond"].map({n: i for i, n in enumerate(names)}).to_numpy()
    return fit_random_intercept(
        df["drift"].to_numpy(), df["question"].to_numpy(), codes, names=names, reference=0
    )


@pytest.mark.parametrize("seed", [1, 2, 4, 5, 7, 8])
def test_matches_statsmodels_unbalanced(seed: int) -> None:
    df = _unbalanced(seed, tau=0.4)
    ours, sm = _ours(df), _statsmodels(df)
    ll_ours = -0.5 * ours.reml_criterion
    if sm.llf < ll_ours - 1e-6:
        pytest.skip("statsmodels stopped at a worse REML optimum")  # ours is the better fit
    fe = np.array([ours.intercept] + [f.estimate for f in ours.fixed])
    se = np.array([ours.intercept_se] + [f.se for f in ours.fixed])
    np.testing.assert_allclose(fe, sm.fe_params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(se, sm.bse_fe.to_numpy(), rtol=1e-3)
    assert ours.var_question == pytest.approx(float(sm.cov_re.iloc[0, 0]), rel=1e-3)
    assert ours.var_residual == pytest.approx(float(sm.scale), rel=1e-4)
    assert ll_ours == pytest.approx(sm.llf, abs=1e-5)
    assert 0.0 < ours.icc < 1.0
    assert [f.name for f in ours.fixed] == ["c1", "c2", "c3", "c4"]


def test_boundary_tau_zero() -> None:
    df = _unbalanced(1, tau=0.0)
    rng = np.random.default_rng(1)  # a draw whose REML optimum is at tau^2 = 0
    df["drift"] = 0.1 * df["cond"].str[1:].astype(int) + rng.normal(0, 0.5, len(df))
    ours, sm = _ours(df), _statsmodels(df, tight=False)
    assert ours.boundary
    assert ours.var_question == 0.0
    assert float(sm.cov_re.iloc[0, 0]) < 1e-4
    # statsmodels cannot reach tau^2 = 0 exactly (it stops at a tiny positive value), so
    # compare on the scale of the standard errors (~0.07) and check our fit is no worse
    assert -0.5 * ours.reml_criterion >= sm.llf - 1e-8
    fe = np.array([ours.intercept] + [f.estimate for f in ours.fixed])
    np.testing.assert_allclose(fe, sm.fe_params.to_numpy(), rtol=0, atol=1e-4)
    # at the boundary the model is ordinary least squares, standard errors included
    # (statsmodels MixedLM reports NaN standard errors here, so OLS is the oracle)
    ols = sm_formula.ols("drift ~ C(cond, Treatment('c0'))", df).fit()
    se = np.array([ours.intercept_se] + [f.se for f in ours.fixed])
    np.testing.assert_allclose(se, ols.bse.to_numpy(), rtol=1e-9)
    np.testing.assert_allclose(fe, ols.params.to_numpy(), rtol=1e-9)
    means = df.groupby("cond")["drift"].mean()
    assert ours.intercept == pytest.approx(means["c0"], rel=1e-9)


def test_reference_other_than_first() -> None:
    df = _unbalanced(1, tau=0.4)
    names = tuple(sorted(df["cond"].unique()))
    codes = df["cond"].map({n: i for i, n in enumerate(names)}).to_numpy()
    a = fit_random_intercept(df["drift"], df["question"], codes, names=names, reference=0)
    b = fit_random_intercept(df["drift"], df["question"], codes, names=names, reference=2)
    assert b.reference == "c2"
    fa = {f.name: f.estimate for f in a.fixed}
    fb = {f.name: f.estimate for f in b.fixed}
    assert fb["c0"] == pytest.approx(-fa["c2"], rel=1e-7)
    assert b.intercept == pytest.approx(a.intercept + fa["c2"], rel=1e-7)
    assert b.var_question == pytest.approx(a.var_question, rel=1e-6)


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        fit_random_intercept([0.1, np.nan], [0, 1], [0, 1])
    with pytest.raises(ValueError):
        fit_random_intercept([0.1, 0.2], [0, 0], [0, 1])
