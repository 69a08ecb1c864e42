"""Abstention as its own behaviour: how often answers ask, check or decline instead of advising.

Each judged answer carries the judge's action class (:mod:`study.conflicts.actions`;
``unknown`` for verdicts stored before the judge reported one). From a validated score
table (:func:`study.conflicts.analysis.validate_scores`) this module computes:

* per model × judge × distractor dose (and per conflict type at the largest dose) the
  **abstention rate** — the share of answers classed clarify, verify or defer among those
  with a known action — with its Wilson 95 % interval, the count and how many answers had
  no action class;
* per model × judge the **action mix** at the largest dose (Wilson intervals).

Answers with an unknown action are left out of both (and counted), so a study judged
before the action class existed reads "not assessed", never a rate of 0.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from driftlens_core.proportions import proportion_interval
from storage.errors import InputError
from study.conflicts.actions import ABSTAIN_ACTIONS, ACTIONS, UNKNOWN

ALL = "all"
#: The optional column of a score table that holds the action class.
ACTION_COLUMN = "action"


@dataclass(frozen=True)
class AbstentionRow:
    """Abstention rate of one model under one judge at one dose (and type)."""

    model: str
    judge: str
    distractors: int
    type: str
    rate: float
    ci_low: float
    ci_high: float
    k: int
    n: int
    unknown: int


@dataclass(frozen=True)
class ActionShareRow:
    """Share of one action class among a model's answers (largest dose) under one judge."""

    model: str
    judge: str
    action: str
    share: float
    ci_low: float
    ci_high: float
    k: int
    n: int


def validate_actions(df: pd.DataFrame, d3: pd.Series, *, source: str) -> pd.Series:
    """The action column of a raw score table, checked (``unknown`` when absent or empty).

    Args:
        df: The raw table (text columns).
        d3: Its D3 scores, already typed (NaN = not applicable).
        source: Where the table came from, for messages.

    Raises:
        InputError: an action outside the set, or a D3 score given for an abstention
            (D3 does not apply to an answer that recommends nothing).
    """
    if ACTION_COLUMN not in df.columns:
        return pd.Series(UNKNOWN, index=df.index, dtype=object)
    acts = df[ACTION_COLUMN].astype(str).str.strip().str.lower().replace("", UNKNOWN)
    known = (*ACTIONS, UNKNOWN)
    odd = np.flatnonzero(~acts.isin(known).to_numpy())
    if odd.size:
        j = int(odd[0])
        raise InputError(
            f"{source} line {j + 2}: action must be one of {', '.join(known)} or empty, "
            f"got {df[ACTION_COLUMN].iloc[j]!r}."
        )
    scored = np.flatnonzero((acts.isin(ABSTAIN_ACTIONS) & d3.notna()).to_numpy())
    if scored.size:
        j = int(scored[0])
        raise InputError(
            f"{source} line {j + 2}: d3 must be empty for a {acts.iloc[j]} answer (an "
            "abstention recommends nothing, so D3 does not apply)."
        )
    return acts


def abstain_indicator(actions: pd.Series) -> pd.Series:
    """1.0 for an abstention, 0.0 for another known action, NaN for ``unknown``."""
    known = actions != UNKNOWN
    return actions.isin(ABSTAIN_ACTIONS).astype(float).where(known, np.nan)


def _rate_row(
    sub: pd.DataFrame, model: str, judge: str, dose: int, type_: str
) -> AbstentionRow | None:
    if sub.empty:
        return None
    flag = abstain_indicator(sub[ACTION_COLUMN])
    n = int(flag.notna().sum())
    k = int((flag == 1.0).sum())
    unknown = len(sub) - n
    if n == 0:
        return AbstentionRow(model, judge, dose, type_, math.nan, math.nan, math.nan, 0, 0, unknown)
    p = proportion_interval(k, n)
    return AbstentionRow(model, judge, dose, type_, p.share, p.ci_low, p.ci_high, k, n, unknown)


def abstention_rows(df: pd.DataFrame) -> list[AbstentionRow]:
    """Abstention rates per model × judge × dose (type ``all``), and per type at the top dose."""
    if df.empty:
        return []
    top = int(df["distractors"].max())
    rows: list[AbstentionRow] = []
    for model, judge in itertools.product(sorted(set(df["model"])), sorted(set(df["judge"]))):
        mj = df[(df["model"] == model) & (df["judge"] == judge)]
        for dose in sorted(set(mj["distractors"].astype(int))):
            at = mj[mj["distractors"] == dose]
            types = [t for t in ("CPC", "BOC", "SCC") if (at["type"] == t).any()]
            for type_ in (*(types if dose == top else ()), ALL):
                sub = at if type_ == ALL else at[at["type"] == type_]
                row = _rate_row(sub, str(model), str(judge), dose, type_)
                if row is not None:
                    rows.append(row)
    return rows


def action_rows(df: pd.DataFrame) -> list[ActionShareRow]:
    """The action mix per model × judge at the largest dose (known actions only)."""
    if df.empty:
        return []
    full = df[df["distractors"] == df["distractors"].max()]
    full = full[full[ACTION_COLUMN] != UNKNOWN]
    rows: list[ActionShareRow] = []
    for (model, judge), sub in full.groupby(["model", "judge"], sort=True):
        n = len(sub)
        for action in ACTIONS:
            k = int((sub[ACTION_COLUMN] == action).sum())
            p = proportion_interval(k, n)
            rows.append(
                ActionShareRow(str(model), str(judge), action, p.share, p.ci_low, p.ci_high, k, n)
            )
    return rows


def unknown_note(df: pd.DataFrame) -> str | None:
    """One sentence when some verdicts carry no action class (``None`` when all do)."""
    if df.empty or ACTION_COLUMN not in df.columns:
        return None
    unknown = int((df[ACTION_COLUMN] == UNKNOWN).sum())
    if unknown == 0:
        return None
    return (
        f"{unknown} of {len(df)} verdicts carry no action class (judged before the rubric "
        "asked for one, conflict-judge-v1, or a table without an action column): their "
        "action is unknown, they are left out of the abstention rates, and their D3 is read "
        "as scored."
    )


@dataclass(frozen=True)
class ActionAgreementRow:
    """How well two judges agree on what the answers did (answers both classed)."""

    judge_a: str
    judge_b: str
    n: int
    exact: float
    kappa: float
    kappa_ci_low: float
    kappa_ci_high: float
    abstain_agreement: float
    abstain_kappa: float


def action_agreement(
    judge_a: str, judge_b: str, both: pd.DataFrame, *, n_boot: int, seed: int
) -> ActionAgreementRow | None:
    """Agreement of two judges on the action class and on abstaining.

    Args:
        judge_a: First judge.
        judge_b: Second judge.
        both: The answers both judged, their columns suffixed ``_a`` / ``_b`` (with
            ``instance_id``, the cluster of the κ interval).
        n_boot: Bootstrap replicates of the κ interval (instances resampled).
        seed: Its seed.

    Returns:
        ``None`` when no answer has a known action under both judges.
    """
    from driftlens_core.agreement import cohens_kappa, kappa_cluster_interval

    a, b = f"{ACTION_COLUMN}_a", f"{ACTION_COLUMN}_b"
    if a not in both.columns or b not in both.columns:
        return None
    known = both[(both[a] != UNKNOWN) & (both[b] != UNKNOWN)]
    if known.empty:
        return None
    xa, xb = known[a].tolist(), known[b].tolist()
    kap = kappa_cluster_interval(xa, xb, known["instance_id"].tolist(), n_boot=n_boot, seed=seed)
    sa = [x in ABSTAIN_ACTIONS for x in xa]
    sb = [x in ABSTAIN_ACTIONS for x in xb]
    return ActionAgreementRow(
        judge_a,
        judge_b,
        len(known),
        float(np.mean([x == y for x, y in zip(xa, xb, strict=True)])),
        kap.kappa,
        kap.ci_low,
        kap.ci_high,
        float(np.mean([x == y for x, y in zip(sa, sb, strict=True)])),
        cohens_kappa(sa, sb),
    )
