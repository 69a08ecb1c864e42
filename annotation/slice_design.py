"""How a calibration slice is drawn, with each task's known probability of being drawn.

A calibrated estimate (:mod:`driftlens_core.ppi`) weights every human-labelled item by one
over its probability of having been chosen; these draws make that probability known and
store it in the task (``inclusion_probability``) before anything reaches Label Studio.

* **Stratified** (``--select stratify=FIELD,limit=N``): the tasks are split by a field of
  their data (a question, a condition, a conflict type, a stem); ``N`` is shared out in
  proportion to the strata's sizes (largest remainders, every stratum at least one where
  ``N`` allows), and each stratum gives a seeded random ``k_s`` of its ``m_s`` tasks: every
  task's probability is ``k_s / m_s``. A fixed allocation makes the probabilities exact.
* **Active** (``--select active=true,limit=N``): more where the judges disagree. A study
  kind that can say how much its judges disagree on each task
  (:attr:`annotation.kinds.StudyKind.disagreement`) gives a weight
  ``w_i = d_i + mean(d)`` (the floor keeps every task drawable, so the estimate stays
  unbiased); the draw is Poisson sampling with ``π_i = min(1, c · w_i)``, ``c`` solved so
  that the ``π_i`` sum to ``N``, task ``i`` kept when its seeded uniform is below ``π_i``.
  The slice's size is random around ``N``; each ``π_i`` is exact.

Both are deterministic in the seed. Pure functions over built tasks (no session).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from annotation.selection import TaskSpec
from storage.errors import InputError

#: The task data field holding the probability that the task was chosen.
INCLUSION_FIELD = "inclusion_probability"


def _uniform(seed: int, key: str) -> float:
    """A seeded uniform in [0, 1) per task key (the first 52 bits of its hash)."""
    h = hashlib.sha256(f"slice:{seed}:{key}".encode()).digest()
    return (int.from_bytes(h[:8], "big") >> 12) / float(1 << 52)


def _order(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def proportional_allocation(sizes: Sequence[int], limit: int) -> list[int]:
    """``limit`` shared out over strata of ``sizes`` in proportion (largest remainders).

    Every non-empty stratum gets at least one task while ``limit`` covers the strata (taken
    from the largest shares), and none more than it holds.
    """
    total = sum(sizes)
    if limit >= total:
        return list(sizes)
    want = [m * limit / total for m in sizes]
    alloc = [min(m, int(w)) for m, w in zip(sizes, want, strict=True)]
    if limit >= sum(1 for m in sizes if m > 0):
        alloc = [max(a, 1) if m > 0 else 0 for a, m in zip(alloc, sizes, strict=True)]
    # too many after the floor of one: take back from the largest allocations
    while sum(alloc) > limit:
        i = max((j for j in range(len(alloc)) if alloc[j] > 1), key=lambda j: alloc[j] - want[j])
        alloc[i] -= 1
    order = sorted(range(len(sizes)), key=lambda i: -(want[i] - alloc[i]))
    while sum(alloc) < limit:
        for i in order:
            if sum(alloc) < limit and alloc[i] < sizes[i]:
                alloc[i] += 1
    return alloc


def stratified_draw(
    tasks: Sequence[TaskSpec], *, field: str, limit: int, seed: int
) -> list[TaskSpec]:
    """A stratified random slice of ``limit`` tasks, each with its probability stored.

    Raises:
        InputError: no task's data has ``field``.
    """
    strata: dict[str, list[TaskSpec]] = {}
    for t in tasks:
        if field not in t.data:
            raise InputError(
                f"stratify={field}: the tasks have no field {field!r} to stratify by "
                f"(fields: {', '.join(sorted(k for k in t.data if not k.startswith('_')))})."
            )
        strata.setdefault(str(t.data[field]), []).append(t)
    names = sorted(strata)
    alloc = proportional_allocation([len(strata[s]) for s in names], limit)
    out: list[TaskSpec] = []
    for name, k in zip(names, alloc, strict=True):
        members = sorted(strata[name], key=lambda t: _order(seed, t.key))
        for t in members[:k]:
            t.data[INCLUSION_FIELD] = k / len(members)
            out.append(t)
    return out


def poisson_probabilities(weights: Sequence[float], size: int) -> list[float]:
    """``π_i = min(1, c w_i)`` with ``Σ π_i = size`` (weights positive)."""
    n = len(weights)
    if size >= n:
        return [1.0] * n
    capped: set[int] = set()
    while True:
        free = [i for i in range(n) if i not in capped]
        c = (size - len(capped)) / sum(weights[i] for i in free)
        over = {i for i in free if c * weights[i] >= 1.0}
        if not over:
            return [1.0 if i in capped else c * weights[i] for i in range(n)]
        capped |= over


def active_draw(
    tasks: Sequence[TaskSpec], disagreement: Mapping[str, float], *, limit: int, seed: int
) -> list[TaskSpec]:
    """A Poisson slice of about ``limit`` tasks, more where judges disagree (module docstring).

    Tasks without a disagreement (one judge only) weigh the floor alone.

    Raises:
        InputError: a negative or non-finite disagreement.
    """
    d = [float(disagreement.get(t.key, 0.0)) for t in tasks]
    if any(not (x >= 0.0) or x == float("inf") for x in d):
        raise InputError("active: a judge disagreement must be a finite number >= 0.")
    floor = sum(d) / len(d) if d and sum(d) > 0 else 1.0
    pis = poisson_probabilities([x + floor for x in d], limit)
    out = []
    for t, p in zip(tasks, pis, strict=True):
        if _uniform(seed, t.key) < p:
            t.data[INCLUSION_FIELD] = p
            out.append(t)
    return out
