"""The calibration table of a Label Studio study: each item's judge label and human majority.

``driftlens judges calibration-table STUDY`` reads a study's stored annotations (pulled
from Label Studio by ``annotate pull`` / ``annotate apply``), aggregates them with the
study's own rules (:func:`annotation.apply.study_aggregate`: the 2-of-3 majority, fast and
cancelled annotations dropped) and pairs every item that has a human majority with the
label the judge gave it, read back from the workspace (annotators never saw it). The
table is what ``driftlens judges calibration`` reads (``item``, ``judge``, ``human``
columns), with the full scale to pass as ``--levels``.

Covered: ``disposition_check`` (the category classifier). Items without a human majority
or without a stored judge label are counted, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlmodel import Session

from storage.errors import InputError

COVERED = ("disposition_check",)


@dataclass(frozen=True)
class HumanTable:
    """Judge vs human majority per item, and what was left out."""

    study: str
    judge: str
    table: pd.DataFrame  # item, judge, human
    levels: tuple[str, ...]
    ordinal: bool
    no_majority: int
    no_judge_label: int


def calibration_table(
    study: str, *, session: Session, disposition_study: str | None = None
) -> HumanTable:
    """The study's calibration table (see the module docstring).

    ``disposition_study`` keeps the items of one disposition study only (a
    ``disposition_check`` project may hold several).

    Raises:
        InputError: a study this does not cover, or one without any item that has both a
            human majority and a judge label.
        NotFoundError: no such study in the workspace.
    """
    if study not in COVERED:
        raise InputError(
            f"A calibration table from Label Studio covers {', '.join(COVERED)} so far, not "
            f"{study!r}; export a table yourself and run `driftlens judges calibration`."
        )
    from annotation.apply import study_aggregate
    from study.disposition.human.kinds import _disposition_key, classifier_labels

    _study, agg = study_aggregate(study, session=session)
    machine = classifier_labels(agg, session=session)
    rows: list[dict[str, str]] = []
    levels: list[str] = []
    judges: set[str] = set()
    no_majority = no_judge = 0
    items = [
        it
        for it in agg.items
        if disposition_study is None or it.payload.get("study") == disposition_study
    ]
    for it in items:
        for c in it.payload.get("categories") or []:
            value = str(c.get("value", "")) if isinstance(c, dict) else str(c)
            if value and value not in levels:
                levels.append(value)
        o = it.outcome("category")
        if o is None or o.label is None:
            no_majority += 1
            continue
        label = machine.get(_disposition_key(it.payload))
        if label is None:
            no_judge += 1
            continue
        judges.add(str(it.payload.get("judge") or ""))
        rows.append({"item": it.key, "judge": label, "human": o.label})
    if not rows:
        raise InputError(
            f"Study {study!r} has no item with both a human majority and a judge label yet "
            f"({no_majority} without a majority, {no_judge} without a judge label); "
            "collect more annotations and run `driftlens annotate pull`."
        )
    for r in rows:  # a label outside the tasks' choices still belongs on the scale
        for v in (r["judge"], r["human"]):
            if v not in levels:
                levels.append(v)
    return HumanTable(
        study=study,
        judge=", ".join(sorted(judges)),
        table=pd.DataFrame(rows, columns=["item", "judge", "human"]),
        levels=tuple(levels),
        ordinal=False,
        no_majority=no_majority,
        no_judge_label=no_judge,
    )
