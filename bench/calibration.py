"""Simulation check of the d_rel cluster bootstrap: CI coverage and false-positive rate.

Every simulated study is a drift table with known effects (``bench/_simtable.py``):
``drift = base + δ_c + u_q + e`` with a random question effect ``u_q ~ N(0, τ²)`` and
residuals ``e`` (normal, or right-skewed centred Gamma), one row per question and
condition, a ``none`` condition, three pragmatic-noise conditions (δ = 0, pooled into the
floor), an attribute with no effect (``null``), attributes with d_rel 0.2 and 0.5 and a
life event with d_rel 1.0. The true d_rel is ``δ / sqrt(τ² + σ²)``.

Each study runs the full :func:`driftlens_core.analysis.analyze_table` (expanded percentile
interval, B = 10,000 by default) and, on the same seed, the plain percentile interval for
comparison. Reported per condition: coverage of the true d_rel by the 95% CI, the share of
studies with raw p < 0.05 and with BH-adjusted p < 0.05, and the Monte Carlo standard
error of a 95% coverage (sqrt(.95·.05/studies)).

Usage::

    python bench/calibration.py                      # 500 studies per scenario
    python bench/calibration.py --studies 60 --bootstrap 2000 --scenarios main
    python bench/calibration.py --scenarios "" --power 8,30,150   # power at the MDD only

``--power SIZES`` adds the power check of the reported MDD (``bench/mdd_power.py``): at
each number of questions, studies whose true d_rel equals the MDD that null studies report
are detected in about 80 % of cases.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _simtable import simulate_table
from mdd_power import run_size

from driftlens_core.analysis import analyze_table
from driftlens_core.bootstrap import drel_bootstrap, question_sums

SCENARIOS: dict[str, dict[str, object]] = {
    "main": {"n_questions": 60, "errors": "normal"},
    "small": {"n_questions": 30, "errors": "normal"},
    "skewed": {"n_questions": 60, "errors": "gamma"},
    "large": {"n_questions": 200, "errors": "normal"},
}
ATTRIBUTES = {"null": 0.0, "small": 0.2, "medium": 0.5}
LIFE_EVENTS = {"life_event": 1.0}
NULL_CONDITIONS = ("null", "noise0", "noise1", "noise2")


@dataclass
class Tally:
    truth: float
    cover: list[bool] = field(default_factory=list)
    cover_plain: list[bool] = field(default_factory=list)
    sig_raw: list[bool] = field(default_factory=list)
    sig_adj: list[bool] = field(default_factory=list)
    sig_plain: list[bool] = field(default_factory=list)


def run_scenario(
    name: str, *, studies: int, bootstrap: int, seed: int
) -> dict[str, dict[str, float]]:
    """Simulate ``studies`` studies of scenario ``name``; return per-condition rates."""
    spec = SCENARIOS[name]
    rng = np.random.default_rng(seed)
    tallies: dict[str, Tally] = {}
    for _ in range(studies):
        df, truth = simulate_table(
            rng,
            n_questions=int(spec["n_questions"]),  # type: ignore[call-overload]
            attributes=ATTRIBUTES,
            life_events=LIFE_EVENTS,
            n_noise=3,
            metrics=("dtw",),
            errors=str(spec["errors"]),
        )
        study_seed = int(rng.integers(2**63))
        res = analyze_table(df, bootstrap=bootstrap, seed=study_seed).models[0].metric("dtw")
        # the plain percentile interval on the very same replicates (same seed)
        cond = df["condition"].to_numpy()
        names, c = np.unique(cond, return_inverse=True)
        _, q = np.unique(df["question_id"].to_numpy(), return_inverse=True)
        noise = np.array([n.startswith("noise") for n in names])
        # analyze_table spawns nothing for one model: its generator is default_rng(seed)
        qs = question_sums(q, c, df[["dtw"]].to_numpy(), noise)
        plain = drel_bootstrap(qs, n_boot=bootstrap, seed=study_seed, expand=False)
        for j, n in enumerate(names):
            cs = res.condition(str(n))
            t = tallies.setdefault(str(n), Tally(truth[str(n)]))
            t.cover.append(bool(cs.ci_low <= t.truth <= cs.ci_high))
            t.cover_plain.append(bool(plain.ci_low[j, 0] <= t.truth <= plain.ci_high[j, 0]))
            t.sig_raw.append(bool(cs.p_value < 0.05))
            t.sig_adj.append(bool(cs.p_adjusted < 0.05))
            t.sig_plain.append(bool(plain.p_value[j, 0] < 0.05))
    return {
        n: {
            "true_d_rel": t.truth,
            "coverage": float(np.mean(t.cover)),
            "coverage_plain_percentile": float(np.mean(t.cover_plain)),
            "significant_raw": float(np.mean(t.sig_raw)),
            "significant_bh": float(np.mean(t.sig_adj)),
            "significant_plain_percentile": float(np.mean(t.sig_plain)),
        }
        for n, t in sorted(tallies.items(), key=lambda kv: kv[1].truth)
    }


def summarise(rates: dict[str, dict[str, float]]) -> dict[str, float]:
    """Headline numbers over conditions: coverage range and mean, null false-positive rates.

    The four null conditions (three noise conditions and the null attribute) are
    exchangeable, so their pooled rate is the precise estimate (4 x studies tests); the
    maximum over them is also reported because it is what a single condition can show.
    """
    cov = [r["coverage"] for n, r in rates.items() if n != "none"]
    fpr = [rates[n]["significant_raw"] for n in NULL_CONDITIONS if n in rates]
    return {
        "coverage_min": min(cov),
        "coverage_max": max(cov),
        "coverage_mean": float(np.mean(cov)),
        "null_fpr_pooled": float(np.mean(fpr)),
        "null_fpr_max": max(fpr),
        "null_fpr_attribute": rates["null"]["significant_raw"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=500)
    ap.add_argument("--bootstrap", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--power", default="", help="sizes for the power-at-MDD check, e.g. 8,30,150")
    ap.add_argument("--power-studies", type=int, default=1000)
    ap.add_argument("--power-pilot", type=int, default=1000)
    ap.add_argument("--power-bootstrap", type=int, default=1000)
    args = ap.parse_args()
    out: dict[str, object] = {
        "studies": args.studies,
        "bootstrap": args.bootstrap,
        "seed": args.seed,
        "scenarios": {},
    }
    mc_se = float(np.sqrt(0.95 * 0.05 / args.studies))
    print(
        f"{args.studies} studies per scenario, B = {args.bootstrap}, seed {args.seed}; "
        f"Monte Carlo SE of a 95% coverage = {100 * mc_se:.1f} points"
    )
    for k, name in enumerate(n for n in args.scenarios.split(",") if n):
        t0 = time.perf_counter()
        rates = run_scenario(
            name, studies=args.studies, bootstrap=args.bootstrap, seed=args.seed + k
        )
        took = time.perf_counter() - t0
        spec = SCENARIOS[name]
        print(
            f"\n### {name}: {spec['n_questions']} questions, {spec['errors']} residuals "
            f"({took:.0f} s)\n"
        )
        print(
            "| condition | true d_rel | coverage | coverage (plain pct.) | p<0.05 raw | "
            "p<0.05 BH | p<0.05 (plain pct.) |"
        )
        print("|---|---|---|---|---|---|---|")
        for n, r in rates.items():
            bh = "–" if n == "none" else f"{100 * r['significant_bh']:.1f}%"  # not in the BH family
            print(
                f"| {n} | {r['true_d_rel']:.2f} | {100 * r['coverage']:.1f}% | "
                f"{100 * r['coverage_plain_percentile']:.1f}% | "
                f"{100 * r['significant_raw']:.1f}% | "
                f"{bh} | {100 * r['significant_plain_percentile']:.1f}% |"
            )
        summary = summarise(rates)
        print(
            f"\ncoverage {100 * summary['coverage_min']:.1f}–{100 * summary['coverage_max']:.1f}% "
            f"(mean {100 * summary['coverage_mean']:.1f}%); null false-positive rate "
            f"{100 * summary['null_fpr_pooled']:.1f}% pooled, "
            f"{100 * summary['null_fpr_max']:.1f}% worst condition"
        )
        out["scenarios"][name] = {"spec": spec, "rates": rates, "summary": summary, "seconds": took}  # type: ignore[index]
    if args.power:
        print(
            f"\n### Power at the reported MDD: {args.power_studies} studies per size "
            f"(pilot {args.power_pilot}), B = {args.power_bootstrap}\n"
        )
        print("| questions | true d_rel = MDD | power at MDD | MC SE |")
        print("|---|---|---|---|")
        power = []
        for k, size in enumerate(int(x) for x in args.power.split(",")):
            r = run_size(
                size,
                studies=args.power_studies,
                pilot=args.power_pilot,
                bootstrap=args.power_bootstrap,
                seed=args.seed + 100 + k,
            )
            power.append(r)
            print(
                f"| {size} | {r['true_d_rel']:.3f} | {100 * r['power_at_mdd']:.1f}% | "
                f"{100 * r['mc_se']:.1f} |",
                flush=True,
            )
        out["power_at_mdd"] = power
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
