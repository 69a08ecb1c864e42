"""``driftlens judges calibration TABLE.csv``: a judge against the human majority.

The table has one row per item with the judge's label and the human majority label (the
columns are named on the command line; an ``item`` column names the item). The statistics
are :func:`driftlens_core.judge_calibration.judge_calibration`; the *triage* list puts the
disagreements first, the largest on an ordinal scale first, for a human to look at again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from driftlens_core.judge_calibration import JudgeCalibration, judge_calibration
from storage.errors import InputError
from study.safe_csv import unguard_frame


@dataclass(frozen=True)
class CalibrationRun:
    """The statistics and the triage order (item ids, disagreements first)."""

    result: JudgeCalibration
    triage: tuple[tuple[str, str, str], ...]  # (item, judge label, human label)


def _level(text: str, ordinal: bool) -> str | float:
    return float(text) if ordinal else text


def calibrate_table(
    path: Path,
    *,
    judge_col: str,
    human_col: str,
    item_col: str = "item",
    levels: Sequence[str],
    ordinal: bool,
    bootstrap: int,
    seed: int,
) -> CalibrationRun:
    """Read ``path`` and calibrate (see the module docstring).

    Raises:
        InputError: a missing file or column, or a label off the scale (file and line).
    """
    if not path.exists():
        raise InputError(f"File not found: {path}")
    try:
        df = unguard_frame(pd.read_csv(path, dtype=str, keep_default_na=False))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not a readable CSV table ({type(exc).__name__})") from None
    for col in (item_col, judge_col, human_col):
        if col not in df.columns:
            raise InputError(f"{path}: no column {col!r} (columns: {', '.join(df.columns)})")
    if not levels:
        raise InputError("Give the scale with --levels (e.g. 0,1,2,3,4 or yes,no).")
    try:
        scale = [_level(v, ordinal) for v in levels]
    except ValueError:
        raise InputError("An ordinal scale needs numeric --levels.") from None
    judge, human = [], []
    for i, (jv, hv) in enumerate(zip(df[judge_col], df[human_col], strict=True)):
        for v in (jv, hv):
            try:
                ok = _level(v.strip(), ordinal) in scale
            except ValueError:
                ok = False
            if not ok:
                raise InputError(f"{path}, line {i + 2}: {v!r} is not on the scale {levels}.")
        judge.append(_level(jv.strip(), ordinal))
        human.append(_level(hv.strip(), ordinal))
    if not judge:
        raise InputError(f"{path} has no rows.")
    return calibrate_rows(
        list(df[item_col]), judge, human, levels=scale, ordinal=ordinal, bootstrap=bootstrap,
        seed=seed,
    )  # fmt: skip


def calibrate_rows(
    items: Sequence[str],
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    levels: Sequence[Any],
    ordinal: bool,
    bootstrap: int,
    seed: int,
) -> CalibrationRun:
    """The statistics and the triage order of labels already on the scale ``levels``."""
    result = judge_calibration(
        list(judge), list(human), levels=list(levels), ordinal=ordinal, n_boot=bootstrap,
        seed=seed,
    )  # fmt: skip
    return CalibrationRun(result=result, triage=triage_order(items, judge, human, ordinal=ordinal))


def label_gap(judge: object, human: object, *, ordinal: bool) -> float:
    """How far apart two labels are: 0 when equal, the distance on an ordinal scale, else 1."""
    if judge == human:
        return 0.0
    return abs(float(judge) - float(human)) if ordinal else 1.0  # type: ignore[arg-type]


def triage_order(
    items: Sequence[str], judge: Sequence[Any], human: Sequence[Any], *, ordinal: bool
) -> tuple[tuple[str, str, str], ...]:
    """Every row, the disagreements first (the largest first on an ordinal scale), then in
    table order."""
    rows = list(zip(items, judge, human, strict=True))
    order = sorted(range(len(rows)), key=lambda i: (-label_gap(*rows[i][1:], ordinal=ordinal), i))
    return tuple((str(rows[i][0]), str(rows[i][1]), str(rows[i][2])) for i in order)


def calibration_lines(run: CalibrationRun, *, show: int = 10) -> list[str]:
    """The summary as plain lines (the CLI prints them; reports can reuse them)."""
    r = run.result
    out = [
        f"{r.n} items; Cohen's kappa {r.kappa:.3f} [{r.kappa_ci[0]:.3f}, {r.kappa_ci[1]:.3f}]"
        + (
            f", weighted kappa {r.weighted_kappa:.3f} "
            f"[{r.weighted_kappa_ci[0]:.3f}, {r.weighted_kappa_ci[1]:.3f}]"
            if r.weighted_kappa is not None and r.weighted_kappa_ci is not None
            else ""
        )
        + f", {'ordinal' if r.ordinal else 'nominal'} alpha {r.alpha:.3f} "
        f"[{r.alpha_ci[0]:.3f}, {r.alpha_ci[1]:.3f}]"
        + (
            f"; judge bias (judge - human) {r.bias:+.3f} [{r.bias_ci[0]:+.3f}, {r.bias_ci[1]:+.3f}]"
            if r.bias is not None and r.bias_ci is not None
            else ""
        )
    ]
    for c in r.classes:
        out.append(
            f"class {c.label}: TPR {c.tpr:.3f} [{c.tpr_ci[0]:.3f}, {c.tpr_ci[1]:.3f}] "
            f"(n {c.n_positive}), TNR {c.tnr:.3f} [{c.tnr_ci[0]:.3f}, {c.tnr_ci[1]:.3f}] "
            f"(n {c.n_negative})"
        )
    out.append(
        "confusion (rows human, columns judge): "
        + " | ".join(" ".join(str(x) for x in row) for row in r.confusion)
    )
    disagree = [t for t in run.triage if t[1] != t[2]]
    out.append(
        f"triage: {len(disagree)} disagreements first: "
        + ", ".join(f"{item} (judge {j}, human {h})" for item, j, h in disagree[:show])
    )
    return out
