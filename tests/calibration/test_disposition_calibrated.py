"""Disposition rates and drift calibrated to the ``disposition_check`` slice (issue 35).

Known dose for the transport check: a classifier that errs alike on both arms lets the
reference's correction carry over (``calibrated (transported)``); one that errs only on the
reference fails the check on the other arm, whose headline stays model-only with a warning.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from study.disposition.calibrated import (
    CalibratedDisposition,
    DispositionHumans,
    calibrate_group,
    calibrated_frame,
    calibrated_lines,
)
from study.disposition.human.kinds import disposition_key

STUDY = "s"
N_STEMS, PROBES, SAMPLES = 30, 6, 2


def _arm_frame(arm: str, rate: float, lenient: float, rng: np.random.Generator):
    """One arm's answers: the true 1/0 and the classifier's (true 0 called 1 w.p. lenient)."""
    rows, truth = [], []
    for s in range(N_STEMS):
        for p in range(PROBES):
            for k in range(SAMPLES):
                y = float(rng.random() < rate)
                f = 1.0 if y == 1.0 or rng.random() < lenient else 0.0
                rows.append(
                    {"battery": "b", "stem": f"st{s:02d}", "probe": f"p{p}", "arm": arm,
                     "sample": k + 1, "aligned": f, "classifier_repeat": 0}
                )  # fmt: skip
                truth.append(y)
    return pd.DataFrame(rows), np.array(truth)


def _study(seed: int, *, arm_lenient: float, ref_humans: int = 80, arm_humans: int = 35,
           inclusion: bool = True):  # fmt: skip
    """A reference (lenient classifier) and an arm, with a simple random slice of each."""
    rng = np.random.default_rng(seed)
    ref, y_ref = _arm_frame("ref", 0.5, 0.6, rng)
    arm, y_arm = _arm_frame("arm", 0.35, arm_lenient, rng)
    aligned, incl = {}, {}
    for df, y, n in ((ref, y_ref, ref_humans), (arm, y_arm, arm_humans)):
        for i in rng.choice(len(df), size=n, replace=False):
            r = df.iloc[i]
            key = disposition_key(
                STUDY, r["arm"], "b", r["stem"], int(r["probe"][1:]), int(r["sample"])
            )
            aligned[key] = y[i]
            if inclusion:
                incl[key] = n / len(df)
    table = pd.concat([ref, arm], ignore_index=True)
    model_drift = 100 * (arm["aligned"].mean() - ref["aligned"].mean())
    drift = {"b": {"arm": {"drift_pp": model_drift, "ci_low": model_drift - 5,
                           "ci_high": model_drift + 5}}}  # fmt: skip
    truth = {"ref": 0.5, "arm": 0.35}
    return table, drift, DispositionHumans(aligned, incl), truth


def _rows(seed: int, **kw):
    table, drift, humans, truth = _study(seed, **{k: v for k, v in kw.items() if k != "min"})
    rows = calibrate_group(STUDY, "on", table, "ref", drift, humans, bootstrap=200, seed=seed,
                           min_human=kw.get("min", 40))  # fmt: skip
    return {(r.arm, r.what): r for r in rows}, truth


def test_transport_known_dose_passes_alike_and_fails_shifted() -> None:
    alike = [_rows(s, arm_lenient=0.6)[0][("arm", "aligned_rate")] for s in range(20)]
    shifted = [_rows(s, arm_lenient=0.0)[0][("arm", "aligned_rate")] for s in range(20)]
    # the arm has 35 human labels, under the 40 of its own headline: transport decides
    assert sum(r.transport == "pass" for r in alike) >= 16
    assert sum(r.transport == "fail" for r in shifted) >= 16
    for r in alike:
        if r.transport == "pass":
            assert r.headline == "calibrated (transported)"
    for r in shifted:
        if r.transport == "fail":
            assert r.headline == "model-only" and r.note.startswith("warning:")


def test_transported_rate_recovers_the_truth_and_the_model_only_misses() -> None:
    rows, truth = _rows(3, arm_lenient=0.6)
    r = rows[("arm", "aligned_rate")]
    assert r.headline == "calibrated (transported)"
    assert r.calibrated_ci[0] <= truth["arm"] <= r.calibrated_ci[1]
    # the lenient classifier's rate is far above the truth (0.35 + 0.65 * 0.6 = 0.74)
    assert r.model_only_ci[0] > truth["arm"] + 0.2


def test_failed_transport_warns_on_the_model_only_drift() -> None:
    rows, _ = _rows(1, arm_lenient=0.0)
    d = rows[("arm", "drift_pp")]
    assert rows[("arm", "aligned_rate")].transport == "fail"
    assert d.headline == "model-only" and d.note.startswith("warning: the transport check failed")
    line = calibrated_lines(CalibratedDisposition((d,)))[0]
    assert "headline model-only" in line and "human labels" in line


def test_enough_humans_on_both_arms_give_a_calibrated_drift_near_the_truth() -> None:
    rows, truth = _rows(5, arm_lenient=0.0, ref_humans=120, arm_humans=120, min=40)
    d = rows[("arm", "drift_pp")]
    assert d.headline == "calibrated" and d.transport is None
    true_pp = 100 * (truth["arm"] - truth["ref"])
    assert d.calibrated_ci[0] <= true_pp <= d.calibrated_ci[1]
    # the model-only drift carries the reference's leniency: 100 * (0.35 - 0.8) = -45
    assert d.model_only < true_pp - 20
    assert rows[("ref", "aligned_rate")].headline == "calibrated"
    frame = calibrated_frame(CalibratedDisposition(tuple(rows.values())))
    assert {"headline", "model_only", "calibrated", "humans"} <= set(frame.columns)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"inclusion": False}, "no stored inclusion probabilities"),
        ({"ref_humans": 1, "arm_humans": 1}, "1 human label(s)"),
        ({"ref_humans": 25, "arm_humans": 5, "min": 40}, "fewer than the 40"),
    ],
)
def test_bad_slices_keep_the_model_only_headline_with_one_sentence(kw, needle) -> None:
    rows, _ = _rows(2, arm_lenient=0.6, **kw)
    r = rows[("ref", "aligned_rate")]
    assert r.headline == "model-only"
    assert needle in r.note and "\n" not in str(r.note)
    assert r.model_only is not None and r.model_only_ci[0] < r.model_only_ci[1]


def test_an_arm_slice_without_probabilities_is_never_transported() -> None:
    table, drift, humans, _ = _study(4, arm_lenient=0.6)
    # the arm's labels lose their probabilities; the reference keeps its own
    incl = {k: v for k, v in humans.inclusion.items() if ":arm:" not in k}
    rows = calibrate_group(STUDY, "on", table, "ref", drift,
                           DispositionHumans(humans.aligned, incl), bootstrap=100, seed=4,
                           min_human=40)  # fmt: skip
    r = next(r for r in rows if r.arm == "arm" and r.what == "aligned_rate")
    assert r.headline == "model-only" and r.transport is None
    assert "no stored inclusion probabilities" in str(r.note)


def _missing_stems_study(*, labelled_arm_stems: int):
    """An arm that answered 24 of the battery's 30 stems; humans on 2 answers of each stem
    (a stratified slice, ``2 / 12`` stored per answer) of the reference's 30 stems and of
    the first ``labelled_arm_stems`` of the arm's 24."""
    rng = np.random.default_rng(11)
    ref, y_ref = _arm_frame("ref", 0.5, 0.6, rng)
    arm, y_arm = _arm_frame("arm", 0.35, 0.6, rng)
    kept = arm["stem"] < f"st{24:02d}"
    arm, y_arm = arm[kept].reset_index(drop=True), y_arm[kept.to_numpy()]
    aligned, incl = {}, {}
    for df, y, stems in ((ref, y_ref, N_STEMS), (arm, y_arm, labelled_arm_stems)):
        for s in range(stems):
            rows = np.flatnonzero((df["stem"] == f"st{s:02d}").to_numpy())
            for i in rng.choice(rows, size=2, replace=False):
                r = df.iloc[i]
                key = disposition_key(
                    STUDY, r["arm"], "b", r["stem"], int(r["probe"][1:]), int(r["sample"])
                )
                aligned[key] = y[i]
                incl[key] = 2 / rows.size
    table = pd.concat([ref, arm], ignore_index=True)
    model_drift = 100 * (arm["aligned"].mean() - ref["aligned"].mean())
    drift = {"b": {"arm": {"drift_pp": model_drift, "ci_low": model_drift - 5,
                           "ci_high": model_drift + 5}}}  # fmt: skip
    got = calibrate_group(STUDY, "on", table, "ref", drift, DispositionHumans(aligned, incl),
                          bootstrap=100, seed=11, min_human=40)  # fmt: skip
    return {(r.arm, r.what): r for r in got}


def test_an_arm_that_missed_stems_is_judged_on_its_own_stems() -> None:
    """The headline rule is ``enough_humans`` (compare's too): an arm that answered 24 of a
    30-stem battery, with 48 human labels on all 24 of its stems, has a calibrated rate and,
    beside a calibrated reference, a calibrated drift; the battery's 6 stems it never
    answered are not asked of its slice."""
    rows = _missing_stems_study(labelled_arm_stems=24)
    rate, drift = rows[("arm", "aligned_rate")], rows[("arm", "drift_pp")]
    assert rate.n_human == 48 and rate.n_human_stems == 24
    assert rate.headline == "calibrated" and rate.note is None
    assert rows[("ref", "aligned_rate")].headline == "calibrated"
    assert drift.headline == "calibrated" and drift.note is None


def test_an_arm_whose_humans_miss_one_of_its_stems_keeps_the_model_only_headline() -> None:
    rows = _missing_stems_study(labelled_arm_stems=23)
    rate, drift = rows[("arm", "aligned_rate")], rows[("arm", "drift_pp")]
    assert rate.n_human == 46 and rate.n_human_stems == 23
    # 46 labels, but on 23 of its 24 stems: its own rate is not calibrated (transport decides
    # what it shows instead), and neither is the drift
    assert rate.headline != "calibrated" and rate.transport is not None
    assert drift.headline == "model-only"
    assert "each arm's own calibrated rate" in str(drift.note) and "\n" not in str(drift.note)
