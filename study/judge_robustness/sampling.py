"""What every instrument's side of judge robustness does alike: the stratified sample
of stored judgements, the columns of judgements asked for it, and what names them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    from sqlmodel import Session

T = TypeVar("T")
C = TypeVar("C")
Items = TypeVar("Items")


@dataclass(frozen=True)
class SampledJudgements:
    """The rows and columns of an instrument's judgements of a sample (its arrays: a subclass).

    Attributes:
        response_ids: The sampled responses (the rows).
        strata: Each row's stratum.
        labels: The judgement columns' labels (:func:`judgement_columns`).
    """

    response_ids: tuple[int, ...]
    strata: tuple[str, ...]
    labels: tuple[str, ...]


def stratified_sample(
    by_stratum: Mapping[str, Sequence[T]], *, sample: int, seed: int, minimum: int = 1
) -> tuple[list[T], list[str]]:
    """Each stratum's share of ``sample`` (at least ``minimum`` rows), drawn with ``seed``.

    A stratum with fewer than ``minimum`` rows gives all of them; the floor can take the
    total above ``sample``. Strata in name order, each one's rows in their given order;
    returns the rows picked and, aligned with them, their strata.
    """
    rng = np.random.default_rng(seed)
    n_all = sum(len(rows) for rows in by_stratum.values())
    picked: list[T] = []
    strata: list[str] = []
    for name, rows in sorted(by_stratum.items()):
        want = max(minimum, round(sample * len(rows) / n_all))
        for i in sorted(rng.permutation(len(rows))[: min(want, len(rows))]):
            picked.append(rows[int(i)])
            strata.append(name)
    return picked, strata


def judgement_columns(
    stored: C,
    *,
    primary: str,
    alternatives: Sequence[str],
    resamples: int,
    ask: Callable[[str, int | None], C],
) -> tuple[list[C], list[str]]:
    """The stored judgements, ``resamples - 1`` new ones by ``primary``, one per alternative.

    ``ask(judge, attempt)`` judges the sample again (``attempt`` k: the primary's k-th
    resample, a new cache entry and seed; ``None``: an alternative's first judgement).
    Returns the columns and their labels, in that order.
    """
    columns = [stored]
    labels = [primary]
    for k in range(1, resamples):
        columns.append(ask(primary, k))
        labels.append(f"{primary} (resample {k})")
    for alt in alternatives:
        columns.append(ask(alt, None))
        labels.append(alt)
    return columns, labels


@dataclass(frozen=True)
class Rejudging:
    """What one robustness call asks of an instrument's judgements (built once, passed down).

    Attributes:
        primary: The judge whose stored verdicts are the headline.
        alternatives: The other judges, each judging the sample once.
        resamples: Judgements of the primary judge per item, the stored one included.
        sample: How many stored judgements to draw (stratified).
        seed: The sampling seed.
        session: The workspace session (stored verdicts, the LLM cache).
        concurrency: Requests in flight.
    """

    primary: str
    alternatives: Sequence[str]
    resamples: int
    sample: int
    seed: int
    session: Session
    concurrency: int = 16

    def columns(self, stored: C, ask: Callable[[str, int | None], C]) -> tuple[list[C], list[str]]:
        """:func:`judgement_columns` of ``stored`` with this call's judges."""
        return judgement_columns(
            stored,
            primary=self.primary,
            alternatives=self.alternatives,
            resamples=self.resamples,
            ask=ask,
        )

    def asked(
        self, stored: C, items: Items, rejudge: Callable[..., C]
    ) -> tuple[list[C], list[str]]:
        """:meth:`columns`, each judge asked as ``rejudge(items, spec, attempt=, session=,
        concurrency=)``: judges are named by their stored text (labels, stored verdicts), so
        each is parsed here to ask it."""
        from llm.specs import ModelSpec

        return self.columns(
            stored,
            lambda judge, attempt: rejudge(
                items,
                ModelSpec.parse(judge),
                attempt=attempt,
                session=self.session,
                concurrency=self.concurrency,
            ),
        )
