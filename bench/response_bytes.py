"""Database bytes per response, by table (a benchmark, not a test).

Builds a fresh workspace per database, imports N synthetic questions (``bench/scale.py``'s),
runs ``driftlens generate --model sim/default --samples 2 --perturbations all`` in its own
process, and prints the size the responses added: the whole database (SQLite: the file
after a WAL checkpoint; PostgreSQL: ``pg_database_size`` of a database created for the
run and dropped afterwards) and per table with its indexes (SQLite: ``dbstat``;
PostgreSQL: ``pg_total_relation_size``), each over the number of responses, plus the
stored ``steps`` column alone.

``--root DIR`` runs the command line of another checkout (e.g. an earlier commit exported
with ``git archive``), so a layout change is measured before and after with the same
script::

    .venv/bin/python bench/response_bytes.py --questions 40 --db both
    git archive c581f77 | tar -x -C /tmp/before
    .venv/bin/python bench/response_bytes.py --questions 40 --db both --root /tmp/before
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from scale import (  # bench/scale.py, next to this script
    ROOT,
    cli,
    pg_create,
    pg_drop,
    run_stage,
    synthetic_questions,
)


def _sqlite_sizes(db_path: Path) -> tuple[int, dict[str, int], int]:
    """(file bytes, bytes per table with its indexes, bytes of the steps column)."""
    conn = sqlite3.connect(db_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables: dict[str, int] = {}
        index_of = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type='index'"))
        try:
            for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
                owner = index_of.get(name) or name
                tables[owner] = tables.get(owner, 0) + int(size)
        except sqlite3.OperationalError:
            pass  # this SQLite has no dbstat table: the whole file only
        steps = int(
            conn.execute("SELECT coalesce(sum(length(steps)), 0) FROM response").fetchone()[0]
        )
    finally:
        conn.close()
    return db_path.stat().st_size, tables, steps


def _pg_sizes(url: str) -> tuple[int, dict[str, int], int]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            whole = int(conn.execute(text("SELECT pg_database_size(current_database())")).one()[0])
            tables = {
                str(name): int(size)
                for name, size in conn.execute(
                    text(
                        "SELECT relname, pg_total_relation_size(oid) FROM pg_class "
                        "WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
                    )
                )
            }
            steps = int(
                conn.execute(
                    text("SELECT coalesce(sum(pg_column_size(steps)), 0) FROM response")
                ).one()[0]
            )
    finally:
        engine.dispose()
    return whole, tables, steps


def _count(url: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM response")).one()[0])
    finally:
        engine.dispose()


def measure(kind: str, url: str, workdir: Path, *, questions: int, root: Path) -> dict[str, Any]:
    """Generate into a fresh database and return its sizes before and after."""
    env = {
        **os.environ,
        "DRIFTLENS_DB_URL": url,
        "DRIFTLENS_WORKSPACE": str(workdir / "ws"),
        "PYTHONPATH": str(root),
    }
    qfile = workdir / "questions.jsonl"
    synthetic_questions(questions, qfile)
    db_path = workdir / "ws" / "driftlens.db"
    sizes = (lambda: _sqlite_sizes(db_path)) if kind == "sqlite" else (lambda: _pg_sizes(url))
    run_stage(*cli("questions", "import", str(qfile)), env=env, cwd=root)
    empty = sizes()
    _, _, cpu, _ = run_stage(
        *cli(
            "generate",
            "--model",
            "sim/default",
            "--run",
            "r1",
            "--samples",
            "2",
            "--perturbations",
            "all",
            "--json",
        ),
        env=env,
        cwd=root,
    )
    full = sizes()
    return {"empty": empty, "full": full, "responses": _count(url), "cpu_s": cpu}


def report(kind: str, got: dict[str, Any]) -> None:
    """A Markdown table of bytes per response, whole and per table."""
    n = got["responses"]
    (empty_whole, empty_tables, _), (whole, tables, steps) = got["empty"], got["full"]
    print(f"\n### {kind}: {n:,} responses (generate CPU {got['cpu_s']:.1f} s)\n")
    print("| part | bytes | per response |")
    print("|---|---:|---:|")
    print(
        f"| database (minus the empty workspace) | {whole - empty_whole:,} | "
        f"{(whole - empty_whole) / n:,.0f} |"
    )
    grown = {t: s - empty_tables.get(t, 0) for t, s in tables.items()}
    for table, size in sorted(grown.items(), key=lambda kv: -kv[1]):
        if size > 0:
            print(f"| table {table} (with its indexes) | {size:,} | {size / n:,.0f} |")
    print(f"| of which the response.steps values | {steps:,} | {steps / n:,.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--db", choices=("both", "sqlite", "postgres"), default="both")
    parser.add_argument("--pg-url", default=os.environ.get("DRIFTLENS_TEST_PG_URL"))
    parser.add_argument("--root", type=Path, default=ROOT, help="Checkout whose CLI runs.")
    args = parser.parse_args(argv)
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    if "postgres" in kinds and not args.pg_url:
        raise SystemExit("PostgreSQL needs --pg-url or DRIFTLENS_TEST_PG_URL.")
    print(
        f"# bench/response_bytes.py: {args.questions} questions × all conditions × 2 samples, "
        f"code at {args.root}"
    )
    base = Path(tempfile.mkdtemp(prefix="driftlens-bytes-"))
    try:
        for kind in kinds:
            workdir = base / kind
            (workdir / "ws").mkdir(parents=True)
            if kind == "sqlite":
                got = measure(
                    kind,
                    f"sqlite:///{workdir / 'ws' / 'driftlens.db'}",
                    workdir,
                    questions=args.questions,
                    root=args.root,
                )
            else:
                url, name = pg_create(args.pg_url)
                try:
                    got = measure(kind, url, workdir, questions=args.questions, root=args.root)
                finally:
                    pg_drop(args.pg_url, name)
            report(kind, got)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
