"""Read and validate a drift table for ``driftlens stats`` (the core does no I/O).

A drift table has one row per measurement: ``question_id``, ``condition``,
``condition_class`` (``none`` | ``noise`` | ``attribute`` | ``life_event`` | ``other``), one
numeric column per metric, optional ``model``, ``sample``, ``label_run`` (the same
response labeled again: with ``sample`` it separates the labeler share of the noise) and
``variant`` (text: which stimulus of the condition the row measures; the analysis writes
the perturbation key there). A row that repeats an earlier row in every column counts
one measurement twice (it shrinks every standard error), so it is refused with the file
lines of the repeats, or dropped with ``keep_first``.
Columns named ``n_*`` (the trajectory lengths written by :mod:`study.reasoning.drift`) are
bookkeeping, not metrics. Every
problem is reported as one :class:`~storage.errors.InputError` sentence that says what to
fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from driftlens_core.stats_input import CONDITION_CLASSES, StatsInput
from storage.errors import InputError
from study.safe_csv import read_csv_table, require_columns, unguard_frame

REQUIRED_COLUMNS: tuple[str, ...] = ("question_id", "condition", "condition_class")
OPTIONAL_COLUMNS: tuple[str, ...] = ("model", "sample", "label_run", "variant")


#: The strings pandas reads as missing; the columnar reader is given the same list.
_NA_STRINGS: tuple[str, ...] = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
    "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
)  # fmt: skip
#: Text columns whatever their content looks like (ids like ``007`` stay text).
_TEXT_COLUMNS: tuple[str, ...] = ("question_id", "condition", "model", "variant")


def _read_columnar(path: Path) -> pd.DataFrame | None:
    """Read with pyarrow's multi-threaded CSV reader; ``None`` when the pandas reader must
    decide (a file pyarrow rejects, or a column type pandas would read differently).

    Only integer, float, boolean, text and all-empty columns come back from here, the
    types both readers agree on, so the table is the one :func:`pd.read_csv` gives.
    """
    import pyarrow as pa
    from pyarrow import csv

    # Text columns come back dictionary-encoded (pandas categoricals): a drift table repeats
    # a few hundred distinct ids and condition names millions of times, and holding each
    # once cut a 213 MB table's frame from 278 MB to 78 MB and `driftlens stats`' peak RSS
    # by about a third (docs/performance.md, "driftlens stats on a 200 MB table").
    text_types = {name: pa.dictionary(pa.int32(), pa.string()) for name in _TEXT_COLUMNS}
    try:
        table = csv.read_csv(
            path,
            convert_options=csv.ConvertOptions(
                column_types=text_types,
                null_values=list(_NA_STRINGS),
                strings_can_be_null=True,
                true_values=["True", "TRUE", "true"],
                false_values=["False", "FALSE", "false"],
                auto_dict_encode=True,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError, OSError):
        return None

    def is_text(t: pa.DataType) -> bool:
        return pa.types.is_string(t) or (
            pa.types.is_dictionary(t) and pa.types.is_string(t.value_type)
        )

    agreed = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean, is_text,
              pa.types.is_null)  # fmt: skip
    if table.num_rows == 0 or not all(any(ok(f.type) for ok in agreed) for f in table.schema):
        return None
    if len(set(table.column_names)) != len(table.column_names):
        return None  # pandas renames repeated headers (a, a.1)
    if any(
        is_text(f.type) and f.name not in (*_TEXT_COLUMNS, "condition_class") for f in table.schema
    ):
        return None  # text where a number may be meant (" 1.5"): pandas' parser decides
    # Release each Arrow column as it is converted: the peak is one table, not two.
    null_columns = [f.name for f in table.schema if pa.types.is_null(f.type)]
    df = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
    # mimalloc keeps freed pages for reuse; hand the parse buffers back to the system.
    pa.default_memory_pool().release_unused()
    for name in null_columns:
        df[name] = df[name].astype(object if name in _TEXT_COLUMNS else np.float64)
    return df


def read_stats_csv(path: Path) -> pd.DataFrame:
    """Read a CSV drift table.

    Large tables are read column-wise by pyarrow (several times faster, a fraction of the
    memory); anything it cannot read, or would type differently, goes through
    :func:`pd.read_csv`, whose table and error messages are the reference
    (``tests/stats/test_columnar_reader.py`` holds the two to the same results).

    Raises:
        InputError: the file is missing, empty or not a CSV table.
    """
    if not path.exists():
        raise InputError(f"File not found: {path}")
    try:
        fast = _read_columnar(path)
    except (UnicodeDecodeError, ValueError):
        fast = None
    if fast is not None:
        # Both readers undo the formula guard of cells the workbench wrote (study.safe_csv).
        return unguard_frame(fast)
    return read_stats_csv_pandas(path)


def read_stats_csv_pandas(path: Path) -> pd.DataFrame:
    """Read a CSV drift table with pandas (the reference reader, and the fallback).

    Raises:
        InputError: the file is missing, empty or not a CSV table.
    """
    # Text cells the workbench wrote carry a formula guard (study.safe_csv); undone, so a
    # drift.csv reads back to the values that were analysed.
    return read_csv_table(
        path,
        what="drift",
        dtype={"question_id": str, "condition": str, "model": str},
        keep_default_na=True,
    )


#: Largest drift magnitude accepted: squares of larger values overflow float64 sums.
MAX_ABS_VALUE = 1e100


def _line(df: pd.DataFrame, mask: np.ndarray) -> int:
    """File line of the first row where ``mask`` holds (header on line 1, one line a row)."""
    return int(np.flatnonzero(mask)[0]) + 2


def default_metrics(df: pd.DataFrame) -> tuple[str, ...]:
    """Every column that is neither reserved nor bookkeeping (``n_*``).

    A text column there is an error rather than silently skipped: a metric column spoilt by
    text would otherwise vanish from the results.

    Raises:
        InputError: one of those columns is not numeric.
    """
    reserved = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    chosen = tuple(
        str(c) for c in df.columns if str(c) not in reserved and not str(c).startswith("n_")
    )
    for c in chosen:
        if not pd.api.types.is_numeric_dtype(df[c]):
            raise InputError(
                f"Column {c!r} is not numeric; fix it or pick the metric columns with --metrics."
            )
    return chosen


def repeated_rows(df: pd.DataFrame) -> list[tuple[int, int]]:
    """Rows that repeat an earlier row in every column, as ``(line, line of the first)``.

    Lines are file lines (header on line 1, one line a row), in file order.
    """
    if len(df) < 2:
        return []
    # A 64-bit hash per row finds the candidates (a third of the cost of comparing whole
    # rows on a 2-million-row table); the exact comparison runs on those rows only.
    hashes = pd.util.hash_pandas_object(df, index=False)
    where = np.flatnonzero(hashes.duplicated(keep=False).to_numpy())
    if where.size == 0:
        return []
    rows = df.iloc[where]
    dup = rows.duplicated(keep="first").to_numpy()
    if not dup.any():
        return []
    # the first occurrence of each repeated row: group the rows by their whole content
    group = rows.groupby(list(rows.columns), dropna=False, sort=False).ngroup().to_numpy()
    first: dict[int, int] = {}
    for k, g in enumerate(group):
        first.setdefault(int(g), int(where[k]))
    return [(int(where[k]) + 2, first[int(group[k])] + 2) for k in np.flatnonzero(dup)]


def repeated_rows_message(repeats: Sequence[tuple[int, int]], source: object = None) -> str:
    """One sentence naming the file and the lines of repeated rows (see :func:`repeated_rows`)."""
    where = f"{source}: " if source is not None else ""
    shown = ", ".join(f"line {line} repeats line {first}" for line, first in repeats[:3])
    more = f" and {len(repeats) - 3} more" if len(repeats) > 3 else ""
    return (
        f"{where}{len(repeats)} row(s) repeat an earlier row in every column ({shown}{more}); "
        "a repeated row counts one measurement twice and shrinks the standard errors, so "
        "remove the repeats, add the column that tells them apart (variant or sample), or "
        "pass --keep-first to use the first of each."
    )


def _factorize(col: pd.Series) -> tuple[np.ndarray, tuple[str, ...]]:
    """Codes and names of a column's values, the names in sorted text order.

        A categorical column (the columnar reader's text columns) is factorised through its
        categories, so the codes and names equal ``pd.factorize(col.astype(str), sort=True)``
        without building millions of strings (callers pass other columns through :func:`_text`
    first where the values must be read as text).
    """
    if isinstance(col.dtype, pd.CategoricalDtype):
        names = np.asarray(col.cat.categories.astype(str), dtype=object)
        codes = col.cat.codes.to_numpy()
        present = np.unique(codes)
        order = np.argsort(names[present], kind="stable")
        remap = np.full(len(names), -1, dtype=np.int64)
        remap[present[order]] = np.arange(len(present), dtype=np.int64)
        return remap[codes], tuple(str(n) for n in names[present[order]])
    codes, uniques = pd.factorize(col, sort=True)
    return codes.astype(np.int64), tuple(str(u) for u in uniques)


def _text(col: pd.Series) -> pd.Series:
    """The column as text; a categorical (already text) is returned as it is."""
    return col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype(str)


def _stripped_text(col: pd.Series) -> pd.Series:
    """The column as text with surrounding blanks removed (categoricals stay categorical)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        stripped = np.asarray(col.cat.categories.astype(str).str.strip(), dtype=object)
        uniq, inverse = np.unique(stripped, return_inverse=True)
        codes = col.cat.codes.to_numpy()
        return pd.Series(
            pd.Categorical.from_codes(inverse[codes], categories=uniq), index=col.index
        )
    return col.astype(str).str.strip()


def stats_input(
    df: pd.DataFrame,
    *,
    metrics: Sequence[str] | None = None,
    source: object = None,
    keep_first: bool = False,
) -> StatsInput:
    """Validate a drift table and turn it into the core's :class:`StatsInput`.

    Args:
        df: the table (as :func:`read_stats_csv` returns it).
        metrics: metric columns (default: :func:`default_metrics`).
        source: the file the table came from (named in the repeated-rows error).
        keep_first: drop rows that repeat an earlier row in every column instead of
            refusing the table.

    Raises:
        InputError: missing columns, unknown or mixed condition classes, missing or
            non-numeric values, no noise rows, no metric column, or (without
            ``keep_first``) rows repeated in every column.
    """
    require_columns(
        df,
        REQUIRED_COLUMNS,
        source="The table",
        expected_also=" plus one numeric column per metric",
    )
    chosen = tuple(metrics) if metrics else default_metrics(df)
    if not chosen:
        raise InputError("The table has no numeric metric column (e.g. dtw, sri).")
    absent = [m for m in chosen if m not in df.columns]
    if absent:
        raise InputError(f"Metric column(s) not in the table: {', '.join(absent)}.")
    for col in (*REQUIRED_COLUMNS, *[c for c in OPTIONAL_COLUMNS if c in df.columns]):
        n_missing = int(df[col].isna().sum())
        if n_missing:
            raise InputError(f"Column {col!r} has {n_missing} empty value(s); every row needs one.")
    values = np.empty((len(df), len(chosen)))
    for k, m in enumerate(chosen):
        numeric = pd.to_numeric(df[m], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(numeric)
        if bad.any():
            raise InputError(
                f"Metric column {m!r} has {int(bad.sum())} missing or non-numeric value(s) "
                f"(NaN; the first on line {_line(df, bad)}); drop or fix those rows first."
            )
        huge = np.abs(numeric) > MAX_ABS_VALUE
        if huge.any():
            first = int(np.flatnonzero(huge)[0])
            raise InputError(
                f"Metric column {m!r} has a value of {numeric[first]:.3g} on line "
                f"{_line(df, huge)}; drift values must lie within ±{MAX_ABS_VALUE:.0e} "
                "(larger ones overflow the variance), so check the table's units."
            )
        values[:, k] = numeric
    klass = _stripped_text(df["condition_class"])
    # The distinct values only: iterating a 4-million-row Arrow column in Python took
    # seconds of `driftlens stats` on a large table.
    unknown = sorted({str(k) for k in klass.unique()} - set(CONDITION_CLASSES))
    if unknown:
        raise InputError(
            f"Unknown condition_class {unknown[0]!r}; use one of {', '.join(CONDITION_CLASSES)}."
        )
    cond = _text(df["condition"])
    per_cond = pd.DataFrame({"c": cond, "k": klass}).drop_duplicates()
    mixed = per_cond["c"][per_cond["c"].duplicated()]
    if len(mixed):
        raise InputError(f"Condition {mixed.iloc[0]!r} appears with more than one condition_class.")
    if not (klass == "noise").any():
        raise InputError(
            "The table has no rows of condition_class 'noise'; the noise floor needs them."
        )
    c_codes, c_names = _factorize(cond)
    class_of = dict(zip(per_cond["c"], per_cond["k"], strict=True))
    q_codes, _ = _factorize(_text(df["question_id"]))
    if "model" in df.columns:
        m_codes, m_names = _factorize(_text(df["model"]))
        no_noise = [m for j, m in enumerate(m_names) if not (klass[m_codes == j] == "noise").any()]
        if no_noise:
            raise InputError(
                f"Model {no_noise[0]!r} has no noise rows; the noise floor needs them."
            )
    else:
        m_codes, m_names = np.zeros(len(df), dtype=np.int64), ("model",)
    sample = None
    s_names: tuple[str, ...] = ()
    if "sample" in df.columns:
        sample, s_names = _factorize(df["sample"])
    label_run = _factorize(df["label_run"])[0] if "label_run" in df.columns else None
    # Checked last, so every other error names the line of the file as it is.
    repeats = repeated_rows(df)
    if repeats and not keep_first:
        raise InputError(repeated_rows_message(repeats, source))
    if repeats:
        # the first copy of every repeated row stays, so every factor level keeps a row
        keep = np.ones(len(df), dtype=bool)
        keep[[line - 2 for line, _ in repeats]] = False
        q_codes, c_codes, m_codes = q_codes[keep], c_codes[keep], m_codes[keep]
        values = values[keep]
        sample = sample[keep] if sample is not None else None
        label_run = label_run[keep] if label_run is not None else None
    return StatsInput(
        question=q_codes,
        condition=c_codes,
        model=m_codes,
        values=values,
        metrics=chosen,
        condition_names=c_names,
        condition_classes=tuple(class_of[n] for n in c_names),
        model_names=m_names,
        sample=sample,
        sample_names=s_names,
        label_run=label_run,
    )
