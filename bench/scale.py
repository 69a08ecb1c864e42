"""A study at the published scale (a benchmark, not a test): ``python bench/scale.py``.

Builds a fresh workspace, imports N synthetic questions, and runs the real command line
(``driftlens generate`` per model, ``driftlens label`` per run, one ``driftlens analyze`` of
every run together, ``driftlens stats`` on the analysis' ``drift.csv``), then the service
calls of the app's heaviest pages (Home counts; the Runs overview, one question side by
side and the response table's last page; the Analysis page's list of analyses, its stored
analysis, first page of example pairs and judge list; the Benchmark page's questions).
Every stage runs in its own process, so its peak RSS is its own (``os.wait4``).

Printed per stage and database: wall time, rows per second, peak RSS, and after the
generation the database bytes per response (SQLite: the file plus its WAL; PostgreSQL:
``pg_database_size`` of a database created for this run, dropped afterwards).

Sizes:
  * default: 4 models (``sim/default``, ``sim/strong``, ``sim/null``, ``sim/default`` again
    under its own run name) × 1,000 questions × the full catalog × 2 samples;
  * ``--small``: 1 model × 8 questions × the full catalog × 2 samples, B = 200 (a minute or
    two from a clean clone);
  * ``--models M --questions N`` for anything in between.

PostgreSQL runs when ``--pg-url`` or ``DRIFTLENS_TEST_PG_URL`` names a server (start one
with ``eval "$(scripts/ci/postgres.sh)"``); ``--db sqlite`` skips it.

Usage::

    .venv/bin/python bench/scale.py --small
    .venv/bin/python bench/scale.py --models 1 --questions 1000 --db sqlite
    .venv/bin/python bench/scale.py --profile generate   # py-spy/pyinstrument if installed
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Model of each run, in order (cycled when more are asked for).
MODELS: tuple[str, ...] = ("sim/default", "sim/strong", "sim/null", "sim/default")
LABELER = "keywords"
_CLI = "import sys; from app.cli import main; sys.argv[0] = 'driftlens'; sys.exit(main())"


@dataclass
class Stage:
    """One measured stage of one database."""

    name: str
    wall_s: float = 0.0
    rows: int = 0
    peak_rss_mb: float = 0.0
    cpu_s: float = 0.0
    db_bytes: int | None = None
    note: str = ""
    parts: list[float] = field(default_factory=list)

    def add_part(self, wall: float, rss: float, cpu: float) -> None:
        """Count one process of the stage: its wall and CPU time add up, its peak RSS not."""
        self.parts.append(wall)
        self.wall_s += wall
        self.peak_rss_mb = max(self.peak_rss_mb, rss)
        self.cpu_s += cpu


# --------------------------------------------------------------------------- helpers


def _profiled(argv: list[str], out: Path) -> list[str]:
    """Wrap a python command in py-spy (preferred) or pyinstrument, if installed."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if Path(spy).exists():
        return [spy, "record", "-o", str(out.with_suffix(".svg")), "--", *argv]
    try:
        import pyinstrument  # noqa: F401
    except ImportError:
        print("  (no py-spy or pyinstrument installed: running unprofiled)", file=sys.stderr)
        return argv
    assert argv[1] == "-c"
    return [
        argv[0],
        "-m",
        "pyinstrument",
        "-r",
        "text",
        "-o",
        str(out.with_suffix(".txt")),
        "-c",
        argv[2],
        *argv[3:],
    ]


def rss_wrapped(code: str, *args: str) -> list[str]:
    """A ``python -c`` command line that runs ``code`` and reports its own peak RSS."""
    wrapper = (
        "import atexit, resource, sys\n"
        "atexit.register(lambda: sys.stderr.write("
        "'\\nPEAK_RSS_KB=%d CPU_S=%.3f\\n' % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
        "resource.getrusage(resource.RUSAGE_SELF).ru_utime + "
        "resource.getrusage(resource.RUSAGE_SELF).ru_stime)))\n" + code
    )
    return [sys.executable, "-c", wrapper, *args]


def run_stage(
    code: str,
    args: list[str],
    *,
    env: dict[str, str],
    profile_to: Path | None = None,
    cwd: Path = ROOT,
) -> tuple[float, float, float, str]:
    """Run one stage in ``cwd`` (the checkout whose code runs); return (wall s, its own
    peak RSS MB, its CPU s, stdout)."""
    argv = rss_wrapped(code, *args)
    if profile_to is not None:
        argv = _profiled(argv, profile_to)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=cwd, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"stage failed ({proc.returncode}): {' '.join(args[:4])}")
    rss = cpu = 0.0
    for line in proc.stderr.splitlines():
        if line.startswith("PEAK_RSS_KB="):
            fields = dict(part.split("=", 1) for part in line.split())
            rss, cpu = int(fields["PEAK_RSS_KB"]) / 1024.0, float(fields["CPU_S"])
    # One line per finished process as it happens (a long run that is stopped early still
    # leaves its finished stages; the tables come at the end).
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"  [{datetime.now(UTC):%H:%M:%S}] {' '.join(args[:5])[:60]}: wall {wall:,.1f} s, "
        f"CPU {cpu:,.1f} s, peak RSS {rss:,.0f} MB, load {load:.1f}",
        file=sys.stderr,
        flush=True,
    )
    return wall, rss, cpu, proc.stdout


def cli(*args: str) -> tuple[str, list[str]]:
    """The stage code and arguments of one ``driftlens`` command."""
    return _CLI, list(args)


def synthetic_questions(n: int, path: Path) -> None:
    """Write ``n`` distinct questions (the shipped sample, numbered variants) as JSONL."""
    from study.questions import read_questions, sample_questions_path

    sample = read_questions(sample_questions_path())
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            base = sample[i % len(sample)]
            round_ = i // len(sample)
            text = base.text if round_ == 0 else f"{base.text} (Variant {round_}.)"
            fh.write(json.dumps({"id": f"scale-{i:05d}", "text": text}) + "\n")


def sqlite_bytes(db_path: Path) -> int:
    """The SQLite file plus its WAL and shared-memory files."""
    return sum(
        p.stat().st_size
        for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm"))
        if p.exists()
    )


def pg_create(url: str) -> tuple[str, str]:
    """Create a fresh database on the server of ``url``; return (its URL, its name)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"driftlens_scale_{uuid.uuid4().hex[:10]}"
    admin = create_engine(make_url(url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(url).set(database=name).render_as_string(hide_password=False), name


def pg_drop(url: str, name: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(make_url(url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def pg_bytes(url: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        size = int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())
    engine.dispose()
    return size


# ------------------------------------------------------------------------- the pages

PAGES_CODE = r"""
import json, sys, time
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session, table_counts
from study.reasoning.browse import run_overview, question_responses
from study.reasoning.stored import latest_analysis, analysis_examples

runs = sys.argv[1].split(",")
out = {}
settings = resolve_settings()
def timed(name, fn):
    t0 = time.perf_counter()
    value = fn()
    out[name] = time.perf_counter() - t0
    return value
try:  # the per-revision cache keys (absent before the pages cached anything)
    from storage.workspace import counts_revision
    from study.reasoning.browse import run_revision
except ImportError:
    counts_revision = run_revision = None
try:  # later page paths (absent in older checkouts)
    from study.reasoning.browse import response_page
    try:
        from storage.repo.judges import run_judges
    except ImportError:  # before it moved to the judges' repository
        from study.reasoning.downloads import run_judges
    from study.reasoning.analysis_index import list_analysis_entries
except ImportError:
    response_page = run_judges = list_analysis_entries = None
try:
    from study.reasoning.stored import example_page
except ImportError:
    example_page = None
from study.questions import list_questions
with open_workspace_session(settings) as session:
    timed("home: table_counts", lambda: table_counts(session=session))
    if counts_revision is not None:
        timed("home: counts_revision (cached render)", lambda: counts_revision(session=session))
    ov = timed("runs: run_overview", lambda: run_overview(runs[0], session=session))
    if run_revision is not None:
        timed("runs: run_revision (cached render)", lambda: run_revision(runs[0], session=session))
    q = ov.question_ids[len(ov.question_ids) // 2]
    timed("runs: question_responses", lambda: question_responses(runs[0], q, session=session))
    if response_page is not None:  # the table's last page: the deepest OFFSET
        last = max(0, (ov.responses - 1) // 50 * 50)
        timed("runs: response_page (last page)",
              lambda: response_page(runs[0], session=session, offset=last, limit=50))
    if list_analysis_entries is not None:
        timed("analysis: list_analysis_entries", lambda: list_analysis_entries(session=session))
    stored = timed("analysis: latest_analysis", lambda: latest_analysis(runs[0], session=session))
    if example_page is not None:
        timed("analysis: example_page (first page)",
              lambda: example_page(stored, session=session, limit=10))
    else:
        timed("analysis: analysis_examples", lambda: analysis_examples(stored, session=session))
    if run_judges is not None:
        timed("analysis: run_judges (downloads)", lambda: run_judges(runs[0], session=session))
    timed("benchmark: list_questions", lambda: list_questions(session=session))
print(json.dumps(out))
"""


# --------------------------------------------------------------------------- one db


def bench_database(
    kind: str,
    db_url: str,
    *,
    workdir: Path,
    models: int,
    questions: int,
    samples: int,
    perturbations: str,
    bootstrap: int,
    profile: str | None,
    size_of: Any,
) -> list[Stage]:
    """Run every stage against one database and return the measurements."""
    env = {
        **os.environ,
        "DRIFTLENS_DB_URL": db_url,
        "DRIFTLENS_WORKSPACE": str(workdir / "ws"),
        "PYTHONPATH": str(ROOT),
    }
    stages: list[Stage] = []
    qfile = workdir / "questions.jsonl"
    synthetic_questions(questions, qfile)

    def prof(stage: str) -> Path | None:
        return workdir / f"profile-{kind}-{stage}" if profile == stage else None

    st = Stage("setup (migrate + import)", rows=questions)
    st.wall_s, st.peak_rss_mb, st.cpu_s, _ = run_stage(
        *cli("questions", "import", str(qfile)), env=env
    )
    st.db_bytes = size_of()
    stages.append(st)
    empty_bytes = st.db_bytes or 0

    runs = [f"scale-{i}" for i in range(models)]
    gen = Stage("generate", note=f"{models} model(s), one process each")
    for i, run in enumerate(runs):
        wall, rss, cpu, _ = run_stage(
            *cli(
                "generate",
                "--model",
                MODELS[i % len(MODELS)],
                "--run",
                run,
                "--samples",
                str(samples),
                "--perturbations",
                perturbations,
                "--json",
            ),
            env=env,
            profile_to=prof("generate") if i == 0 else None,
        )
        gen.add_part(wall, rss, cpu)
    gen.rows = count_rows(db_url, "response")
    gen.db_bytes = size_of()
    per_response = (gen.db_bytes - empty_bytes) / max(gen.rows, 1)
    print(
        f"  generate: {gen.rows:,} responses, {per_response:,.0f} B/response",
        file=sys.stderr,
        flush=True,
    )
    stages.append(gen)
    n_responses = gen.rows

    lab = Stage("label (keywords)", note="one process per run")
    for i, run in enumerate(runs):
        wall, rss, cpu, _ = run_stage(
            *cli("label", "--run", run, "--labeler", LABELER, "--json"),
            env=env,
            profile_to=prof("label") if i == 0 else None,
        )
        lab.add_part(wall, rss, cpu)
    lab.rows = count_rows(db_url, "step_label")
    lab.db_bytes = size_of()
    stages.append(lab)

    out_dir = workdir / f"report-{kind}"
    ana = Stage("analyze (all runs together)", note=f"B = {bootstrap}")
    ana.wall_s, ana.peak_rss_mb, ana.cpu_s, _ = run_stage(
        *cli(
            "analyze",
            "--run",
            ",".join(runs),
            "--labeler",
            LABELER,
            "--out",
            str(out_dir),
            "--bootstrap",
            str(bootstrap),
        ),
        env=env,
        profile_to=prof("analyze"),
    )
    ana.rows = n_responses
    ana.db_bytes = size_of()
    stages.append(ana)

    drift_csv = out_dir / "drift.csv"
    sts = Stage("driftlens stats drift.csv", note=f"{drift_csv.stat().st_size / 1e6:.1f} MB table")
    sts.wall_s, sts.peak_rss_mb, sts.cpu_s, _ = run_stage(
        *cli(
            "stats",
            str(drift_csv),
            "--bootstrap",
            str(bootstrap),
            "--json",
            str(workdir / f"stats-{kind}.json"),
        ),
        env=env,
        profile_to=prof("stats"),
    )
    sts.rows = sum(1 for _ in drift_csv.open(encoding="utf-8")) - 1
    stages.append(sts)

    wall, rss, _cpu, out = run_stage(
        PAGES_CODE, [",".join(runs)], env=env, profile_to=prof("pages")
    )
    for name, seconds in json.loads(out.strip().splitlines()[-1]).items():
        stages.append(Stage(f"page {name}", wall_s=seconds, peak_rss_mb=rss, rows=0))

    for s in stages:
        if s.db_bytes is not None and n_responses and s.name != stages[0].name:
            s.note = (s.note + "; " if s.note else "") + (
                f"{(s.db_bytes - empty_bytes) / n_responses:,.0f} B/response"
            )
    return stages


def count_rows(db_url: str, table: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    with engine.connect() as conn:
        n = int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    engine.dispose()
    return n


# ---------------------------------------------------------------------------- output


def print_table(kind: str, stages: list[Stage]) -> None:
    """One Markdown table per database."""
    print(f"\n### {kind}\n")
    print("| stage | wall | CPU | rows | rows/s | peak RSS | DB size | note |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for s in stages:
        rate = f"{s.rows / s.wall_s:,.0f}" if s.rows and s.wall_s > 0 else ""
        size = f"{s.db_bytes / 1e6:,.1f} MB" if s.db_bytes is not None else ""
        cpu = f"{s.cpu_s:,.1f} s" if s.cpu_s else ""
        print(
            f"| {s.name} | {s.wall_s:,.2f} s | {cpu} | {s.rows:,} | {rate} | "
            f"{s.peak_rss_mb:,.0f} MB | {size} | {s.note} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1 model × 8 questions, B = 200.")
    parser.add_argument("--models", type=int, default=None)
    parser.add_argument("--questions", type=int, default=None)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--perturbations", default="all")
    parser.add_argument("--bootstrap", type=int, default=None)
    parser.add_argument("--db", choices=("both", "sqlite", "postgres"), default="both")
    parser.add_argument("--pg-url", default=os.environ.get("DRIFTLENS_TEST_PG_URL"))
    parser.add_argument("--workdir", type=Path, default=None, help="Kept after the run.")
    parser.add_argument(
        "--profile",
        choices=("generate", "label", "analyze", "stats", "pages"),
        default=None,
        help="Profile one stage (py-spy record, else pyinstrument) into the workdir.",
    )
    args = parser.parse_args(argv)
    models = args.models or (1 if args.small else 4)
    questions = args.questions or (8 if args.small else 1000)
    bootstrap = args.bootstrap or (200 if args.small else 10_000)

    keep = args.workdir is not None
    base = args.workdir or Path(tempfile.mkdtemp(prefix="driftlens-scale-"))
    if keep and base.exists() and any(base.iterdir()):
        # A workspace left by an earlier run would be resumed (nothing generated, 0 bytes
        # per response): every measurement needs an empty one.
        raise SystemExit(
            f"--workdir {base} is not empty; pass a new folder (an earlier run's workspace "
            "would be resumed and measure nothing)."
        )
    base.mkdir(parents=True, exist_ok=True)
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    if "postgres" in kinds and not args.pg_url:
        if args.db == "postgres":
            raise SystemExit("--db postgres needs --pg-url or DRIFTLENS_TEST_PG_URL.")
        print(
            '(no PostgreSQL: set DRIFTLENS_TEST_PG_URL, e.g. eval "$(scripts/ci/postgres.sh)")',
            file=sys.stderr,
        )
        kinds.remove("postgres")

    import driftlens_core

    print(
        f"# bench/scale.py — {models} model(s) × {questions} questions × "
        f"perturbations={args.perturbations} × {args.samples} samples, B = {bootstrap}\n"
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC · {platform.node()} · {os.cpu_count()} CPUs · "
        f"Python {platform.python_version()} · core {driftlens_core.implementation()}"
    )
    try:
        for kind in kinds:
            workdir = base / kind
            workdir.mkdir(parents=True, exist_ok=True)
            # The same measurement on either backend: only the URL and the size probe differ.
            bench = functools.partial(
                bench_database,
                kind,
                workdir=workdir,
                models=models,
                questions=questions,
                samples=args.samples,
                perturbations=args.perturbations,
                bootstrap=bootstrap,
                profile=args.profile,
            )
            if kind == "sqlite":
                db_path = workdir / "ws" / "driftlens.db"
                db_path.parent.mkdir(parents=True, exist_ok=True)
                stages = bench(f"sqlite:///{db_path}", size_of=lambda p=db_path: sqlite_bytes(p))
            else:
                db_url, name = pg_create(args.pg_url)
                try:
                    stages = bench(db_url, size_of=lambda u=db_url: pg_bytes(u))
                finally:
                    pg_drop(args.pg_url, name)
            print_table(kind, stages)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"\n(workdir kept: {base})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
