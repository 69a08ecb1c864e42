"""Cutting a plan into shards by question (pure: ids in, shards out)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from storage.errors import InputError

K = TypeVar("K", bound=Hashable)

#: Questions per shard when the caller does not say: small enough that a lost shard costs
#: little, large enough that a task's start-up (session, backend) is paid rarely.
DEFAULT_SHARD_QUESTIONS = 25


@dataclass(frozen=True)
class Shard:
    """One shard: its position and the questions (database ids) it covers."""

    index: int
    question_ids: tuple[int, ...]

    def lease_key(self, parent: str) -> str:
        """The shard's lease key below the coordinator's ``parent`` key."""
        return f"{parent}#shard:{self.index}"


def shard_by_question(
    question_ids: Iterable[int], *, per_shard: int = DEFAULT_SHARD_QUESTIONS
) -> list[Shard]:
    """Cut the questions, in ascending id order, into shards of ``per_shard`` questions.

    The same questions always give the same shards, so a rerun's shard ``i`` (and its
    lease) is the same work as the first attempt's.

    Raises:
        InputError: ``per_shard`` is below 1.
    """
    if per_shard < 1:
        raise InputError("--shard-questions must be at least 1.")
    ids = sorted(set(question_ids))
    return [
        Shard(index=i, question_ids=tuple(ids[start : start + per_shard]))
        for i, start in enumerate(range(0, len(ids), per_shard))
    ]


@dataclass(frozen=True)
class ShardScope(Generic[K]):
    """What one shard task of an instrument's run does: these units, under this lease.

    ``keys`` are the natural ids the instrument shards by (a conflicts bank's question id,
    a source-reliance item id, a disposition probe's stem). The coordinator holds the
    run-level lease, creates the run row and sets its status; a scoped call does neither.
    """

    keys: frozenset[K]
    lease_key: str


def shard_keys(
    keys: Iterable[K], *, per_shard: int = DEFAULT_SHARD_QUESTIONS
) -> list[tuple[K, ...]]:
    """Cut ``keys``, sorted, into groups of ``per_shard`` (the same keys, the same groups).

    Raises:
        InputError: ``per_shard`` is below 1.
    """
    if per_shard < 1:
        raise InputError("--shard-questions must be at least 1.")
    ids = sorted(set(keys))  # type: ignore[type-var]
    return [tuple(ids[i : i + per_shard]) for i in range(0, len(ids), per_shard)]


def shard_scopes(
    keys: Iterable[K], parent: str, *, per_shard: int = DEFAULT_SHARD_QUESTIONS
) -> list[ShardScope[K]]:
    """:func:`shard_keys`' groups as scopes, shard ``i`` under ``PARENT#shard:i``.

    Raises:
        InputError: ``per_shard`` is below 1.
    """
    return [
        ShardScope(frozenset(group), f"{parent}#shard:{i}")
        for i, group in enumerate(shard_keys(keys, per_shard=per_shard))
    ]
