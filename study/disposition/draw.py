"""The seeded samples a disposition study scores a second time, drawn by natural key.

The classifier's repeat (``repeat = 1``), the graded review's share and the test-awareness
share are each a seeded sample of the answered responses. The draw ranks the responses by
a seeded hash of their natural key (arm, battery, stem, paraphrase, sample) and takes the
first ``k``: the same responses however the answers were stored (one process, or shards in
parallel under other database ids). Studies drawn before this (by database id) resume the
set they drew (:func:`drawn_sample`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlmodel import Session

from storage.disposition_models import DispositionArm, DispositionResponse
from storage.repo.disposition import arm_responses, responses_by_id, scores_for

#: Seeds of a study's samples: the classifier's repeat, the graded review, test awareness.
REPEAT_SEED, GRADED_SEED, AWARENESS_SEED = 0, 1, 2

#: A response's natural key: (arm name, battery, stem, paraphrase, sample).
ResponseKey = tuple[str, str, str, int, int]


def response_key(arm: str, r: DispositionResponse) -> ResponseKey:
    """The natural key of ``r``, a response of the arm named ``arm``."""
    return (arm, r.battery, r.stem, int(r.paraphrase), int(r.sample))


def _rank(key: ResponseKey, seed: int) -> str:
    return hashlib.sha256(json.dumps([seed, *key], ensure_ascii=False).encode()).hexdigest()


def key_sample(keys: Collection[ResponseKey], share: float, seed: int) -> list[ResponseKey]:
    """A seeded sample of ``share`` of the keys (at least 1 when any), sorted.

    The keys with the ``k = round(share * n)`` smallest seeded hashes: a function of the
    keys and the seed only, so a study whose answers were stored in any order (by one
    process or by parallel shards, under any database ids) draws the same responses.
    """
    if not keys or share <= 0:
        return []
    unique = sorted(set(keys))
    k = min(len(unique), max(1, round(share * len(unique))))
    return sorted(sorted(unique, key=lambda key: (_rank(key, seed), key))[:k])


def id_sample(ids: Sequence[int], share: float, seed: int) -> list[int]:
    """The draw of studies stored before :func:`key_sample` (database ids, in id order)."""
    if not ids or share <= 0:
        return []
    k = max(1, round(share * len(ids)))
    return sorted(random.Random(seed).sample(sorted(ids), min(k, len(ids))))


def drawn_sample(
    keys: Mapping[int, ResponseKey], share: float, seed: int, *, stored: Collection[int]
) -> set[int]:
    """The response ids of the seeded sample of ``keys`` (response id to natural key).

    The natural-key draw (:func:`key_sample`), except for a study drawn before it:
    ``stored`` (the ids already scored in this pass) outside the natural-key draw but
    inside the old id draw (:func:`id_sample`) are such a study, which then resumes the
    set it already drew.
    """
    by_key = {key: rid for rid, key in keys.items()}
    new = {by_key[k] for k in key_sample(list(by_key), share, seed)}
    done = set(stored) & set(keys)
    if done and not done <= new:
        old = set(id_sample(list(keys), share, seed))
        if done <= old:
            return old
    return new


@dataclass(frozen=True)
class ScoreScope:
    """The part of a study one shard task scores (the coordinator drew the samples).

    ``responses``: the response ids this call scores; ``drawn``: those of them in the
    study's seeded sample (the classifier's repeat, the graded or awareness share).
    """

    responses: frozenset[int]
    drawn: frozenset[int]


def answered_responses(
    arms: Sequence[DispositionArm],
    *,
    session: Session,
    only: Collection[int] | None = None,
) -> list[DispositionResponse]:
    """The arms' responses with an answer (exhausted and failed ones are never scored).

    ``only``: just these response ids (a shard task's, read by id, not the whole study).
    """
    if only is None:
        rows = arm_responses([a.id for a in arms if a.id is not None], session=session)
    else:
        rows = responses_by_id(only, session=session)
        arm_ids = {a.id for a in arms}
        rows = [r for r in rows if r.arm_id in arm_ids]
    return [r for r in rows if r.status == "ok" and r.answer]


def response_keys(
    arms: Sequence[DispositionArm], responses: Sequence[DispositionResponse]
) -> dict[int, ResponseKey]:
    """Response id to natural key, for the answered ``responses`` of ``arms``."""
    names = {a.id: a.name for a in arms}
    return {int(r.id): response_key(names[r.arm_id], r) for r in responses if r.id is not None}


def drawn_ids(
    arms: Sequence[DispositionArm],
    *,
    session: Session,
    judge: str,
    kind: str,
    share: float,
    seed: int,
) -> set[int]:
    """The study's seeded sample for a second pass (:func:`drawn_sample`) as one call sees it.

    ``kind``: ``category`` (the classifier's repeat: stored ``repeat = 1`` scores count as
    drawn), ``graded`` or ``awareness``.
    """
    responses = answered_responses(arms, session=session)
    keys = response_keys(arms, responses)
    repeat = 1 if kind == "category" else 0
    stored = {
        s.response_id
        for s in scores_for(sorted(keys), session=session, kind=kind)
        if s.judge_model == judge and s.repeat == repeat
    }
    return drawn_sample(keys, share, seed, stored=stored)
