"""The one way the workbench writes (and reads back) CSV files: formula-safe cells.

A spreadsheet opened on a CSV runs a cell that starts with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return as a formula (CSV / formula injection). Question ids, condition
and model names, memory lines and model output are untrusted, so every text cell the
workbench writes goes through :func:`guard_cell`, the OWASP recommendation: such a cell
gets a leading single quote, which spreadsheets show as text and never evaluate.

* Numbers stay numbers: numeric columns are written as they are, and a text cell that
  is a plain number (``-0.5``, ``+3``, ``1e-4``) is left alone.
* The guard is reversible: :func:`unguard_cell` undoes exactly what :func:`guard_cell`
  did (a cell that already started with quotes before a formula character gains one
  more), so ``driftlens stats`` reads a ``drift.csv`` it wrote back to the same values.

Use :func:`write_frame_csv` for data frames, :func:`csv_text` for rows, and
:func:`read_csv_table` (or :func:`unguard_frame` right after ``pandas.read_csv``) on a
file the workbench may have written, and :func:`require_columns` to refuse a table without
the columns it needs.
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storage.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: First characters that make a spreadsheet evaluate a cell (OWASP CSV injection).
FORMULA_START: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")
#: The prefix that keeps such a cell text.
GUARD = "'"

_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _is_formula(core: str) -> bool:
    return bool(core) and core.startswith(FORMULA_START) and not _PLAIN_NUMBER.fullmatch(core)


def guard_cell(value: Any) -> Any:
    """The value as it is safe to write into a CSV cell.

    Non-strings are returned unchanged. A string whose first character after any leading
    quotes would start a formula gets one more leading quote.
    """
    if not isinstance(value, str):
        return value
    return GUARD + value if _is_formula(value.lstrip(GUARD)) else value


def unguard_cell(value: Any) -> Any:
    """Undo :func:`guard_cell` (a value it did not change is returned unchanged)."""
    if not isinstance(value, str) or not value.startswith(GUARD):
        return value
    return value[1:] if _is_formula(value.lstrip(GUARD)) else value


def guard_frame(frame: pd.DataFrame, *, escape_controls: bool = False) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are guarded.

    Args:
        frame: The table.
        escape_controls: Also write the text cells' control characters out as ``\\xNN``
            (line breaks kept), in the same pass: a CSV read in a terminal then shows a
            model's escape sequence as text.
    """
    import pandas as pd

    cell = guard_cell
    if escape_controls:
        from storage.safe_text import escape_control

        def cell(value: Any) -> Any:
            if isinstance(value, str):
                value = escape_control(value, keep_newlines=True)
            return guard_cell(value)

    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if not pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            out[column] = series.map(cell)
    out.columns = [guard_cell(str(c)) for c in out.columns]
    return out


def unguard_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Undo :func:`guard_frame` on a frame read with ``pandas.read_csv`` (in place too)."""
    import pandas as pd

    frame.columns = [unguard_cell(str(c)) for c in frame.columns]
    for column in frame.columns:
        series = frame[column]
        if isinstance(series.dtype, pd.CategoricalDtype):
            # The columnar reader's text columns: undo the guard once per distinct value.
            names = [str(c) for c in series.cat.categories]
            fixed_names = [unguard_cell(c) for c in names]
            if fixed_names == names:
                continue
            if len(set(fixed_names)) == len(fixed_names):
                frame[column] = series.cat.rename_categories(fixed_names)
            else:  # two spellings unguard to one value: the categories must merge
                frame[column] = series.astype(object).map(unguard_cell).astype("category")
            continue
        if pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series):
            # Only a cell that starts with the guard can change: find those with one
            # vectorised test and undo the guard there (a cell-by-cell map of a 4-million
            # row drift table was most of `driftlens stats`' time).
            try:
                guarded = series.str.startswith(GUARD, na=False).to_numpy(dtype=bool)
            except AttributeError:  # an object column without strings: nothing to undo
                continue
            if guarded.any():
                fixed = series.to_numpy(dtype=object, copy=True)
                fixed[guarded] = [unguard_cell(v) for v in fixed[guarded]]
                frame[column] = pd.Series(fixed, index=series.index, name=series.name).astype(
                    series.dtype
                )
    return frame


def read_csv_table(path: Path, *, what: str = "", **read_csv: Any) -> pd.DataFrame:
    """Read a CSV table with ``pandas.read_csv`` and undo the formula guard of its cells.

    Every column is text with empty cells kept as ``""`` unless ``read_csv`` says otherwise
    (it is passed on to ``pandas.read_csv``); ``what`` names the kind of table the
    message for an empty file expects (``"score"``: "expected a CSV score table").

    Raises:
        InputError: the file is missing, empty or not a CSV table (one sentence).
    """
    import pandas as pd

    if not path.exists():
        raise InputError(f"File not found: {path}")
    options: dict[str, Any] = {"dtype": str, "keep_default_na": False, **read_csv}
    try:
        return unguard_frame(pd.read_csv(path, **options))
    except pd.errors.EmptyDataError:
        table = f"CSV {what} table" if what else "CSV table"
        raise InputError(f"{path} is empty: expected a {table} with a header row") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path} is not a readable CSV table ({first})") from None


def require_columns(
    df: pd.DataFrame, required: Sequence[str], *, source: str, expected_also: str = ""
) -> None:
    """Refuse a table that lacks a required column or has no rows, in one sentence each.

    Args:
        df: the table as read.
        required: the columns it must have (named, in this order, in the message).
        source: what the messages name first (``"scores.csv"``, ``"The table"``).
        expected_also: said after the list of expected columns (optional columns, say).

    Raises:
        InputError: ``SOURCE lacks the column(s) …; expected …`` or
            ``SOURCE has a header but no rows.``
    """
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise InputError(
            f"{source} lacks the column(s) {', '.join(missing)}; "
            f"expected {', '.join(required)}{expected_also}."
        )
    if len(df) == 0:
        raise InputError(f"{source} has a header but no rows.")


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` next to ``path`` and rename it into place (no half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def frame_csv_text(frame: pd.DataFrame, *, escape_controls: bool = False) -> str:
    """The guarded CSV text of a data frame (no index, ``\\n`` line ends); see
    :func:`guard_frame` for ``escape_controls``."""
    guarded = guard_frame(frame, escape_controls=escape_controls)
    return str(guarded.to_csv(index=False, lineterminator="\n"))


def write_frame_csv(frame: pd.DataFrame, path: Path) -> Path:
    """Write a data frame as a guarded CSV file (atomically); return the path."""
    _atomic_write(Path(path), frame_csv_text(frame))
    return Path(path)


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Guarded CSV text from a header and rows (``csv`` module quoting, ``\\n`` endings)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([guard_cell(h) for h in header])
    for row in rows:
        writer.writerow([guard_cell(v) for v in row])
    return buf.getvalue()


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """Write rows as a guarded CSV file (atomically); return the path."""
    _atomic_write(Path(path), csv_text(header, rows))
    return Path(path)
