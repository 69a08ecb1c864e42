"""The seed's refinement loop at scale: N rounds x 3 labelers x 100 traces on the simulator.

``python bench/refinement.py [--rounds 78] [--sample 100] [--workdir DIR]`` builds a fresh
workspace (the sample questions and a ``sim/default`` run), then times, in this process
and one after the other:

* **loop**: ``ontology.refinement_loop.refine`` from ``original`` with three
  ``sim:definitions`` labelers and ``sim/rewriter-operational``, made to run every round
  (``--target 1.0``, patience = rounds): labeling, agreement, proposals and the gate;
* **labeling only**: the same number of plain labeling rounds (``ontology.rounds.run_round``,
  same sample size and labelers, on the loop's final version, new seeds): the floor any
  loop pays, the best alternative the loop can be compared with.

Prints a Markdown table with seconds, seconds per round and the ratio to the floor, plus
the CPU time of the process (the goal of issue 34: 78 rounds in 15 minutes on one core).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from llm.specs import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LABELERS = ("sim:definitions;seed=1", "sim:definitions;seed=2", "sim:definitions;seed=3")


def _workspace(path: Path) -> None:
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.questions import import_sample_questions
    from study.reasoning.generation import GenerationOptions, run_generation

    with open_workspace_session(resolve_settings(workspace=path)) as session:
        import_sample_questions(session=session)
        session.commit()
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"),
                run="demo",
                perturbations="noise,bereavement,age,job_loss",
                samples=2,
            ),
            session=session,
        )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=78, help="Rounds of the loop.")
    ap.add_argument("--sample", type=int, default=100, help="Traces per round.")
    ap.add_argument("--workdir", type=Path, default=None, help="Keep the workspace here.")
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-refine-"))
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    _workspace(work)
    setup = time.perf_counter() - t0

    from ontology.refinement import RefineConfig
    from ontology.refinement_loop import refine
    from ontology.rounds import run_round
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    config = RefineConfig(
        run="demo",
        labelers=LABELERS,
        rewriter=ModelSpec.parse("sim/rewriter-operational"),
        ontology_version="original",
        target=1.0,
        max_rounds=args.rounds,
        sample=args.sample,
        patience=args.rounds,
    )
    settings = resolve_settings(workspace=work)
    cpu0, t1 = time.process_time(), time.perf_counter()
    with open_workspace_session(settings) as session:
        result = refine(config, session=session)
    loop_s, loop_cpu = time.perf_counter() - t1, time.process_time() - cpu0
    cpu0, t2 = time.process_time(), time.perf_counter()
    with open_workspace_session(settings) as session:
        for i in range(args.rounds):
            run_round(
                "demo",
                list(LABELERS),
                session=session,
                sample=args.sample,
                seed=10_000 + i,
                ontology_version=result.final_version,
            )
    floor_s, floor_cpu = time.perf_counter() - t2, time.process_time() - cpu0
    data = result.to_json()
    print(f"# bench/refinement.py — {args.rounds} rounds x 3 labelers x {args.sample} traces")
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · {platform.node()} · "
        f"{os.cpu_count()} CPUs · load {os.getloadavg()[0]:.1f} · workspace set-up {setup:.1f} s\n"
    )
    print("| what | seconds | CPU seconds | s / round | ratio to labeling only |")
    print("|---|---:|---:|---:|---:|")
    for name, wall, cpu in (
        ("loop (label, agree, propose, gate)", loop_s, loop_cpu),
        ("labeling only (run_round)", floor_s, floor_cpu),
    ):
        print(
            f"| {name} | {wall:.1f} | {cpu:.1f} | {wall / args.rounds:.2f} | {wall / floor_s:.2f} |"
        )
    print(
        f"\nloop: {data['n_rounds']} rounds, {data['n_proposals']} proposals, "
        f"{data['n_accepted']} accepted, mean pairwise {data['start_agreement']:.3f} -> "
        f"{data['final_agreement']:.3f}, stopped: {data['stop_reason']}; "
        f"projected 78 rounds: {loop_cpu / args.rounds * 78 / 60:.1f} CPU min"
    )
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
