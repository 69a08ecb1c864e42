"""Building a study's tasks through its kind, and the selection helpers kinds share.

Every task carries a stable ``external_key`` (built from external ids and names, never
from database row ids) so that pushing the same selection again finds what is already there. The
task data shown to annotators holds only text fields; the keys that link back to our rows
ride along in the same data object.

Each study kind (:mod:`annotation.kinds`) builds its own tasks; :func:`build_tasks` calls the
kind's builder, drops repeated keys, applies the selection's seeded ``limit`` and stamps
each task with its key; a kind that lists its keys first has only the chosen tasks built.
The helpers below select stored responses for the kinds that show generated answers
(reasoning drift's and memory conflicts').
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlmodel import Session

from annotation.aggregate import StudyAggregate
from annotation.judge_pairs import CalibrationPairs, pair_judges_with_majority, score_label
from annotation.kinds import KeyedBuild, StudyKind, get_kind
from annotation.selection import Selection, TaskSpec
from annotation.slice_design import INCLUSION_FIELD, active_draw, stratified_draw
from storage.errors import InputError
from storage.repo import studies as repo

#: ``Response.condition_class`` of memory-conflict answers (study/conflicts/plan.py).
CONFLICT_CLASS = "bank"


def build_tasks(study: str, selection: Selection, *, session: Session) -> list[TaskSpec]:
    """Build the tasks of a study for a selection (deterministic order).

    A kind with a keys-first path (:class:`~annotation.kinds.KeyedBuild`) and a ``limit``
    builds only the chosen tasks: the limit is applied to keys streamed from the query.

    Raises:
        InputError: the study is unknown or the selection names rows that do not exist.
    """
    kind = get_kind(study)
    if selection.limit is not None and (selection.stratify or selection.active):
        return _designed_slice(kind, selection, session)
    if selection.unit == "question" and selection.limit is not None:
        unique, available = _limited_questions(kind.build_tasks(selection, session), selection)
    elif kind.keyed is not None and selection.limit is not None:
        unique, available = _limited_keyed(kind.keyed, selection, session)
    else:
        unique = []
        seen: set[str] = set()
        for t in kind.build_tasks(selection, session):
            if t.key not in seen:
                seen.add(t.key)
                unique.append(t)
        available = len(unique)
        if selection.limit is not None and len(unique) > selection.limit:
            unique.sort(key=lambda t: order_key(selection.seed, t.key))
            unique = unique[: selection.limit]
    probability = inclusion_probability(selection, available)
    for t in unique:
        t.data["external_key"] = t.key
        if probability is not None:
            # a builder that draws its own slice (e.g. stratified) stored its own
            t.data.setdefault(INCLUSION_FIELD, probability)
            t.data[INCLUSION_UNIT_FIELD] = selection.unit
    return unique


def _limited_questions(
    tasks: Iterable[TaskSpec], selection: Selection
) -> tuple[list[TaskSpec], int]:
    """Every task of ``limit`` questions drawn in the seeded order (a cluster sample).

    Returns the kept tasks (question by question, in the builder's order) and how many
    questions were available (the denominator of each task's inclusion probability).

    Raises:
        InputError: a task names no question (its kind cannot be drawn by question).
    """
    assert selection.limit is not None
    by_question: dict[str, list[TaskSpec]] = {}
    seen: set[str] = set()
    for t in tasks:
        if t.key in seen:
            continue
        seen.add(t.key)
        q = t.data.get("question_id")
        if q is None or str(q) == "":
            raise InputError(
                f"Task {t.key} names no question: unit=question needs a study whose tasks "
                "carry a question_id."
            )
        by_question.setdefault(str(q), []).append(t)
    order = sorted(by_question, key=lambda q: order_key(selection.seed, f"question:{q}"))
    chosen = set(order[: selection.limit])
    kept = [t for q, ts in by_question.items() if q in chosen for t in ts]
    return kept, len(by_question)


#: What that probability is of: ``task`` (each task drawn on its own) or ``question`` (the
#: task's question drawn, with every task of it; ``Selection.unit``).
INCLUSION_UNIT_FIELD = "inclusion_unit"


def _designed_slice(kind: StudyKind, selection: Selection, session: Session) -> list[TaskSpec]:
    """A stratified or active slice of the selection's tasks, probabilities stored.

    Raises:
        InputError: both designs at once, hand-picked questions, or ``active`` on a study
            whose judges cannot say where they disagree.
    """
    assert selection.limit is not None
    if selection.stratify and selection.active:
        raise InputError("Choose one slice design: stratify=FIELD or active=true, not both.")
    if selection.unit == "question":
        raise InputError(
            "A designed slice (stratify=, active=) draws tasks, not whole questions: drop "
            "unit=question."
        )
    if selection.questions:
        raise InputError(
            "A designed slice (stratify=, active=) draws from filters, not from named "
            "questions: drop question=."
        )
    if selection.active and kind.disagreement is None:
        raise InputError(
            f"{kind.name} has no judges whose disagreement could steer an active slice; "
            "use stratify=FIELD or a plain limit."
        )
    unique: list[TaskSpec] = []
    seen: set[str] = set()
    # every task, never the builder's own cut: the designs need the whole frame
    for t in kind.build_tasks(selection.model_copy(update={"limit": None}), session):
        if t.key not in seen:
            seen.add(t.key)
            t.data.pop(INCLUSION_FIELD, None)
            unique.append(t)
    if selection.stratify:
        chosen = stratified_draw(
            unique, field=selection.stratify, limit=selection.limit, seed=selection.seed
        )
    else:
        assert kind.disagreement is not None  # refused above
        weights = kind.disagreement(unique, session)
        chosen = active_draw(unique, weights, limit=selection.limit, seed=selection.seed)
    for t in chosen:
        t.data["external_key"] = t.key
    return chosen


def inclusion_probability(selection: Selection, available: int) -> float | None:
    """The probability that each task of a selection's tasks was chosen, ``None`` if unknown.

    A selection by filters is a simple random sample of its ``available`` tasks: the
    seeded hash order draws ``limit`` of them, every task with probability
    ``limit / available`` (1 without a limit). A selection that names its questions was
    chosen by hand, whose probabilities nobody knows.
    """
    if selection.questions or available < 1:
        return None
    if selection.limit is None or selection.limit >= available:
        return 1.0
    return selection.limit / available


def _limited_keyed(
    keyed: KeyedBuild, selection: Selection, session: Session
) -> tuple[list[TaskSpec], int]:
    """The tasks :func:`build_tasks` keeps when it builds every task, chosen over keys.

    Only ``limit`` keys are held at a time (a heap), however many rows the selection
    matches. As there, a limit that cuts returns the seeded order, one that keeps every
    task the builder's order. Also returns how many tasks the selection matched.
    """
    assert selection.limit is not None
    seed = selection.seed
    total = 0

    def ranked() -> Iterator[tuple[str, int, str, Any]]:
        nonlocal total
        for position, (key, ref) in enumerate(keyed.keys(selection, session)):
            total = position + 1
            yield order_key(seed, key), position, key, ref

    chosen = heapq.nsmallest(selection.limit, ranked())
    if total <= selection.limit:
        chosen.sort(key=lambda c: c[1])
    built = {t.key: t for t in keyed.build(selection, session, [c[3] for c in chosen])}
    # a row deleted between the two queries is simply not there
    return [built[key] for _, _, key, _ in chosen if key in built], total


def count_tasks(study: str, selection: Selection, *, session: Session) -> int:
    """How many tasks the selection makes before its ``limit`` (none built where the kind
    can count them: see :class:`~annotation.kinds.KeyedBuild`).

    Raises:
        InputError: the study is unknown or the selection names rows that do not exist.
    """
    kind = get_kind(study)
    if kind.keyed is not None:
        return kind.keyed.count(selection, session)
    unlimited = selection.model_copy(update={"limit": None})
    return len(build_tasks(study, unlimited, session=session))


def order_key(seed: int, key: str) -> str:
    """The seeded order of a task key (a larger ``limit`` keeps every task of a smaller one)."""
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def response_key(run: str, question: str, condition: str, sample: int) -> str:
    """The stable key of one stored response (external ids and names, never row ids)."""
    return f"response:{run}:{question}:{condition}:{sample}"


def selected_responses(sel: Selection, session: Session, *, perturbed_only: bool) -> list[Any]:
    """The stored responses a selection names: ``(response, run, model, question, memory)``."""
    rows = repo.select_responses(
        session=session,
        run=sel.run,
        conditions=sel.conditions,
        condition_class=sel.condition_class,
        perturbed_only=perturbed_only,
    )
    if sel.questions:
        wanted = set(sel.questions)
        rows = [r for r in rows if r[3].external_id in wanted]
    return rows


def steps_text(steps: Sequence[str]) -> str:
    """The stepped response as annotators see it: one numbered step per paragraph."""
    return "\n\n".join(f"Step {i}: {s.strip()}" for i, s in enumerate(steps, start=1))


def response_ids_by_key(runs: Sequence[str], *, session: Session) -> dict[str, int]:
    """``response_key -> response id`` of every stored response of these runs.

    A response study's task keys name the run, question and condition (never row ids);
    a judge's verdicts are stored by response id, so a study reads them back through this.
    """
    out: dict[str, int] = {}
    for run in sorted(set(runs)):
        for resp, run_row, _model, q, _pert in repo.select_responses(session=session, run=run):
            if resp.id is not None:
                out[response_key(run_row.name, q.external_id, resp.condition, resp.sample)] = (
                    resp.id
                )
    return out


def pair_response_scores(
    agg: StudyAggregate,
    kind_of: Mapping[str, str],
    *,
    levels: Sequence[str],
    ordinal: bool,
    session: Session,
) -> CalibrationPairs:
    """A response study's judge scores beside its human majority, one question per kind.

    Args:
        agg: the study's aggregate.
        kind_of: each judged question's stored ``JudgeScore`` kind (``score`` ->
            ``helpfulness``; the rubric's ``d1`` -> ``conflict_d1`` ...).
        levels: the scale in order.
        ordinal: whether the scale is ordered.
        session: the workspace session.

    Where several judges scored the items, the first by name is the table's (pooling
    judges would mix settings) and the others are its judge-judge pairs.
    """
    return pair_judges_with_majority(
        agg,
        tuple(kind_of),
        response_judge_labels_by_judge(agg, list(kind_of.values()), session=session),
        lambda it, q: (it.key, kind_of[q]),
        levels=levels,
        ordinal=ordinal,
    )


def response_judge_labels_by_judge(
    agg: StudyAggregate, kinds: Sequence[str], *, session: Session
) -> dict[str, dict[tuple[str, str], str]]:
    """Every judge's stored scores of a response study's items: judge -> (key, kind) -> label.

    Reads ``JudgeScore`` rows (helpfulness, the conflicts rubric's ``conflict_d1``...) of
    the responses the tasks name; only parsed scores count.
    """
    from storage.repo.judges import judge_scores_for

    ids = response_ids_by_key(
        sorted({str(it.payload.get("run", "")) for it in agg.items}), session=session
    )
    key_of = {ids[it.key]: it.key for it in agg.items if it.key in ids}
    wanted = set(kinds)
    out: dict[str, dict[tuple[str, str], str]] = {}
    for s in judge_scores_for(sorted(key_of), session=session):
        label = score_label(s.value)
        if s.kind in wanted and s.parse_status != "error" and label is not None:
            out.setdefault(s.judge_model, {})[(key_of[s.response_id], s.kind)] = label
    return out
