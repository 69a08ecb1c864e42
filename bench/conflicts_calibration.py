"""Recovery of the paired distractor effect by the memory-conflict statistics.

Each replication simulates the RQ3 cohort: 60 instances (20 per conflict type) × the five
simulated response models (``RESPONDER_PROFILES``) × {0, 6} distractors, one answer each,
scored by one simulated judge (mixture rater noise, its leniency). Moves are drawn with
the simulator's own code (:func:`study.conflicts.sim.moves.draw_moves`, common random numbers
across the two doses of an instance, as the served simulator does), turned into the true
rubric scores (:func:`true_scores`) and judged (:func:`noisy_score`). The paired effect is
estimated exactly as ``driftlens conflicts stats`` does
(:func:`driftlens_core.rubric.paired_effect`, instance-cluster bootstrap, models pooled).

The known truth is what the *judge* measures in expectation: the expected judged
difference of the D1–D5 total between 6 and 0 distractors, in closed form
(:func:`expected_judged_total`, which includes the judge's leniency, rounding and
clipping to 0–4), averaged over models and types. A judge with a floor and a ceiling
compresses the effect of the true scores (strict judge: the true-score effect is larger
in size than the judged one); the interval estimates the judged effect, so that is the
target. Both are printed. The per-distractor drop of the default profiles is rescaled
(bisection) so that the judged truth is exactly the target (−0.7 by default); the null
preset has no drop in the answers, but under ``judge-strict`` its judged truth is −0.20, not
0: that judge marks down D3 and D4 of an answer citing a shown distractor (fitted to the
seed's larger drop under its more interpretive judge, docs/conflicts.md), and only a dose
above 0 shows one to cite. Its "excludes 0" share is then power against −0.20, not a
false-positive rate.

Four 95% intervals are computed on the same simulated studies:

* ``expanded`` — Hesterberg's expanded percentile interval of the instance-cluster
  bootstrap: what the workbench reports (the primary interval);
* ``percentile`` — the plain percentile interval of the same replicates;
* ``bca`` — the bias-corrected and accelerated interval (``scipy.stats.bootstrap``,
  resampling instances, its own replicates);
* ``t_cluster`` — estimate ± t(0.975, n − 1) × the cluster-robust standard error
  (instances as clusters).

Reported per judge and preset: both truths, the mean estimate, the empirical SD of the
estimates against the mean bootstrap SE (is the spread estimated honestly?), and per
interval the share covering the truth, the share excluding 0 (power, or the
false-positive rate under the null) and the mean width, with Monte Carlo SEs.

Also reported (``judge_agreement``): how closely the two simulated judges agree with each
other — within-one, exact, MAE and quadratic-weighted κ of dimension-level pairs, the
shape of the seed paper's human-validation table (85.8 % / 59.1 % / 0.60 / 0.71) — on
answers drawn from every model × type at 6 distractors, and the spread of the true scores
over the 0–4 levels.

Usage::

    python bench/conflicts_calibration.py                 # 1,000 replications, B = 1000
    python bench/conflicts_calibration.py --reps 100 --bootstrap 500 --seed 7
    python bench/conflicts_calibration.py --reps 0        # judge agreement only
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import replace
from typing import Any

import numpy as np
from scipy import stats

from driftlens_core.bootstrap import cluster_bootstrap_sums, percentile_interval
from driftlens_core.ordinal import ordinal_agreement
from driftlens_core.rubric import paired_effect
from llm.seeds import stable_int
from study.conflicts.sim.judge import (
    JUDGE_PROFILES,
    JudgeProfile,
    expected_judged_total,
    judged_targets,
    noisy_score,
    simulate_judge_pairs,
)
from study.conflicts.sim.moves import (
    DEGRADING,
    RESPONDER_PROFILES,
    TYPES,
    ResponderProfile,
    TypeRates,
    draw_moves,
    true_scores,
)

DIMS = ("d1", "d2", "d3", "d4", "d5")
METHODS = ("expanded", "percentile", "bca", "t_cluster")


def known_effect(profiles: list[ResponderProfile], judge: JudgeProfile, lo: int, hi: int) -> float:
    """Expected judged total at ``hi`` minus ``lo`` distractors, mean over models and types."""
    diffs = [
        expected_judged_total(p.at_dose(t, hi), judge, t, distractors_shown=hi > 0)
        - expected_judged_total(p.at_dose(t, lo), judge, t, distractors_shown=lo > 0)
        for p in profiles
        for t in TYPES
    ]
    return float(np.mean(diffs))


def expected_true_total(rates: TypeRates, *, distractors_shown: bool) -> float:
    """Expected *true* D1–D5 total (no judge): the effect before any floor or ceiling."""
    # a noiseless judge without leniency or penalty reports the truth exactly
    truth = JudgeProfile("truth", {}, sd_small=1e-9, p_large=0.0)
    return expected_judged_total(rates, truth, distractors_shown=distractors_shown)


def true_effect(profiles: list[ResponderProfile], lo: int, hi: int) -> float:
    """Expected true total at ``hi`` minus ``lo`` distractors, mean over models and types."""
    return float(
        np.mean(
            [
                expected_true_total(p.at_dose(t, hi), distractors_shown=hi > 0)
                - expected_true_total(p.at_dose(t, lo), distractors_shown=lo > 0)
                for p in profiles
                for t in TYPES
            ]
        )
    )


def scaled_profiles(target: float, judge: JudgeProfile) -> tuple[list[ResponderProfile], float]:
    """The default profiles with their drop rescaled so the known effect equals ``target``."""
    base = list(RESPONDER_PROFILES.values())

    def with_scale(k: float) -> list[ResponderProfile]:
        return [replace(p, drop={m: p.drop.get(m, 0.0) * k for m in DEGRADING}) for p in base]

    if target == 0:
        # no drop in the answers' rates; the judged truth is still not 0 under a judge that
        # marks down answers citing a shown distractor (judge-strict's distractor penalty)
        none = with_scale(0.0)
        return none, known_effect(none, judge, 0, 6)
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        eff = known_effect(with_scale(mid), judge, 0, 6)
        lo, hi = (mid, hi) if eff > target else (lo, mid)
    k = (lo + hi) / 2
    return with_scale(k), known_effect(with_scale(k), judge, 0, 6)


def simulate_diffs(
    profiles: list[ResponderProfile],
    judge: JudgeProfile,
    *,
    n_instances: int,
    rep: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One simulated cohort: (instance of every row, judged total at 6 minus at 0)."""
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
                    rng=random.Random(stable_int("bench-moves", seed, rep, m, i)),
                )
                if dose == 0:  # no distractor shown to cite (as the served responder)
                    moves = replace(moves, cite_distractor=False)
                truth = true_scores(moves, high_risk=False)
                target = judged_targets(truth, judge, cites_distractor=moves.cite_distractor)
                jr = random.Random(stable_int("bench-judge", seed, rep, m, i, dose))
                totals.append(sum(noisy_score(target[d], judge, d, jr, type_=type_) for d in DIMS))
            clusters.append(i)
            diffs.append(totals[1] - totals[0])
    return np.array(clusters), np.array(diffs, dtype=float)


def intervals(
    clusters: np.ndarray, diffs: np.ndarray, *, n_boot: int, boot_seed: int
) -> tuple[float, float, dict[str, tuple[float, float]]]:
    """(estimate, bootstrap SE, {method: 95% interval}) of the pooled paired effect."""
    eff = paired_effect(clusters, diffs, n_boot=n_boot, seed=boot_seed)
    _, codes = np.unique(clusters, return_inverse=True)
    q = int(codes.max()) + 1
    n_c = np.bincount(codes, minlength=q).astype(float)
    s_c = np.bincount(codes, weights=diffs, minlength=q)
    # the same replicates as paired_effect (same columns, same seed): the plain interval
    reps = cluster_bootstrap_sums(np.column_stack([n_c, s_c]), n_boot=n_boot, seed=boot_seed)
    ratio = reps[:, 1] / reps[:, 0]
    p_lo, p_hi = percentile_interval(ratio, 0.95)
    e_lo, e_hi = percentile_interval(ratio, 0.95, n_clusters=q)
    assert math.isclose(float(e_lo[0]), eff.ci_low) and math.isclose(float(e_hi[0]), eff.ci_high)
    bca = stats.bootstrap(
        (n_c, s_c),
        lambda n, s, axis=-1: s.sum(axis=axis) / n.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=n_boot,
        method="BCa",
        random_state=np.random.default_rng(boot_seed),
    ).confidence_interval
    # cluster-robust (CR1) standard error of the ratio estimator, t with n − 1 df
    est = float(s_c.sum() / n_c.sum())
    resid = s_c - est * n_c
    se_cr = math.sqrt(q / (q - 1) * float(np.sum(resid**2))) / float(n_c.sum())
    t = float(stats.t.ppf(0.975, q - 1))
    out = {
        "expanded": (eff.ci_low, eff.ci_high),
        "percentile": (float(p_lo[0]), float(p_hi[0])),
        "bca": (float(bca.low), float(bca.high)),
        "t_cluster": (est - t * se_cr, est + t * se_cr),
    }
    return eff.mean_diff, eff.se, out


def judge_agreement(n_answers: int, seed: int = 0) -> dict[str, float]:
    """Agreement of the two simulated judges on the same simulated answers (D1–D5 pairs)."""
    names = sorted(JUDGE_PROFILES)
    a, b, truth = simulate_judge_pairs(
        JUDGE_PROFILES[names[0]], JUDGE_PROFILES[names[1]], n_answers, seed=seed
    )
    oa = ordinal_agreement(a, b)
    levels = np.bincount(np.asarray(truth), minlength=5)
    return {
        "pairs": oa.n,
        "within_one": oa.within_one,
        "exact": oa.exact,
        "mae": oa.mae,
        "qwk": oa.qwk,
        **{f"true_share_{k}": float(levels[k] / levels.sum()) for k in range(5)},
    }


def _replications(
    profiles: list[ResponderProfile],
    judge: JudgeProfile,
    reps: range,
    n_instances: int,
    n_boot: int,
    seed: int,
) -> list[tuple[float, float, dict[str, tuple[float, float]]]]:
    """(estimate, bootstrap SE, intervals) of the replications ``reps`` (one worker's share)."""
    out = []
    for r in reps:
        clusters, diffs = simulate_diffs(profiles, judge, n_instances=n_instances, rep=r, seed=seed)
        out.append(
            intervals(clusters, diffs, n_boot=n_boot, boot_seed=stable_int("bench-boot", seed, r))
        )
    return out


def run(
    target: float,
    judge_name: str,
    reps: int,
    n_instances: int,
    n_boot: int,
    seed: int,
    jobs: int = 1,
    mixture: tuple[float, float, float] | None = None,
) -> dict[str, Any]:
    """Coverage, power and width of every interval for one judge and preset.

    ``mixture`` (SD small, SD large, P large) replaces the judge's rater noise, to measure
    the intervals under another noise (the judge's leniency is kept).
    """
    judge = JUDGE_PROFILES[judge_name]
    if mixture is not None:
        judge = replace(judge, sd_small=mixture[0], sd_large=mixture[1], p_large=mixture[2])
    profiles, truth = scaled_profiles(target, judge)
    # every replication has its own seeds, so splitting them over processes changes nothing
    shares = [range(k, reps, jobs) for k in range(jobs)]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            n = len(shares)
            parts = list(
                pool.map(
                    _replications,
                    [profiles] * n,
                    [judge] * n,
                    shares,
                    [n_instances] * n,
                    [n_boot] * n,
                    [seed] * n,
                )
            )
    else:
        parts = [_replications(profiles, judge, shares[0], n_instances, n_boot, seed)]
    results = [x for part in parts for x in part]
    est = [m for m, _, _ in results]
    ses = [se for _, se, _ in results]
    cover = dict.fromkeys(METHODS, 0)
    excl = dict.fromkeys(METHODS, 0)
    width = dict.fromkeys(METHODS, 0.0)
    for _, _, cis in results:
        for k, (lo, hi) in cis.items():
            cover[k] += int(lo <= truth <= hi)
            excl[k] += int(hi < 0 or lo > 0)
            width[k] += hi - lo
    sd = float(np.std(est, ddof=1)) if reps > 1 else float("nan")
    return {
        "target": target,
        "judge": judge_name,
        "truth": truth,
        "true_score_effect": true_effect(profiles, 0, 6),
        "mean_estimate": float(np.mean(est)),
        "mc_se_mean_estimate": sd / math.sqrt(reps) if reps > 1 else float("nan"),
        "sd_estimates": sd,
        "mean_bootstrap_se": float(np.mean(ses)),
        "coverage": {k: cover[k] / reps for k in METHODS},
        "excludes_zero": {k: excl[k] / reps for k in METHODS},
        "mean_width": {k: width[k] / reps for k in METHODS},
        "mc_se_95": math.sqrt(0.95 * 0.05 / reps),
        "reps": reps,
        "rater_noise": [judge.sd_small, judge.sd_large, judge.p_large],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=60)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--effect", type=float, default=-0.7)
    ap.add_argument("--seed", type=int, default=0, help="seeds every simulated study")
    ap.add_argument("--judge", action="append", help="only this judge (repeatable)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument(
        "--mixture",
        type=str,
        default=None,
        help="rater noise SD_SMALL,SD_LARGE,P_LARGE for the coverage runs (default: the judges')",
    )
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--agreement-answers", type=int, default=2000)
    args = ap.parse_args(argv)
    print(f"seed {args.seed}")
    agree = judge_agreement(args.agreement_answers, seed=args.seed)
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
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"seed": args.seed, "judge_agreement": agree}, f, indent=2)
        return
    mixture = None
    if args.mixture:
        sd_s, sd_l, p_l = (float(x) for x in args.mixture.split(","))
        mixture = (sd_s, sd_l, p_l)
        print(f"rater noise of the coverage runs: SD {sd_s} / {sd_l}, P(large) {p_l}")
    rows = []
    t0 = time.perf_counter()
    for judge in args.judge or sorted(JUDGE_PROFILES):
        for target in (args.effect, 0.0):
            rows.append(
                run(
                    target,
                    judge,
                    args.reps,
                    args.instances,
                    args.bootstrap,
                    seed=args.seed,
                    jobs=args.jobs,
                    mixture=mixture,
                )
            )
    print(
        f"{args.reps} replications × {args.instances} instances × "
        f"{len(RESPONDER_PROFILES)} models, doses 0 vs 6, B = {args.bootstrap}, seed {args.seed} "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    print(
        "| judge | preset | judged truth | true-score effect | mean estimate | SD of estimates "
        "| mean bootstrap SE |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        preset = "null" if r["target"] == 0 else f"effect {r['target']:+.1f}"
        print(
            f"| {r['judge']} | {preset} | {r['truth']:+.3f} | {r['true_score_effect']:+.3f} | "
            f"{r['mean_estimate']:+.3f} (±{r['mc_se_mean_estimate']:.3f}) | "
            f"{r['sd_estimates']:.3f} | {r['mean_bootstrap_se']:.3f} |"
        )
    print()
    print("| judge | preset | interval | 95% CI covers | CI excludes 0 | mean width |")
    print("|---|---|---|---:|---:|---:|")
    for r in rows:
        preset = "null" if r["target"] == 0 else f"effect {r['target']:+.1f}"
        for k in METHODS:
            label = f"**{k}** (primary)" if k == "expanded" else k
            print(
                f"| {r['judge']} | {preset} | {label} | {100 * r['coverage'][k]:.1f}% | "
                f"{100 * r['excludes_zero'][k]:.1f}% | {r['mean_width'][k]:.3f} |"
            )
    print(f"Monte Carlo SE of a 95% share: ±{100 * rows[0]['mc_se_95']:.1f} points")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"seed": args.seed, "calibration": rows, "judge_agreement": agree}, f, indent=2
            )


if __name__ == "__main__":
    main()
