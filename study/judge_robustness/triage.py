"""``driftlens judges triage STUDY``: the judge's disagreements as a project of their own.

Two kinds of disagreement enter the queue (:func:`triage_queue`): the judge against the
human majority (the study's calibration table, :mod:`.human_table`) and, where another
judge labelled the same items (the conflicts rubric scored by two judges, a second
classifier or test-awareness judge), the judge against that judge, whether or not the
annotators reached a majority. Both are ordered together, the largest gap first (the
distance on an ordinal scale, 1 on a nominal one). Each item is sent once, with the very
task the annotators saw (same key, same data) and a ``triage_note`` naming every verdict
that put it there, to the study's triage twin (``annotation.kinds.triage_name``:
``helpfulness_triage`` …), through the ordinary ``annotation.sync`` push: a second push
finds the tasks by key and adds nothing. The twin has the study's form (the note shown
above it as plain text), aggregation and judge pairing, so its annotations are pulled,
applied and calibrated like the study's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlmodel import Session

from annotation.kinds import triage_name
from annotation.selection import TaskSpec
from storage.errors import InputError
from study.judge_robustness.calibration import label_gap

#: The ``source`` of a judge-human entry and of a judge-judge one.
JUDGE_HUMAN = "judge-human"
JUDGE_JUDGE = "judge-judge"
HUMANS = "annotators' majority"


@dataclass(frozen=True)
class TriageEntry:
    """One disagreement: an item's judge label against a human majority or another judge."""

    item: str
    gap: float
    source: str
    judge: str
    judge_label: str
    other: str
    other_label: str

    def note(self) -> str:
        """The entry as the triage task shows it (plain text)."""
        gap = f"{self.gap:g}"
        return f"{self.judge} {self.judge_label} vs {self.other} {self.other_label} (gap {gap})"


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
    judge_compared: int = 0
    """Item (question) verdicts another judge gave too (one per other judge)."""
    judge_disagreeing: int = 0
    """Those where the other judge's label differs from the judge's."""


def triage_queue(
    human_rows: Sequence[tuple[str, str, str]],
    judge_pairs: Sequence[tuple[str, str, str, str]],
    *,
    judge: str,
    ordinal: bool,
) -> tuple[TriageEntry, ...]:
    """Every disagreement, the largest gap first; at equal gaps the judge-human ones first,
    each in its table's order.

    Args:
        human_rows: ``(item, judge label, human majority)``.
        judge_pairs: ``(item, judge label, other judge, other judge's label)``.
        judge: the judge under triage.
        ordinal: whether the scale is ordered (the gap is the distance; else 1).
    """
    entries = [
        TriageEntry(item, label_gap(j, h, ordinal=ordinal), JUDGE_HUMAN, judge, j, HUMANS, h)
        for item, j, h in human_rows
    ] + [
        TriageEntry(item, label_gap(j, o, ordinal=ordinal), JUDGE_JUDGE, judge, j, other, o)
        for item, j, other, o in judge_pairs
    ]
    order = sorted(
        range(len(entries)),
        key=lambda i: (-entries[i].gap, entries[i].source != JUDGE_HUMAN, i),
    )
    return tuple(entries[i] for i in order if entries[i].gap > 0)


def _task_key(item: str, stored: Mapping[str, object]) -> tuple[str, str]:
    """The task an item is (the rubric's rows are KEY:QUESTION) and the question, if any."""
    if item in stored:
        return item, ""
    key, _sep, question = item.rpartition(":")
    return key, question


def triage_tasks(
    study: str, *, session: Session, where: Mapping[str, str] | None = None
) -> TriagePlan:
    """The disagreeing items of ``study`` as tasks of its triage study, largest first.

    Raises:
        InputError: a study without a judge, without a calibration table or a second
            judge yet, or one whose judge agrees with the human majority and with every
            other judge on every item (nothing to triage).
        NotFoundError: no such study in the workspace.
    """
    from storage.repo.studies import latest_study, tasks_by_key
    from study.judge_robustness.human_table import study_pairs

    pairs = study_pairs(study, session=session, where=where)
    if not pairs.rows and not pairs.judge_pairs:
        raise InputError(
            f"Study {study!r} has no item with both a human majority and a judge label yet, "
            f"and no item a second judge labelled ({pairs.no_majority} without a majority, "
            f"{pairs.no_judge_label} without a judge label); collect more annotations and "
            "run `driftlens annotate pull`."
        )
    queue = triage_queue(pairs.rows, pairs.judge_pairs, judge=pairs.judge, ordinal=pairs.ordinal)
    row = latest_study(study, session=session)
    assert row is not None and row.id is not None  # study_pairs found it
    stored = tasks_by_key(row.id, session=session)
    notes: dict[str, list[str]] = {}
    for entry in queue:
        key, question = _task_key(entry.item, stored)
        if key in stored:
            notes.setdefault(key, []).append(
                f"{question}: {entry.note()}" if question else entry.note()
            )
    tasks: list[TaskSpec] = []
    for key, lines in notes.items():  # in the queue's order: a task at its largest gap
        data = {k: v for k, v in (stored[key].payload or {}).items() if k != "external_key"}
        data["triage_note"] = "; ".join(lines)
        tasks.append(TaskSpec(key, {**data, "external_key": key}))
    if not tasks:
        raise InputError(
            f"The judge ({pairs.judge}) agrees with the human majority on all "
            f"{len(pairs.rows)} items of {study!r}"
            + (
                f" and with the other judges on all {len(pairs.judge_pairs)}"
                if pairs.judge_pairs
                else ""
            )
            + "; there is nothing to triage."
        )
    return TriagePlan(
        study=study,
        triage_study=triage_name(study),
        judge=pairs.judge,
        tasks=tuple(tasks),
        compared=len(pairs.rows),
        disagreeing=sum(1 for e in queue if e.source == JUDGE_HUMAN),
        judge_compared=len(pairs.judge_pairs),
        judge_disagreeing=sum(1 for e in queue if e.source == JUDGE_JUDGE),
    )
