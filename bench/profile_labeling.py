"""Where one LLM labeling run's wall time goes against a served model (issue 36).

``bench/engines.py`` compares ``label_run`` with a plain ``openai`` loop sending the same
requests; this profiles one ``label_run`` (the same workspace set-up, after an untimed
warm-up in another workspace) under ``cProfile`` and splits its wall time into the time the
event loop spent waiting on the server (``select``/``epoll``) and everything else: the
workbench's own work (workspace, ontology, prompts, parsing, request cache, storing the
labels). Only the second part is the workbench's to cut.

Usage::

    eval "$(scripts/ci/vllm.sh)"
    .venv/bin/python bench/profile_labeling.py [--label-responses 3] [--mode auto] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

import engines  # noqa: E402  (bench/engines.py: the same workspace and run set-up)


def _waiting(stats: pstats.Stats) -> float:
    """Seconds inside the selector's poll: the event loop idle, waiting on the server."""
    total = 0.0
    for (filename, _line, name), row in stats.stats.items():  # type: ignore[attr-defined]
        if filename == "~" and name.startswith("<method 'poll'"):  # epoll / poll selectors
            total += row[2]  # tottime
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--service", default="gemma")
    parser.add_argument("--model", default="gemma-3-270m")
    parser.add_argument("--label-responses", type=int, default=3)
    parser.add_argument("--labeler-max-tokens", type=int, default=160)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--mode", default="auto", choices=("auto", "on", "off"))
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    os.environ["DRIFTLENS_STRUCTURED"] = args.mode
    os.environ["DRIFTLENS_LABELER_MAX_TOKENS"] = str(args.labeler_max_tokens)
    os.environ["DRIFTLENS_LABEL_CONCURRENCY"] = str(args.concurrency)
    os.environ.setdefault("DRIFTLENS_REQUEST_TIMEOUT_S", "900")  # as bench/engines.py
    timings = []
    for profiled in (False, True):  # an untimed warm-up (imports, the server's prefix cache)
        with engines.workspace():
            engines.import_questions(args.label_responses)
            engines.sim_run(args, "steps")
            profile = cProfile.Profile()
            start = time.perf_counter()
            if profiled:
                profile.enable()
            _, sent = engines.labeling(args, "steps")
            if profiled:
                profile.disable()
            timings.append((time.perf_counter() - start, sent))
    wall, sent = timings[1]
    stats = pstats.Stats(profile)
    waiting = _waiting(stats)
    print(
        f"label_run ({args.mode}, {sent} requests): {wall:.2f} s wall, {waiting:.2f} s waiting "
        f"on the server, {wall - waiting:.2f} s ({100 * (wall - waiting) / wall:.2f} %) "
        f"everything else; warm-up {timings[0][0]:.2f} s; load {os.getloadavg()[0]:.1f}"
    )
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(args.top)
    print(text.getvalue())


if __name__ == "__main__":
    main()
