"""Sampling and labeling of one round's responses (SPEC §5): the work of a round.

:func:`stratified_sample` picks a round's responses (stratified over questions and
conditions, seeded); :func:`label_responses` labels every step with every labeler under one
ontology version, reusing stored labels and committing chunk by chunk, offline labelers in
worker threads and LLM labelers with concurrent requests. :mod:`ontology.rounds` runs the
rounds around it (leases, resume, agreement, history).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from sqlmodel import Session

from ontology.labelers.base import LabelItem, Progress, StepLabelResult, label_items
from ontology.labelers.registry import ensure_labeler_spec, make_labeler, parse_labeler_spec
from ontology.schema import UNMAPPED
from ontology.versions import document
from storage.models import OntologyVersion, Response, StepLabel
from storage.repo.labels import labeled_response_ids, upsert_step_labels

OFFLINE_KINDS = ("keywords", "embed")


def stratified_sample(responses: Sequence[Response], n: int, *, seed: int) -> list[Response]:
    """Pick ``n`` responses spread evenly over questions, and over conditions within each.

    Questions are visited round-robin in a seeded order; each question hands out its
    responses by cycling through its conditions (also in a seeded order), so every question
    and every condition of it is represented before any is repeated. Deterministic for a
    seed. Returns all responses (in id order) when ``n`` is at least their number.
    """
    if n >= len(responses):
        return sorted(responses, key=lambda r: r.id or 0)
    rng = random.Random(seed)
    by_question: dict[int, dict[str, list[Response]]] = defaultdict(lambda: defaultdict(list))
    for r in sorted(responses, key=lambda r: r.id or 0):
        by_question[r.question_id][r.condition].append(r)
    queues: list[list[Response]] = []
    for qid in sorted(by_question):
        conditions = [list(v) for _, v in sorted(by_question[qid].items())]
        rng.shuffle(conditions)
        for group in conditions:
            rng.shuffle(group)
        queue: list[Response] = []
        while any(conditions):
            for group in conditions:
                if group:
                    queue.append(group.pop())
        queues.append(queue)
    rng.shuffle(queues)
    picked: list[Response] = []
    while len(picked) < n:
        for queue in queues:
            if queue and len(picked) < n:
                picked.append(queue.pop(0))
    return sorted(picked, key=lambda r: r.id or 0)


@dataclass
class LabelingStats:
    """What labeling did for one labeler."""

    labeler: str
    responses: int = 0
    labeled_now: int = 0
    reused: int = 0
    steps: int = 0
    unmapped: int = 0
    unparseable: int = 0
    repaired: int = 0
    failed: int = 0


def label_responses(
    responses: Sequence[Response],
    labelers: Sequence[str],
    *,
    version: OntologyVersion,
    session: Session,
    repeat: int = 0,
    round_id: int | None = None,
    progress: Progress | None = None,
    chunk: int = 50,
) -> dict[str, LabelingStats]:
    """Label every step of ``responses`` with every labeler (cached, resumable).

    Args:
        responses: Responses with parsed steps.
        labelers: Labeler spec strings.
        version: The ontology version the labels refer to.
        session: Open session (committed after every chunk).
        repeat: Repeat index (0 normally; 1+ for within-model stability).
        round_id: Stored on new labels.
        progress: ``progress(done, total)`` over (response, labeler) pairs.
        chunk: Responses per commit.
    """
    doc = document(version)
    assert version.id is not None
    made = {spec: make_labeler(spec) for spec in labelers}
    rows = {spec: ensure_labeler_spec(spec, session=session) for spec in labelers}
    session.commit()
    stats = {spec: LabelingStats(spec, responses=len(responses)) for spec in labelers}
    todo: dict[str, list[Response]] = {}
    for spec in labelers:
        row_id = rows[spec].id
        assert row_id is not None
        done = labeled_response_ids(
            labeler_id=row_id, ontology_version_id=version.id, repeat=repeat, session=session
        )
        todo[spec] = [r for r in responses if r.id not in done]
        stats[spec].reused = len(responses) - len(todo[spec])
    total = sum(len(v) for v in todo.values())
    finished = 0
    if progress is not None:
        progress(0, total)
    starts = range(0, len(responses), chunk)
    with ThreadPoolExecutor(max_workers=max(1, len(labelers))) as pool:
        for start in starts:
            window = {r.id for r in responses[start : start + chunk]}
            jobs: dict[str, list[Response]] = {
                spec: [r for r in todo[spec] if r.id in window] for spec in labelers
            }
            futures: dict[str, Future[list[list[StepLabelResult]]]] = {}
            results: dict[str, list[list[StepLabelResult]]] = {}
            # Offline labelers go to worker threads first; LLM labelers then send their
            # requests from this thread (they use the session for the request cache).
            offline = [s for s in labelers if parse_labeler_spec(s).kind in OFFLINE_KINDS]
            online = [s for s in labelers if s not in offline]
            for spec in [*offline, *online]:
                if not jobs[spec]:
                    continue
                items = [LabelItem(str(r.id), tuple(r.steps), repeat) for r in jobs[spec]]
                if spec in offline:
                    futures[spec] = pool.submit(label_items, made[spec], items, ontology=doc)
                else:
                    results[spec] = label_items(made[spec], items, ontology=doc, session=session)
            for spec, fut in futures.items():
                results[spec] = fut.result()
            new_rows: list[StepLabel] = []
            for spec, batch_results in results.items():
                row_id = rows[spec].id
                assert row_id is not None
                for response, labels in zip(jobs[spec], batch_results, strict=True):
                    assert response.id is not None
                    if not labels:
                        stats[spec].failed += 1
                        continue
                    stats[spec].labeled_now += 1
                    for lab in labels:
                        stats[spec].steps += 1
                        stats[spec].unmapped += lab.symbol == UNMAPPED
                        stats[spec].unparseable += lab.parse_status == "unparseable"
                        stats[spec].repaired += lab.parse_status == "repaired"
                        new_rows.append(
                            StepLabel(
                                response_id=response.id,
                                step_index=lab.step_index,
                                labeler_id=row_id,
                                ontology_version_id=version.id,
                                repeat=repeat,
                                round_id=round_id,
                                category=lab.category,
                                symbol=lab.symbol,
                                parse_status=lab.parse_status,
                                raw_output=lab.raw_output,
                                settings=lab.settings,
                            )
                        )
                finished += len(jobs[spec])
            upsert_step_labels(new_rows, session=session)
            session.commit()
            if progress is not None:
                progress(finished, total)
    return stats
