"""Aligned-rate drift (driftlens_core.rates): seed arithmetic, an oracle bootstrap, parity."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from driftlens_core import use_implementation
from driftlens_core.calibration import (
    critical_values,
    equivalence_bound,
    mdd_factor,
    mdd_with_varying_se,
    minimum_detectable,
)
from driftlens_core.logit_normal import LogitNormalFit, drift_se_curve, fit_logit_normal
from driftlens_core.rates import compare_rates, rate_noise, se_from_interval
from study.disposition.sim.model import DISPOSITION_PRESETS, ArmSetting, simulate_table


def test_seed_table4_interval_gives_mdd_3_3() -> None:
    # Table 4, reasoning on, 75% dose: drift −1.2, 95% interval [−3.2, +1.4]
    se = se_from_interval(-3.2, 1.4, 0.95)
    assert se == pytest.approx(1.1735, abs=1e-4)
    assert round(float(mdd_factor(None) * se), 1) == 3.3
    assert round(float(minimum_detectable(se)), 1) == 3.3  # the 2.8 × SE shorthand agrees


def test_seed_reasoning_off_25pct_equivalence_bound_9_2() -> None:
    # reasoning off, 25% dose: 90% interval [−9.2, +0.3] → bound 9.2, not within ±5
    bound = float(equivalence_bound(-9.2, 0.3))
    assert bound == pytest.approx(9.2)
    assert not bound <= 5.0


def test_mdd_factor_matches_the_test_used() -> None:
    assert float(mdd_factor(None)) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    f30 = float(mdd_factor(30))
    expect = np.sqrt(30 / 29) * (stats.t.ppf(0.975, 29) + stats.t.ppf(0.8, 29))
    assert f30 == pytest.approx(expect)
    assert float(mdd_factor(100_000)) == pytest.approx(float(mdd_factor(None)), abs=1e-3)
    assert np.isnan(mdd_factor(np.array([1.0]))[0])


def _small() -> tuple[np.ndarray, ...]:
    # 4 stems x 2 arms x 2 samples x 2 probes; arm 1 less aligned; one missing answer
    rows = []
    for q in range(4):
        for a in range(2):
            for s in range(2):
                for p in range(2):
                    y = float((q + p + s) % 3 != 0) if a == 0 else float((q + s) % 2 == 0)
                    rows.append((q, a, s, y))
    arr = np.array(rows)
    arr[2, 3] = np.nan  # stem 0, reference arm, sample 1
    return arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3]


def test_point_estimates_are_pooled_rates() -> None:
    q, a, s, y = _small()
    res = compare_rates(q, a, s, y, arm_names=("ref", "arm"), reference=0, n_boot=200, seed=1)
    ok = ~np.isnan(y)
    r0 = y[ok & (a == 0)].mean()
    r1 = y[ok & (a == 1)].mean()
    assert res.arm("ref").aligned_rate == pytest.approx(r0)
    assert res.arm("arm").aligned_rate == pytest.approx(r1)
    assert res.arm("arm").drift_pp == pytest.approx(100 * (r1 - r0))
    assert res.arm("ref").n_missing == 1 and res.arm("ref").n_responses == 15
    assert res.arm("arm").n_stems == 4
    assert np.isnan(res.arm("ref").ci_low)  # the reference has no interval of its own


def test_bootstrap_matches_a_row_level_oracle() -> None:
    """Same index stream, rows materialised, numpy quantiles: the plain interval agrees."""
    rng = np.random.default_rng(5)
    preset = DISPOSITION_PRESETS["disp-qwen"]
    t = simulate_table(
        preset, "self_interest", [ArmSetting(0), ArmSetting(90)], n_stems=12, rng=rng
    )
    n_boot = 300
    res = compare_rates(
        t.stem, t.arm, t.sample, t.aligned, arm_names=("r", "a"), reference=0,
        n_boot=n_boot, seed=11, expand=False,
    )  # fmt: skip
    draw = np.random.default_rng(11)
    reps = []
    for start in range(0, n_boot, 64):
        idx = draw.integers(0, 12, size=(min(64, n_boot - start), 12), dtype=np.uint16)
        for row in idx:
            take = np.concatenate([np.flatnonzero(t.stem == k) for k in row])
            y, arm = t.aligned[take], t.arm[take]
            reps.append(100 * (y[arm == 1].mean() - y[arm == 0].mean()))
    lo, hi = np.quantile(reps, [0.025, 0.975])
    got = res.arm("a")
    assert got.ci_low == pytest.approx(lo) and got.ci_high == pytest.approx(hi)
    assert got.ci_plain_low == pytest.approx(lo)
    assert got.se == pytest.approx(np.std(reps, ddof=1))
    assert got.mdd_constant_se == pytest.approx(float(mdd_factor(None)) * np.std(reps, ddof=1))


def test_both_implementations_give_identical_numbers() -> None:
    rng = np.random.default_rng(2)
    t = simulate_table(
        DISPOSITION_PRESETS["disp-qwen"],
        "self_interest",
        [ArmSetting(0), ArmSetting(75), ArmSetting(100)],
        n_stems=30,
        rng=rng,
    )
    out = {}
    for impl in ("python", "compiled"):
        with use_implementation(impl):
            out[impl] = compare_rates(
                t.stem, t.arm, t.sample, t.aligned, arm_names=("r", "a", "b"), reference=0,
                n_boot=1000, seed=3,
            )  # fmt: skip
    # NaN fields (the reference arm has no interval) compare equal under assert_equal
    np.testing.assert_equal(
        dataclasses.astuple(out["python"]), dataclasses.astuple(out["compiled"])
    )


def test_expanded_interval_is_wider_and_contains_the_plain_one(impl: str) -> None:
    rng = np.random.default_rng(4)
    t = simulate_table(
        DISPOSITION_PRESETS["disp-qwen"],
        "self_interest",
        [ArmSetting(0), ArmSetting(100)],
        n_stems=30,
        rng=rng,
    )
    res = compare_rates(
        t.stem, t.arm, t.sample, t.aligned, arm_names=("r", "a"), reference=0, n_boot=2000,
        seed=9,
    )  # fmt: skip
    a = res.arm("a")
    assert a.ci_low <= a.ci_plain_low and a.ci_high >= a.ci_plain_high
    assert a.ci90_low >= a.ci_low and a.ci90_high <= a.ci_high
    assert a.equivalence_bound == pytest.approx(max(abs(a.ci90_low), abs(a.ci90_high)))
    # the 100% dose (true drift −12.1 pp) is detected with 30 stems
    assert a.ci_high < 0 and a.p_value < 0.05
    assert a.mdd_constant_se == pytest.approx(float(mdd_factor(30)) * a.se)


def test_null_test_pairs_the_two_lowest_samples() -> None:
    q = np.repeat(np.arange(10), 6)
    s = np.tile([1, 1, 2, 2, 3, 3], 10)
    y = np.tile([1.0, 1.0, 0.0, 1.0, 0.0, 0.0], 10)  # samples 1, 2, 3: 100%, 50%, 0%
    a = np.zeros_like(q)
    res = compare_rates(q, a, s, y, arm_names=("only",), reference=0, n_boot=200, seed=0)
    null = res.null[0]
    assert null is not None and null.mean_diff_pp == pytest.approx(50.0)  # 1 vs 2, not 3
    # every stem differs by exactly 50 points: a degenerate interval at 50 excludes 0
    assert null.ci_low == pytest.approx(50.0) and null.ci_high == pytest.approx(50.0)
    assert null.excludes_zero and null.n_stems == 10
    assert res.null_excluding == (1, 1)


def test_null_preset_false_positive_rate_is_near_five_percent() -> None:
    """40 same-dose arms x 5 studies (fixed seeds): the null intervals exclude 0 rarely."""
    preset = DISPOSITION_PRESETS["disp-null"]
    rng = np.random.default_rng(20)
    excl = total = 0
    for _ in range(5):
        t = simulate_table(preset, "self_interest", [ArmSetting(0)] * 40, n_stems=30, rng=rng)
        res = compare_rates(
            t.stem, t.arm, t.sample, t.aligned, arm_names=tuple(map(str, range(40))),
            reference=0, n_boot=1000, seed=rng,
        )  # fmt: skip
        k, n = res.null_excluding
        excl, total = excl + k, total + n
    assert total == 200
    assert 0 <= excl / total <= 0.12


def test_validation_errors() -> None:
    q = np.array([0, 1])
    with pytest.raises(ValueError, match="1, 0 or NaN"):
        compare_rates(q, q * 0, q * 0, np.array([0.5, 1.0]), arm_names=("a",), reference=0)
    with pytest.raises(ValueError, match="reference"):
        compare_rates(q, q * 0, q * 0, np.array([0.0, 1.0]), arm_names=("a",), reference=2)
    with pytest.raises(ValueError, match="equal length"):
        compare_rates(q, q, q, np.array([1.0]), arm_names=("a", "b"), reference=0)


def test_noise_shares_sum_to_one_and_see_classifier_repeats() -> None:
    rng = np.random.default_rng(8)
    t = simulate_table(
        DISPOSITION_PRESETS["disp-qwen"], "self_interest", [ArmSetting(0)] * 4, n_stems=30,
        rng=rng,
    )  # fmt: skip
    flip = rng.random(t.aligned.size) < 0.05
    again = np.where(flip, 1.0 - t.aligned, t.aligned)
    y = np.concatenate([t.aligned, again])
    rep = np.repeat([0, 1], t.aligned.size)

    def twice(x: np.ndarray) -> np.ndarray:
        return np.concatenate([x, x])

    noise = rate_noise(y, twice(t.probe), twice(t.arm), twice(t.sample), rep)
    total = noise.classifier + noise.model + noise.between_stem
    assert total == pytest.approx(1.0)
    assert 0.0 < noise.classifier < noise.model
    without = rate_noise(t.aligned, t.probe, t.arm, t.sample, None)
    assert np.isnan(without.classifier)
    assert without.model + without.between_stem == pytest.approx(1.0)


def test_mdd_with_constant_se_is_the_factor_times_se() -> None:
    c_a, c_b = critical_values(30)
    size = np.linspace(0.0, 20.0, 401)
    crit, mdd = mdd_with_varying_se(size, np.full(size.shape, 1.2), c_a, c_b)
    assert float(crit) == pytest.approx(float(c_a) * 1.2)
    assert float(mdd) == pytest.approx(float(mdd_factor(30)) * 1.2)


def test_mdd_with_a_linear_se_solves_the_power_condition() -> None:
    # SE(t) = s0 + b·t: t* = c_a·s0 / (1 − c_a·b), MDD = (t* + c_b·s0) / (1 − c_b·b)
    s0, b = 1.1, 0.135
    c_a, c_b = critical_values(None)
    size = np.linspace(0.0, 30.0, 3001)
    crit, mdd = mdd_with_varying_se(size, s0 + b * size, c_a, c_b)
    t_star = float(c_a) * s0 / (1 - float(c_a) * b)
    assert float(crit) == pytest.approx(t_star, rel=1e-4)
    assert float(mdd) == pytest.approx((t_star + float(c_b) * s0) / (1 - float(c_b) * b), rel=1e-4)
    # an SE that grows too fast for any drift on the grid to reach 80 % power: NaN
    assert np.isnan(mdd_with_varying_se(size, 1.0 + 0.9 * size, c_a, c_b)[1])


def test_logit_normal_fit_recovers_known_parameters() -> None:
    rng = np.random.default_rng(8)
    n_stems, mu, tau = 600, (2.5, 1.5), 1.4
    z = rng.normal(size=n_stems)
    n = np.full((n_stems, 2), 12.0)
    k = np.column_stack([rng.binomial(12, 1 / (1 + np.exp(-(m + tau * z)))) for m in mu]).astype(
        float
    )
    fit = fit_logit_normal(k, n)
    assert fit is not None and fit.converged
    assert fit.mu == pytest.approx(mu, abs=0.15)
    assert fit.tau == pytest.approx(tau, abs=0.15)
    # no variation, no finite maximum
    assert fit_logit_normal(n[:, 0], n[:, 0]) is None


def test_drift_se_curve_matches_a_monte_carlo_of_its_model() -> None:
    fit = LogitNormalFit(mu=(4.0,), tau=1.8, converged=True)
    shift, size, var = drift_se_curve(fit, [12.0], 12.0, direction=-1)
    i = int(np.searchsorted(size, 5.0))
    rng = np.random.default_rng(3)
    eta = 4.0 + 1.8 * rng.normal(size=400_000)
    p0, p1 = 1 / (1 + np.exp(-eta)), 1 / (1 + np.exp(-(eta + shift[i])))
    assert 100 * (p0.mean() - p1.mean()) == pytest.approx(size[i], rel=0.01)
    expect = np.var(p1 - p0) + (p1 * (1 - p1)).mean() / 12 + (p0 * (1 - p0)).mean() / 12
    assert var[i, 0] == pytest.approx(expect, rel=0.01)
    assert size[0] == 0.0 and (np.diff(size) >= 0).all()


def test_mdd_accounts_for_the_se_growing_below_a_ceiling() -> None:
    rng = np.random.default_rng(12)
    ratios = {}
    for name in ("disp-qwen", "disp-mid"):
        got = []
        for _ in range(6):
            t = simulate_table(
                DISPOSITION_PRESETS[name], "self_interest", [ArmSetting(0)] * 2, n_stems=30,
                rng=rng,
            )  # fmt: skip
            a = compare_rates(
                t.stem, t.arm, t.sample, t.aligned, arm_names=("r", "a"), reference=0,
                n_boot=500, seed=rng,
            ).arm("a")  # fmt: skip
            got.append(a.mdd / a.mdd_constant_se)
        ratios[name] = float(np.median(got))
    # at 96.6 % aligned the SE grows as the rate falls, so the MDD is larger than c·SE0;
    # at 60 % it hardly changes
    assert ratios["disp-qwen"] > 1.15
    assert ratios["disp-mid"] == pytest.approx(1.0, abs=0.06)


def test_graded_scores_keep_the_constant_se_mdd() -> None:
    rng = np.random.default_rng(5)
    q = np.repeat(np.arange(20), 8)
    a = np.tile(np.repeat([0, 1], 4), 20)
    s = np.tile([0, 0, 1, 1], 40)
    y = rng.integers(1, 8, size=q.size).astype(float)
    arm = compare_rates(
        q, a, s, y, arm_names=("r", "a"), reference=0, n_boot=300, seed=1, scale=1.0,
        binary=False,
    ).arm("a")  # fmt: skip
    assert arm.mdd == pytest.approx(arm.mdd_constant_se)


def test_logit_normal_fit_is_the_maximum_of_an_independent_likelihood() -> None:
    from scipy import integrate

    rng = np.random.default_rng(2)
    z = rng.normal(size=(15, 1))
    k = rng.binomial(12, 1 / (1 + np.exp(-(np.array([2.0, 1.5]) + 1.2 * z)))).astype(float)
    n = np.full((15, 2), 12.0)
    fit = fit_logit_normal(k, n)
    assert fit is not None and fit.converged

    def nll(theta: np.ndarray) -> float:
        # the marginal likelihood by adaptive quadrature (scipy), not Gauss–Hermite
        tau = np.exp(theta[2])

        def dens(z: float) -> np.ndarray:
            p = 1 / (1 + np.exp(-(theta[:2] + tau * z)))
            return np.prod(stats.binom.pmf(k, n, p), axis=1) * stats.norm.pdf(z)

        return -float(np.log(integrate.quad_vec(dens, -10, 10, epsrel=1e-10)[0]).sum())

    best = np.append(fit.mu, np.log(fit.tau))
    at_best = nll(best)
    for i in range(3):
        for step in (-0.05, 0.05):
            moved = best.copy()
            moved[i] += step
            assert at_best <= nll(moved) + 1e-6
