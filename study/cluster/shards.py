"""Cutting a plan into shards by question (pure: ids in, shards out)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storage.errors import InputError

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
