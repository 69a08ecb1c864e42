"""Reasoning drift's exports as bytes for a browser download (the Analysis page's buttons).

Each function reuses the export that writes files (:mod:`study.reasoning.exports`,
:mod:`study.reasoning.benchmark_export`, :mod:`study.reasoning.preferences`) into a temporary
folder and returns what it wrote, so a download holds exactly what the CLI writes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from sqlmodel import Session

from study.downloads import folder_zip
from study.reasoning.benchmark_export import export_benchmark
from study.reasoning.exports import export_responses_jsonl
from study.reasoning.preferences import export_preferences


def responses_jsonl(run_name: str, *, session: Session) -> bytes:
    """A run's responses as JSONL (``driftlens export responses``).

    Raises:
        NotFoundError: no run of that name.
    """
    with tempfile.TemporaryDirectory(prefix="driftlens-dl-") as tmp:
        out = Path(tmp) / "responses.jsonl"
        export_responses_jsonl(run_name, out, session=session)
        return out.read_bytes()


def benchmark_zip(tier: str, *, session: Session) -> bytes:
    """The benchmark export of a tier (JSONL, Parquet, datasheet) as one zip.

    Raises:
        InputError: unknown tier, or no question in the selection.
    """
    with tempfile.TemporaryDirectory(prefix="driftlens-dl-") as tmp:
        out = Path(tmp) / f"benchmark-{tier}"
        export_benchmark(out, session=session, tier=tier)
        return folder_zip(out)


def preferences_jsonl(run_name: str, judge_model: str, *, session: Session) -> bytes:
    """The DPO preference pairs of a run under one judge, as JSONL.

    Raises:
        InputError: the judge scored nothing in this run.
        NotFoundError: no run of that name.
    """
    with tempfile.TemporaryDirectory(prefix="driftlens-dl-") as tmp:
        out = Path(tmp) / "preferences.jsonl"
        export_preferences(run_name, judge_model, out, session=session)
        return out.read_bytes()
