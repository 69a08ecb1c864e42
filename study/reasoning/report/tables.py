"""Report tables derived from the statistics JSON, written as CSV, Parquet and JSON.

Every table is a pure function of the ``driftlens stats`` JSON (``StudyStats.to_dict()``),
never of a second computation, so the report's tables match ``driftlens stats`` run on the
exported drift table by construction.

Tables (one row per …):

* ``conditions`` — model × metric × condition: n, mean drift, d_rel with its 95% CI, raw and
  BH-adjusted bootstrap p, Cohen's d, letters, MDD, equivalence bound, flags;
* ``tiers`` — model × metric × condition class: the drift tiers (noise / attributes / life
  events); ``mean_drift`` is the row-weighted mean drift of the class (Σ n·mean / Σ n);
* ``validity`` — model × check (specificity and sensitivity per metric, convergent validity);
* ``calibration`` — model × metric × condition: MDD, equivalence bound, null test;
* ``calibration_summary`` — model × metric: noise floor, null test summary, noise shares;
* ``letters`` — model × metric × condition: the compact letter display;
* ``agreement`` — model × metric pair: Spearman ρ and Pearson r of condition means;
* ``condition_means`` — model × condition: mean drift of each metric (the DTW–SRI scatter);
* ``mixed_model`` — model × metric × term: the random-intercept model's fixed effects.

:func:`question_table` (per-question drift by class, with the question text) is the one
table computed from the drift table itself rather than from the statistics.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from study.safe_csv import write_frame_csv

#: Level at which an adjusted p-value counts as detected drift (the stats engine's default).
ALPHA = 0.05
_CLASS_RANK = {k: i for i, k in enumerate(("none", "noise", "attribute", "life_event", "other"))}


@dataclass(frozen=True)
class ReportTables:
    """The report's tables (see the module docstring for their rows)."""

    conditions: pd.DataFrame
    tiers: pd.DataFrame
    validity: pd.DataFrame
    calibration: pd.DataFrame
    calibration_summary: pd.DataFrame
    letters: pd.DataFrame
    agreement: pd.DataFrame
    condition_means: pd.DataFrame
    mixed_model: pd.DataFrame

    def items(self) -> Iterator[tuple[str, pd.DataFrame]]:
        """Yield ``(name, frame)`` for every table, in declaration order."""
        for f in fields(self):
            yield f.name, getattr(self, f.name)


def _f(x: Any) -> float:
    """A JSON number (``None`` for NaN) back to float."""
    return float("nan") if x is None else float(x)


def _sort(df: pd.DataFrame, *extra: str) -> pd.DataFrame:
    if df.empty:
        return df
    key = df["class"].map(lambda k: _CLASS_RANK.get(str(k), len(_CLASS_RANK)))
    df = df.assign(_rank=key).sort_values(["model", *extra, "_rank", "condition"], kind="stable")
    return df.drop(columns="_rank").reset_index(drop=True)


def _conditions(stats: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for model, mres in stats["models"].items():
        for metric, r in mres["metrics"].items():
            for name, c in r["conditions"].items():
                p_adj = _f(c.get("p_adjusted"))
                rows.append(
                    {
                        "model": model,
                        "metric": metric,
                        "condition": name,
                        "class": c["class"],
                        "n": int(c["n"]),
                        "n_questions": int(c.get("n_questions") or 0),
                        "mean": _f(c.get("mean")),
                        "d_rel": _f(c.get("d_rel")),
                        "ci_low": _f(c.get("ci_low")),
                        "ci_high": _f(c.get("ci_high")),
                        "p_value": _f(c.get("p_value")),
                        "p_adjusted": p_adj,
                        "significant": bool(p_adj < ALPHA) if math.isfinite(p_adj) else False,
                        "cohens_d": _f(c.get("cohens_d")),
                        "letters": c.get("letters", ""),
                        "mdd": _f(c.get("mdd")),
                        "mdd_raw": _f(c.get("mdd_raw")),
                        "equivalence_bound": _f(c.get("equivalence_bound")),
                        "flags": "; ".join(c.get("flags", [])),
                    }
                )
    cols = [
        "model", "metric", "condition", "class", "n", "n_questions", "mean", "d_rel", "ci_low",
        "ci_high", "p_value", "p_adjusted", "significant", "cohens_d", "letters", "mdd",
        "mdd_raw", "equivalence_bound", "flags",
    ]  # fmt: skip
    return _sort(pd.DataFrame(rows, columns=cols), "metric")


def _tiers(conditions: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (model, metric, klass), g in conditions.groupby(["model", "metric", "class"], sort=False):
        n = int(g["n"].sum())
        d = g["d_rel"].dropna()
        rows.append(
            {
                "model": model,
                "metric": metric,
                "class": klass,
                "conditions": len(g),
                "n": n,
                # Σ n·mean / Σ n is the mean over the class's rows, the tier's drift level.
                "mean_drift": float((g["n"] * g["mean"]).sum() / n) if n else float("nan"),
                "mean_d_rel": float(d.mean()) if len(d) else float("nan"),
                "min_d_rel": float(d.min()) if len(d) else float("nan"),
                "max_d_rel": float(d.max()) if len(d) else float("nan"),
                "above_floor": int((g["significant"] & (g["d_rel"] > 0)).sum()),
            }
        )
    cols = [
        "model", "metric", "class", "conditions", "n", "mean_drift", "mean_d_rel",
        "min_d_rel", "max_d_rel", "above_floor",
    ]  # fmt: skip
    df = pd.DataFrame(rows, columns=cols)
    if df.empty:
        return df
    df = df.assign(_rank=df["class"].map(lambda k: _CLASS_RANK.get(str(k), 99)))
    df = df.sort_values(["model", "metric", "_rank"], kind="stable").drop(columns="_rank")
    return df.reset_index(drop=True)


def _validity(stats: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for model, mres in stats["models"].items():
        for metric, r in mres["metrics"].items():
            for check in ("specificity", "sensitivity"):
                v = r["validity"][check]
                rows.append(
                    {
                        "model": model,
                        "metric": metric,
                        "check": check,
                        "passed": v["passed"],
                        "detail": v["detail"],
                        "failing": "; ".join(v.get("failing", [])),
                    }
                )
        conv = mres["convergent_validity"]
        rows.append(
            {
                "model": model,
                "metric": "+".join(mres["metrics"]),
                "check": "convergent",
                "passed": conv["passed"],
                "detail": conv["detail"],
                "failing": "",
            }
        )
    return pd.DataFrame(rows, columns=["model", "metric", "check", "passed", "detail", "failing"])


def _calibration(stats: dict[str, Any], conditions: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for model, mres in stats["models"].items():
        for metric, r in mres["metrics"].items():
            null = r["null_test"]["conditions"] if r["null_test"]["available"] else {}
            for name, c in r["conditions"].items():
                nt = null.get(name, {})
                rows.append(
                    {
                        "model": model,
                        "metric": metric,
                        "condition": name,
                        "class": c["class"],
                        "mdd": _f(c.get("mdd")),
                        "mdd_raw": _f(c.get("mdd_raw")),
                        "equivalence_bound": _f(c.get("equivalence_bound")),
                        "null_mean": _f(nt.get("mean")),
                        "null_ci_low": _f(nt.get("ci_low")),
                        "null_ci_high": _f(nt.get("ci_high")),
                        "null_n_questions": int(nt.get("n_questions") or 0),
                        "null_excludes_zero": bool(nt.get("excludes_zero", False)),
                    }
                )
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    detected = conditions.set_index(["model", "metric", "condition"])["significant"]
    df.insert(
        4,
        "detected",
        [
            bool(detected.get((m, k, c), False))
            for m, k, c in zip(df["model"], df["metric"], df["condition"], strict=True)
        ],
    )
    return _sort(df, "metric")


def _calibration_summary(stats: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for model, mres in stats["models"].items():
        for metric, r in mres["metrics"].items():
            nt = r["null_test"]
            share = (r.get("noise_decomposition") or {}).get("share", {})
            rows.append(
                {
                    "model": model,
                    "metric": metric,
                    "noise_mean": _f(r["noise_floor"]["mean"]),
                    "noise_sd": _f(r["noise_floor"]["sd"]),
                    "null_available": bool(nt["available"]),
                    "null_note": nt.get("reason", ""),
                    "null_mean_difference": _f(nt.get("mean_difference")),
                    "null_fraction_excluding_zero": _f(nt.get("fraction_excluding_zero")),
                    "share_between_question": _f(share.get("between_question")),
                    "share_question_condition": _f(share.get("question_condition")),
                    "share_model": _f(share.get("model")),
                    "share_labeler": _f(share.get("labeler")),
                    "notes": "; ".join(r.get("flags", [])),
                }
            )
    return pd.DataFrame(rows)


def _letters(conditions: pd.DataFrame) -> pd.DataFrame:
    cols = ["model", "metric", "condition", "class", "mean", "letters"]
    if conditions.empty:
        return pd.DataFrame(columns=cols)
    df = conditions[cols].sort_values(
        ["model", "metric", "mean"], ascending=[True, True, False], kind="stable"
    )
    return df.reset_index(drop=True)


def _agreement(stats: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for model, mres in stats["models"].items():
        conv = mres["convergent_validity"]
        for pair, v in (conv.get("pairs") or {}).items():
            a, _, b = pair.partition("~")
            rows.append(
                {
                    "model": model,
                    "metric_a": a,
                    "metric_b": b,
                    "spearman": _f(v["spearman"]),
                    "pearson": _f(v["pearson"]),
                    "passed": conv["passed"],
                    "detail": conv["detail"],
                }
            )
    return pd.DataFrame(
        rows, columns=["model", "metric_a", "metric_b", "spearman", "pearson", "passed", "detail"]
    )


def _condition_means(conditions: pd.DataFrame) -> pd.DataFrame:
    if conditions.empty:
        return pd.DataFrame(columns=["model", "condition", "class"])
    wide = conditions.pivot_table(
        index=["model", "condition", "class"], columns="metric", values="mean", aggfunc="first"
    )
    wide.columns = [str(c) for c in wide.columns]
    return _sort(wide.reset_index())


def _mixed_model(stats: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for model, mres in stats["models"].items():
        for metric, r in mres["metrics"].items():
            mm = r["mixed_model"]
            if "error" in mm:
                rows.append(
                    {"model": model, "metric": metric, "term": "(not fitted)", "note": mm["error"]}
                )
                continue
            common = {
                "model": model,
                "metric": metric,
                "reference": mm["reference"],
                "var_question": _f(mm["var_question"]),
                "var_residual": _f(mm["var_residual"]),
                "icc": _f(mm["icc"]),
            }
            rows.append(
                {
                    **common,
                    "term": "(intercept)",
                    "estimate": _f(mm["intercept"]),
                    "se": _f(mm["intercept_se"]),
                    "note": "",
                }
            )
            for term, fe in mm["fixed"].items():
                rows.append(
                    {
                        **common,
                        "term": term,
                        "estimate": _f(fe["estimate"]),
                        "se": _f(fe["se"]),
                        "note": "",
                    }
                )
    cols = [
        "model",
        "metric",
        "reference",
        "term",
        "estimate",
        "se",
        "var_question",
        "var_residual",
        "icc",
        "note",
    ]
    return pd.DataFrame(rows, columns=cols)


#: Columns of a conclusion (a significance, a letter, an equivalence, a flag), withheld
#: from a study that is not assessable.
CONCLUSION_COLUMNS: tuple[str, ...] = (
    "p",
    "p_adjusted",
    "significant",
    "letters",
    "flags",
    "equivalence_bound",
    "null_excludes_zero",
)


def withhold_conclusions(tables: ReportTables) -> ReportTables:
    """The tables of a study that is not assessable (study/assessable.py): no tier,
    validity verdict or letter, and no significance or equivalence in any other table;
    the measured means and intervals stay for reading."""

    def blank(df: pd.DataFrame) -> pd.DataFrame:
        out = df.copy()
        for c in CONCLUSION_COLUMNS:
            if c in out:
                out[c] = None
        return out

    return ReportTables(
        conditions=blank(tables.conditions),
        tiers=tables.tiers.iloc[:0],
        validity=tables.validity.iloc[:0],
        calibration=blank(tables.calibration),
        calibration_summary=blank(tables.calibration_summary),
        letters=tables.letters.iloc[:0],
        agreement=tables.agreement,
        condition_means=tables.condition_means,
        mixed_model=blank(tables.mixed_model),
    )


def build_tables(stats: dict[str, Any]) -> ReportTables:
    """Derive every report table from the statistics JSON.

    Args:
        stats: ``StudyStats.to_dict()`` (the ``driftlens stats --json`` content).

    Returns:
        The report tables.
    """
    conditions = _conditions(stats)
    return ReportTables(
        conditions=conditions,
        tiers=_tiers(conditions),
        validity=_validity(stats),
        calibration=_calibration(stats, conditions),
        calibration_summary=_calibration_summary(stats),
        letters=_letters(conditions),
        agreement=_agreement(stats),
        condition_means=_condition_means(conditions),
        mixed_model=_mixed_model(stats),
    )


def write_frames(frames: dict[str, pd.DataFrame], folder: Path) -> dict[str, list[Path]]:
    """Write each frame as ``NAME.csv``, ``NAME.parquet`` and ``NAME.json`` into ``folder``.

    JSON is a list of records with NaN written as ``null``.

    Returns:
        Frame name → the three written paths.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[Path]] = {}
    for name, df in frames.items():
        csv, parquet, js = (folder / f"{name}.{ext}" for ext in ("csv", "parquet", "json"))
        write_frame_csv(df, csv)
        df.to_parquet(parquet, index=False)
        js.write_text(df.to_json(orient="records", indent=2, double_precision=15) + "\n")
        written[name] = [csv, parquet, js]
    return written


def write_tables(tables: ReportTables, folder: Path) -> dict[str, list[Path]]:
    """Write every report table (see :func:`write_frames`) into ``folder``."""
    return write_frames(dict(tables.items()), folder)


def question_table(drift: pd.DataFrame, texts: dict[str, str]) -> pd.DataFrame:
    """Per-question mean drift by condition class and metric (from the drift table).

    Args:
        drift: the ``drift.csv`` rows (``question_id``, ``condition_class``, metric columns).
        texts: question id → question text (untrusted; renderers escape it).

    Returns:
        One row per question: ``question_id``, ``question``, ``pairs`` and one
        ``METRIC_CLASS`` column per metric and class (e.g. ``dtw_life_event``).
    """
    metrics = [c for c in drift.columns if c in ("dtw", "sri")] or [
        c
        for c in drift.columns
        if c not in ("model", "question_id", "condition", "condition_class", "sample")
        and not str(c).startswith("n_")
        and pd.api.types.is_numeric_dtype(drift[c])
    ]
    if drift.empty:
        return pd.DataFrame(columns=["question_id", "question", "pairs"])
    keys = drift["question_id"].astype(str)
    means = drift.assign(question_id=keys).pivot_table(
        index="question_id", columns="condition_class", values=metrics, aggfunc="mean"
    )
    classes = sorted(
        {str(k) for k in drift["condition_class"]},
        key=lambda k: _CLASS_RANK.get(k, len(_CLASS_RANK)),
    )
    out = pd.DataFrame(index=means.index)
    for m in metrics:
        for k in classes:
            if (m, k) in means.columns:
                out[f"{m}_{k}"] = means[(m, k)]
    out.insert(0, "pairs", keys.value_counts().reindex(out.index).fillna(0).astype(int))
    out.insert(0, "question", [texts.get(q, "") for q in out.index])
    return out.reset_index().sort_values("question_id", kind="stable").reset_index(drop=True)
