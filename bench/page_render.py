"""How long each app page takes to render fully in a real browser (a benchmark, not a test).

``python bench/page_render.py --workspace PATH [--repeat 3]`` starts ``driftlens app`` on
the workspace (its SQLite file, e.g. the one ``bench/scale.py --workdir`` keeps), opens every
registered page in headless Debian chromium, and times from navigation until Streamlit has
finished the page's script: the main area is shown, nothing runs, no element is stale or a
skeleton, and the text then stays the same for a second (the time is taken where that
quiet second begins, so the window itself is not counted; a rerun inside it restarts it).
The first visit of a page is reported apart from the later ones, because the app caches
its counts and overviews per run revision. Prints a Markdown table; the goal of issue 14
is ≤ 2 s per page.

``--with-job`` (issue 37) first submits a background job that writes into the workspace
while every page is timed (a simulated ``generate`` of many samples, started as the pages
start theirs, through :func:`study.jobs.submit_job`, and cancelled at the end): pages read
while a job writes must not wait on it. The table then also gives each page's **first
content** (navigation until the page's heading is in the main area; the goal is ≤ 3 s on
a quiet machine) and the job's progress; the load average is printed before and after.

The browser waits are the browser tests' (``tests/app/browser_support.py``), so the bench
and the tests agree on what "rendered" means.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.ui.navigation import DEFAULT_PAGE, SECTIONS  # noqa: E402
from tests.app.browser_support import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    IDLE_JS,
    MAIN_TEXT_JS,
    serve_app,
)

#: How long a page must stay idle and unchanged to count as rendered (not counted in the time).
QUIET_S = 1.0


def _render_seconds(page: object, url: str, heading: str, *, limit: float = 120.0) -> float:
    """Seconds from navigation until the page has rendered and stays unchanged."""
    return _render_times(page, url, heading, limit=limit)[1]


def _render_times(
    page: object, url: str, heading: str, *, limit: float = 120.0
) -> tuple[float, float]:
    """Seconds from navigation until the page's first content, and until it has rendered
    and stays unchanged."""
    start = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    page.wait_for_selector('[data-testid="stMain"]', timeout=limit * 1000)  # type: ignore[attr-defined]
    # in the main area: the sidebar names every page from the start
    main = page.locator('[data-testid="stMain"]')  # type: ignore[attr-defined]
    main.get_by_text(heading, exact=False).first.wait_for(timeout=limit * 1000)
    first = time.perf_counter() - start
    last, settled_at = None, None
    while time.perf_counter() - start < limit:
        now = time.perf_counter()
        idle = page.evaluate(IDLE_JS)  # type: ignore[attr-defined]
        text = page.evaluate(MAIN_TEXT_JS) if idle else None  # type: ignore[attr-defined]
        if not idle or text != last:
            settled_at = now if idle else None
        elif settled_at is not None and now - settled_at >= QUIET_S:
            return first, settled_at - start
        last = text
        page.wait_for_timeout(50)  # type: ignore[attr-defined]
    raise TimeoutError(f"{url} did not settle within {limit:.0f} s")


def _database_size(args: argparse.Namespace) -> str:
    """The served database's size, in words (its URL may hold a password: not shown)."""
    if not args.db_url:
        return f"{(args.workspace / 'driftlens.db').stat().st_size / 1e6:,.0f} MB SQLite database"
    from sqlalchemy import create_engine, text

    engine = create_engine(args.db_url)
    try:
        with engine.connect() as conn:
            size = conn.execute(text("SELECT pg_database_size(current_database())")).scalar()
            responses = conn.execute(text("SELECT count(*) FROM response")).scalar()
    finally:
        engine.dispose()
    return f"{int(size or 0) / 1e9:,.1f} GB PostgreSQL database, {int(responses or 0):,} responses"


#: The background job of ``--with-job``: a simulated generation long enough to outlast the
#: pages (it is cancelled when they are timed), writing responses as a real run does.
BACKGROUND_ARGV = [
    "generate", "--model", "sim/default", "--run", "bench-background", "--perturbations",
    "all", "--samples", "60",
]  # fmt: skip


def _start_background_job(args: argparse.Namespace) -> int:
    """Submit the background job on the served workspace; returns its id."""
    from storage.settings import default_db_url, resolve_settings
    from storage.workspace import open_workspace_session
    from study.jobs import submit_job

    settings = resolve_settings(
        workspace=args.workspace, db_url=args.db_url or default_db_url(args.workspace)
    )
    with open_workspace_session(settings) as session:
        job = submit_job(session=session, workspace=settings.workspace, db_url=settings.db_url,
                         kind="generate", title="Background generation (bench)",
                         argv=BACKGROUND_ARGV, scope={"run": "bench-background"},
                         unit="responses")  # fmt: skip
    return int(job.id)


def _job_state(args: argparse.Namespace, job_id: int, *, cancel: bool = False) -> str:
    """The background job's state and progress (cancelling it first when ``cancel``)."""
    from storage.settings import default_db_url, resolve_settings
    from storage.workspace import open_workspace_session
    from study.jobs import cancel_job, get_job

    settings = resolve_settings(
        workspace=args.workspace, db_url=args.db_url or default_db_url(args.workspace)
    )
    with open_workspace_session(settings) as session:
        job = get_job(job_id, session=session)
        line = f"{job.state}, {job.done:,} of {job.total:,} {job.unit} ({job.stage})"
        if cancel and job.running:
            cancel_job(job_id, session=session)
    return line


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", type=Path, required=True, help="Workspace folder.")
    ap.add_argument(
        "--db-url",
        help="Serve this database instead of the workspace's driftlens.db (e.g. the "
        "PostgreSQL study bench/out_of_core.py --keep leaves; the URL is not printed).",
    )
    ap.add_argument("--repeat", type=int, default=3, help="Visits per page (first = cold).")
    ap.add_argument("--screenshots", type=Path, help="Save each rendered page here (PNG).")
    ap.add_argument("--pages", help="Only these pages (comma-separated titles, e.g. Analysis).")
    ap.add_argument(
        "--with-job",
        action="store_true",
        help="Time the pages while a background job writes into the workspace (a simulated "
        "generate, cancelled at the end); adds each page's first content.",
    )
    args = ap.parse_args(argv)
    if not args.db_url and not (args.workspace / "driftlens.db").exists():
        print(f"{args.workspace} has no driftlens.db; pass a workspace folder.", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    pages = [(file, title) for entries in SECTIONS.values() for file, title, _ in entries]
    if args.pages:
        wanted = {t.strip().lower() for t in args.pages.split(",")}
        pages = [(file, title) for file, title in pages if title.lower() in wanted]
        if not pages:
            print(f"No registered page is titled {args.pages!r}.", file=sys.stderr)
            return 2
    print(f"# bench/page_render.py — {args.workspace} ({_database_size(args)})")
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · {platform.node()} · "
        f"{os.cpu_count()} CPUs · load {os.getloadavg()[0]:.1f}\n"
    )
    rows: list[tuple[str, float, float, float | None, int, str]] = []
    job_id = None
    with serve_app(args.workspace, args.db_url) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            # The first page load also starts the app's session; time it apart from pages.
            warmup = _render_seconds(page, base, "DriftLens Workbench")
            print(f"session start (first page of a fresh browser session): {warmup:.2f} s\n")
            if args.with_job:
                job_id = _start_background_job(args)
                time.sleep(5.0)  # the job's process is writing before the first page
                print(f"background job {job_id}: {_job_state(args, job_id)}; "
                      f"load {os.getloadavg()[0]:.1f}\n")  # fmt: skip
            for file, title in pages:
                path = "" if file == DEFAULT_PAGE else Path(file).stem
                heading = "DriftLens Workbench" if file == DEFAULT_PAGE else title
                both = [_render_times(page, f"{base}/{path}", heading) for _ in range(args.repeat)]
                times = [settled for _, settled in both]
                errors = page.locator('[data-testid="stException"]').count()
                if args.screenshots is not None:
                    args.screenshots.mkdir(parents=True, exist_ok=True)
                    shot = args.screenshots / f"{Path(file).stem}.png"
                    page.screenshot(path=str(shot), full_page=True)
                warm = statistics.median(times[1:]) if len(times) > 1 else None
                first = max(f for f, _ in both)
                # whether the job was still writing when this page was timed
                job = _job_state(args, job_id).split(" (")[0] if job_id is not None else ""
                rows.append((title, first, times[0], warm, errors, job))
            context.close()
        finally:
            browser.close()
            if job_id is not None:
                print(f"background job {job_id} at the end: {_job_state(args, job_id)} "
                      "(cancelled now)\n")  # fmt: skip
                _job_state(args, job_id, cancel=True)
    print("| page | first content (slowest visit) | rendered, first visit | "
          "later visits (median) | exceptions | background job after the page |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---|")
    for title, first, cold, warm, errors, job in rows:
        later = f"{warm:.2f} s" if warm is not None else ""
        print(f"| {title} | {first:.2f} s | {cold:.2f} s | {later} | {errors} | {job} |")
    worst = max(max(cold, warm or 0.0) for _, _, cold, warm, _, _ in rows)
    worst_first = max(first for _, first, _, _, _, _ in rows)
    print(f"\nslowest page: {worst:.2f} s (goal ≤ 2 s); slowest first content "
          f"{worst_first:.2f} s (goal ≤ 3 s with a job running); load "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
