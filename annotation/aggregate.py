"""Aggregation and agreement of human annotations (SPEC §9), on plain records.

Rules, per study:

* an annotation made in under ``min_lead_time_s`` seconds (default 10) is dropped whole;
  one without a recorded lead time is kept (there is nothing to judge it by);
* cancelled (skipped) annotations carry no votes;
* one vote per annotator and item and question: an annotator's newest annotation wins;
* the *label* of a question on an item is the value given by at least ``majority`` (2) of
  the kept votes — the 2-of-3 rule; none when no value reaches it;
* *unanimous*: at least ``panel`` (3) kept votes, all equal;
* *confidence*: the share of kept votes that agree with the label (or with the most
  frequent value when there is no label);
* *disagreement rate* of a task: the share of its questions, among those with at least two
  kept votes, whose votes are not all equal; the study's rate pools every such
  (task, question) unit;
* Krippendorff's α per study over the (task, question) units of its agreement questions,
  nominal (ordinal for helpfulness); ``None`` when undefined (fewer than two values used,
  or no unit with two votes).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from annotation.studies import StudySpec

DEFAULT_MIN_LEAD_TIME_S = 10.0


@dataclass(frozen=True)
class AggregationConfig:
    """The aggregation rules' numbers.

    ``min_ratings``: kept ratings an item needs to count in a rating study's means
    (``test_awareness``: two reviewers by design); items with fewer are left out and counted.
    """

    min_lead_time_s: float = DEFAULT_MIN_LEAD_TIME_S
    majority: int = 2
    panel: int = 3
    min_ratings: int = 2


@dataclass(frozen=True)
class AnnotationRecord:
    """One stored annotation, as aggregation needs it."""

    item: str
    annotation_id: int
    annotator: str
    result: Any
    lead_time: float | None = None
    updated_at: datetime | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QuestionOutcome:
    """The kept votes on one question of one item and what they decide."""

    question: str
    votes: tuple[tuple[str, str], ...]
    """(annotator, value) pairs, annotator order."""
    annotation_ids: tuple[int, ...]
    """The Label Studio annotation id of each vote (parallel to ``votes``)."""
    label: str | None
    unanimous: bool
    confidence: float | None

    @property
    def n_votes(self) -> int:
        """How many votes were kept."""
        return len(self.votes)

    @property
    def agreeing(self) -> bool | None:
        """Whether all kept votes are equal (``None`` with fewer than two)."""
        if len(self.votes) < 2:
            return None
        return len({v for _, v in self.votes}) == 1


@dataclass(frozen=True)
class ItemOutcome:
    """One task (item) of a study."""

    key: str
    questions: tuple[QuestionOutcome, ...]
    annotators: tuple[str, ...]
    dropped_fast: int
    disagreement_rate: float | None
    payload: Mapping[str, Any] = field(default_factory=dict)

    def outcome(self, question: str) -> QuestionOutcome | None:
        """The outcome of one question."""
        for q in self.questions:
            if q.question == question:
                return q
        return None


@dataclass(frozen=True)
class StudyAggregate:
    """Every item of a study plus the study-wide numbers."""

    study: str
    items: tuple[ItemOutcome, ...]
    n_annotations: int
    n_kept: int
    n_dropped_fast: int
    n_cancelled: int
    annotators: tuple[str, ...]
    alpha: float | None
    alpha_by_question: Mapping[str, float | None]
    disagreement_rate: float | None
    config: AggregationConfig


def extract_answers(spec: StudySpec, result: Any) -> dict[str, str]:
    """The answer to each of the study's questions in a Label Studio ``result`` list.

    Choices store their alias (our canonical value); ratings and numbers are read too.
    """
    names = {q.name for q in spec.questions}
    out: dict[str, str] = {}
    if not isinstance(result, list):
        return out
    for entry in result:
        if not isinstance(entry, Mapping) or entry.get("from_name") not in names:
            continue
        value = entry.get("value") or {}
        raw: Any = None
        if isinstance(value.get("choices"), list) and value["choices"]:
            raw = value["choices"][0]
        elif "rating" in value:
            raw = value["rating"]
        elif "number" in value:
            raw = value["number"]
        if raw is None:
            continue
        text = str(raw).strip()
        question = spec.question(str(entry["from_name"]))
        if question.values and text.lower() in question.values:
            text = text.lower()
        out[question.name] = text
    return out


def aggregate(
    spec: StudySpec,
    records: Iterable[AnnotationRecord],
    config: AggregationConfig | None = None,
) -> StudyAggregate:
    """Aggregate a study's annotations (see the module docstring for the rules)."""
    config = config or AggregationConfig()
    records = list(records)
    fast: Counter[str] = Counter()
    cancelled = 0
    latest: dict[tuple[str, str], AnnotationRecord] = {}
    payloads: dict[str, Mapping[str, Any]] = {}
    for rec in records:
        payloads.setdefault(rec.item, rec.payload)
        if rec.lead_time is not None and rec.lead_time < config.min_lead_time_s:
            fast[rec.item] += 1
            continue
        if not extract_answers(spec, rec.result):
            cancelled += 1
            continue
        key = (rec.item, rec.annotator)
        old = latest.get(key)
        if old is None or _newer(rec, old):
            latest[key] = rec
    kept = sorted(latest.values(), key=lambda r: (r.item, r.annotator))
    by_item: dict[str, list[AnnotationRecord]] = defaultdict(list)
    for rec in kept:
        by_item[rec.item].append(rec)

    items = []
    all_items = sorted({r.item for r in records})
    for item in all_items:
        recs = by_item.get(item, [])
        answers = [(r.annotator, r.annotation_id, extract_answers(spec, r.result)) for r in recs]
        outcomes = tuple(
            _outcome(
                q.name, [(a, i, ans[q.name]) for a, i, ans in answers if q.name in ans], config
            )
            for q in spec.questions
        )
        units = [
            o.agreeing
            for o in outcomes
            if o.agreeing is not None and spec.question(o.question).agreement
        ]
        rate = (sum(1 for u in units if not u) / len(units)) if units else None
        items.append(
            ItemOutcome(
                key=item,
                questions=outcomes,
                annotators=tuple(a for a, _, _ in answers),
                dropped_fast=fast[item],
                disagreement_rate=rate,
                payload=payloads.get(item, {}),
            )
        )

    units_all = [
        o.agreeing
        for it in items
        for o in it.questions
        if o.agreeing is not None and spec.question(o.question).agreement
    ]
    disagreement = (sum(1 for u in units_all if not u) / len(units_all)) if units_all else None
    annotators = tuple(sorted({r.annotator for r in kept}))
    agreement_qs = [q.name for q in spec.agreement_questions]
    na = {q.name: q.not_applicable for q in spec.agreement_questions if q.not_applicable}
    alpha = _alpha(items, agreement_qs, annotators, spec.alpha_level, na)
    by_question = {q: _alpha(items, [q], annotators, spec.alpha_level, na) for q in agreement_qs}
    return StudyAggregate(
        study=spec.name,
        items=tuple(items),
        n_annotations=len(records),
        n_kept=len(kept),
        n_dropped_fast=sum(fast.values()),
        n_cancelled=cancelled,
        annotators=annotators,
        alpha=alpha,
        alpha_by_question=by_question,
        disagreement_rate=disagreement,
        config=config,
    )


def _newer(a: AnnotationRecord, b: AnnotationRecord) -> bool:
    if a.updated_at is not None and b.updated_at is not None and a.updated_at != b.updated_at:
        return a.updated_at > b.updated_at
    return a.annotation_id > b.annotation_id


def _outcome(
    question: str, votes: Sequence[tuple[str, int, str]], config: AggregationConfig
) -> QuestionOutcome:
    if not votes:
        return QuestionOutcome(question, (), (), None, False, None)
    pairs = tuple((a, v) for a, _, v in votes)
    counts = Counter(v for _, v in pairs)
    (top, top_n), *rest = counts.most_common()
    tie = bool(rest) and rest[0][1] == top_n
    label = top if top_n >= config.majority and not tie else None
    unanimous = len(pairs) >= config.panel and len(counts) == 1
    return QuestionOutcome(
        question, pairs, tuple(i for _, i, _ in votes), label, unanimous, top_n / len(pairs)
    )


def decide(values: Sequence[str], config: AggregationConfig | None = None) -> QuestionOutcome:
    """The 2-of-3 outcome of bare values (annotators unnamed), e.g. stored curation votes."""
    config = config or AggregationConfig()
    return _outcome("", [(f"#{i}", i, v) for i, v in enumerate(values)], config)


def _alpha(
    items: Sequence[ItemOutcome],
    questions: Sequence[str],
    annotators: Sequence[str],
    level: str,
    not_applicable: Mapping[str, str] | None = None,
) -> float | None:
    """Krippendorff's α over (item, question) units; ``None`` when undefined.

    Above the nominal level a question's ``not_applicable`` vote is no value on the scale:
    it counts as not scored.
    """
    skip = dict(not_applicable or {}) if level != "nominal" else {}
    index = {a: i for i, a in enumerate(annotators)}
    columns: list[list[Any]] = []
    for it in items:
        for q in questions:
            o = it.outcome(q)
            if o is None or o.n_votes == 0:
                continue
            col: list[Any] = [None] * len(annotators)
            for annotator, vote in o.votes:
                col[index[annotator]] = None if vote == skip.get(q) else vote
            columns.append(col)
    if not columns or len(annotators) < 2:
        return None
    labels = [[c[i] for c in columns] for i in range(len(annotators))]
    value: float | None
    if level == "nominal":
        from driftlens_core.agreement import krippendorff_alpha

        value = krippendorff_alpha(labels)
    elif level == "ordinal":
        from driftlens_core.ordinal import krippendorff_alpha_ordinal

        value = krippendorff_alpha_ordinal(labels)
    else:
        value = _alpha_numeric(labels)
    return None if value is None or math.isnan(value) else float(value)


def _alpha_numeric(labels: Sequence[Sequence[Any]]) -> float | None:
    """Interval-level α (the ordinal level lives in :mod:`driftlens_core.ordinal`)."""
    import krippendorff
    import numpy as np

    data = np.array(
        [[np.nan if v is None else float(v) for v in row] for row in labels], dtype=float
    )
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return None
    used = np.unique(data[:, pairable][~np.isnan(data[:, pairable])])
    if used.size < 2:
        return None
    domain = sorted(set(np.unique(data[~np.isnan(data)]).tolist()))
    return float(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="interval", value_domain=domain
        )
    )
