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
    start = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    page.wait_for_selector('[data-testid="stMain"]', timeout=limit * 1000)  # type: ignore[attr-defined]
    # in the main area: the sidebar names every page from the start
    main = page.locator('[data-testid="stMain"]')  # type: ignore[attr-defined]
    main.get_by_text(heading, exact=False).first.wait_for(timeout=limit * 1000)
    last, settled_at = None, None
    while time.perf_counter() - start < limit:
        now = time.perf_counter()
        idle = page.evaluate(IDLE_JS)  # type: ignore[attr-defined]
        text = page.evaluate(MAIN_TEXT_JS) if idle else None  # type: ignore[attr-defined]
        if not idle or text != last:
            settled_at = now if idle else None
        elif settled_at is not None and now - settled_at >= QUIET_S:
            return settled_at - start
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
    rows: list[tuple[str, float, float | None, int]] = []
    with serve_app(args.workspace, args.db_url) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            # The first page load also starts the app's session; time it apart from pages.
            warmup = _render_seconds(page, base, "DriftLens Workbench")
            print(f"session start (first page of a fresh browser session): {warmup:.2f} s\n")
            for file, title in pages:
                path = "" if file == DEFAULT_PAGE else Path(file).stem
                heading = "DriftLens Workbench" if file == DEFAULT_PAGE else title
                times = [
                    _render_seconds(page, f"{base}/{path}", heading) for _ in range(args.repeat)
                ]
                errors = page.locator('[data-testid="stException"]').count()
                if args.screenshots is not None:
                    args.screenshots.mkdir(parents=True, exist_ok=True)
                    shot = args.screenshots / f"{Path(file).stem}.png"
                    page.screenshot(path=str(shot), full_page=True)
                warm = statistics.median(times[1:]) if len(times) > 1 else None
                rows.append((title, times[0], warm, errors))
            context.close()
        finally:
            browser.close()
    print("| page | first visit | later visits (median) | exceptions |")
    print("|---|---:|---:|---:|")
    for title, cold, warm, errors in rows:
        later = f"{warm:.2f} s" if warm is not None else ""
        print(f"| {title} | {cold:.2f} s | {later} | {errors} |")
    worst = max(max(cold, warm or 0.0) for _, cold, warm, _ in rows)
    print(f"\nslowest page: {worst:.2f} s (goal ≤ 2 s); load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
