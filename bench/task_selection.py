"""How long a human study's selection takes to count and to build (a benchmark, not a test).

``python bench/task_selection.py --workspace PATH --study label_check --select run=demo
--select labeler=sim --select limit=100 [--repeat 3]`` opens the workspace's database and
times, in this process, the two things the Human studies page does with a selection: the
count it shows (``annotation.offline.preview_tasks``) and the tasks a push sends
(``annotation.sync.tasks_to_push``, which builds them). Each is run ``--repeat`` times on a
fresh session; the first run includes the imports and the database's cold cache. Prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", type=Path, required=True, help="Workspace folder.")
    ap.add_argument("--study", required=True, help="Study kind, e.g. label_check.")
    ap.add_argument("--select", action="append", default=[], help="key=value (repeatable).")
    ap.add_argument("--repeat", type=int, default=3, help="Runs of each step.")
    args = ap.parse_args(argv)
    if not (args.workspace / "driftlens.db").exists():
        print(f"{args.workspace} has no driftlens.db; pass a workspace folder.", file=sys.stderr)
        return 2
    start = time.perf_counter()
    from annotation.offline import preview_tasks
    from annotation.selection import parse_selection
    from annotation.sync import tasks_to_push
    from storage.settings import default_db_url, resolve_settings
    from storage.workspace import open_workspace_session

    imports = time.perf_counter() - start
    settings = resolve_settings(workspace=args.workspace, db_url=default_db_url(args.workspace))
    selection = parse_selection(args.select)
    size = (args.workspace / "driftlens.db").stat().st_size
    print(f"# bench/task_selection.py — {args.workspace} ({size / 1e6:,.0f} MB database)")
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · {platform.node()} · "
        f"{os.cpu_count()} CPUs · load {os.getloadavg()[0]:.1f} · imports {imports:.2f} s\n"
    )
    print(f"{args.study}, {' '.join(args.select) or '(no selection)'}\n")
    print("| step | run | seconds | result |")
    print("|---|---:|---:|---|")
    for step in ("count (preview_tasks)", "build (tasks_to_push)"):
        for i in range(args.repeat):
            t0 = time.perf_counter()
            with open_workspace_session(settings) as session:
                if step.startswith("count"):
                    p = preview_tasks(args.study, selection, session=session)
                    result = f"{p.tasks} of {p.available}"
                else:
                    result = f"{len(tasks_to_push(args.study, selection, session=session))} tasks"
            print(f"| {step} | {i + 1} | {time.perf_counter() - t0:.2f} | {result} |")
    print(f"\nload {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
