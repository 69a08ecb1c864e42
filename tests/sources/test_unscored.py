"""A parse failure is never a verdict (issue 36 item 6), source reliance.

A probe whose reply names no letter (the mock: the source simulator with a quarter of the
probes answered in prose) is stored as ``unknown``: counted ("N of M unscored") and left
out of every estimate of the cell, never read as a wrong answer.
"""

from __future__ import annotations

from sqlmodel import Session

from llm.specs import ModelSpec
from study.sources.analysis import analyze_sources_table
from study.sources.items import shipped_items
from study.sources.plan import SourcesConfig
from study.sources.sim.wiring import backend_for
from study.sources.store import run_stored_sources, stored_run_table
from tests.garbled_backend import MockGarbledBackend


def test_unread_mock_letters_are_counted_and_left_out_of_the_estimates(
    session: Session,
) -> None:
    items = shipped_items()[:10]
    inner = backend_for(ModelSpec.parse("sim/src-paper"), items)
    backend = MockGarbledBackend(inner, every=4, spec="openai-api/mock/garbled")  # type: ignore[arg-type]
    cfg = SourcesConfig(logprobs=False)
    summary = run_stored_sources("g", items, backend, [cfg], session=session)
    assert summary.failed == 0
    table = stored_run_table("g", session=session)
    unknown = table["choice"].str.lower() == "unknown"
    assert int(unknown.sum()) >= 10  # the dose: these probes name no letter
    cell = analyze_sources_table(table, bootstrap=50, seed=0).cells[0].payload
    assert cell["unscored"] == {"unscored": int(unknown.sum()), "probes": len(table)}  # counted
    assert cell["usable"]["usable"] == len(table) - int(unknown.sum())
    # left out: the bare accuracy is that of the bare probes whose letter was read
    bare = table[(table["variant"] == "bare") & ~unknown]
    expected = float((bare["choice"] == bare["correct_choice"]).mean())
    assert abs(cell["bare_accuracy"] - expected) < 1e-12
    for variant, row in cell["variants"].items():
        rows = table[(table["variant"] == variant) & ~unknown]
        if len(rows):
            assert (
                abs(row["accuracy"] - float((rows["choice"] == rows["correct_choice"]).mean()))
                < 1e-12
            )
