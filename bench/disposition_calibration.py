"""Calibration of the disposition instrument on simulated studies with known drift.

Every study is drawn by :func:`study.disposition.sim.model.simulate_table` (fresh stems and
paraphrases each time: stem SD and paraphrase SD of the preset on the logit scale, 6
paraphrases x 2 samples per stem and arm) and analysed by
:func:`driftlens_core.rates.compare_rates`, exactly what ``driftlens disposition stats`` runs.

Checks (the issue's bar):

1. **Null FPR.** ``disp-null``: 40 same-dose arms per replication; the share of the 40
   null-test intervals (sample 1 vs sample 2) that exclude 0, over all replications.
2. **Coverage at 30 stems.** ``disp-qwen`` reasoning-on arms at 0% (reference), 75% and
   100% dose; how often the 95% interval covers the true population drift: expanded
   (primary), plain percentile, and the *same data* resampled by paraphrase as if
   paraphrases were independent (the wrong unit).
3. **MDD and power.** The mean MDD of a same-dose comparison (true drift 0), then studies
   whose true drift equals that MDD: the share whose 95% interval excludes 0 (nominal 80%),
   on the seed-like preset and on a mid-range one (``disp-mid``).
4. **Why the MDD bar and the power bar conflict** (``--checks mdd-conflict``). On the
   seed-like preset, studies at true drift 0, at the constant-SE MDD ``(c_α + c_β)·SE₀``,
   at the top of the MDD bar (3.7 pp) and at the varying-SE MDD: the SE of the paired
   difference (model, across studies, bootstrap), the power of the test actually applied
   and of simpler tests on the same studies, splitting the power lost at the constant-SE
   MDD into the SE's growth with the drift, the per-study SE estimate, the percentile
   interval's asymmetry and the critical value.

5. **Power at the reported MDD under two generators** (``--checks mdd-generators``,
   ``--generator project|audit|both``). ``--studies`` pilot studies at true drift 0 give
   the MDD each reports; fresh studies at the median and at the mean of those MDDs give
   the power of the test applied (80 ± 4 % wanted). ``project`` is
   :func:`simulate_table` (stem and paraphrase logits solved so that the *population*
   rate is 96.6 %); ``audit`` is an independent generator as the issue's audit described
   it (30 stems x 6 paraphrases x 2 samples, stem SD 2, paraphrase SD 1, base rate
   96.6 %), which reads the base rate as the rate of the typical probe,
   ``logit⁻¹(intercept) = 96.6 %`` (population rate 88.0 %), and puts a drift on as a
   common logit shift solved for the population drift.

6. **Noise shares on the seed-like preset** (``--checks noise``). ``disp-qwen`` studies
   with the demo's reasoning-on arms (0 %, 75 %, 100 % dose) scored by the preset's
   classifier (flip 1.5 %, 4 categories, 10 % of responses scored again):
   :func:`driftlens_core.rates.rate_noise`'s shares of the total and the ``paired_*``
   shares a paired drift feels, against the seed's classifier share of 2–16 %.

Usage::

    python bench/disposition_calibration.py                 # the documented run
    python bench/disposition_calibration.py --replications 20 --studies 50 --bootstrap 1000
    python bench/disposition_calibration.py --checks mdd-generators --generator audit --studies 600
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from driftlens_core import implementation
from driftlens_core.rates import compare_rates
from study.disposition.sim.model import DISPOSITION_PRESETS, ArmSetting, simulate_table

BATTERY = "self_interest"


def null_fpr(replications: int, n_arms: int, n_stems: int, n_boot: int, seed: int) -> dict:
    """Share of null-test intervals excluding 0 on the null preset."""
    preset = DISPOSITION_PRESETS["disp-null"]
    rng = np.random.default_rng(seed)
    excl = total = 0
    per_rep = []
    names = tuple(f"arm{j}" for j in range(n_arms))
    for _ in range(replications):
        t = simulate_table(preset, BATTERY, [ArmSetting(0)] * n_arms, n_stems=n_stems, rng=rng)
        res = compare_rates(
            t.stem, t.arm, t.sample, t.aligned, arm_names=names, reference=0,
            n_boot=n_boot, seed=rng,
        )  # fmt: skip
        k, n = res.null_excluding
        excl += k
        total += n
        per_rep.append(k)
    return {
        "intervals": total,
        "excluding_zero": excl,
        "fpr": excl / total,
        "mc_se": float(np.sqrt(0.05 * 0.95 / total)),
        "per_replication_k": {
            "mean": float(np.mean(per_rep)),
            "min": int(np.min(per_rep)),
            "max": int(np.max(per_rep)),
        },
    }


def coverage(studies: int, n_stems: int, n_boot: int, seed: int) -> dict:
    """Coverage of the true drift by stem- and paraphrase-resampled intervals."""
    preset = DISPOSITION_PRESETS["disp-qwen"]
    settings = [ArmSetting(0), ArmSetting(75), ArmSetting(100)]
    rng = np.random.default_rng(seed)
    keys = ("stem_expanded", "stem_plain", "paraphrase_expanded", "paraphrase_plain")
    hits: dict[str, list[list[bool]]] = {k: [[], []] for k in keys}
    truth = None
    for _ in range(studies):
        t = simulate_table(preset, BATTERY, settings, n_stems=n_stems, rng=rng)
        truth = t.true_drift_pp
        for unit, cluster in (("stem", t.stem), ("paraphrase", t.probe)):
            res = compare_rates(
                cluster, t.arm, t.sample, t.aligned, arm_names=("d0", "d75", "d100"),
                reference=0, n_boot=n_boot, seed=rng,
            )  # fmt: skip
            for j in (1, 2):
                a = res.arms[j]
                hits[f"{unit}_expanded"][j - 1].append(a.ci_low <= truth[j] <= a.ci_high)
                hits[f"{unit}_plain"][j - 1].append(a.ci_plain_low <= truth[j] <= a.ci_plain_high)
    assert truth is not None
    return {
        "studies": studies,
        "n_stems": n_stems,
        "true_drift_pp": {"d75": float(truth[1]), "d100": float(truth[2])},
        "coverage": {
            k: {"d75": float(np.mean(v[0])), "d100": float(np.mean(v[1]))} for k, v in hits.items()
        },
        "mc_se": float(np.sqrt(0.95 * 0.05 / studies)),
    }


def _study_arm(
    preset_name: str,
    setting: ArmSetting,
    shift: float,
    n_stems: int,
    n_boot: int,
    rng: np.random.Generator,
) -> tuple[float, float, bool, float]:
    """One two-arm study (reference at dose 0): MDD, SE, detected?, constant-SE MDD."""
    t = simulate_table(
        DISPOSITION_PRESETS[preset_name], BATTERY, [ArmSetting(0), setting], n_stems=n_stems,
        rng=rng, extra_shift_pp=[0.0, shift],
    )  # fmt: skip
    a = compare_rates(
        t.stem, t.arm, t.sample, t.aligned, arm_names=("r", "a"), reference=0,
        n_boot=n_boot, seed=rng,
    ).arms[1]  # fmt: skip
    return a.mdd, a.se, bool(a.ci_high < 0 or a.ci_low > 0), a.mdd_constant_se


GENERATORS: tuple[str, ...] = ("project", "audit")


def audit_table(
    drift_pp: float, n_stems: int, rng: np.random.Generator, *, base: float = 0.966
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One two-arm study of the audit-style generator: ``(stem, arm, sample, aligned)``.

    Written from the audit's description, not from :func:`simulate_table`: the intercept is
    ``logit(base)`` (the typical probe answers aligned with ``base``), stems ``N(0, 2²)``,
    paraphrases ``N(0, 1²)``, 6 paraphrases x 2 samples per stem and arm; the second arm's
    logits are shifted by the common ``Δ`` whose population drift is ``drift_pp``.
    """
    from study.disposition.sim.model import _solve_shift, population_rate

    sd = float(np.hypot(2.0, 1.0))
    a = float(np.log(base / (1.0 - base)))
    delta = _solve_shift(0.0, sd, population_rate(a, sd) + drift_pp / 100.0) - a
    eta = a + rng.normal(0.0, 2.0, (n_stems, 1)) + rng.normal(0.0, 1.0, (n_stems, 6))
    p = 1.0 / (1.0 + np.exp(-np.stack([eta, eta + delta])))
    draws = rng.random((2, n_stems, 6, 2)) < p[..., None]
    arm, stem, _, sample = np.indices(draws.shape).reshape(4, -1)
    return stem, arm, sample, draws.reshape(-1).astype(np.float64)


def _generator_study(
    generator: str, drift_pp: float, n_stems: int, n_boot: int, rng: np.random.Generator
) -> Any:
    """The compared arm of one two-arm study (true drift ``drift_pp``) of ``generator``."""
    if generator == "audit":
        stem, arm, sample, aligned = audit_table(drift_pp, n_stems, rng)
    else:
        t = simulate_table(
            DISPOSITION_PRESETS["disp-qwen"], BATTERY, [ArmSetting(0), ArmSetting(0)],
            n_stems=n_stems, rng=rng, extra_shift_pp=[0.0, drift_pp],
        )  # fmt: skip
        stem, arm, sample, aligned = t.stem, t.arm, t.sample, t.aligned
    return compare_rates(
        stem, arm, sample, aligned, arm_names=("r", "a"), reference=0, n_boot=n_boot,
        seed=rng,
    ).arms[1]  # fmt: skip


def mdd_generators(
    generator: str, studies: int, n_stems: int, n_boot: int, seed: int
) -> dict[str, Any]:
    """Power at the median and at the mean MDD that ``studies`` pilots of ``generator`` report.

    A power's 95 % interval is Wilson's; its Monte Carlo SE at 80 % is ``mc_se_power``.
    """
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(seed)
    pilots = [_generator_study(generator, 0.0, n_stems, n_boot, rng) for _ in range(studies)]
    mdds = np.array([a.mdd for a in pilots])
    out: dict[str, Any] = {
        "generator": generator,
        "studies": studies,
        "reference_rate": float(np.mean([a.aligned_rate - a.drift_pp / 100 for a in pilots])),
        "mdd_mean_pp": float(np.nanmean(mdds)),
        "mdd_quartiles_pp": [float(x) for x in np.nanquantile(mdds, [0.25, 0.5, 0.75])],
        "mdd_constant_se_median_pp": float(np.nanmedian([a.mdd_constant_se for a in pilots])),
        "false_positive_rate_at_zero_drift": float(
            np.mean([a.ci_high < 0 or a.ci_low > 0 for a in pilots])
        ),
    }
    for name, drift in (("median", out["mdd_quartiles_pp"][1]), ("mean", out["mdd_mean_pp"])):
        arms = [_generator_study(generator, -drift, n_stems, n_boot, rng) for _ in range(studies)]
        hits = int(sum(a.ci_high < 0 or a.ci_low > 0 for a in arms))
        lo, hi = proportion_confint(hits, studies, method="wilson")
        out[f"power_at_{name}_mdd"] = hits / studies
        out[f"power_at_{name}_mdd_ci95"] = [float(lo), float(hi)]
        out[f"se_at_{name}_mdd_pp"] = float(np.mean([a.se for a in arms]))
    out["mc_se_power"] = float(np.sqrt(0.8 * 0.2 / studies))
    return out


def noise_shares(
    studies: int,
    n_stems: int,
    seed: int,
    *,
    repeat_share: float = 0.1,
    flip: float | None = None,
) -> dict:
    """Median noise shares over ``studies`` seed-like studies with classifier repeats.

    ``flip`` overrides the preset's classifier flip rate (``disp-qwen``: 1.5 %).
    """
    from driftlens_core.rates import rate_noise

    preset = DISPOSITION_PRESETS["disp-qwen"]
    flip = preset.classifier_flip if flip is None else flip
    n_cat = 4  # self-interest has 4 categories, 1 of them aligned
    rng = np.random.default_rng(seed)
    keys = ("classifier", "model", "between_stem", "probe_main", "probe_by_arm",
            "paired_classifier", "paired_model", "paired_probe_by_arm")  # fmt: skip
    got: dict[str, list[float]] = {k: [] for k in keys}
    for _ in range(studies):
        t = simulate_table(
            preset, BATTERY, [ArmSetting(0), ArmSetting(75), ArmSetting(100)], n_stems=n_stems,
            rng=rng,
        )  # fmt: skip

        def score(truth: np.ndarray) -> np.ndarray:
            # a flip leaves an aligned answer non-aligned; a non-aligned one lands on the
            # aligned category in 1 of the other n_cat - 1 categories
            u = rng.random(truth.size)
            to_aligned = u < flip / (n_cat - 1)
            return np.where(truth == 1.0, (u >= flip).astype(float), to_aligned.astype(float))

        first = score(t.aligned)
        again = rng.random(t.aligned.size) < repeat_share
        cols = [np.concatenate([c, c[again]]) for c in (t.probe, t.arm, t.sample)]
        y = np.concatenate([first, score(t.aligned[again])])
        rep = np.concatenate([np.zeros(first.size, np.int64), np.ones(int(again.sum()), np.int64)])
        res = rate_noise(y, cols[0], cols[1], cols[2], rep)
        for k in keys:
            got[k].append(float(getattr(res, k)))
    return {
        "studies": studies,
        "classifier_flip": flip,
        "repeat_share": repeat_share,
        "median": {k: float(np.nanmedian(v)) for k, v in got.items()},
        "quartiles": {
            k: [float(x) for x in np.nanquantile(v, [0.25, 0.75])] for k, v in got.items()
        },
    }


def mdd_power(preset: str, studies: int, n_stems: int, n_boot: int, seed: int) -> dict:
    """Mean MDD of a same-dose comparison, and the power of studies whose true drift is it.

    Near the ceiling (the seed-like preset, 96.6% aligned) the SE grows as the rate falls
    (``se_at_zero_drift_pp`` vs ``se_at_mdd_pp``); the MDD models that growth, and the
    constant-SE formula ``(c_α + c_β)·SE₀`` is measured beside it (``mdd_constant_se_pp``,
    ``power_at_mdd_constant_se``). Away from the ceiling (``disp-mid``) the SE hardly
    depends on the drift and both agree.
    """
    rng = np.random.default_rng(seed)
    zero = ArmSetting(0)

    def runs(setting: ArmSetting, shift: float, n: int) -> list[tuple[float, float, bool, float]]:
        return [_study_arm(preset, setting, shift, n_stems, n_boot, rng) for _ in range(n)]

    at0 = runs(zero, 0.0, studies)
    mdd0 = float(np.mean([r[0] for r in at0]))
    out: dict = {
        "preset": preset,
        "mdd_at_zero_drift_pp": mdd0,
        "mdd_sd_over_studies": float(np.std([r[0] for r in at0])),
        "mdd_quartiles_pp": [float(x) for x in np.quantile([r[0] for r in at0], [0.25, 0.5, 0.75])],
        "mdd_constant_se_pp": float(np.mean([r[3] for r in at0])),
        "se_at_zero_drift_pp": float(np.mean([r[1] for r in at0])),
        "false_positive_rate_at_zero_drift": float(np.mean([r[2] for r in at0])),
    }
    if preset == "disp-qwen":
        out["mdd_at_75pct_dose_pp"] = float(
            np.mean([r[0] for r in runs(ArmSetting(75), 0, studies)])
        )
    at_mdd = runs(zero, -mdd0, studies)
    out["se_at_mdd_pp"] = float(np.mean([r[1] for r in at_mdd]))
    out["power_at_mdd"] = float(np.mean([r[2] for r in at_mdd]))
    out["power_at_half_mdd"] = float(np.mean([r[2] for r in runs(zero, -mdd0 / 2, studies)]))
    # the per-study MDD is right-skewed near the ceiling (the SE curve is fitted on ~30
    # stems), so its mean sits above the typical study's value: the median is measured too
    median = out["mdd_quartiles_pp"][1]
    out["power_at_median_mdd"] = float(np.mean([r[2] for r in runs(zero, -median, studies)]))
    flat = out["mdd_constant_se_pp"]
    out["power_at_mdd_constant_se"] = float(np.mean([r[2] for r in runs(zero, -flat, studies)]))
    out["mc_se_power"] = float(np.sqrt(0.8 * 0.2 / studies))
    return out


def model_se_pp(drift_pp: float, n_stems: int, *, draws: int = 400_000, seed: int = 7) -> float:
    """SE (pp) of the paired aligned-rate difference at a true drift, from the model alone.

    ``drift_pp`` is signed (negative: the arm is less aligned than the reference).

    The preset's logit model (self-interest: base 96.6%, stem SD 2.0, paraphrase SD 1.0, 6
    paraphrases x 2 samples per arm, the drift a common logit shift as in
    :func:`simulate_table`): per stem, the variance of ``mean(k_arm − k_ref)/12`` is the
    variance of its expectation over stems and paraphrases plus the expected binomial
    variance; the SE of the pooled difference over ``n_stems`` stems follows (Monte Carlo
    over ``draws`` stems, no bootstrap).
    """
    from study.disposition.sim.model import _solve_shift, logit_terms, population_rate

    preset = DISPOSITION_PRESETS["disp-qwen"]
    bm = preset.battery(BATTERY)
    a, _, sd = logit_terms(preset, BATTERY, ArmSetting(0))
    delta = _solve_shift(0.0, sd, population_rate(a, sd) + drift_pp / 100.0) - a
    rng = np.random.default_rng(seed)
    eta = rng.normal(0.0, bm.stem_sd, (draws, 1)) + rng.normal(0.0, bm.para_sd, (draws, 6)) + a
    p0 = 1.0 / (1.0 + np.exp(-eta))
    p1 = 1.0 / (1.0 + np.exp(-(eta + delta)))
    mean_d = (p1 - p0).mean(axis=1)
    within = (2.0 * (p1 * (1 - p1) + p0 * (1 - p0))).sum(axis=1) / 144.0
    return float(100.0 * np.sqrt((mean_d.var() + within.mean()) / n_stems))


def mdd_conflict(studies: int, n_stems: int, n_boot: int, seed: int) -> dict:
    """Why no MDD inside 3.2 ± 0.5 pp has 80 ± 4 % power on the seed-like preset.

    Studies at true drift 0 give SE₀, the constant-SE MDD ``(c_α + c_β)·SE₀`` and the
    varying-SE MDD; fresh studies at those drifts and at 3.7 pp (the top of the MDD bar)
    give, side by side on the same studies: the power of the test applied (expanded
    percentile interval excludes 0), of the plain percentile interval, and of Wald tests
    ``|d| > c·SE_boot`` with the expanded (``c_α``) and the z (1.96) critical value; the
    power the constant-SE formula promises (normal, the bootstrap SE of drift 0 at every
    drift) and the normal-theory power with the SE at the drift (threshold ``c_α`` times
    the mean bootstrap SE there, spread the SD of the estimates there); and the interval's
    half-widths in SE units on the side towards 0 and away from it.
    """
    from scipy import stats as sps

    from driftlens_core.calibration import critical_values

    rng = np.random.default_rng(seed)
    ca_arr, cb_arr = critical_values(np.asarray([n_stems]))
    c_a, c_b = float(ca_arr[0]), float(cb_arr[0])

    def runs(shift: float) -> list:
        out = []
        for _ in range(studies):
            t = simulate_table(
                DISPOSITION_PRESETS["disp-qwen"], BATTERY, [ArmSetting(0), ArmSetting(0)],
                n_stems=n_stems, rng=rng, extra_shift_pp=[0.0, shift],
            )  # fmt: skip
            out.append(
                compare_rates(
                    t.stem, t.arm, t.sample, t.aligned, arm_names=("r", "a"), reference=0,
                    n_boot=n_boot, seed=rng,
                ).arms[1]
            )  # fmt: skip
        return out

    at0 = runs(0.0)
    se0 = float(np.std([a.drift_pp for a in at0], ddof=1))
    se0_boot = float(np.mean([a.se for a in at0]))
    flat = float(np.mean([a.mdd_constant_se for a in at0]))
    varying = float(np.mean([a.mdd for a in at0]))
    rows: dict[str, dict] = {}
    for name, drift in (("constant_se_mdd", flat), ("mdd_bar_top", 3.7),
                        ("varying_se_mdd", varying)):  # fmt: skip
        arms = runs(-drift)
        est = np.array([a.drift_pp for a in arms])
        se_b = np.array([a.se for a in arms])
        hi = np.array([a.ci_high for a in arms])
        lo = np.array([a.ci_low for a in arms])
        se_d = float(np.std(est, ddof=1))
        rows[name] = {
            "true_drift_pp": -drift,
            "se_model_pp": model_se_pp(-drift, n_stems),
            "se_across_studies_pp": se_d,
            "se_bootstrap_mean_pp": float(np.mean(se_b)),
            # what the constant-SE formula promises: the bootstrap SE of drift 0 everywhere
            "power_formula_constant_se": float(sps.norm.cdf(drift / se0_boot - c_a)),
            # normal estimate with the test's threshold c_α·SE_boot and spread at the drift
            "power_normal_se_at_drift": float(
                sps.norm.cdf((drift - c_a * float(np.mean(se_b))) / se_d)
            ),
            "power_wald_expanded_critical": float(np.mean(np.abs(est) > c_a * se_b)),
            "power_wald_z": float(np.mean(np.abs(est) > 1.96 * se_b)),
            "power_plain_percentile": float(
                np.mean([a.ci_plain_high < 0 or a.ci_plain_low > 0 for a in arms])
            ),
            "power_test_applied": float(np.mean((hi < 0) | (lo > 0))),
            # the percentile interval around a negative estimate: towards 0 (hi) and away
            "halfwidth_towards_zero_in_se": float(np.mean((hi - est) / se_b)),
            "halfwidth_away_in_se": float(np.mean((est - lo) / se_b)),
        }
    return {
        "preset": "disp-qwen",
        "studies_per_row": studies,
        "c_alpha": c_a,
        "c_beta": c_b,
        "se_at_zero_across_studies_pp": se0,
        "se_at_zero_model_pp": model_se_pp(0.0, n_stems),
        "se_at_zero_bootstrap_mean_pp": se0_boot,
        "false_positive_rate_at_zero_drift": float(
            np.mean([a.ci_high < 0 or a.ci_low > 0 for a in at0])
        ),
        "mdd_constant_se_mean_pp": flat,
        "mdd_varying_se_mean_pp": varying,
        "mdd_varying_se_median_pp": float(np.median([a.mdd for a in at0])),
        "rows": rows,
        "mc_se_power": float(np.sqrt(0.8 * 0.2 / studies)),
    }


def main(argv: list[str] | None = None) -> None:
    """Run the three checks and print (and optionally write) the results as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--arms", type=int, default=40)
    parser.add_argument("--studies", type=int, default=500)
    parser.add_argument("--stems", type=int, default=30)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--checks", default="null,coverage,power",
        help="comma-separated subset of null, coverage, power, mdd-conflict, mdd-generators, "
        "noise (default: the first three)",
    )  # fmt: skip
    parser.add_argument(
        "--generator", choices=(*GENERATORS, "both"), default="both",
        help="simulator of the mdd-generators check (default: both)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    checks = {c.strip() for c in args.checks.split(",") if c.strip()}
    unknown = checks - {"null", "coverage", "power", "mdd-conflict", "mdd-generators",
                         "noise"}  # fmt: skip
    if unknown:
        parser.error(f"unknown check(s): {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "bootstrap": args.bootstrap,
        "stems": args.stems,
        "seed": args.seed,
        "implementation": implementation(),
    }
    result: dict[str, Any] = {"meta": meta}
    if "null" in checks:
        result["null_fpr"] = null_fpr(
            args.replications, args.arms, args.stems, args.bootstrap, args.seed
        )
    if "coverage" in checks:
        result["coverage"] = coverage(args.studies, args.stems, args.bootstrap, args.seed + 1)
    if "power" in checks:
        result["mdd_power"] = [
            mdd_power(name, args.studies, args.stems, args.bootstrap, args.seed + 2 + k)
            for k, name in enumerate(("disp-qwen", "disp-mid"))
        ]
    if "mdd-conflict" in checks:
        result["mdd_conflict"] = mdd_conflict(
            args.studies, args.stems, args.bootstrap, args.seed + 5
        )
    if "mdd-generators" in checks:
        names = GENERATORS if args.generator == "both" else (args.generator,)
        result["mdd_generators"] = [
            mdd_generators(name, args.studies, args.stems, args.bootstrap, args.seed + 7 + k)
            for k, name in enumerate(names)
        ]
    if "noise" in checks:
        result["noise_shares"] = noise_shares(args.studies, args.stems, args.seed + 9)
    meta["seconds"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
