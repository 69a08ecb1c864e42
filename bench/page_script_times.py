"""Each page's script run with and without a job writing into the workspace (a benchmark).

``python bench/page_script_times.py --workspace WS [--pages runs.py,jobs.py]`` runs every
registered page through Streamlit's ``AppTest`` (no browser, no server: the page's own
script only), twice per page (the first run pays the page's imports), first on a copy of
the workspace alone, then on the same copy while a ``driftlens generate`` of the simulator
writes responses into it in its own process (what a page's background job does). For each
page it prints the wall and CPU seconds (this process's, the page's thread included) of
both runs in both conditions and the ratio of the second run's wall time with the job to
without it. One process measures both conditions, so only the first page of the first
pass pays the app's common imports; the second runs are the ones to compare.

``bench/page_render.py --with-job`` times what a person sees in chromium, which on a loaded
machine mostly measures the load (the browser, the server and the job share the cores).
This one answers a narrower question: does a page *wait on the job* (SQLite's write lock,
a busy timeout)? Such a wait shows as wall time far above the CPU time in the with-job
column only; CPU contention shows in both columns alike. The load average is printed
with each row.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The job's command: long enough to outlast the pages, writing as a real run does.
JOB_ARGV = ["generate", "--model", "sim/default", "--run", "bench-background",
            "--perturbations", "all", "--samples", "60"]  # fmt: skip


def _page_runs(page: str) -> list[tuple[float, float]]:
    """``(wall, cpu)`` seconds of two runs of ``page`` in one ``AppTest`` session (the
    first opens the app's home page, then the page: what a new tab does)."""
    from tests.app.apptest_support import open_page

    cpu, wall = time.process_time(), time.perf_counter()
    at = open_page(page, timeout=600)  # raises on an exception box
    out = [(time.perf_counter() - wall, time.process_time() - cpu)]
    cpu, wall = time.process_time(), time.perf_counter()
    at.run()
    out.append((time.perf_counter() - wall, time.process_time() - cpu))
    if at.exception:
        raise SystemExit(f"{page}: {at.exception[0].value}")
    return out


def _measure(pages: list[str]) -> dict[str, tuple[list[tuple[float, float]], float]]:
    """Each page's two runs and the load average after them."""
    return {page: (_page_runs(page), os.getloadavg()[0]) for page in pages}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    from app.ui.navigation import SECTIONS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", type=Path, required=True, help="Workspace folder (copied).")
    ap.add_argument("--pages", help="Only these page files (comma-separated, e.g. runs.py).")
    args = ap.parse_args(argv)
    if not (args.workspace / "driftlens.db").exists():
        print(f"{args.workspace} has no driftlens.db; pass a workspace folder.", file=sys.stderr)
        return 2
    pages = [f for entries in SECTIONS.values() for f, _, _ in entries]
    if args.pages:
        pages = [p for p in pages if p in {x.strip() for x in args.pages.split(",")}]
    with tempfile.TemporaryDirectory(prefix="page-script-times-") as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(args.workspace, ws, ignore=shutil.ignore_patterns("*.lock"))
        print(f"# bench/page_script_times.py — {args.workspace} (copied)")
        print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · {os.cpu_count()} CPUs "
              f"· load {os.getloadavg()[0]:.1f}\n")  # fmt: skip
        os.environ["DRIFTLENS_WORKSPACE"] = str(ws)
        alone = _measure(pages)
        job = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "--workspace", str(ws), *JOB_ARGV],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            time.sleep(8.0)  # the job is writing before the first page
            if job.poll() is not None:
                print("the background job ended before the pages were timed", file=sys.stderr)
                return 1
            busy = _measure(pages)
            still = job.poll() is None
        finally:
            job.terminate()
            job.wait()
    print("| page | alone: 1st run wall / cpu | alone: 2nd run wall / cpu | with job: 1st run "
          "wall / cpu | with job: 2nd run wall / cpu | 2nd run wall, with job / alone | load "
          "(alone, with job) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---|")
    for page in pages:
        (a1, a2), la = alone[page]
        (b1, b2), lb = busy[page]
        print(f"| {page} | {a1[0]:.2f} / {a1[1]:.2f} s | {a2[0]:.2f} / {a2[1]:.2f} s | "
              f"{b1[0]:.2f} / {b1[1]:.2f} s | {b2[0]:.2f} / {b2[1]:.2f} s | "
              f"{b2[0] / max(a2[0], 1e-3):.1f}x | {la:.1f}, {lb:.1f} |")  # fmt: skip
    print(f"\nthe job was {'still writing' if still else 'done'} after the last page")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
