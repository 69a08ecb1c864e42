"""The source-reliance probe table: reading it from CSV and validating it row by row.

One row per probe (model, dataset, tier, ordering, question, variant) with the answered
choice, the question's correct and fixed wrong choice and optionally the remapped letter
probabilities and the instruction variant. :func:`validate` names the file and row of the
first problem in one sentence and joins each probe to its bare answer; the statistics
(:mod:`study.sources.analysis`) read only validated tables.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from driftlens_core.source_reliance import (
    VARIANTS,
    parse_variant,
)
from storage.errors import InputError
from study.safe_csv import read_csv_table, require_columns

REQUIRED_COLUMNS: tuple[str, ...] = (
    "model",
    "dataset",
    "tier",
    "ordering",
    "question_id",
    "variant",
    "choice",
    "correct_choice",
    "wrong_choice",
)


PROB_COLUMNS: tuple[str, ...] = ("p_correct", "p_wrong", "p_other")


#: Optional column: the system-instruction variant (``n`` neutral, ``d`` document-only,
#: ``u`` user-only, ``s`` self-only; empty means ``n``).
INSTRUCTION_COLUMN = "instruction"


_SUM_TOL = 1e-3
INSTRUCTIONS: tuple[str, ...] = ("n", "d", "u", "s")
_BARE_COLS: tuple[str, ...] = ("choice", "correct", *PROB_COLUMNS)


def read_sources_csv(path: Path) -> pd.DataFrame:
    """Read a probe table as text columns (probabilities are parsed by :func:`validate`).

    Raises:
        InputError: the file is missing, empty or not a CSV table.
    """
    return read_csv_table(path, what="probe")


def _where(source: str, index: int) -> str:
    # header is line 1, so data row i (0-based) is line i + 2
    return f"{source}, line {index + 2}"


def validate(df: pd.DataFrame, *, source: str = "the table") -> pd.DataFrame:
    """Check a probe table and return a normalised copy.

    Returns:
        The table with stripped text columns, ``correct`` (0/1), and float ``p_*`` columns
        (NaN where absent).

    Raises:
        InputError: one sentence naming the first bad line and what to fix.
    """
    require_columns(
        df,
        REQUIRED_COLUMNS,
        source=source,
        expected_also=f" (and optionally {', '.join(PROB_COLUMNS)})",
    )
    has_p = [c for c in PROB_COLUMNS if c in df.columns]
    if has_p and len(has_p) != len(PROB_COLUMNS):
        raise InputError(
            f"{source} has {', '.join(has_p)} but not all of {', '.join(PROB_COLUMNS)}; "
            "give all three or none."
        )
    out = df[list(REQUIRED_COLUMNS)].astype(str).apply(lambda c: c.str.strip())
    if INSTRUCTION_COLUMN in df.columns:
        instr = df[INSTRUCTION_COLUMN].astype(str).str.strip().replace("", "n")
        bad_instr = np.flatnonzero(~instr.isin(INSTRUCTIONS).to_numpy())
        if bad_instr.size:
            i = int(bad_instr[0])
            raise InputError(
                f"{_where(source, i)}: unknown instruction {instr.iloc[i]!r}; use one of "
                f"{', '.join(INSTRUCTIONS)} (or leave it empty for n)."
            )
        out[INSTRUCTION_COLUMN] = instr.to_numpy()
    else:
        out[INSTRUCTION_COLUMN] = "n"
    for col in ("model", "dataset", "question_id", "variant", "choice", "correct_choice"):
        empty = np.flatnonzero((out[col] == "").to_numpy())
        if empty.size:
            raise InputError(f"{_where(source, int(empty[0]))}: the {col!r} value is empty.")
    # letters: a choice outside them (Z, ZZ) would count as "neither answer" silently
    from study.sources.items import LETTERS
    from study.sources.score import UNKNOWN

    letters = list(LETTERS)
    for col, allowed, what in (
        ("choice", [*letters, UNKNOWN], f"a letter A-{LETTERS[-1]} or {UNKNOWN!r}"),
        ("correct_choice", letters, f"a letter A-{LETTERS[-1]}"),
        ("wrong_choice", [*letters, ""], f"a letter A-{LETTERS[-1]} (empty on bare rows)"),
    ):
        bad = np.flatnonzero(~out[col].isin(allowed).to_numpy())
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{_where(source, i)}: {col} {out[col].iloc[i]!r} is not {what}.")
    bad_variant = np.flatnonzero(~out["variant"].isin(VARIANTS).to_numpy())
    if bad_variant.size:
        i = int(bad_variant[0])
        raise InputError(
            f"{_where(source, i)}: unknown variant {out['variant'].iloc[i]!r}; "
            f"use one of {', '.join(VARIANTS)}."
        )
    specs = {v: parse_variant(v) for v in VARIANTS}
    expected_ordering = out["variant"].map(lambda v: specs[v].ordering)
    wrong_ordering = np.flatnonzero((expected_ordering != out["ordering"]).to_numpy())
    if wrong_ordering.size:
        i = int(wrong_ordering[0])
        want = expected_ordering.iloc[i] or "empty"
        raise InputError(
            f"{_where(source, i)}: variant {out['variant'].iloc[i]!r} needs ordering {want!r}, "
            f"not {out['ordering'].iloc[i]!r}."
        )
    needs_wrong = out["variant"] != "bare"
    no_wrong = np.flatnonzero((needs_wrong & (out["wrong_choice"] == "")).to_numpy())
    if no_wrong.size:
        i = int(no_wrong[0])
        raise InputError(f"{_where(source, i)}: the 'wrong_choice' value is empty.")
    same = np.flatnonzero((out["wrong_choice"] == out["correct_choice"]).to_numpy())
    if same.size:
        i = int(same[0])
        raise InputError(
            f"{_where(source, i)}: wrong_choice equals correct_choice "
            f"({out['correct_choice'].iloc[i]!r}); a wrong assertion must assert a wrong answer."
        )
    keys = ["model", "dataset", INSTRUCTION_COLUMN, "tier", "ordering", "question_id", "variant"]
    dup = np.flatnonzero(out.duplicated(keys).to_numpy())
    if dup.size:
        i = int(dup[0])
        raise InputError(
            f"{_where(source, i)}: a second row for question {out['question_id'].iloc[i]!r}, "
            f"variant {out['variant'].iloc[i]!r} (tier {out['tier'].iloc[i]!r}); "
            "keep one row per probe."
        )
    out["correct"] = (out["choice"] == out["correct_choice"]).astype(np.int64)
    for col, get in (
        ("user_present", lambda sp: sp.user is not None),
        ("user_correct", lambda sp: bool(sp.user)),
        ("doc_present", lambda sp: sp.doc is not None),
        ("doc_correct", lambda sp: bool(sp.doc)),
    ):
        out[col] = out["variant"].map({v: int(get(sp)) for v, sp in specs.items()})
    # the answer a probe asserts where that is one answer (single or agreeing sources)
    positive = out["variant"].map(
        {v: (sp.user is not False) and (sp.doc is not False) for v, sp in specs.items()}
    )
    out["asserted"] = np.where(positive, out["correct_choice"], out["wrong_choice"])
    if has_p:
        for col in PROB_COLUMNS:
            raw = df[col].astype(str).str.strip()
            num = pd.to_numeric(raw.where(raw != "", None), errors="coerce")
            bad = np.flatnonzero((raw != "").to_numpy() & num.isna().to_numpy())
            if bad.size:
                i = int(bad[0])
                raise InputError(f"{_where(source, i)}: {col} {raw.iloc[i]!r} is not a number.")
            out[col] = num.astype(np.float64)
        p = out[list(PROB_COLUMNS)].to_numpy(dtype=np.float64)
        partial = np.isnan(p).any(axis=1) & ~np.isnan(p).all(axis=1)
        outside = ~np.isnan(p).any(axis=1) & (
            (p < -1e-12).any(axis=1)
            | (p > 1 + 1e-12).any(axis=1)
            | (np.abs(p.sum(axis=1) - 1.0) > _SUM_TOL)
        )
        bad_rows = np.flatnonzero(partial | outside)
        if bad_rows.size:
            i = int(bad_rows[0])
            raise InputError(
                f"{_where(source, i)}: p_correct, p_wrong and p_other must be probabilities "
                "that sum to 1 (or all three empty)."
            )
    else:
        for col in PROB_COLUMNS:
            out[col] = np.nan
    return _join_bare(out, source)


def _join_bare(out: pd.DataFrame, source: str) -> pd.DataFrame:
    """Add ``bare_*`` columns: each row's bare answer (same tier, else the tier-less one)."""
    out = out.reset_index(drop=True)
    bare = out[out["variant"] == "bare"]
    keys = ["model", "dataset", INSTRUCTION_COLUMN, "tier", "question_id"]
    b = bare[[*keys, *_BARE_COLS]].rename(columns={c: f"bare_{c}" for c in _BARE_COLS})
    exact = out[keys].merge(b, on=keys, how="left")
    shared = b[b["tier"] == ""].drop(columns="tier")
    fallback = out[["model", "dataset", INSTRUCTION_COLUMN, "question_id"]].merge(
        shared, on=["model", "dataset", INSTRUCTION_COLUMN, "question_id"], how="left"
    )
    found = exact["bare_choice"].notna()
    for c in _BARE_COLS:
        out[f"bare_{c}"] = exact[f"bare_{c}"].where(found, fallback[f"bare_{c}"]).to_numpy()
    lacking = np.flatnonzero(out["bare_choice"].isna().to_numpy())
    if lacking.size:
        i = int(lacking[0])
        raise InputError(
            f"{_where(source, i)}: question {out['question_id'].iloc[i]!r} "
            f"({out['model'].iloc[i]} / {out['dataset'].iloc[i]}, tier "
            f"{out['tier'].iloc[i]!r}) has no bare row; every probe needs its bare answer."
        )
    out["bare_correct"] = out["bare_correct"].astype(np.int64)
    return out
