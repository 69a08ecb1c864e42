"""The Compare page's two paths: the compare service called inline vs its background job.

The page calls :func:`study.compare.compare_runs` directly while ``pairs x replicates``
stays within :data:`study.compare.request.INLINE_MAX_WORK` and submits the ``compare run``
job of the same service above it (:mod:`study.compare.request`). This bench times both on
the shipped disposition batteries (two simulated arms, one pair): the inline call (wall
and CPU of this process) and the job from submission to its comparison read back (wall:
a fresh process imports the stack before it computes), at several bootstrap sizes.

Usage::

    python bench/compare_page.py                   # B = 1000, 3000, 6000
    python bench/compare_page.py --bootstrap 1000 3000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from sqlmodel import Session

from llm.specs import ModelSpec


def _study(session: Session) -> tuple[str, str]:
    from study.disposition.items import load_sample_batteries
    from study.disposition.runs import ArmSpec, add_arms, run_study

    add_arms(
        "bench",
        [
            ArmSpec(
                "d025-s1",
                ModelSpec.parse("sim/disp-qwen-d025-s1"),
                role="reference",
                dose=25,
                train_seed=1,
                reasoning="off",
            ),
            ArmSpec(
                "d075-s1",
                ModelSpec.parse("sim/disp-qwen-d075-s1"),
                dose=75,
                train_seed=1,
                reasoning="off",
            ),
        ],
        session=session,
    )
    run_study(
        "bench",
        load_sample_batteries(),
        session=session,
        judge=ModelSpec.parse("sim/default"),
        repeat_share=0.0,
    )
    return "bench:d025-s1", "bench:d075-s1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, nargs="+", default=[1000, 3000, 6000])
    args = parser.parse_args()
    os.environ["DRIFTLENS_WORKSPACE"] = tempfile.mkdtemp(prefix="bench-compare-page-")
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.compare import CompareOptions, compare_runs, data_revision
    from study.compare.request import (
        INLINE_MAX_WORK,
        JOB,
        RUNNER,
        CompareRequest,
        job_folder,
        read_job_comparison,
    )
    from study.jobs import get_job, submit_study_job

    settings = resolve_settings()
    with open_workspace_session(settings) as session:
        runs = _study(session)
        session.commit()
        print(f"inline bound: pairs x B <= {INLINE_MAX_WORK}; runs {runs[0]} vs {runs[1]}")
        print("| B | inline wall s | inline CPU s | job wall s | inline / job |")
        print("|---:|---:|---:|---:|---:|")
        for n_boot in args.bootstrap:
            req = CompareRequest(runs, "disposition", CompareOptions(n_boot=n_boot))
            w0, c0 = time.perf_counter(), time.process_time()
            direct = compare_runs(req.runs, instrument=req.instrument, session=session,
                                  options=req.options)  # fmt: skip
            inline_wall, inline_cpu = time.perf_counter() - w0, time.process_time() - c0
            key = req.key(data_revision(session=session))
            w0 = time.perf_counter()
            job = submit_study_job(session=session, workspace=settings.workspace,
                                   db_url=settings.db_url, runner=RUNNER, job=JOB,
                                   args={"request": req.to_args(), "digest": key},
                                   title=req.title, scope={"compare": key})  # fmt: skip
            while (job := get_job(job.id, session=session)).running:
                time.sleep(0.05)
            written = read_job_comparison(job_folder(settings.workspace, key))
            job_wall = time.perf_counter() - w0
            assert job.state == "done" and written is not None, job.error
            assert written.to_dict() == direct.to_dict()  # the same service, the same result
            print(f"| {n_boot} | {inline_wall:.2f} | {inline_cpu:.2f} | {job_wall:.2f} | "
                  f"{inline_wall / job_wall:.2f} |")  # fmt: skip
    print(f"workspace: {Path(settings.workspace)}")


if __name__ == "__main__":
    main()
