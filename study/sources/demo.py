"""``driftlens sources demo``: the whole instrument offline, in seconds, on the simulator.

The shipped items (60 commonsense, 40 arithmetic) are probed in all 13 variants by two
simulated models with known behaviour (``sim/src-paper``: the published averages, mostly
impressionable; ``sim/src-selective``), read as letters with top-20 logprobs, analysed, and
reported. Every answer is simulated and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from llm.specs import ModelSpec
from study.report.folder import final_path, staged_report_folder
from study.safe_csv import write_frame_csv
from study.sources.analysis import analyze_sources_table
from study.sources.items import shipped_items
from study.sources.plan import SourcesConfig, run_sources
from study.sources.report import SourcesReportFiles, write_sources_report
from study.sources.sft import sft_examples, sft_jsonl
from study.sources.sim.wiring import backend_for

DEMO_MODELS: tuple[str, ...] = ("sim/src-paper", "sim/src-selective")


@dataclass(frozen=True)
class SourcesDemoResult:
    """What the demo wrote and found."""

    probes: int
    unknown: int
    report: SourcesReportFiles
    table_csv: Path
    stats_json: Path
    sft_jsonl: Path
    types: dict[str, dict[str, Any]]


def run_sources_demo(
    *,
    out_dir: Path,
    session: Any = None,
    bootstrap: int = 2000,
    seed: int = 0,
    models: tuple[str, ...] = DEMO_MODELS,
) -> SourcesDemoResult:
    """Probe, analyse and report on the simulator; write the SFT mixture too.

    Args:
        out_dir: Output folder (report, ``probes.csv``, ``probes.jsonl``, ``stats.json``,
            ``sft_mixed.jsonl``).
        session: Database session for the request cache (``None``: no cache).
        bootstrap: Bootstrap replicates.
        seed: Seed of the bootstrap and the SFT mixture.
        models: ``sim/src-*`` presets to probe.
    """
    import json

    items = shipped_items()
    tables = []
    jsonl = []
    unknown = probes = 0
    wrong: dict[str, str] = {}
    for spec in models:
        backend = backend_for(ModelSpec.parse(spec), items)
        run = run_sources(items, backend, config=SourcesConfig(), session=session)
        tables.append(run.table())
        jsonl.append(run.jsonl())
        unknown += run.n_unknown
        probes += len(run.records)
        if not wrong:
            wrong = {r.item_id: r.wrong_letter for r in run.records if r.variant == "bare"}
    table = pd.concat(tables, ignore_index=True)
    result = analyze_sources_table(table, bootstrap=bootstrap, seed=seed).to_dict()
    # The folder is replaced as a whole: a killed demo leaves the previous report.
    with staged_report_folder(out_dir) as work:
        write_frame_csv(table, work / "probes.csv")
        (work / "probes.jsonl").write_text("".join(jsonl), encoding="utf-8")
        (work / "stats.json").write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
        staged = write_sources_report(
            result,
            table,
            work,
            title="Source reliance — demo",
            simulated=True,
            notes=(f"{probes} probes, {unknown} without a letter (read as unknown).",),
        )
        (work / "sft_mixed.jsonl").write_text(
            sft_jsonl(sft_examples(items, n=1000, seed=seed, wrong=wrong))
        )
    report = SourcesReportFiles(
        markdown=final_path(staged.markdown, work, out_dir),
        html=final_path(staged.html, work, out_dir),
        figures={k: [final_path(p, work, out_dir) for p in v] for k, v in staged.figures.items()},
    )
    table_csv, stats_json, sft = (
        out_dir / "probes.csv",
        out_dir / "stats.json",
        out_dir / "sft_mixed.jsonl",
    )
    types = {
        f"{m} · {d}": {s: c["behaviour"][s] for s in ("user", "doc")}
        for m, ds in result["models"].items()
        for d, c in ds.items()
    }
    return SourcesDemoResult(
        probes=probes,
        unknown=unknown,
        report=report,
        table_csv=table_csv,
        stats_json=stats_json,
        sft_jsonl=sft,
        types=types,
    )
