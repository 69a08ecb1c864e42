"""The per-study SE under the disposition MDD is made median-unbiased (#23 item 2).

A study's SE is a variance estimated from its stems, right-skewed, so the typical
(median) study's SE and the MDD on it sit below the design's; near a 96.6 % ceiling the
stems' contributions are heavy-tailed and the skew is larger (power at the median MDD
74-78 % before). :func:`se_median_factor` divides by the median of ``sqrt(χ²_ν/ν)`` with
the kurtosis-based ``ν``. The power it buys is measured in ``bench/``, not here.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from driftlens_core.calibration import se_median_factor
from driftlens_core.rates import compare_rates
from study.disposition.sim.model import DISPOSITION_PRESETS, ArmSetting, simulate_table


def test_normal_contributions_get_the_wilson_hilferty_factor_on_n_minus_1_df() -> None:
    z = stats.norm.ppf((np.arange(30) + 0.5) / 30)  # kurtosis below 3: ν = n − 1
    assert se_median_factor(z) == pytest.approx((1 - 2 / (9 * 29)) ** -1.5, rel=1e-12)
    assert se_median_factor(z[:2]) == 1.0  # too few clusters: no correction
    assert se_median_factor(np.zeros(30)) == 1.0  # no spread


def test_the_factor_grows_with_heavy_tails_and_stays_bounded() -> None:
    rng = np.random.default_rng(1)
    normal = se_median_factor(rng.normal(size=30))
    rare = np.zeros(30)
    rare[:2] = 1.0  # two stems carry every non-aligned answer, as near a ceiling
    heavy = se_median_factor(rare)
    assert 1.0 < normal < heavy <= (1 - 2 / 9) ** -1.5


@pytest.mark.parametrize("kind", ["normal", "rare"])
def test_the_corrected_se_is_median_unbiased(kind: str) -> None:
    # 4,000 studies of 30 clusters: the median of SE·factor lands on the true SE, the
    # median of the plain SE below it (most so for rare, heavy-tailed contributions)
    rng = np.random.default_rng(7)
    n, studies = 30, 4000
    if kind == "normal":
        x = rng.normal(size=(studies, n))
        sd = 1.0
    else:
        x = (rng.random((studies, n)) < 0.15).astype(float)
        sd = float(np.sqrt(0.15 * 0.85))
    se = x.std(axis=1, ddof=1) / np.sqrt(n)
    factor = np.array([se_median_factor(row) for row in x])
    true = sd / np.sqrt(n)
    plain, fixed = np.median(se) / true, np.median(se * factor) / true
    assert plain < 0.99
    assert abs(fixed - 1.0) < abs(plain - 1.0)
    assert fixed == pytest.approx(1.0, abs=0.015)


def test_the_disposition_mdd_rests_on_the_corrected_se_and_the_seed_formula_does_not() -> None:
    from driftlens_core.calibration import critical_values, mdd_factor
    from driftlens_core.rates import _cells, _mdd_varying, _se_median_factor

    rng = np.random.default_rng(12)
    t = simulate_table(
        DISPOSITION_PRESETS["disp-qwen"], "self_interest", [ArmSetting(0)] * 2, n_stems=30,
        rng=rng,
    )  # fmt: skip
    a = compare_rates(
        t.stem, t.arm, t.sample, t.aligned, arm_names=("r", "a"), reference=0, n_boot=500,
        seed=1,
    ).arm("a")  # fmt: skip
    n, k = _cells(t.stem, t.arm, t.aligned, 30, 2)
    factor = _se_median_factor(n, k, 0, 1)
    assert factor > 1.0
    c_a, c_b = critical_values(np.array([30.0]))
    args = (n, k, 0, [1], np.array([a.drift_pp]))
    with_factor = _mdd_varying(*args, np.array([a.se * factor]), c_a, c_b, 100.0)
    without = _mdd_varying(*args, np.array([a.se]), c_a, c_b, 100.0)
    assert with_factor is not None and without is not None
    assert a.mdd == pytest.approx(float(with_factor[0]), rel=1e-9)
    assert a.mdd > float(without[0])
    # (c_α + c_β)·SE stays the seed's formula on the plain bootstrap SE
    assert a.mdd_constant_se == pytest.approx(float(mdd_factor(30)) * a.se)
