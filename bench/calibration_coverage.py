"""Coverage of the model-only and the calibrated (PPI++) intervals against a known truth.

Each simulated study is the whole workbench path, offline:

1. a conflicts run of a simulated responder (``--model``, every bank of the sample file at
   6 distractors, ``--samples`` answers each) is generated and scored by a biased simulated
   judge (``--judge``: ``sim/judge-lenient`` adds +0.3 to D2, ``sim/judge-strict`` −0.3);
2. ``annotate push conflict_rubric`` draws a calibration slice of ``--human-share`` of the
   answers (a seeded simple random sample: ``limit=`` over ``run=``, so every task stores
   its inclusion probability) into an in-process Label Studio
   (:class:`annotation.simulated.OfflineLabelStudio`);
3. a simulated annotator pool (:class:`annotation.simulated.AnnotatorPool`: ``--annotators``
   per task, each vote the simulator's true score moved one level with probability
   ``--flip``) answers the tasks, and ``annotate pull`` mirrors the answers into the
   workspace through the same upsert and aggregation as a real server's;
4. the instrument's own calibrated headlines (:func:`study.conflicts.calibrated.calibrated_scores`)
   give the model-only interval of the D2 mean (the report's instance-cluster bootstrap)
   and the calibrated one.

The truth is what the people would say on average: the mean over the study's judged
answers of the pool's exact expected vote on each answer's true D2
(:meth:`~annotation.simulated.AnnotatorPool.expected_vote`). Reported: the share of
studies whose interval covers it (model-only, calibrated, human-only of the same slice),
the mean widths, λ and number of human labels, with the Monte Carlo SE of a coverage.

Usage::

    python bench/calibration_coverage.py --instrument conflicts --judge sim/judge-lenient \\
        --human-share 0.1 --studies 30 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from llm.specs import ModelSpec

DIMENSION = "d2"


def _study(
    s: int, args: argparse.Namespace, client: Any, pool: Any, session: Any
) -> dict[str, float]:
    from annotation.selection import Selection
    from annotation.sync import ensure_project, pull, push, tasks_to_push
    from study.conflicts.calibrated import STUDY, calibrated_scores
    from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
    from study.conflicts.score import judge_conflict_run
    from study.conflicts.setup import answers_frame
    from study.conflicts.sim.moves import recover_moves, true_scores

    run = f"coverage-{s}"
    seed = args.seed * 100_003 + s
    generate_conflicts(
        ConflictGenerationOptions(
            model=ModelSpec.parse(args.model), run=run, doses=(6,), samples=args.samples, seed=seed
        ),
        session=session,
    )
    judge_conflict_run(run, ModelSpec.parse(args.judge), session=session)
    session.commit()
    answers = answers_frame([run], session=session)
    n_slice = max(2, round(args.human_share * len(answers)))
    tasks = tasks_to_push(STUDY, Selection(run=run, limit=n_slice, seed=seed), session=session)
    project = ensure_project(STUDY, client=client, session=session, new=True)
    session.commit()
    push(STUDY, tasks, client=client, session=session)
    session.commit()
    pool.annotate(client, STUDY, project.project_id)
    pull(STUDY, client=client, session=session)
    session.commit()
    cal = calibrated_scores([run], session=session, bootstrap=args.bootstrap, seed=seed)
    if cal is None:
        raise SystemExit(f"study {s}: no calibrated headline was made")
    row = next(r for r in cal.rows if r.what == DIMENSION)
    judged = answers[np.isfinite(answers[DIMENSION].to_numpy(dtype=float))]
    truth = float(
        np.mean(
            [
                pool.expected_vote(
                    int(true_scores(recover_moves(t), high_risk=False)[DIMENSION]), 5
                )
                for t in judged["answer"]
            ]
        )
    )
    assert row.calibrated_ci is not None and row.human_only_ci is not None
    return {
        "truth": truth,
        "model_only": row.model_only,
        "calibrated": float(row.calibrated or math.nan),
        "model_cover": float(row.model_only_ci[0] <= truth <= row.model_only_ci[1]),
        "cal_cover": float(row.calibrated_ci[0] <= truth <= row.calibrated_ci[1]),
        "human_cover": float(row.human_only_ci[0] <= truth <= row.human_only_ci[1]),
        "model_width": row.model_only_ci[1] - row.model_only_ci[0],
        "cal_width": row.calibrated_ci[1] - row.calibrated_ci[0],
        "human_width": row.human_only_ci[1] - row.human_only_ci[0],
        "lam": float(row.lam or 0.0),
        "n_human": float(row.n_human),
        "n_items": float(row.n_items),
        "headline_calibrated": float(row.headline == "calibrated"),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the bench; print a table and write ``--json``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instrument", default="conflicts", choices=["conflicts"])
    ap.add_argument("--judge", default="sim/judge-lenient")
    ap.add_argument("--model", default="sim/mc-balanced")
    ap.add_argument("--human-share", type=float, default=0.1)
    ap.add_argument("--studies", type=int, default=30)
    ap.add_argument("--samples", type=int, default=10, help="answers per bank")
    ap.add_argument("--annotators", type=int, default=2)
    ap.add_argument("--flip", type=float, default=0.2)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--workspace", type=Path, default=None, help="an empty folder (default: a temporary one)"
    )
    args = ap.parse_args(argv)
    if not 0.0 < args.human_share <= 1.0 or args.studies < 1:
        ap.error("--human-share must be in (0, 1] and --studies at least 1")

    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="calibration-coverage-"))
    os.environ["DRIFTLENS_WORKSPACE"] = str(workspace)
    os.environ.pop("DRIFTLENS_DB_URL", None)
    from annotation.simulated import AnnotatorPool, OfflineLabelStudio
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.conflicts.items import import_bank_file

    pool = AnnotatorPool(annotators=args.annotators, flip=args.flip, seed=args.seed)
    client = OfflineLabelStudio()
    started = time.perf_counter()
    results = []
    with open_workspace_session(resolve_settings()) as session:
        import_bank_file(None, session=session)
        session.commit()
        for s in range(args.studies):
            results.append(_study(s, args, client, pool, session))
            r = results[-1]
            print(
                f"study {s:3d}: truth {r['truth']:.3f} model-only {r['model_only']:.3f} "
                f"calibrated {r['calibrated']:.3f} (lambda {r['lam']:.2f}, "
                f"{int(r['n_human'])} humans)",
                file=sys.stderr,
            )
    mean = {k: float(np.mean([r[k] for r in results])) for k in results[0]}
    n = len(results)
    out: dict[str, Any] = {
        "instrument": args.instrument,
        "judge": args.judge,
        "model": args.model,
        "dimension": DIMENSION,
        "human_share": args.human_share,
        "studies": n,
        "samples_per_bank": args.samples,
        "annotators": args.annotators,
        "flip": args.flip,
        "calibrated_coverage": mean["cal_cover"],
        "judge_only_coverage": mean["model_cover"],
        "human_only_coverage": mean["human_cover"],
        "calibrated_width": mean["cal_width"],
        "judge_only_width": mean["model_width"],
        "human_only_width": mean["human_width"],
        "width_ratio_calibrated_to_human_only": mean["cal_width"] / mean["human_width"],
        "mean_truth": mean["truth"],
        "mean_judge_only": mean["model_only"],
        "mean_calibrated": mean["calibrated"],
        "mean_lambda": mean["lam"],
        "mean_human_labels": mean["n_human"],
        "mean_items": mean["n_items"],
        "calibrated_headline_share": mean["headline_calibrated"],
        "coverage_mc_se_at_95": math.sqrt(0.95 * 0.05 / n),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print("| interval | coverage | mean width |")
    print("|---|---|---|")
    for name, c, w in (
        ("judge-only", "judge_only_coverage", "judge_only_width"),
        ("calibrated (PPI++)", "calibrated_coverage", "calibrated_width"),
        ("human-only (same slice)", "human_only_coverage", "human_only_width"),
    ):
        print(f"| {name} | {out[c]:.3f} | {out[w]:.3f} |")
    print(
        f"{n} studies, {out['mean_items']:.0f} answers and {out['mean_human_labels']:.0f} "
        f"human labels each, lambda {out['mean_lambda']:.2f}, truth {out['mean_truth']:.3f}, "
        f"judge-only mean {out['mean_judge_only']:.3f}, {out['seconds']} s"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n", "utf-8")
    return out


if __name__ == "__main__":
    main()
