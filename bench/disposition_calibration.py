"""Calibration of the disposition instrument on simulated studies with known drift.

Every study is drawn by :func:`llm.sim.disposition.simulate_table` (fresh stems and
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

Usage::

    python bench/disposition_calibration.py                 # the documented run
    python bench/disposition_calibration.py --replications 20 --studies 50 --bootstrap 1000
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
from llm.sim.disposition import DISPOSITION_PRESETS, ArmSetting, simulate_table

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
        help="comma-separated subset of null, coverage, power (default: all three)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    checks = {c.strip() for c in args.checks.split(",") if c.strip()}
    unknown = checks - {"null", "coverage", "power"}
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
    meta["seconds"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
