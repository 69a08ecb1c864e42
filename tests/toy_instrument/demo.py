"""The toy's part of ``driftlens demo`` (its plugin's ``cli_demo``): two coins and a report."""

from __future__ import annotations

import time
from pathlib import Path

from sqlmodel import Session

from driftlens_plugins import DemoOutcome, DemoReport, Stage
from tests.toy_instrument.report import write_report
from tests.toy_instrument.store import run_coin

#: The demo's runs: one per simulated coin (resumed, not repeated, by a second demo).
DEMO_RUNS = (("coin-demo-yes", "sim/coin-yes"), ("coin-demo-fair", "sim/coin-fair"))


def demo(
    *, session: Session, workspace: Path, bootstrap: int, samples: int, stage: Stage
) -> DemoOutcome:
    """Run both coins (``samples`` answers per item), write the report, say what it did.

    The coin's interval is Wilson's (no bootstrap), so ``bootstrap`` is not used.
    """
    del bootstrap
    seconds: list[tuple[str, float]] = []
    lines = []
    progress = stage("coin (toy) runs")
    for i, (name, model) in enumerate(DEMO_RUNS):
        t0 = time.perf_counter()
        out = run_coin(name, model=model, session=session, samples=samples)
        seconds.append((name, time.perf_counter() - t0))
        progress(i + 1, len(DEMO_RUNS))
        lines.append(f"Coin run {name} ({model}): {out.added} answers now, {out.stored} stored.")
    t0 = time.perf_counter()
    html = write_report([n for n, _ in DEMO_RUNS], workspace / "reports" / "coin-demo",
                        session=session)  # fmt: skip
    seconds.append(("coin report", time.perf_counter() - t0))
    return DemoOutcome(
        title="Coin (toy)",
        banner="coin (toy): two simulated coins answer yes/no questions.",
        lines=tuple(lines),
        seconds=tuple(seconds),
        reports=(DemoReport("coin (toy)", html.resolve()),),
        next_lines=(("show a coin run", f".venv/bin/driftlens toy show {DEMO_RUNS[0][0]}"),),
    )
