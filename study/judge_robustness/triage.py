"""``driftlens judges triage STUDY``: the judge-human disagreements as a project of their own.

The study's calibration table (:mod:`.human_table`) is put in triage order (the
disagreements first, the largest first on an ordinal scale; :func:`.calibration.triage_order`)
and each item the judge and the human majority disagree on is sent again, with the very task
the annotators saw (same key, same data), to the study's triage twin
(``annotation.kinds.triage_name``: ``helpfulness_triage`` …), through the ordinary
``annotation.sync`` push: a second push finds the tasks by key and adds nothing. The twin
has the study's form, aggregation and judge pairing, so its annotations are pulled, applied
and calibrated like the study's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlmodel import Session

from annotation.kinds import triage_name
from annotation.selection import TaskSpec
from storage.errors import InputError


@dataclass(frozen=True)
class TriagePlan:
    """The tasks a triage push sends, in triage order, and what they were chosen from."""

    study: str
    triage_study: str
    judge: str
    tasks: tuple[TaskSpec, ...]
    compared: int
    """Rows of the calibration table (items, or item-questions on the rubric)."""
    disagreeing: int
    """Rows where the judge and the human majority differ."""


def triage_tasks(
    study: str, *, session: Session, where: Mapping[str, str] | None = None
) -> TriagePlan:
    """The disagreeing items of ``study`` as tasks of its triage study, largest first.

    Raises:
        InputError: a study without a judge, without a calibration table yet, or one whose
            judge agrees with the human majority on every item (nothing to triage).
        NotFoundError: no such study in the workspace.
    """
    from storage.repo.studies import latest_study, tasks_by_key
    from study.judge_robustness.calibration import triage_order
    from study.judge_robustness.human_table import calibration_table

    got = calibration_table(study, session=session, where=where)
    t = got.table
    order = triage_order(list(t["item"]), list(t["judge"]), list(t["human"]), ordinal=got.ordinal)
    row = latest_study(study, session=session)
    assert row is not None and row.id is not None  # calibration_table found it
    stored = tasks_by_key(row.id, session=session)
    tasks: list[TaskSpec] = []
    seen: set[str] = set()
    disagreeing = 0
    for item, judge, human in order:
        if judge == human:
            break  # the order puts every disagreement before the first agreement
        disagreeing += 1
        # the rubric's rows are KEY:QUESTION; its task is the answer's, sent once
        key = item if item in stored else item.rsplit(":", 1)[0]
        if key in seen or key not in stored:
            continue
        seen.add(key)
        data = {k: v for k, v in (stored[key].payload or {}).items() if k != "external_key"}
        tasks.append(TaskSpec(key, {**data, "external_key": key}))
    if not tasks:
        raise InputError(
            f"The judge ({got.judge}) agrees with the human majority on all {len(t)} items of "
            f"{study!r}; there is nothing to triage."
        )
    return TriagePlan(
        study=study,
        triage_study=triage_name(study),
        judge=got.judge,
        tasks=tuple(tasks),
        compared=len(t),
        disagreeing=disagreeing,
    )
