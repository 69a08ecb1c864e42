"""Analysis at 10 x the published scale on PostgreSQL (a benchmark, not a test).

Builds a labeled study straight in a PostgreSQL database, server-side (``INSERT ...
SELECT`` over ``generate_series``: no client round trip per row, the way
``bench/bulk_insert.py`` measured COPY to be the only affordable path): M runs (the
models of ``bench/scale.py``) x N questions x the 99 conditions of the shipped catalog x
S samples, 3-7 steps per response (mean 5, as the simulator's), and one keyword label per
step whose symbol is the question's baseline symbol edited with a per-class dose. Then it
runs the real ``driftlens analyze`` in its own process (peak RSS from ``os.wait4``):
``--chunk-questions`` (out of core) and, with ``--in-memory``, also without it, and
compares ``drift.csv`` and ``stats.json`` byte for byte.

Usage (own PostgreSQL server, niced, on 127.0.0.1)::

    eval "$(DRIFTLENS_PG_STATE=/tmp/ooc-pg nice -n 19 scripts/ci/postgres.sh)"
    nice -n 19 .venv/bin/python bench/out_of_core.py --questions 1000 --in-memory
    nice -n 19 .venv/bin/python bench/out_of_core.py --questions 10000
    # or build once, then analyse by hand (e.g. one run of it, under /usr/bin/time -v):
    nice -n 19 .venv/bin/python bench/out_of_core.py --questions 10000 --build-only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS: tuple[str, ...] = ("sim/default", "sim/strong", "sim/null", "sim/default")
#: Edit probability per step by condition class, per model (sim/null: no drift).
DOSES = {"none": 0.0, "noise": 0.05, "attribute": 0.25, "life_event": 0.5}
MODEL_NOISE = 0.1
_CLI = "import sys; from app.cli import main; sys.argv[0] = 'driftlens'; sys.exit(main())"


def _drop_indexes(conn: Any, tables: tuple[str, ...]) -> list[str]:
    """Drop the tables' secondary indexes, unique and foreign-key constraints (a bulk load
    then writes heap pages only); the statements that recreate them, in order."""
    from sqlalchemy import text

    again: list[str] = []
    fks: list[str] = []
    for table in tables:
        cons = conn.execute(
            text(
                "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = CAST(:t AS regclass) AND contype IN ('u', 'f')"
            ),
            {"t": table},
        ).all()
        names = {
            c
            for (c,) in conn.execute(
                text("SELECT conname FROM pg_constraint WHERE conrelid = CAST(:t AS regclass)"),
                {"t": table},
            ).all()
        }
        for idx, definition in conn.execute(
            text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t"),
            {"t": table},
        ).all():
            if idx not in names:
                conn.execute(text(f'DROP INDEX "{idx}"'))
                again.append(definition)
        for name, kind, definition in cons:
            conn.execute(text(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"'))
            stmt = f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}'
            (fks if kind == "f" else again).append(stmt)
    return again + fks


def build(url: str, *, questions: int, models: int, samples: int) -> dict[str, Any]:
    """Create the study in the (empty) database at ``url``; rows and seconds."""
    from sqlalchemy import text
    from sqlmodel import Session

    from ontology.labelers.registry import ensure_labeler_spec
    from ontology.versions import document, get_version, seed_ontologies
    from storage.engine import make_engine
    from storage.migrate import upgrade
    from storage.repo.runs import get_or_create_model_spec, get_or_create_run
    from study.catalog.document import load_default_catalog
    from study.questions import QuestionRow, store_questions

    engine = make_engine(url)
    upgrade(engine)
    t0 = time.perf_counter()
    with Session(engine) as session:
        seed_ontologies(session=session)
        version = get_version(None, session=session)
        symbols = sorted(document(version).symbol_of)
        labeler = ensure_labeler_spec("keywords", session=session)
        rows = [
            QuestionRow(f"bq-{i:06d}", f"Benchmark question {i}: should one act now?", (), i + 1)
            for i in range(questions)
        ]
        store_questions(rows, session=session, source="bench")
        run_ids = []
        for r in range(models):
            spec = MODELS[r % len(MODELS)]
            provider, model = spec.split("/", 1)
            ms = get_or_create_model_spec(
                spec, provider=provider, model=model, simulated=True, session=session
            )
            assert ms.id is not None
            run = get_or_create_run(
                f"ooc-{r}",
                model_spec_id=ms.id,
                prompt_version="bench",
                sampling={"seed": r},
                simulated=True,
                session=session,
            )
            run_ids.append((run.id, spec))
        session.commit()
        entries = [("baseline", "none")] + [
            (e.key, e.condition_class) for e in load_default_catalog().entries()
        ]
        conn = session.connection()
        conn.execute(text("CREATE TABLE bench_cond (idx int, key text, klass text, dose float)"))
        conn.execute(
            text("INSERT INTO bench_cond VALUES (:i, :k, :c, :d)"),
            [{"i": i, "k": k, "c": c, "d": DOSES.get(c, 0.25)} for i, (k, c) in enumerate(entries)],
        )
        steps = {n: json.dumps([[j, j + 1] for j in range(n)]) for n in range(3, 8)}
        case = " ".join(f"WHEN {n} THEN '{v}'::jsonb" for n, v in steps.items())
        arr = "ARRAY[" + ",".join(f"'{s}'" for s in symbols) + "]"
        recreate = _drop_indexes(conn, ("step_label", "response"))
        session.commit()
        conn = session.connection()
        for run_id, spec in run_ids:
            dose = "0" if spec == "sim/null" else "c.dose"
            conn.execute(
                text(
                    "INSERT INTO response (run_id, question_id, condition, condition_class, "
                    "sample, request, steps, text, parse_status, attempts, created_at, "
                    "updated_at) SELECT :run, q.id, c.key, c.klass, s.s, '{}'::jsonb, "
                    f"CASE 3 + ((q.id * 31 + c.idx * 17 + s.s * 7 + :run) % 5) {case} END, "
                    "'abcdefgh', 'ok', 1, now(), now() FROM question q CROSS JOIN bench_cond c "
                    "CROSS JOIN generate_series(0, :samples - 1) AS s(s) "
                    "ORDER BY q.id, c.idx, s.s"
                ),
                {"run": run_id, "samples": samples},
            )
            conn.execute(
                text(
                    "INSERT INTO step_label (response_id, step_index, labeler_id, "
                    "ontology_version_id, repeat, category, symbol, parse_status, created_at) "
                    "SELECT r.id, i.i, :lab, :ver, 0, 'bench', "
                    f"({arr})[1 + (CASE WHEN ((r.id * 2654435761 + i.i * 40503) % 1000) "
                    f"< 1000 * ({dose} + {MODEL_NOISE}) "
                    f"THEN r.question_id * 131 + i.i * 71 + 1 + (r.id + i.i) % {len(symbols) - 1} "
                    f"ELSE r.question_id * 131 + i.i * 71 END) % {len(symbols)}], "
                    "'ok', now() FROM response r JOIN bench_cond c ON c.key = r.condition "
                    "CROSS JOIN LATERAL generate_series(0, jsonb_array_length(r.steps) - 1) "
                    "AS i(i) WHERE r.run_id = :run"
                ),
                {"lab": labeler.id, "ver": version.id, "run": run_id},
            )
            session.commit()
            conn = session.connection()
            print(f"  run {run_id} ({spec}) stored, {time.perf_counter() - t0:.0f} s", flush=True)
        conn.execute(text("DROP TABLE bench_cond"))
        t_index = time.perf_counter()
        for stmt in recreate:
            conn.execute(text(stmt))
        session.commit()
        print(f"  indexes rebuilt in {time.perf_counter() - t_index:.0f} s", flush=True)
        conn = session.connection()
        counts = {
            t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
            for t in ("response", "step_label")
        }
        size = conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text("VACUUM ANALYZE response"))
        c.execute(text("VACUUM ANALYZE step_label"))
    engine.dispose()
    return {
        "seconds": time.perf_counter() - t0,
        "db_bytes": size,
        "runs": [f"ooc-{r}" for r in range(models)],
        **counts,
    }


def analyze(
    url: str, runs: list[str], out: Path, *, bootstrap: int, chunk: int | None
) -> dict[str, Any]:
    """One ``driftlens analyze`` process: wall, CPU, peak RSS."""
    args = [sys.executable, "-c", _CLI, "analyze", "--run", ",".join(runs)]
    args += ["--labeler", "keywords", "--out", str(out), "-B", str(bootstrap)]
    if chunk is not None:
        args += ["--chunk-questions", str(chunk)]
    env = dict(os.environ, DRIFTLENS_DB_URL=url, DRIFTLENS_WORKSPACE=str(out.parent / "ws"))
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        raise SystemExit(f"analyze failed ({status}):\n{err[-3000:]}")
    return {
        "chunk_questions": chunk,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "drift_csv_bytes": (out / "drift.csv").stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-url", default=os.environ.get("DRIFTLENS_TEST_PG_URL", ""))
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--in-memory", action="store_true", help="Also analyse in memory.")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ooc-bench"))
    parser.add_argument("--keep", action="store_true", help="Keep the database.")
    parser.add_argument(
        "--build-only", action="store_true", help="Build and keep the database; analyse nothing."
    )
    args = parser.parse_args()
    if not args.pg_url:
        raise SystemExit("name a server: --pg-url or DRIFTLENS_TEST_PG_URL")
    from sqlalchemy import create_engine, text

    name = f"dl_ooc_{args.models}x{args.questions}"
    base = args.pg_url.rsplit("/", 1)[0]
    admin = create_engine(args.pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = f"{base}/{name}"
    work = args.workdir / name
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"size": vars(args) | {"pg_url": None, "workdir": str(work)}}
    try:
        print(f"building {name} ...", flush=True)
        report["build"] = build(
            url, questions=args.questions, models=args.models, samples=args.samples
        )
        print(json.dumps(report["build"]), flush=True)
        if args.build_only:
            print(f"kept: {url}", flush=True)
            return
        runs = report["build"]["runs"]
        report["out_of_core"] = analyze(
            url, runs, work / "ooc", bootstrap=args.bootstrap, chunk=args.chunk
        )
        print(json.dumps(report["out_of_core"]), flush=True)
        if args.in_memory:
            report["in_memory"] = analyze(
                url, runs, work / "mem", bootstrap=args.bootstrap, chunk=None
            )
            print(json.dumps(report["in_memory"]), flush=True)
            report["identical"] = {
                f: (work / "ooc" / f).read_bytes() == (work / "mem" / f).read_bytes()
                for f in ("drift.csv", "pairs.csv", "stats.json")
            }
        print(json.dumps(report, indent=2), flush=True)
        (work / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    finally:
        if not (args.keep or args.build_only):
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
