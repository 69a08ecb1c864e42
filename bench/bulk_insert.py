"""Bulk inserts: PostgreSQL COPY vs executemany, and SQLite (a benchmark, not a test).

Writes the same rows (request-cache entries of about 1 KB: JSON request and result, a
timestamp, nullable text) through ``storage.repo._upsert.upsert`` (what generation, the
cache and labeling call) in batches like the writers' (``--batch`` rows, one commit each):

* PostgreSQL, COPY into a temporary table + ``INSERT … SELECT … ON CONFLICT``;
* PostgreSQL, multi-row ``INSERT … ON CONFLICT`` (executemany, 500 rows a statement);
* SQLite (WAL file), the same executemany path.

Each round writes fresh rows into a fresh database; the table gives the median over the
rounds, the range, and the ratio to the best row of the same run.

Usage::

    eval "$(scripts/ci/postgres.sh)"
    .venv/bin/python bench/bulk_insert.py --rows 20000 --batch 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def rows(n: int, tag: str) -> list[dict[str, Any]]:
    """``n`` cache-entry rows (keys unique per ``tag``)."""
    now = datetime.now(UTC)
    text = "<think><step_1>" + "A reasonable step of about this length. " * 12 + "</step_1></think>"
    return [
        {
            "key": f"{tag}-{i:08d}",
            "provider": "sim",
            "endpoint": "sim:in-process@v1",
            "model": "default",
            "prompt_id": i // 2,
            "params_id": i % 2,
            "request": {"sampling": {"seed": 1_000_003 * i % 2**31}},
            "response": {"text": text, "finish_reason": "stop", "latency_ms": i / 3, "seed": i},
            "created_at": now,
            "hits": 0,
        }
        for i in range(n)
    ]


def write(url: str, data: list[dict[str, Any]], batch: int, copy_min: int) -> float:
    """Seconds to write ``data`` in batches (one commit each) with the chosen path."""
    from sqlmodel import Session

    from storage.engine import make_engine
    from storage.migrate import upgrade
    from storage.models import LLMCacheEntry
    from storage.repo import _upsert

    engine = make_engine(url)
    upgrade(engine)
    _upsert.COPY_MIN_ROWS = copy_min
    with Session(engine) as session:
        t0 = time.perf_counter()
        for start in range(0, len(data), batch):
            _upsert.upsert(session, LLMCacheEntry, data[start : start + batch], key=("key",))
            session.commit()
        return time.perf_counter() - t0


def pg_database(base: str) -> tuple[str, Callable[[], None]]:
    """A fresh database on ``base``'s server and its dropper."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from storage.engine import dispose_engines

    name = f"driftlens_bulk_{uuid.uuid4().hex[:10]}"
    admin = create_engine(make_url(base), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        dispose_engines()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    return make_url(base).set(database=name).render_as_string(hide_password=False), drop


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pg-url", default=os.environ.get("DRIFTLENS_TEST_PG_URL"))
    args = ap.parse_args()
    if not args.pg_url:
        raise SystemExit('needs PostgreSQL: eval "$(scripts/ci/postgres.sh)" or --pg-url')

    times: dict[str, list[float]] = {
        "PostgreSQL, COPY": [],
        "PostgreSQL, executemany": [],
        "SQLite, executemany": [],
    }
    load0 = os.getloadavg()
    for r in range(args.repeat):
        for name, copy_min in (("PostgreSQL, COPY", 0), ("PostgreSQL, executemany", 10**12)):
            url, drop = pg_database(args.pg_url)
            try:
                times[name].append(write(url, rows(args.rows, f"{r}"), args.batch, copy_min))
            finally:
                drop()
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'bulk.db'}"
            times["SQLite, executemany"].append(write(url, rows(args.rows, f"{r}"), args.batch, 0))
            from storage.engine import dispose_engines

            dispose_engines()
    load1 = os.getloadavg()
    print(
        f"bench/bulk_insert.py — {args.rows:,} rows in batches of {args.batch:,}, "
        f"{args.repeat} rounds; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, "
        f"load average {load0[0]:.1f} before, {load1[0]:.1f} after\n"
    )
    medians = {k: statistics.median(v) for k, v in times.items()}
    best = min(medians.values())
    print("| path | wall s (median) | rows/s (median) | rows/s (range) | × best |")
    print("|---|---:|---:|---:|---:|")
    for name, seconds in times.items():
        rates = sorted(args.rows / s for s in seconds)
        print(
            f"| {name} | {medians[name]:.2f} | {args.rows / medians[name]:,.0f} | "
            f"{rates[0]:,.0f}–{rates[-1]:,.0f} | {best / medians[name]:.2f} |"
        )
    pg = medians["PostgreSQL, executemany"] / medians["PostgreSQL, COPY"]
    print(f"\nCOPY is {pg:.2f}× the executemany rate on PostgreSQL (medians).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
