"""Coverage of the PPI++ interval over many studies, the estimator alone (no workspace path).

``bench/calibration_coverage.py`` runs each study through the workbench (generate, judge,
push, simulated annotators, pull): ~10 s a study, so a few dozen per cell. This bench draws
the same studies in memory with the simulator's own functions — an answer's moves
(:func:`study.conflicts.sim.moves.draw_moves` from the responder profile at 6 distractors,
its conflict type's rates), its true scores, the judge's score
(:func:`study.conflicts.sim.judge.noisy_score` with the judge's leniency), and the
annotators' votes (:meth:`annotation.simulated.AnnotatorPool.vote`) — so that hundreds of
studies per cell pin the coverage down. The estimator, the slice (a simple random sample of
``--human-share``), the human label (the mean of the votes) and the truth (the mean expected
vote over the study's answers) are as in the workspace bench; the judge-only interval is
the report's instance-cluster bootstrap (:func:`driftlens_core.rubric.cluster_mean`).

Usage::

    python bench/calibration_coverage_core.py --studies 400 --human-share 0.05 0.1 \
        --judges sim/judge-lenient sim/judge-strict confuse=3~4@0.3
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from annotation.simulated import AnnotatorPool
from driftlens_core.ppi import ppi_mean, ppi_mean_jackknife
from driftlens_core.rubric import cluster_mean
from llm.seeds import stable_int
from study.conflicts.items import load_sample_banks
from study.conflicts.sim.judge import (
    FALLBACK_JUDGE,
    JUDGE_PROFILES,
    JudgeProfile,
    judged_targets,
    noisy_score,
)
from study.conflicts.sim.moves import RESPONDER_PROFILES, draw_moves, true_scores

SCALE = [str(k) for k in range(5)]


def population_truth(model: str, pool: AnnotatorPool) -> float:
    """The mean expected vote over the population of answers (exact, from the D2 rates).

    An answer's true D2 is 4 / 3 (full explanation, without / with a gap), 2 / 1 (partial,
    without / with only a token) or 0, drawn from its bank's type at 6 distractors; every
    bank has the same number of answers.
    """
    prof = RESPONDER_PROFILES[model.removeprefix("sim/")]
    values = []
    for b in load_sample_banks():
        r = prof.at_dose(b.type, 6)
        gs, ts = r.gap_share, r.token_share
        p = {4: r.explanation_full * (1 - gs), 3: r.explanation_full * gs,
             2: r.explanation_partial * (1 - ts), 1: r.explanation_partial * ts}  # fmt: skip
        p[0] = 1.0 - sum(p.values())
        values.append(sum(q * pool.expected_vote(k, 5) for k, q in p.items()))
    return float(np.mean(values))


def parse_judge(spec: str) -> tuple[JudgeProfile, tuple[int, int, float] | None]:
    """A judge preset, or a confusing labeler ``confuse=A~B@P``.

    The confusing labeler is the simulator's judge without leniency (mixture noise only)
    whose score swaps levels ``A`` and ``B`` with probability ``P``: not a shift but a
    confusion of two classes, so its bias depends on how many answers sit at each level
    (the D2 analogue of the reasoning labeler ``sim:confuse=3~4@0.3``).
    """
    if spec.startswith("confuse="):
        pair, _, p = spec.removeprefix("confuse=").partition("@")
        a, _, b = pair.partition("~")
        return FALLBACK_JUDGE, (int(a), int(b), float(p))
    return JUDGE_PROFILES[spec.removeprefix("sim/")], None


def one_study(
    s: int, *, judge: str, model: str, share: float, samples: int, pool: AnnotatorPool,
    bootstrap: int, seed: int,
) -> dict[str, float]:  # fmt: skip
    """One simulated study's D2 intervals against its truth."""
    banks = load_sample_banks()
    prof = RESPONDER_PROFILES[model.removeprefix("sim/")]
    jp, confuse = parse_judge(judge)
    f, truth, inst, human = [], [], [], []
    for b in banks:
        for k in range(samples):
            rng = random.Random(stable_int("coverage-core", seed, s, b.instance_id, k))
            moves = draw_moves(prof.at_dose(b.type, 6), high_risk=False, rng=rng)
            true = true_scores(moves, high_risk=False)
            target = judged_targets(true, jp, cites_distractor=moves.cite_distractor)
            score = noisy_score(target["d2"], jp, "d2", rng, type_=b.type)
            if confuse is not None and score in confuse[:2] and rng.random() < confuse[2]:
                score = confuse[1] if score == confuse[0] else confuse[0]
            f.append(score)
            t = int(true["d2"])
            truth.append(pool.expected_vote(t, 5))
            votes = [int(pool.vote(str(t), SCALE, ordinal=True, rng=rng)) for _ in range(2)]
            human.append(float(np.mean(votes)))
            inst.append(b.instance_id)
    n = len(f)
    rng_np = np.random.default_rng(stable_int("coverage-core-slice", seed, s))
    pick = np.zeros(n, dtype=bool)
    pick[rng_np.choice(n, size=max(2, round(share * n)), replace=False)] = True
    h = np.where(pick, np.array(human), np.nan)
    est = ppi_mean_jackknife(np.array(f, float), h, cluster=np.array(inst))
    sw = ppi_mean(np.array(f, float), h, cluster=np.array(inst))  # the sandwich, as before
    cm = cluster_mean(np.array(inst), np.array(f, float), n_boot=bootstrap, seed=rng_np)
    tv = float(np.mean(truth))
    pop = population_truth(model, pool)
    return {
        "truth": tv,
        "cal_cover_pop": float(est.ci[0] <= pop <= est.ci[1]),
        "model_cover_pop": float(cm.ci_low <= pop <= cm.ci_high),
        "human_cover_pop": float(est.human_only_ci[0] <= pop <= est.human_only_ci[1]),
        "cal_cover": float(est.ci[0] <= tv <= est.ci[1]),
        "sandwich_cover_pop": float(sw.ci[0] <= pop <= sw.ci[1]),
        "model_cover": float(cm.ci_low <= tv <= cm.ci_high),
        "human_cover": float(est.human_only_ci[0] <= tv <= est.human_only_ci[1]),
        "cal_width": est.ci[1] - est.ci[0],
        "model_width": cm.ci_high - cm.ci_low,
        "human_width": est.human_only_ci[1] - est.human_only_ci[0],
        "cal_err": est.estimate - tv,
        "model_err": cm.mean - tv,
        "lam": est.lam,
        "n_human": float(est.n_human),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run every judge × share cell; print a table and write ``--json``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--judges", nargs="+", default=["sim/judge-lenient", "sim/judge-strict"])
    ap.add_argument("--model", default="sim/mc-balanced")
    ap.add_argument("--human-share", nargs="+", type=float, default=[0.05, 0.1])
    ap.add_argument("--studies", type=int, default=400)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--flip", type=float, default=0.2)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    pool = AnnotatorPool(annotators=2, flip=args.flip, seed=args.seed)
    cells = []
    print("| judge | share | humans | covers the study's truth: judge-only / calibrated / "
          "human-only | covers the population's: judge-only / calibrated / human-only "
          "| sandwich interval covers the population's "
          "| calibrated / human-only width | calibrated bias | lambda |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for judge in args.judges:
        for share in args.human_share:
            started = time.perf_counter()
            kw = {"judge": judge, "model": args.model, "share": share, "samples": args.samples,
                  "pool": pool, "bootstrap": args.bootstrap, "seed": args.seed}  # fmt: skip
            rs = [one_study(s, **kw) for s in range(args.studies)]
            m = {k: float(np.mean([r[k] for r in rs])) for k in rs[0]}
            cell = {"judge": judge, "human_share": share, "studies": args.studies, **m,
                    "width_ratio": m["cal_width"] / m["human_width"],
                    "mc_se": math.sqrt(0.95 * 0.05 / args.studies),
                    "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
            cells.append(cell)
            print(
                f"| {judge} | {share:.0%} | {m['n_human']:.0f} | {m['model_cover']:.3f} / "
                f"{m['cal_cover']:.3f} / {m['human_cover']:.3f} | {m['model_cover_pop']:.3f} / "
                f"{m['cal_cover_pop']:.3f} / {m['human_cover_pop']:.3f} | "
                f"{m['sandwich_cover_pop']:.3f} | "
                f"{cell['width_ratio']:.2f} | {m['cal_err']:+.3f} | {m['lam']:.2f} |"
            )
    if args.json is not None:
        args.json.write_text(json.dumps(cells, indent=2) + "\n", "utf-8")
    return cells


if __name__ == "__main__":
    main()
