"""Downloads every instrument's pages share: a folder as a zip, a table in a chosen format.

An instrument's own exports as bytes live in its folder (each reuses the export that writes
files, so a download holds exactly what the CLI writes).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from storage.errors import NotFoundError

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


def frame_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    """A table as a download: JSONL (one record a line), a CSV for reading, or Parquet.

    The CSV is for a spreadsheet or a terminal: its text cells are formula-safe
    (:func:`study.safe_csv.frame_csv_text`) and their control characters written out as
    ``\\xNN`` (:func:`storage.safe_text.escape_control`, line breaks kept), so a model's
    terminal escape or right-to-left override stays visible text. JSONL and Parquet keep
    every text exactly, as data.

    Args:
        frame: The table (untrusted text cells are fine).
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

        return frame_csv_text(frame, escape_controls=True).encode()
    if fmt == "parquet":
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        return buf.getvalue()
    raise ValueError(f"unknown table format {fmt!r}; use one of {', '.join(TABLE_FORMATS)}")
