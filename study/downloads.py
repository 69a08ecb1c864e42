"""Exports as bytes for a browser download (the app's download buttons).

Each function reuses the export that writes files (``study.reasoning.exports``,
``study.benchmark_export``, ``study.reasoning.preferences``) into a temporary folder and
returns what it wrote, so a download holds exactly what the CLI writes.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from sqlmodel import Session, col, select

from storage.errors import NotFoundError
from storage.models import JudgeScore, Response
from storage.repo.runs import require_run
from study.reasoning.benchmark_export import export_benchmark
from study.reasoning.exports import export_responses_jsonl
from study.reasoning.preferences import export_preferences

if TYPE_CHECKING:
    import pandas as pd

#: The formats a table downloads in, with their MIME types.
TABLE_FORMATS: dict[str, str] = {
    "jsonl": "application/x-ndjson",
    "csv": "text/csv",
    "parquet": "application/vnd.apache.parquet",
}


def folder_zip(folder: Path) -> bytes:
    """A zip of every file under ``folder``, stored under ``<folder name>/`` (sorted).

    Raises:
        NotFoundError: the folder is not on disk.
    """
    if not folder.is_dir():
        raise NotFoundError(f"{folder}: the folder is not on disk.")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            zf.write(path, arcname=f"{folder.name}/{path.relative_to(folder).as_posix()}")
    return buf.getvalue()


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


def run_judges(run_name: str, *, session: Session) -> list[str]:
    """The judge models that scored some response of a run (sorted).

    Raises:
        NotFoundError: no run of that name.
    """
    run = require_run(run_name, session=session)
    stmt = (
        select(JudgeScore.judge_model)
        .join(Response, col(Response.id) == col(JudgeScore.response_id))
        .where(Response.run_id == run.id)
        .distinct()
    )
    return sorted(str(m) for m in session.exec(stmt))


def frame_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    """A table as a download: JSONL (one record a line), formula-safe CSV, or Parquet.

    Args:
        frame: The table (untrusted text cells are fine: CSV cells are guarded by
            :func:`study.safe_csv.frame_csv_text`, JSONL and Parquet keep them as data).
        fmt: ``jsonl``, ``csv`` or ``parquet``.

    Raises:
        ValueError: an unknown format (a programming error, not user input).
    """
    if fmt == "jsonl":
        if frame.empty:
            return b""
        return str(frame.to_json(orient="records", lines=True, force_ascii=False)).encode()
    if fmt == "csv":
        from study.safe_csv import frame_csv_text

        return frame_csv_text(frame).encode()
    if fmt == "parquet":
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        return buf.getvalue()
    raise ValueError(f"unknown table format {fmt!r}; use one of {', '.join(TABLE_FORMATS)}")
