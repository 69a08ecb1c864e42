"""Why a calibration coverage cell sits off 95 %: interval variants on the same studies.

Two questions of issue 35's coverage cells (docs/calibration.md):

* ``conflicts``: the strict judge at a 5 % slice read 96.8 % over 400 studies
  (``bench/calibration_coverage_core.py``). On the same simulated studies (that bench's own
  draw, ``--seed``), this prints the coverage of the population's mean D2 vote by the
  question jackknife the instruments report (λ re-tuned in every replicate, ``t`` on
  ``G_h − 1``), the same jackknife with λ held at the full slice's value, each with a
  skewness correction of the studentised interval (Hall 1992: the ends move by
  ``γ̂ (2q² + 1) / (6 √G_h)`` standard errors, ``γ̂`` the skewness of the jackknife
  replicates), the sandwich, and the human-only jackknife, with the SD of the estimates
  beside the mean and RMS reported SEs (is the variance too large, or the quantile?).
* ``reasoning``: runs ``bench/calibration_coverage_reasoning.py`` with the skewness-corrected
  jackknife in place of the reported one (the instruments' estimator is swapped for this
  process only), so its table compares with that bench's own on the same seeds.

Usage::

    python bench/calibration_interval_variants.py conflicts --judge sim/judge-strict \\
        --human-share 0.05 --studies 2000 --seed 1
    python bench/calibration_interval_variants.py reasoning --studies 400 --human-share 0.1
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats

import driftlens_core.ppi as ppi

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: The reported jackknife, kept before ``reasoning`` swaps the module's for the variant.
_REPORTED_JACKKNIFE = ppi._jackknife


def _skew_shift(dev: np.ndarray, q: float) -> float:
    """Hall's skewness correction, in SEs, from the replicates' deviations ``mean − θ̂₍₋ᵢ₎``."""
    m2, m3 = float(np.mean(dev**2)), float(np.mean(dev**3))
    gamma = m3 / m2**1.5 if m2 > 0 else 0.0
    return gamma * (2 * q * q + 1) / (6 * math.sqrt(dev.size))


def jackknife_skew(
    arms: Sequence[tuple[float, ppi.PPIArm]], lam: float | None, level: float
) -> ppi.PPIEstimate:
    """``driftlens_core.ppi._jackknife`` with the skewness-corrected ``t`` interval."""
    est = _REPORTED_JACKKNIFE(arms, lam, level)
    if est.variance != "jackknife":
        return est
    parts = [(c, ppi._parts(arm, k)) for k, (c, arm) in enumerate(arms)]
    _, _, labelled, names = ppi._cluster_sums(parts)
    reps = np.empty((int(labelled.sum()), 2))
    for r, name in enumerate(names[labelled]):
        kept = []
        for c, p in parts:
            keep = p.cluster.astype(str) != name
            inc = None if p.inclusion is None else p.inclusion[keep]
            kept.append((c, ppi.PPIArm(p.f[keep], p.y[keep], inc, p.cluster[keep])))
        reps[r] = ppi._contrast(kept, lam, level).estimate, ppi._contrast(kept, 0.0, level).estimate
    dev = reps.mean(axis=0) - reps
    q = float(stats.t.ppf(0.5 + level / 2, reps.shape[0] - 1))
    se0 = (est.human_only_ci[1] - est.human_only) / q
    a, a0 = _skew_shift(dev[:, 0], q), _skew_shift(dev[:, 1], q)
    return replace(
        est,
        ci=(est.estimate - est.se * (q - a), est.estimate + est.se * (q + a)),
        human_only_ci=(est.human_only - se0 * (q - a0), est.human_only + se0 * (q + a0)),
    )


def conflicts(argv: list[str]) -> None:
    """The conflicts D2 cell's interval variants on ``calibration_coverage_core``'s studies."""
    from calibration_coverage_core import SCALE, parse_judge, population_truth

    from annotation.simulated import AnnotatorPool
    from llm.seeds import stable_int
    from study.conflicts.items import load_sample_banks
    from study.conflicts.sim.judge import judged_targets, noisy_score
    from study.conflicts.sim.moves import RESPONDER_PROFILES, draw_moves, true_scores

    ap = argparse.ArgumentParser()
    ap.add_argument("--judge", default="sim/judge-strict")
    ap.add_argument("--model", default="sim/mc-balanced")
    ap.add_argument("--human-share", type=float, default=0.05)
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--flip", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    pool = AnnotatorPool(annotators=2, flip=args.flip, seed=args.seed)
    pop = population_truth(args.model, pool)
    banks = load_sample_banks()
    prof = RESPONDER_PROFILES[args.model.removeprefix("sim/")]
    jp, confuse = parse_judge(args.judge)
    covers: dict[str, list[float]] = {}
    ses: dict[str, list[float]] = {}
    points: list[tuple[float, float]] = []
    started = time.process_time()
    for s in range(args.studies):
        # the same draw as calibration_coverage_core.one_study
        f, inst, human = [], [], []
        for b in banks:
            for k in range(args.samples):
                rng = random.Random(stable_int("coverage-core", args.seed, s, b.instance_id, k))
                moves = draw_moves(prof.at_dose(b.type, 6), high_risk=False, rng=rng)
                true = true_scores(moves, high_risk=False)
                target = judged_targets(true, jp, cites_distractor=moves.cite_distractor)
                score = noisy_score(target["d2"], jp, "d2", rng, type_=b.type)
                if confuse is not None and score in confuse[:2] and rng.random() < confuse[2]:
                    score = confuse[1] if score == confuse[0] else confuse[0]
                f.append(score)
                votes = [
                    int(pool.vote(str(int(true["d2"])), SCALE, ordinal=True, rng=rng))
                    for _ in range(2)
                ]
                human.append(float(np.mean(votes)))
                inst.append(b.instance_id)
        n = len(f)
        rng_np = np.random.default_rng(stable_int("coverage-core-slice", args.seed, s))
        pick = np.zeros(n, dtype=bool)
        pick[rng_np.choice(n, size=max(2, round(args.human_share * n)), replace=False)] = True
        fa, h, cl = np.array(f, float), np.where(pick, np.array(human), np.nan), np.array(inst)
        jk = ppi.ppi_mean_jackknife(fa, h, cluster=cl)
        fixed = ppi.ppi_mean_jackknife(fa, h, cluster=cl, lam=jk.lam)
        arms = [(1.0, ppi.PPIArm(fa, h, None, cl))]
        rows = {
            "jackknife, lambda re-tuned (reported)": (jk.ci, jk.se),
            "jackknife, lambda re-tuned, skew-corrected": (
                jackknife_skew(arms, None, 0.95).ci, jk.se),
            "jackknife, lambda fixed": (fixed.ci, fixed.se),
            "jackknife, lambda fixed, skew-corrected": (
                jackknife_skew(arms, jk.lam, 0.95).ci, fixed.se),
            "sandwich, lambda tuned": (
                (sw := ppi.ppi_mean(fa, h, cluster=cl)).ci, sw.se),
            "human-only jackknife": (
                jk.human_only_ci, (jk.human_only_ci[1] - jk.human_only) /
                float(stats.t.ppf(0.975, jk.n_human_clusters - 1))),
        }  # fmt: skip
        for name, (ci, se) in rows.items():
            covers.setdefault(name, []).append(float(ci[0] <= pop <= ci[1]))
            ses.setdefault(name, []).append(se)
        points.append((jk.estimate, jk.human_only))
    est = np.array(points)
    mc = math.sqrt(0.95 * 0.05 / args.studies)
    print(
        f"{args.judge}, {args.human_share:.0%} slice, {args.studies} studies, seed {args.seed}: "
        f"population truth {pop:.4f}; SD of calibrated estimates {est[:, 0].std(ddof=1):.4f} "
        f"(human-only {est[:, 1].std(ddof=1):.4f}); calibrated bias {est[:, 0].mean() - pop:+.4f}; "
        f"Monte Carlo SE of a 95 % coverage {100 * mc:.1f} points; "
        f"{time.process_time() - started:.0f} s CPU"
    )
    print("| interval | covers | mean SE | RMS SE |\n|---|---:|---:|---:|")
    for name in rows:
        c, e = np.mean(covers[name]), np.array(ses[name])
        print(f"| {name} | {100 * c:.1f} % | {e.mean():.4f} | {math.sqrt(np.mean(e**2)):.4f} |")


def reasoning(argv: list[str]) -> None:
    """``calibration_coverage_reasoning`` with the skewness-corrected jackknife interval."""
    import calibration_coverage_reasoning as bench

    ppi._jackknife = jackknife_skew  # this process only
    bench.main(argv)


def main() -> None:
    """``conflicts ARGS`` or ``reasoning ARGS``."""
    if len(sys.argv) < 2 or sys.argv[1] not in ("conflicts", "reasoning"):
        sys.exit("usage: calibration_interval_variants.py conflicts|reasoning [ARGS]")
    (conflicts if sys.argv[1] == "conflicts" else reasoning)(sys.argv[2:])


if __name__ == "__main__":
    main()
