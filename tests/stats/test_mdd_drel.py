"""The d_rel MDD is the raw difference's MDD in noise-SD units (the test the analysis applies)."""

from __future__ import annotations

import numpy as np
import pytest

from driftlens_core.analysis import analyze_table
from driftlens_core.bootstrap import drel_bootstrap, question_sums
from driftlens_core.calibration import mdd_factor, minimum_detectable_drel
from study.reasoning.stats_table import stats_input
from tests.stats.sim import simulate_table


def test_factor_times_difference_se_over_noise_sd() -> None:
    got = minimum_detectable_drel([0.1, 0.2], [0.5, 2.0], n_clusters=[8, 30])
    want = mdd_factor([8, 30]) * np.array([0.1, 0.2]) / np.array([0.5, 2.0])
    np.testing.assert_allclose(got, want)
    assert float(minimum_detectable_drel(0.1, 1.0, n_clusters=None)) == pytest.approx(0.2802, 1e-3)
    assert np.isnan(minimum_detectable_drel([0.1], [1.0], n_clusters=[1])[0])


def test_the_d_rel_test_is_the_test_of_the_difference() -> None:
    # every replicate's d_rel has the sign of its difference, so the p-values agree
    rng = np.random.default_rng(5)
    df, _ = simulate_table(rng, n_questions=8, attributes={"a": 0.8}, n_noise=3)
    names, c = np.unique(df["condition"].to_numpy(), return_inverse=True)
    _, q = np.unique(df["question_id"].to_numpy(), return_inverse=True)
    noise = np.array([str(x).startswith("noise") for x in names])
    qs = question_sums(q, c, df[["dtw"]].to_numpy(), noise)
    boot = drel_bootstrap(qs, n_boot=500, seed=1)
    assert np.all(np.sign(boot.estimate) == np.sign(boot.diff))
    # with few questions SE(d_rel) carries the noise SD's spread: larger than SE(diff)/sd
    j = int(np.flatnonzero(names == "a")[0])
    assert boot.se[j, 0] > boot.diff_se[j, 0] / boot.noise_sd[0]


def test_analysis_reports_the_difference_based_mdd() -> None:
    df, _ = simulate_table(
        np.random.default_rng(6), n_questions=12, attributes={"a": 0.3}, n_noise=2, samples=2
    )
    res = analyze_table(stats_input(df), bootstrap=400, seed=2).to_dict()
    metric = res["models"]["model"]["metrics"]["dtw"]
    sd = metric["noise_floor"]["sd"]
    for cond in metric["conditions"].values():
        assert cond["mdd"] == pytest.approx(cond["mdd_raw"] / sd, rel=1e-12)
