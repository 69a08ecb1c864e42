"""Recovery of the paired distractor effect by the memory-conflict statistics.

Each replication simulates the RQ3 cohort: 60 instances (20 per conflict type) × the five
simulated response models (``RESPONDER_PROFILES``) × {0, 6} distractors, one answer each,
scored by one simulated judge (mixture rater noise, its leniency). Moves are drawn with
the simulator's own code (:func:`llm.sim.conflicts.draw_moves`, common random numbers
across the two doses of an instance, as the served simulator does), turned into the true
rubric scores (:func:`true_scores`) and judged (:func:`noisy_score`). The paired effect is
estimated exactly as ``driftlens conflicts stats`` does
(:func:`driftlens_core.rubric.paired_effect`, instance-cluster bootstrap, models pooled).

The known truth is the *expected judged* difference of the D1–D5 total between 6 and 0
distractors, computed in closed form (:func:`expected_judged_total`) and averaged over
models and types. The per-distractor drop of the default profiles is rescaled (bisection)
so that this truth is exactly the target (−0.7 by default); the null preset has no drop.

Reported: the truth, the mean estimate, the share of 95% CIs covering the truth, the share
excluding 0 (power, or the false-positive rate under the null), with Monte Carlo SEs.

Also reported (``judge_agreement``): how closely the two simulated judges agree with each
other — within-one, exact, MAE and quadratic-weighted κ of dimension-level pairs, the
shape of the seed paper's human-validation table (85.8 % / 59.1 % / 0.60 / 0.71) — on
answers drawn from every model × type at 6 distractors, and the spread of the true scores
over the 0–4 levels.

Usage::

    python bench/conflicts_calibration.py                 # 500 replications, B = 1000
    python bench/conflicts_calibration.py --reps 100 --bootstrap 500
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import replace

import numpy as np

from driftlens_core.rubric import paired_effect
from llm.seeds import stable_int
from llm.sim.conflicts import (
    DEGRADING,
    JUDGE_PROFILES,
    RESPONDER_PROFILES,
    TYPES,
    JudgeProfile,
    ResponderProfile,
    draw_moves,
    expected_judged_total,
    noisy_score,
    true_scores,
)

DIMS = ("d1", "d2", "d3", "d4", "d5")


def known_effect(profiles: list[ResponderProfile], judge: JudgeProfile, lo: int, hi: int) -> float:
    """Expected judged total at ``hi`` minus ``lo`` distractors, mean over models and types."""
    diffs = [
        expected_judged_total(p.at_dose(t, hi), judge)
        - expected_judged_total(p.at_dose(t, lo), judge)
        for p in profiles
        for t in TYPES
    ]
    return float(np.mean(diffs))


def scaled_profiles(target: float, judge: JudgeProfile) -> tuple[list[ResponderProfile], float]:
    """The default profiles with their drop rescaled so the known effect equals ``target``."""
    base = list(RESPONDER_PROFILES.values())

    def with_scale(k: float) -> list[ResponderProfile]:
        return [replace(p, drop={m: p.drop.get(m, 0.0) * k for m in DEGRADING}) for p in base]

    if target == 0:
        return with_scale(0.0), 0.0
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        eff = known_effect(with_scale(mid), judge, 0, 6)
        lo, hi = (mid, hi) if eff > target else (lo, mid)
    k = (lo + hi) / 2
    return with_scale(k), known_effect(with_scale(k), judge, 0, 6)


def replicate(
    profiles: list[ResponderProfile],
    judge: JudgeProfile,
    *,
    n_instances: int,
    rep: int,
    n_boot: int,
) -> tuple[float, float, float]:
    """One simulated cohort: (estimate, ci_low, ci_high) of the pooled paired effect."""
    clusters: list[int] = []
    diffs: list[float] = []
    for m, prof in enumerate(profiles):
        for i in range(n_instances):
            type_ = TYPES[i % len(TYPES)]
            totals = []
            for dose in (0, 6):
                # same draws at both doses (common random numbers), independent judging
                moves = draw_moves(
                    prof.at_dose(type_, dose),
                    high_risk=False,
                    rng=random.Random(stable_int("bench-moves", rep, m, i)),
                )
                truth = true_scores(moves, high_risk=False)
                jr = random.Random(stable_int("bench-judge", rep, m, i, dose))
                totals.append(sum(noisy_score(truth[d], judge, d, jr) for d in DIMS))
            clusters.append(i)
            diffs.append(totals[1] - totals[0])
    eff = paired_effect(np.array(clusters), np.array(diffs, dtype=float), n_boot=n_boot, seed=rep)
    return eff.mean_diff, eff.ci_low, eff.ci_high


def judge_agreement(n_answers: int, seed: int = 0) -> dict[str, float]:
    """Agreement of the two simulated judges on the same simulated answers (D1–D5 pairs)."""
    from driftlens_core.ordinal import ordinal_agreement

    judges = [JUDGE_PROFILES[n] for n in sorted(JUDGE_PROFILES)]
    profiles = list(RESPONDER_PROFILES.values())
    a: list[int] = []
    b: list[int] = []
    levels = [0] * 5
    for i in range(n_answers):
        prof = profiles[i % len(profiles)]
        type_ = TYPES[(i // len(profiles)) % len(TYPES)]
        rng = random.Random(stable_int("bench-agree", seed, i))
        truth = true_scores(
            draw_moves(prof.at_dose(type_, 6), high_risk=False, rng=rng), high_risk=False
        )
        for d in DIMS:
            levels[int(truth[d])] += 1
            a.append(noisy_score(truth[d], judges[0], d, rng))
            b.append(noisy_score(truth[d], judges[1], d, rng))
    oa = ordinal_agreement(a, b)
    total = sum(levels)
    return {
        "pairs": oa.n,
        "within_one": oa.within_one,
        "exact": oa.exact,
        "mae": oa.mae,
        "qwk": oa.qwk,
        **{f"true_share_{k}": levels[k] / total for k in range(5)},
    }


def run(
    target: float, judge_name: str, reps: int, n_instances: int, n_boot: int
) -> dict[str, float | str]:
    judge = JUDGE_PROFILES[judge_name]
    profiles, truth = scaled_profiles(target, judge)
    est, cover, excl = [], 0, 0
    for r in range(reps):
        m, lo, hi = replicate(profiles, judge, n_instances=n_instances, rep=r, n_boot=n_boot)
        est.append(m)
        cover += int(lo <= truth <= hi)
        excl += int(hi < 0 or lo > 0)
    return {
        "target": target,
        "judge": judge_name,
        "truth": truth,
        "mean_estimate": float(np.mean(est)),
        "coverage": cover / reps,
        "excludes_zero": excl / reps,
        "mc_se_95": math.sqrt(0.95 * 0.05 / reps),
        "reps": reps,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--instances", type=int, default=60)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--effect", type=float, default=-0.7)
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--agreement-answers", type=int, default=2000)
    args = ap.parse_args(argv)
    agree = judge_agreement(args.agreement_answers)
    print(
        f"Simulated judge vs judge ({' vs '.join(sorted(JUDGE_PROFILES))}, "
        f"{agree['pairs']} dimension-level pairs): within-one {100 * agree['within_one']:.1f}%, "
        f"exact {100 * agree['exact']:.1f}%, MAE {agree['mae']:.2f}, QWK {agree['qwk']:.2f} "
        "(seed's human pairs: 85.8% / 59.1% / 0.60 / 0.71)"
    )
    print(
        "True scores over the levels 0-4: "
        + ", ".join(f"{k}: {100 * agree[f'true_share_{k}']:.1f}%" for k in range(5))
    )
    if args.reps == 0:
        return
    rows = []
    t0 = time.perf_counter()
    for judge in sorted(JUDGE_PROFILES):
        for target in (args.effect, 0.0):
            rows.append(run(target, judge, args.reps, args.instances, args.bootstrap))
    print(
        f"{args.reps} replications × {args.instances} instances × "
        f"{len(RESPONDER_PROFILES)} models, doses 0 vs 6, B = {args.bootstrap} "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    print("| judge | preset | known effect | mean estimate | 95% CI covers | CI excludes 0 |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        preset = "null" if r["target"] == 0 else f"effect {r['target']:+.1f}"
        print(
            f"| {r['judge']} | {preset} | {r['truth']:+.3f} | {r['mean_estimate']:+.3f} | "
            f"{100 * r['coverage']:.1f}% | {100 * r['excludes_zero']:.1f}% |"
        )
    print(f"Monte Carlo SE of a 95% share: ±{100 * rows[0]['mc_se_95']:.1f} points")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"calibration": rows, "judge_agreement": agree}, f, indent=2)


if __name__ == "__main__":
    main()
