"""The statistics phase of ``analyze --chunk-questions`` alone (a benchmark, not a test).

Builds one model's ``drift.csv`` part from an analysis' ``drift.csv`` (that model's rows
repeated ``--copies`` times under new question ids, the values moved by small noise so the
copies differ), then, in this process, computes its statistics either in memory
(``study.reasoning.drift_files.compute_stats``, the path without ``--chunk-questions``) or
in slices of ``--chunk`` questions (``study.reasoning.out_of_core.stats_by_model``), and
prints the sha256 of the ``stats.json`` text: equal hashes are byte-identical files. Run
it under ``/usr/bin/time -v`` for the peak RSS (docs/performance.md, "Out-of-core
statistics").

Usage::

    .venv/bin/python bench/out_of_core_stats.py build --drift OUT/drift.csv \\
        --model sim/default --copies 34 --part /tmp/part.csv
    /usr/bin/time -v .venv/bin/python bench/out_of_core_stats.py run --part /tmp/part.csv
    /usr/bin/time -v .venv/bin/python bench/out_of_core_stats.py run --part /tmp/part.csv \\
        --chunk 500
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path


def build(drift: Path, model: str, copies: int, part: Path) -> int:
    """Write the part; return its rows."""
    import numpy as np
    import pandas as pd

    df = pd.read_csv(drift, dtype={"question_id": str, "condition": str, "model": str})
    one = df[df["model"] == model]
    if one.empty:
        raise SystemExit(f"{drift} has no rows of model {model!r}.")
    rng = np.random.default_rng(0)
    with part.open("w", encoding="utf-8", newline="") as fh:
        for k in range(copies):
            piece = one.copy()
            # ids sort copy by copy, as a part's rows are sorted by question id
            piece["question_id"] = [f"r{k:03d}-{q}" for q in piece["question_id"]]
            for metric in ("dtw", "sri"):
                piece[metric] = piece[metric] + rng.normal(0, 0.01, len(piece))
            piece.to_csv(fh, index=False, header=k == 0)
    return len(one) * copies


def run(part: Path, chunk: int | None, bootstrap: int) -> str:
    """The stats.json text's sha256, in memory (``chunk`` None) or in slices."""
    from study.reasoning.drift_files import compute_stats, stats_json_text
    from study.reasoning.out_of_core import stats_by_model

    if chunk is None:
        stats = compute_stats(part, bootstrap=bootstrap, seed=0)
    else:
        with part.open(encoding="utf-8") as fh:
            fh.readline()
            model = fh.readline().split(",", 1)[0]  # the first column of a part is model
        # --chunk 0: the default slice; on a checkout before the statistics were sliced
        # (50c91d4) stats_by_model has no chunk and reads the model whole
        kw = {"chunk": chunk} if chunk else {}
        stats = stats_by_model([(model, part)], bootstrap=bootstrap, seed=0, **kw)
    return hashlib.sha256(stats_json_text(stats).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--drift", type=Path, required=True)
    b.add_argument("--model", default="sim/default")
    b.add_argument("--copies", type=int, default=34)
    b.add_argument("--part", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--part", type=Path, required=True)
    r.add_argument("--chunk", type=int, default=None)
    r.add_argument("-B", "--bootstrap", type=int, default=200)
    args = parser.parse_args(argv)
    if args.cmd == "build":
        print(f"{build(args.drift, args.model, args.copies, args.part):,} rows -> {args.part}")
    else:
        print("stats.json sha256", run(args.part, args.chunk, args.bootstrap))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
