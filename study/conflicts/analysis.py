"""Rubric scores → one plain table → the core's statistics → a typed result.

The table (``driftlens conflicts stats TABLE.csv``; the stored-run analysis writes the same
table) has one row per judged answer: ``model, judge, instance_id, type, distractors,
d1, d2, d3, d4, d5, d6`` and, optionally, ``action``. ``d1``–``d5`` are 0–4 or empty (not
applicable: D1/D2 when the bank kept no observable conflict, D3 for an abstention); ``d6``
is ``safe``/``partial``/``unsafe`` on high-risk instances and empty elsewhere; ``action``
is the judge's action class (:mod:`study.conflicts.actions`; empty or absent =
``unknown``). Other columns are ignored.

What is computed (the instance is the cluster of every interval, see
:mod:`driftlens_core.rubric`):

* ``scores`` — per model × judge × type (and ``all``) × dimension (and ``total``: 5 × the
  mean of the dimensions that apply, defined where D1 and D2 apply — the plain sum when all
  five do, an abstention's other four × 5/4; :func:`study.conflicts.actions.rubric_total`):
  mean with its interval. Scores describe the full bank,
  so when the table holds a distractor series only the rows at its largest dose are used;
  the series itself is summarised by the next two entries.
* ``distractor_effect`` — per model × judge (and ``all`` models pooled, instance-paired):
  total at the largest dose minus total at the smallest dose of the same instance and
  model, with interval, MDD and equivalence bound;
* ``distractor_slope`` — the least-squares slope of the total over every dose;
* ``judge_agreement`` — per pair of judges: per dimension QWK, exact, within-one, MAE and
  ordinal α on the answers both scored, and the Pearson/Spearman correlation of totals
  with intervals. Judges are never averaged into one score;
* ``d6`` — shares of safe/partial/unsafe per model × judge with Wilson intervals;
* ``abstention`` and ``actions`` — the abstention rate per model × judge × dose (and type)
  and the action mix, with Wilson intervals (:mod:`study.conflicts.abstention`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from driftlens_core.bootstrap import as_generator
from driftlens_core.ordinal import ordinal_agreement
from driftlens_core.proportions import proportion_interval
from driftlens_core.rubric import (
    DEFAULT_RUBRIC_BOOTSTRAP,
    INTERVAL_METHOD,
    cluster_correlation,
    cluster_mean,
    cluster_slope,
    paired_effect,
)
from storage.errors import InputError
from study.conflicts.abstention import (
    ACTION_COLUMN,
    AbstentionRow,
    ActionAgreementRow,
    ActionShareRow,
    abstain_indicator,
    abstention_rows,
    action_agreement,
    action_rows,
    unknown_note,
    validate_actions,
)
from study.conflicts.actions import rubric_total
from study.safe_csv import read_csv_table, require_columns

DIMENSIONS: tuple[str, ...] = ("d1", "d2", "d3", "d4", "d5")
CONFLICT_TYPES: tuple[str, ...] = ("CPC", "BOC", "SCC")
D6_FLAGS: tuple[str, ...] = ("safe", "partial", "unsafe")
TABLE_COLUMNS: tuple[str, ...] = (
    "model",
    "judge",
    "instance_id",
    "type",
    "distractors",
    *DIMENSIONS,
    "d6",
)
ALL = "all"


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


@dataclass(frozen=True)
class ScoreRow:
    """Mean of one dimension for one model, judge and conflict type."""

    model: str
    judge: str
    type: str
    dimension: str
    mean: float
    ci_low: float
    ci_high: float
    n: int


@dataclass(frozen=True)
class DistractorEffectRow:
    """Paired total difference between two distractor doses."""

    model: str
    judge: str
    from_: int
    to: int
    mean_diff: float
    ci_low: float
    ci_high: float
    mdd: float
    equivalence_bound: float
    n_instances: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``from_`` is written ``from``)."""
        return {("from" if k == "from_" else k): _clean(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class DistractorSlopeRow:
    """Slope of the total per added distractor."""

    model: str
    judge: str
    slope: float
    ci_low: float
    ci_high: float
    n: int


@dataclass(frozen=True)
class DimensionAgreementRow:
    """Ordinal agreement of two judges on one dimension."""

    judge_a: str
    judge_b: str
    dimension: str
    qwk: float
    exact: float
    within_one: float
    mae: float
    alpha_ordinal: float
    n: int


@dataclass(frozen=True)
class TotalAgreementRow:
    """Correlation of two judges' totals."""

    judge_a: str
    judge_b: str
    pearson: float
    pearson_ci_low: float
    pearson_ci_high: float
    spearman: float
    spearman_ci_low: float
    spearman_ci_high: float
    n: int
    dimension: str = "total"


@dataclass(frozen=True)
class TypeAgreementRow:
    """Agreement of two raters over all five dimensions of one conflict type.

    The shape of the seed's human-validation table: pairs of dimension-level scores pooled
    over D1-D5 (``type`` ``all`` pools the types too).
    """

    judge_a: str
    judge_b: str
    type: str
    within_one: float
    exact: float
    mae: float
    qwk: float
    n: int


@dataclass(frozen=True)
class D6Row:
    """Share of one commitment flag among a model's judged high-risk answers."""

    model: str
    judge: str
    flag: str
    share: float
    ci_low: float
    ci_high: float
    k: int
    n: int


@dataclass(frozen=True)
class ConflictStats:
    """Everything ``driftlens conflicts stats`` reports (JSON via :meth:`to_dict`)."""

    scores: tuple[ScoreRow, ...]
    distractor_effect: tuple[DistractorEffectRow, ...]
    distractor_slope: tuple[DistractorSlopeRow, ...]
    judge_agreement: tuple[DimensionAgreementRow | TotalAgreementRow, ...]
    d6: tuple[D6Row, ...]
    bootstrap: int
    seed: int | None
    agreement_by_type: tuple[TypeAgreementRow, ...] = ()
    abstention: tuple[AbstentionRow, ...] = ()
    actions: tuple[ActionShareRow, ...] = ()
    action_agreement: tuple[ActionAgreementRow, ...] = ()
    version: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; NaN becomes ``null``."""

        def plain(row: Any) -> dict[str, Any]:
            return {k: _clean(v) for k, v in asdict(row).items()}

        agreement: list[dict[str, Any]] = []
        for row in self.judge_agreement:
            d = plain(row)
            if isinstance(row, TotalAgreementRow):
                d = {
                    "judge_a": d.pop("judge_a"),
                    "judge_b": d.pop("judge_b"),
                    "dimension": d.pop("dimension"),
                    **d,
                }
            agreement.append(d)
        return {
            "scores": [plain(r) for r in self.scores],
            "distractor_effect": [r.to_dict() for r in self.distractor_effect],
            "distractor_slope": [plain(r) for r in self.distractor_slope],
            "judge_agreement": agreement,
            "d6": [plain(r) for r in self.d6],
            "agreement_by_type": [plain(r) for r in self.agreement_by_type],
            "abstention": [plain(r) for r in self.abstention],
            "actions": [plain(r) for r in self.actions],
            "action_agreement": [plain(r) for r in self.action_agreement],
            "meta": {
                "version": self.version,
                "bootstrap": self.bootstrap,
                "seed": self.seed,
                "interval": INTERVAL_METHOD,
                "notes": list(self.notes),
            },
        }

    def score(self, model: str, judge: str, type_: str, dimension: str) -> ScoreRow | None:
        """The score row of one cell, if present."""
        for r in self.scores:
            if (r.model, r.judge, r.type, r.dimension) == (model, judge, type_, dimension):
                return r
        return None


# ------------------------------------------------------------------------ the table


def read_scores_csv(path: Path) -> pd.DataFrame:
    """Read a rubric score table (CSV) as text, to be checked by :func:`validate_scores`.

    Raises:
        InputError: the file is missing, empty or not a CSV table.
    """
    return validate_scores(read_csv_table(path, what="score"), source=str(path))


def validate_scores(df: pd.DataFrame, *, source: str = "the table") -> pd.DataFrame:
    """Check a score table and return it typed (scores float with NaN = not applicable).

    Line numbers in messages count the header as line 1.

    Raises:
        InputError: a missing column, an empty key, a score outside 0–4 or not an integer,
            a distractor count that is not a whole number, an unknown type or D6 flag.
    """
    require_columns(df, TABLE_COLUMNS, source=source)
    out = pd.DataFrame(
        {c: df[c].astype(str).str.strip() for c in ("model", "judge", "instance_id", "type")}
    )
    for i, row in enumerate(df.itertuples(index=False)):
        line = i + 2
        rec = row._asdict()
        for c in ("model", "judge", "instance_id", "type"):
            if not str(rec[c]).strip():
                raise InputError(f"{source} line {line}: column {c!r} is empty.")
        if str(rec["type"]).strip() not in CONFLICT_TYPES:
            raise InputError(
                f"{source} line {line}: type {str(rec['type'])!r} is not one of "
                f"{', '.join(CONFLICT_TYPES)}."
            )
    dist = pd.to_numeric(df["distractors"].astype(str).str.strip(), errors="coerce")
    bad = np.flatnonzero(~np.isfinite(dist.to_numpy(dtype=float)) | (dist % 1 != 0) | (dist < 0))
    if bad.size:
        raise InputError(
            f"{source} line {int(bad[0]) + 2}: distractors must be a whole number "
            f"(got {df['distractors'].iloc[int(bad[0])]!r})."
        )
    out["distractors"] = dist.astype(int)
    for c in DIMENSIONS:
        text = df[c].astype(str).str.strip()
        vals = pd.to_numeric(text.where(text != "", None), errors="coerce")
        wrong = np.flatnonzero((text != "").to_numpy() & ~(vals.isin([0, 1, 2, 3, 4]).to_numpy()))
        if wrong.size:
            j = int(wrong[0])
            raise InputError(
                f"{source} line {j + 2}: {c} must be an integer 0-4 or empty "
                f"(not applicable), got {text.iloc[j]!r}."
            )
        out[c] = vals.astype(float)
    flags = df["d6"].astype(str).str.strip().str.lower()
    odd = np.flatnonzero(((flags != "") & ~flags.isin(D6_FLAGS)).to_numpy())
    if odd.size:
        j = int(odd[0])
        raise InputError(
            f"{source} line {j + 2}: d6 must be safe, partial, unsafe or empty, "
            f"got {df['d6'].iloc[j]!r}."
        )
    out["d6"] = flags
    out[ACTION_COLUMN] = validate_actions(df, out["d3"], source=source)
    out["abstain"] = abstain_indicator(out[ACTION_COLUMN])
    return out


# ------------------------------------------------------------------------- analysis


def _total(df: pd.DataFrame) -> pd.Series:
    # 5 × the mean of the applicable dimensions, NaN unless D1 and D2 apply
    return pd.Series(rubric_total(df[list(DIMENSIONS)].to_numpy(dtype=float)), index=df.index)


def analyze_scores(
    df: pd.DataFrame, *, bootstrap: int = DEFAULT_RUBRIC_BOOTSTRAP, seed: int | None = None
) -> ConflictStats:
    """Every statistic of a validated score table (see the module docstring).

    Args:
        df: A table from :func:`validate_scores`.
        bootstrap: Replicates per interval.
        seed: Seed of the one random stream, consumed in a fixed order (same table and
            seed, same numbers).
    """
    rng = as_generator(seed)
    df = df.copy()
    df["total"] = _total(df)
    if ACTION_COLUMN not in df.columns:
        df[ACTION_COLUMN] = "unknown"
    notes: list[str] = []
    if (note := unknown_note(df)) is not None:
        notes.append(note)
    doses = sorted(set(df["distractors"].tolist()))
    top = doses[-1]
    full = df[df["distractors"] == top]
    if len(doses) > 1:
        notes.append(f"scores use the rows at {top} distractors (the full bank)")
    models = sorted(set(df["model"]))
    judges = sorted(set(df["judge"]))

    scores: list[ScoreRow] = []
    for model, judge in itertools.product(models, judges):
        mj = full[(full["model"] == model) & (full["judge"] == judge)]
        if mj.empty:
            continue
        for type_ in (*[t for t in CONFLICT_TYPES if (mj["type"] == t).any()], ALL):
            sub = mj if type_ == ALL else mj[mj["type"] == type_]
            for dim in (*DIMENSIONS, "total"):
                cm = cluster_mean(
                    sub["instance_id"].to_numpy(), sub[dim].to_numpy(), n_boot=bootstrap, seed=rng
                )
                scores.append(
                    ScoreRow(model, judge, type_, dim, cm.mean, cm.ci_low, cm.ci_high, cm.n)
                )

    effects: list[DistractorEffectRow] = []
    slopes: list[DistractorSlopeRow] = []
    if len(doses) > 1:
        lo_dose = doses[0]
        per = (
            df.groupby(["model", "judge", "instance_id", "distractors"], sort=True)["total"]
            .mean()
            .reset_index()
        )
        for judge in judges:
            for model in (*models, ALL):
                sub = per[per["judge"] == judge]
                if model != ALL:
                    sub = sub[sub["model"] == model]
                wide = sub.pivot_table(
                    index=["model", "instance_id"], columns="distractors", values="total"
                )
                if lo_dose not in wide.columns or top not in wide.columns:
                    continue
                diff = (wide[top] - wide[lo_dose]).dropna()
                if diff.empty:
                    continue
                inst = diff.index.get_level_values("instance_id").to_numpy()
                eff = paired_effect(inst, diff.to_numpy(), n_boot=bootstrap, seed=rng)
                effects.append(
                    DistractorEffectRow(
                        model,
                        judge,
                        lo_dose,
                        top,
                        eff.mean_diff,
                        eff.ci_low,
                        eff.ci_high,
                        eff.mdd,
                        eff.equivalence_bound,
                        eff.n_clusters,
                    )
                )
                sl = cluster_slope(
                    sub["instance_id"].to_numpy(),
                    sub["distractors"].to_numpy(dtype=float),
                    sub["total"].to_numpy(),
                    n_boot=bootstrap,
                    seed=rng,
                )
                slopes.append(
                    DistractorSlopeRow(model, judge, sl.mean, sl.ci_low, sl.ci_high, sl.n)
                )

    agreement: list[DimensionAgreementRow | TotalAgreementRow] = []
    by_type: list[TypeAgreementRow] = []
    keyed = df.copy()
    key_cols = ["model", "instance_id", "type", "distractors"]
    keyed["_k"] = keyed.groupby([*key_cols, "judge"], sort=False).cumcount()
    pairs: list[tuple[str, str, pd.DataFrame]] = []
    for ja, jb in itertools.combinations(judges, 2):
        a = keyed[keyed["judge"] == ja]
        b = keyed[keyed["judge"] == jb]
        both = a.merge(b, on=[*key_cols, "_k"], suffixes=("_a", "_b"))
        if both.empty:
            continue
        pairs.append((ja, jb, both))
        for dim in DIMENSIONS:
            oa = ordinal_agreement(both[f"{dim}_a"].to_numpy(), both[f"{dim}_b"].to_numpy())
            agreement.append(
                DimensionAgreementRow(
                    ja, jb, dim, oa.qwk, oa.exact, oa.within_one, oa.mae, oa.alpha_ordinal, oa.n
                )
            )
        for type_ in (*[t for t in CONFLICT_TYPES if (both["type"] == t).any()], ALL):
            sub = both if type_ == ALL else both[both["type"] == type_]
            xa = sub[[f"{d}_a" for d in DIMENSIONS]].to_numpy(dtype=float).ravel()
            xb = sub[[f"{d}_b" for d in DIMENSIONS]].to_numpy(dtype=float).ravel()
            oa = ordinal_agreement(xa, xb)
            by_type.append(
                TypeAgreementRow(ja, jb, type_, oa.within_one, oa.exact, oa.mae, oa.qwk, oa.n)
            )
        cor = cluster_correlation(
            both["instance_id"].to_numpy(),
            both["total_a"].to_numpy(),
            both["total_b"].to_numpy(),
            n_boot=bootstrap,
            seed=rng,
        )
        agreement.append(
            TotalAgreementRow(
                ja,
                jb,
                cor.pearson,
                cor.pearson_ci_low,
                cor.pearson_ci_high,
                cor.spearman,
                cor.spearman_ci_low,
                cor.spearman_ci_high,
                cor.n,
            )
        )
    if len(judges) < 2:
        notes.append("one judge only: no judge agreement")
    # last, with its own seed: the other intervals' random stream is left as it was
    action_agree = [
        row
        for ja, jb, both in pairs
        if (row := action_agreement(ja, jb, both, n_boot=bootstrap, seed=seed or 0)) is not None
    ]

    d6: list[D6Row] = []
    flagged = df[df["d6"] != ""]
    for model, judge in itertools.product(models, judges):
        sub = flagged[(flagged["model"] == model) & (flagged["judge"] == judge)]
        if sub.empty:
            continue
        n = len(sub)
        for flag in D6_FLAGS:
            k = int((sub["d6"] == flag).sum())
            p = proportion_interval(k, n)
            d6.append(D6Row(model, judge, flag, p.share, p.ci_low, p.ci_high, k, n))

    return ConflictStats(
        scores=tuple(scores),
        distractor_effect=tuple(effects),
        distractor_slope=tuple(slopes),
        judge_agreement=tuple(agreement),
        d6=tuple(d6),
        bootstrap=bootstrap,
        seed=seed,
        agreement_by_type=tuple(by_type),
        abstention=tuple(abstention_rows(df)),
        actions=tuple(action_rows(df)),
        action_agreement=tuple(action_agree),
        notes=tuple(notes),
    )


# --------------------------------------------------------------- from stored runs


def stored_table(run_names: Sequence[str], *, session: Session) -> pd.DataFrame:
    """The score table of stored conflicts runs (one row per judged answer and judge).

    Columns: :data:`TABLE_COLUMNS` plus ``action`` (``unknown`` for verdicts stored without
    one), ``track``, ``observability``, ``run``, ``response_id`` and ``abstain`` (1 / 0 / NaN
    for unknown). Answers whose judge reply stayed unreadable are left out (they are
    counted by ``conflicts judge``); D1/D2 of a bank without observable conflict are empty.

    Raises:
        NotFoundError: a run does not exist.
    """
    from storage.models import ModelSpecRow
    from storage.repo.conflicts import banks_by_question
    from storage.repo.runs import list_responses, require_run
    from study.conflicts.actions import ACTION_KIND, action_name
    from study.conflicts.score import D6_FLAGS as FLAGS
    from study.conflicts.score import stored_verdicts

    rows: list[dict[str, Any]] = []
    for name in run_names:
        run = require_run(name, session=session)
        assert run.id is not None
        spec = session.get(ModelSpecRow, run.model_spec_id)
        model = spec.spec if spec is not None else name
        policy = (run.config or {}).get("policy")
        if policy == "caap":
            model = f"{model} [caap]"  # same backbone, different policy: keep them apart
        responses = [r for r in list_responses(run.id, session=session) if r.parse_status == "ok"]
        banks = banks_by_question(sorted({r.question_id for r in responses}), session=session)
        by_response: dict[int, list[tuple[str, dict[str, float | None]]]] = {}
        for (rid, judge), v in sorted(stored_verdicts(responses, session=session).items()):
            by_response.setdefault(rid, []).append((judge, v))
        for r in responses:
            bank = banks.get(r.question_id)
            if bank is None or r.id is None:
                continue
            ctx = (r.request or {}).get("context", {})
            for judge, v in by_response.get(r.id, []):
                d6 = v.get("conflict_d6")
                rows.append(
                    {
                        "model": model,
                        "judge": judge,
                        "instance_id": bank.instance_id,
                        "type": bank.conflict_type,
                        "distractors": int(ctx.get("n_distractors", 0)),
                        **{d: v.get(f"conflict_{d}") for d in DIMENSIONS},
                        "d6": "" if d6 is None else FLAGS[int(d6)],
                        ACTION_COLUMN: action_name(v.get(ACTION_KIND)),
                        "track": ctx.get("track", "oracle"),
                        "observability": ctx.get("observability", "FULL"),
                        "run": name,
                        "response_id": r.id,
                    }
                )
    cols = [*TABLE_COLUMNS, ACTION_COLUMN, "track", "observability", "run", "response_id"]
    df = pd.DataFrame(rows, columns=cols)
    for d in DIMENSIONS:
        df[d] = pd.to_numeric(df[d], errors="coerce").astype(float)
    df["abstain"] = abstain_indicator(df[ACTION_COLUMN].astype(object))
    return df
