"""Label every step of a run's responses and read trajectories back for drift analysis.

Labeling is resumable: responses that already have labels from this labeler under this
ontology version are skipped, and labels are committed in batches so an interrupted run
keeps what it finished.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy import and_, or_
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from ontology.labeler_roles import labeler_roles
from ontology.labelers.base import LabelItem, label_items
from ontology.labelers.registry import ensure_labeler_spec, make_labeler
from ontology.versions import document, get_version
from storage.errors import NotFoundError
from storage.models import (
    GenerationRun,
    ModelSpecRow,
    OntologyVersion,
    Question,
    Response,
    StepLabel,
)
from storage.repo._upsert import bulk_insert
from storage.repo.runs import get_run, require_run
from storage.step_spans import step_count_sql, unpack_steps
from storage.types import utcnow
from study.reasoning.drift import DRIFT_COLUMNS, DriftTable, Trajectory, build_drift_table

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class LabelSummary:
    """What one labeling pass did."""

    run: str
    labeler: str
    ontology_version: str
    responses: int
    labeled_now: int
    already_labeled: int
    steps_labeled: int
    unmapped_steps: int
    without_steps: int
    failed: int = 0  # responses whose labeling request failed (nothing stored; rerun)


def _run(name: str, *, session: Session) -> GenerationRun:
    run = get_run(name, session=session)
    if run is None:
        raise NotFoundError(f"no run named {name!r} in this workspace")
    return run


#: Responses read per query when streaming a run (bounds memory by a chunk, not the run).
CHUNK = 5_000


def _step_count(session: Session) -> Any:
    """SQL for the number of parsed steps of a response (JSON array length)."""
    return step_count_sql(session, Response.steps)


def _in_questions(question_ids: Collection[int] | None) -> tuple[Any, ...]:
    """The WHERE clause of a shard (none for a whole run)."""
    if question_ids is None:
        return ()
    return (col(Response.question_id).in_(sorted(question_ids)),)


def keyed_responses(run_id: int | None, *extra: Any) -> Any:
    """A run's responses in id order, each as its key (id, question key, condition, class,
    sample) followed by the ``extra`` columns."""
    return (
        sa_select(  # type: ignore[call-overload]
            Response.id,
            Question.external_id,
            Response.condition,
            Response.condition_class,
            Response.sample,
            *extra,
        )
        .join(Question, col(Question.id) == col(Response.question_id))
        .where(Response.run_id == run_id)
        .order_by(col(Response.id))
    )


def label_run(
    run_name: str,
    labeler_spec: str,
    *,
    session: Session,
    ontology_version: str | int | None = None,
    batch_size: int = 2_000,
    progress: Progress | None = None,
    question_ids: Collection[int] | None = None,
    allow_self_judging: bool = False,
) -> LabelSummary:
    """Label every step of every response of ``run_name`` with ``labeler_spec``.

    An LLM labeler that is the run's own model is refused unless ``allow_self_judging``
    (:mod:`ontology.labeler_roles`); the role is stored with the run.

    ``question_ids`` limits the pass to those questions' responses (one shard of a
    cluster run, see :mod:`study.cluster`).

    Streams the run: one pass over (id, number of steps) finds what to label, then the
    steps are read ``batch_size`` responses at a time and go to the labeler through its
    batch path (for ``llm:`` labelers: concurrent, cached requests; see
    :func:`ontology.labelers.base.label_items`); each chunk is inserted and committed, so
    memory holds one chunk, never the run.
    """
    run = _run(run_name, session=session)
    labeler_roles(run_name, [labeler_spec], session=session, allow_self=allow_self_judging)
    version = get_version(ontology_version, session=session)
    doc = document(version)
    labeler = make_labeler(labeler_spec)
    spec_row = ensure_labeler_spec(labeler_spec, session=session)
    session.commit()
    assert version.id is not None and spec_row.id is not None
    done_ids = set(
        session.exec(
            select(StepLabel.response_id)
            .join(Response, col(Response.id) == col(StepLabel.response_id))
            .where(Response.run_id == run.id)
            .where(StepLabel.labeler_id == spec_row.id)
            .where(StepLabel.ontology_version_id == version.id)
            .where(StepLabel.repeat == 0)
            .where(*_in_questions(question_ids))
            .distinct()
        ).all()
    )
    n_responses = without_steps = 0
    todo: list[int] = []
    for response_id, n_steps in session.execute(
        select(Response.id, _step_count(session))
        .where(Response.run_id == run.id)
        .where(*_in_questions(question_ids))
        .order_by(col(Response.id))
    ):
        n_responses += 1
        if not n_steps:
            without_steps += 1
        elif response_id not in done_ids:
            todo.append(int(response_id))
    steps_labeled = unmapped = failed = 0
    if progress is not None:
        progress(0, len(todo))
    for start in range(0, len(todo), batch_size):
        chunk_ids = todo[start : start + batch_size]
        wanted = set(chunk_ids)
        # The column holds the stored form (spans of the text): unpack with the text.
        chunk = [
            (int(response_id), tuple(unpack_steps(text, steps)))
            for response_id, text, steps in session.execute(
                select(Response.id, Response.text, Response.steps)
                .where(Response.run_id == run.id)
                .where(col(Response.id).between(chunk_ids[0], chunk_ids[-1]))
                .order_by(col(Response.id))
            )
            if response_id in wanted
        ]
        # One batch per chunk: an LLM labeler sends its requests concurrently through the
        # request cache (llm.batch), so a rerun after losing labels sends nothing; offline
        # labelers label the chunk in process.
        items = [LabelItem(str(response_id), steps) for response_id, steps in chunk]

        def chunk_progress(done: int, _total: int, offset: int = start) -> None:
            if progress is not None:
                progress(offset + done, len(todo))

        results = label_items(
            labeler, items, ontology=doc, session=session, progress=chunk_progress
        )
        pending: list[dict[str, object]] = []
        now = utcnow()
        for (response_id, _steps), labels in zip(chunk, results, strict=True):
            if not labels:  # the request failed at the endpoint: nothing stored, retried
                failed += 1
                continue
            for result in labels:
                pending.append(
                    {
                        "response_id": response_id,
                        "step_index": result.step_index,
                        "labeler_id": spec_row.id,
                        "ontology_version_id": version.id,
                        "repeat": 0,
                        "category": result.category,
                        "symbol": result.symbol,
                        "parse_status": result.parse_status,
                        "settings": result.settings,
                        "created_at": now,
                    }
                )
                steps_labeled += 1
                unmapped += result.symbol == "unmapped"
        if pending:
            # Core bulk insert (COPY on PostgreSQL): tens of thousands of rows, where ORM
            # objects cost seconds.
            bulk_insert(session, StepLabel, pending)
        session.commit()
        if progress is not None:
            progress(start + len(chunk_ids), len(todo))
    return LabelSummary(
        run=run_name,
        labeler=labeler_spec,
        ontology_version=f"{version.name}@{version.version}",
        responses=n_responses,
        labeled_now=len(todo) - failed,
        already_labeled=len(done_ids),
        steps_labeled=steps_labeled,
        unmapped_steps=unmapped,
        without_steps=without_steps,
        failed=failed,
    )


def load_trajectories(
    run_name: str,
    labeler_spec: str,
    *,
    session: Session,
    ontology_version: str | int | None = None,
    model_label: str | None = None,
    chunk: int = CHUNK,
    question_ids: Collection[int] | None = None,
) -> list[Trajectory]:
    """Return one :class:`Trajectory` per response (unusable ones flagged, not dropped).

    Streams the run ``chunk`` responses at a time (their step count, not their text) with
    the labels of exactly those responses, so memory holds the trajectories (a few
    integers each) and one chunk, never the run's texts or all of its labels at once.
    Trajectories come in response id order.

    Args:
        run_name: the run.
        labeler_spec: the labeler whose labels make the symbols.
        session: open session.
        ontology_version: id, ``name`` or ``name@N`` (default: latest ``driftlens``).
        model_label: the ``model`` of every trajectory (default: the run's model spec).
        chunk: responses per query.
        question_ids: only these questions' responses (database ids; one chunk of the
            out-of-core analysis, :mod:`study.reasoning.out_of_core`).
    """
    run = _run(run_name, session=session)
    version = get_version(ontology_version, session=session)
    doc = document(version)
    spec_row = ensure_labeler_spec(labeler_spec, session=session)
    if model_label is None:
        model = session.get(ModelSpecRow, run.model_spec_id)
        model_label = model.spec if model else str(run.model_spec_id)
    symbol_of = doc.symbol_of
    shared: dict[str, str] = {}  # one str object per distinct question key / condition
    out: list[Trajectory] = []
    no_text = or_(col(Response.text).is_(None), col(Response.text) == "")
    stmt = (
        keyed_responses(
            run.id, and_(col(Response.error).is_not(None), no_text), _step_count(session)
        )
        .where(*_in_questions(question_ids))
        .limit(chunk)
    )
    last = None
    while True:
        rows = session.execute(stmt if last is None else stmt.where(col(Response.id) > last)).all()
        if not rows:
            break
        last = rows[-1][0]
        labels: dict[int, dict[int, str]] = {}
        label_query = (
            select(StepLabel.response_id, StepLabel.step_index, StepLabel.symbol)
            .where(col(StepLabel.response_id).between(rows[0][0], last))
            .where(StepLabel.labeler_id == spec_row.id)
            .where(StepLabel.ontology_version_id == version.id)
            .where(StepLabel.repeat == 0)
        )
        if question_ids is not None:
            # A slice's responses need not be neighbours by id (a sharded run interleaves
            # its shards' rows), so the id range may hold other questions' labels: read
            # exactly this chunk's.
            label_query = label_query.where(col(StepLabel.response_id).in_([r[0] for r in rows]))
        for response_id, step_index, symbol in session.execute(label_query):
            labels.setdefault(response_id, {})[step_index] = symbol
        for response_id, key, condition, klass, sample, failed, n_steps in rows:
            got = labels.get(response_id)
            if failed:
                usable, reason = False, "request_failed"
            elif not n_steps:
                usable, reason = False, "no_steps"
            elif got is None or len(got) < n_steps:
                usable, reason = False, "not_labeled"
            else:
                usable, reason = True, ""
            symbols = (
                tuple(symbol_of.get(got[i], 0) for i in range(n_steps))
                if usable and got is not None
                else ()
            )
            out.append(
                Trajectory(
                    model=model_label,
                    question_id=shared.setdefault(key, key),
                    condition=shared.setdefault(condition, condition),
                    condition_class=shared.setdefault(klass, klass),
                    sample=int(sample),
                    symbols=symbols,
                    usable=usable,
                    reason=reason,
                )
            )
    return out


def run_labels(run_names: Sequence[str], *, session: Session) -> dict[str, GenerationRun]:
    """One model label per run: its model spec, plus ``[run]`` when two runs share it.

    The label keeps two runs of one model from being pooled as one model.
    """
    runs = [require_run(name, session=session) for name in run_names]
    specs = {run.name: session.get(ModelSpecRow, run.model_spec_id) for run in runs}
    keys = {
        run.name: (spec.spec if (spec := specs[run.name]) is not None else str(run.model_spec_id))
        for run in runs
    }
    counts: dict[str, int] = {}
    for key in keys.values():
        counts[key] = counts.get(key, 0) + 1
    return {
        (keys[run.name] if counts[keys[run.name]] == 1 else f"{keys[run.name]} [{run.name}]"): run
        for run in runs
    }


def load_runs(
    run_names: Sequence[str],
    labeler_spec: str,
    *,
    session: Session,
    version: OntologyVersion,
) -> tuple[list[Trajectory], dict[str, GenerationRun]]:
    """Trajectories of several runs, with one model label per run (:func:`run_labels`).

    Returns:
        The trajectories and the map model label → run.
    """
    run_of = run_labels(run_names, session=session)
    trajectories: list[Trajectory] = []
    for label, run in run_of.items():
        trajectories.extend(
            load_trajectories(
                run.name,
                labeler_spec,
                session=session,
                ontology_version=version.id,
                model_label=label,
            )
        )
    return trajectories, run_of


def drift_table_by_run(
    run_of: dict[str, GenerationRun],
    labeler_spec: str,
    *,
    session: Session,
    version: OntologyVersion,
    alpha: float,
    question_ids: Collection[int] | None = None,
) -> DriftTable:
    """The drift table of several runs, built one run (model) at a time.

    Pairs never cross models (each response is compared with its own model's baseline), so
    building per run and concatenating gives the same rows and skip counts as one batch
    over every trajectory, while only one run's trajectories are held at a time.
    ``question_ids`` limits it to those questions (one slice of the out-of-core analysis).
    """
    parts: list[pd.DataFrame] = []
    skipped: Counter[str] = Counter()
    for label, run in run_of.items():
        trajectories = load_trajectories(
            run.name,
            labeler_spec,
            session=session,
            ontology_version=version.id,
            model_label=label,
            question_ids=question_ids,
        )
        table = build_drift_table(trajectories, alpha=alpha)
        del trajectories
        skipped.update(table.skipped)
        if not table.rows.empty:
            parts.append(table.rows)
    if not parts:
        return DriftTable(rows=pd.DataFrame(columns=list(DRIFT_COLUMNS)), skipped=dict(skipped))
    rows = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    return DriftTable(rows=rows, skipped=dict(skipped))
