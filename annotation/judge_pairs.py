"""A study's judge verdicts beside its human majority: the hook each study kind gives.

``driftlens judges calibration-table STUDY`` needs, for every item of a pulled study, the
label the instrument's judge gave it and the label its annotators' majority gave it. Only
the instrument knows where its judge's verdict is stored (a disposition score, a judge
score of a response, the step label a labeler assigned), so each study kind registers a
:data:`CalibrationHook` (``annotation.kinds.register_kinds(calibrate=...)``); the table,
its counts and its scale are built here, once, by :func:`pair_with_majority` (the
response studies read their judge scores through
:func:`annotation.tasks.response_judge_labels`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlmodel import Session

from annotation.aggregate import ItemOutcome, StudyAggregate


@dataclass(frozen=True)
class CalibrationPairs:
    """The judge's label and the human majority of each item that has both.

    Attributes:
        rows: ``(item, judge label, human label)``; an item of a study with several
            judged questions (the rubric's D1-D5) is ``KEY:QUESTION``.
        levels: the whole scale, in order (labels met off the scale are appended).
        ordinal: whether the scale is ordered (weighted kappa, ordinal alpha, bias).
        judge: the judge (or judges) whose labels the rows hold.
        no_majority: items (questions) without a human majority, left out.
        no_judge_label: items (questions) with a majority but no stored judge label.
    """

    rows: tuple[tuple[str, str, str], ...]
    levels: tuple[str, ...]
    ordinal: bool
    judge: str
    no_majority: int
    no_judge_label: int


#: ``(aggregate, session) -> pairs``: what a study kind registers to be calibrated.
CalibrationHook = Callable[[StudyAggregate, Session], CalibrationPairs]

#: ``(item, question) -> label``, or ``None`` when there is none.
LabelOf = Callable[[ItemOutcome, str], str | None]


def majority_label(item: ItemOutcome, question: str) -> str | None:
    """The question's 2-of-3 (or study-configured) majority label, ``None`` without one."""
    o = item.outcome(question)
    return None if o is None else o.label


def pair_with_majority(
    agg: StudyAggregate,
    questions: Sequence[str],
    judge_of: LabelOf,
    *,
    levels: Sequence[str],
    ordinal: bool,
    judge: str,
    human_of: LabelOf = majority_label,
) -> CalibrationPairs:
    """Pair each item's judge label with its human label, counting what is left out.

    Args:
        agg: the study's aggregate (the items to pair).
        questions: the judged questions; with more than one the item is ``KEY:QUESTION``.
        judge_of: the judge's stored label of an item's question.
        levels: the scale in order.
        ordinal: whether the scale is ordered.
        judge: the judge's name for the table's header line.
        human_of: the humans' label (default: the question's majority label).
    """
    rows: list[tuple[str, str, str]] = []
    scale = [str(v) for v in levels]
    no_majority = no_judge = 0
    for it in agg.items:
        for q in questions:
            human = human_of(it, q)
            if human is None:
                no_majority += 1
                continue
            label = judge_of(it, q)
            if label is None:
                no_judge += 1
                continue
            item = it.key if len(questions) == 1 else f"{it.key}:{q}"
            rows.append((item, label, human))
            for v in (label, human):  # a label outside the tasks' choices stays on the scale
                if v not in scale:
                    scale.append(v)
    return CalibrationPairs(
        rows=tuple(rows),
        levels=tuple(scale),
        ordinal=ordinal,
        judge=judge,
        no_majority=no_majority,
        no_judge_label=no_judge,
    )


def score_label(value: float | None) -> str | None:
    """A stored integer score as a scale label (``3.0`` -> ``"3"``), ``None`` when unset."""
    if value is None or value != value:  # NaN: an unparsed verdict
        return None
    return str(round(value))
