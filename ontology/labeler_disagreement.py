"""Which labeler disagrees, and on what: pure functions of a round's label records.

The agreement of a round (:mod:`ontology.agreement_tracking`) says *how much* labelers
agree and *which leaves* they confuse. Refining a definition also needs to know *who*
splits from the others, because a confusion caused by one weak labeler calls for a
different fix than one every labeler shares:

* :func:`odd_one_out` — for each confused leaf pair, how often each labeler alone took
  the other leaf of the pair than the majority of the other labelers, and the labeler
  that does so most (none when no labeler stands out, as always with two labelers);
* :func:`majority_confusion` — one labeler's leaves against the majority leaf of the
  other labelers, step by step (a confusion matrix whose diagonal is agreement);
* :func:`disagreements` — the steps labelers split on, one row per step (never once per
  pair it belongs to), optionally only those splitting a given leaf pair.

"Majority" is always the *others'* strict majority (more than half of the other labelers
that labeled the step), so a labeler is never compared with a majority it is part of.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ontology.agreement_tracking import LabelRecord, StepKey, label_matrix


@dataclass(frozen=True)
class OddOneOut:
    """Who splits alone on one confused leaf pair.

    Attributes:
        leaf_a: First leaf of the pair.
        leaf_b: Second leaf of the pair.
        steps: Steps on which some labeler gave ``leaf_a`` and another ``leaf_b``.
        by_labeler: Per labeler, the steps on which it gave one leaf of the pair while
            the other labelers' majority gave the other.
        labeler: The labeler with the most such steps, or ``None`` when none stands out
            (no such step, or a tie at the top).
    """

    leaf_a: str
    leaf_b: str
    steps: int
    by_labeler: dict[str, int]
    labeler: str | None

    @property
    def times(self) -> int:
        """How often the odd labeler split alone (0 when there is none)."""
        return self.by_labeler.get(self.labeler, 0) if self.labeler else 0


@dataclass(frozen=True)
class MajorityConfusion:
    """One labeler's leaves (columns) against the other labelers' majority leaf (rows).

    Attributes:
        labeler: The labeler compared.
        leaves: Row and column order.
        counts: ``counts[i][j]``: steps whose majority leaf is ``leaves[i]`` and which
            this labeler put under ``leaves[j]``.
        steps: Steps with both a label of this labeler and a majority of the others.
        agreement: Share of those steps on the diagonal, in percent (NaN without steps).
    """

    labeler: str
    leaves: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    steps: int
    agreement: float


@dataclass(frozen=True)
class Disagreement:
    """A step the labelers did not all put under the same leaf."""

    response_id: int
    step_index: int
    labels: dict[str, str]
    pairs: tuple[tuple[str, str], ...]
    text: str = ""


def _leaves(
    records: Sequence[LabelRecord], labelers: Sequence[str] | None
) -> tuple[tuple[str, ...], list[StepKey], list[list[str | None]]]:
    names, items, rows = label_matrix(records, labelers)
    return names, items, [[cell[1] if cell else None for cell in row] for row in rows]


def _majority(values: list[str]) -> str | None:
    """The value more than half of ``values`` are, else ``None``."""
    if not values:
        return None
    value, n = Counter(values).most_common(1)[0]
    return value if 2 * n > len(values) else None


def _others_majority(leaves: list[list[str | None]], m: int, k: int) -> str | None:
    return _majority([row[k] for i, row in enumerate(leaves) if i != m and row[k] is not None])  # type: ignore[misc]


def odd_one_out(
    records: Sequence[LabelRecord],
    pairs: Sequence[tuple[str, str]],
    *,
    labelers: Sequence[str] | None = None,
) -> tuple[OddOneOut, ...]:
    """For each leaf pair, which labeler splits alone from the others' majority.

    Args:
        records: A round's labels.
        pairs: The leaf pairs (``(leaf_a, leaf_b)``), e.g. the most confused ones.
        labelers: Labeler order (default: order of first appearance).
    """
    names, items, leaves = _leaves(records, labelers)
    out = []
    for a, b in pairs:
        by: dict[str, int] = dict.fromkeys(names, 0)
        steps = 0
        for k in range(len(items)):
            given = {row[k] for row in leaves}
            if a not in given or b not in given:
                continue
            steps += 1
            for m, row in enumerate(leaves):
                mine = row[k]
                if mine not in (a, b):
                    continue
                majority = _others_majority(leaves, m, k)
                if majority in (a, b) and majority != mine:
                    by[names[m]] += 1
        ranked = sorted(by.values(), reverse=True)
        top = ranked[0] if ranked else 0
        unique = top > 0 and (len(ranked) == 1 or ranked[1] < top)
        odd = next(n for n, v in by.items() if v == top) if unique else None
        out.append(OddOneOut(a, b, steps, by, odd))
    return tuple(out)


def majority_confusion(
    records: Sequence[LabelRecord], labeler: str, *, labelers: Sequence[str] | None = None
) -> MajorityConfusion:
    """One labeler's leaves against the majority leaf of the other labelers, step by step.

    Raises:
        KeyError: ``labeler`` has no labels among ``records``.
    """
    names, items, leaves = _leaves(records, labelers)
    if labeler not in names:
        raise KeyError(labeler)
    m = names.index(labeler)
    pairs: Counter[tuple[str, str]] = Counter()
    for k in range(len(items)):
        mine = leaves[m][k]
        majority = _others_majority(leaves, m, k)
        if mine is not None and majority is not None:
            pairs[(majority, mine)] += 1
    order = tuple(sorted({x for pair in pairs for x in pair}))
    index = {leaf: i for i, leaf in enumerate(order)}
    counts = [[0] * len(order) for _ in order]
    for (majority, mine), n in pairs.items():
        counts[index[majority]][index[mine]] = n
    steps = sum(pairs.values())
    same = sum(n for (majority, mine), n in pairs.items() if majority == mine)
    return MajorityConfusion(
        labeler,
        order,
        tuple(tuple(row) for row in counts),
        steps,
        100.0 * same / steps if steps else float("nan"),
    )


def disagreements(
    records: Sequence[LabelRecord],
    *,
    pair: tuple[str, str] | None = None,
    labelers: Sequence[str] | None = None,
    texts: Mapping[StepKey, str] | None = None,
    limit: int | None = None,
) -> list[Disagreement]:
    """The steps labelers split on, once each, in (response, step) order.

    Args:
        records: A round's labels.
        pair: Keep only steps on which one labeler gave ``pair[0]`` and another ``pair[1]``.
        labelers: Labeler order (default: order of first appearance).
        texts: Step texts by ``(response_id, step_index)``.
        limit: Keep at most this many rows.
    """
    names, items, leaves = _leaves(records, labelers)
    out: list[Disagreement] = []
    for k, (rid, idx) in enumerate(items):
        given = sorted({row[k] for row in leaves if row[k] is not None})  # type: ignore[type-var]
        if len(given) < 2 or (pair is not None and not set(pair) <= set(given)):
            continue
        split = tuple((x, y) for i, x in enumerate(given) for y in given[i + 1 :])
        labels = {names[m]: row[k] for m, row in enumerate(leaves) if row[k] is not None}
        out.append(
            Disagreement(rid, idx, labels, split, (texts or {}).get((rid, idx), ""))  # type: ignore[arg-type]
        )
        if limit is not None and len(out) >= limit:
            break
    return out
