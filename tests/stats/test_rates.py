"""Aligned-rate drift (driftlens_core.rates): seed arithmetic, an oracle bootstrap, parity."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from driftlens_core import use_implementation
from driftlens_core.calibration import equivalence_bound, minimum_detectable
from driftlens_core.rates import compare_rates, mdd_factor, rate_noise, se_from_interval
from llm.sim.disposition import DISPOSITION_PRESETS, ArmSetting, simulate_table


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
    assert got.mdd == pytest.approx(float(mdd_factor(None)) * np.std(reps, ddof=1))


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
    assert a.mdd == pytest.approx(float(mdd_factor(30)) * a.se)


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
