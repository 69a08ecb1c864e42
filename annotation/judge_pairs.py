"""A study's judge verdicts beside its human majority: the hook each study kind gives.

``driftlens judges calibration-table STUDY`` needs, for every item of a pulled study, the
label the instrument's judge gave it and the label its annotators' majority gave it. Only
the instrument knows where its judge's verdict is stored (a disposition score, a judge
score of a response, the step label a labeler assigned), so each study kind registers a
:data:`CalibrationHook` (``annotation.kinds.register_kinds(calibrate=...)``); the table,
its counts and its scale are built here, once, by :func:`pair_with_majority` (the
response studies read their judge scores through
:func:`annotation.tasks.pair_response_scores`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

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
        judge_pairs: ``(item, judge label, other judge, other judge's label)`` of every
            item (question) that another judge labelled too, with or without a human
            majority, agreeing or not (the triage's judge-judge disagreements).
        judged: ``(item, judge label)`` of every item (question) the judge labelled, with
            or without a human majority.
        votes: ``(item, annotator, label)`` of every kept human vote on those items (the
            alternative annotator test's input: it needs each annotator, not the majority).
    """

    rows: tuple[tuple[str, str, str], ...]
    levels: tuple[str, ...]
    ordinal: bool
    judge: str
    no_majority: int
    no_judge_label: int
    judge_pairs: tuple[tuple[str, str, str, str], ...] = ()
    judged: tuple[tuple[str, str], ...] = ()
    votes: tuple[tuple[str, str, str], ...] = ()


#: ``(aggregate, session) -> pairs``: what a study kind registers to be calibrated.
CalibrationHook = Callable[[StudyAggregate, Session], CalibrationPairs]

#: ``(item, question) -> label``, or ``None`` when there is none.
LabelOf = Callable[[ItemOutcome, str], str | None]

K = TypeVar("K")


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
    others: Mapping[str, LabelOf] | None = None,
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
        others: the other judges that labelled the same items, by name (the primary
            ``judge`` left out): each one's label of an item's question.
    """
    rows: list[tuple[str, str, str]] = []
    pairs: list[tuple[str, str, str, str]] = []
    judged: list[tuple[str, str]] = []
    votes: list[tuple[str, str, str]] = []
    scale = [str(v) for v in levels]
    no_majority = no_judge = 0
    for it in agg.items:
        for q in questions:
            item = it.key if len(questions) == 1 else f"{it.key}:{q}"
            label = judge_of(it, q)
            for name, other_of in sorted((others or {}).items()):
                other = other_of(it, q) if name != judge else None
                if label is not None and other is not None:
                    pairs.append((item, label, name, other))
            if label is not None:
                judged.append((item, label))
                o = it.outcome(q)
                votes.extend((item, a, v) for a, v in (o.votes if o is not None else ()))
            human = human_of(it, q)
            if human is None:
                no_majority += 1
                continue
            if label is None:
                no_judge += 1
                continue
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
        judge_pairs=tuple(pairs),
        judged=tuple(judged),
        votes=tuple(votes),
    )


def pair_judges_with_majority(
    agg: StudyAggregate,
    questions: Sequence[str],
    by_judge: Mapping[str, Mapping[K, str]],
    key_of: Callable[[ItemOutcome, str], K],
    *,
    levels: Sequence[str],
    ordinal: bool,
) -> CalibrationPairs:
    """:func:`pair_with_majority` of judges' stored labels: the first judge by name is the
    table's (pooling judges would mix settings), the others give its judge-judge pairs.

    Args:
        agg: the study's aggregate.
        questions: the judged questions.
        by_judge: each judge's labels, by the key :func:`key_of` gives an item's question.
        key_of: an item's question's key in ``by_judge``'s maps.
        levels: the scale in order.
        ordinal: whether the scale is ordered.
    """

    def label_of(judge: str) -> LabelOf:
        labels = by_judge.get(judge, {})
        return lambda it, q: labels.get(key_of(it, q))

    first = min(by_judge, default="")
    return pair_with_majority(
        agg,
        questions,
        label_of(first),
        levels=levels,
        ordinal=ordinal,
        judge=first,
        others={j: label_of(j) for j in by_judge if j != first},
    )


def score_label(value: float | None) -> str | None:
    """A stored integer score as a scale label (``3.0`` -> ``"3"``), ``None`` when unset."""
    if value is None or value != value:  # NaN: an unparsed verdict
        return None
    return str(round(value))
