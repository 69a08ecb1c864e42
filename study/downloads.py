"""Exports as bytes for a browser download (the app's download buttons).

Each function reuses the export that writes files (``study.exports``,
``study.benchmark_export``, ``study.reasoning.preferences``) into a temporary folder and
returns what it wrote, so a download holds exactly what the CLI writes.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

from sqlmodel import Session, col, select

from storage.errors import NotFoundError
from storage.models import JudgeScore, Response
from storage.repo.runs import require_run
from study.benchmark_export import export_benchmark
from study.exports import export_responses_jsonl
from study.reasoning.preferences import export_preferences


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
