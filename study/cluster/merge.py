"""One summary of a sharded pass from its shards' summaries."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any, TypeVar

S = TypeVar("S")


def merge_parts(
    make: type[S], parts: Sequence[object], *, tallies: Sequence[str] = (), **fixed: Any
) -> S:
    """The summary dataclass ``make`` of a whole pass from its shards' ``parts``.

    The fields given in ``fixed`` are taken as they are; each field named in ``tallies``
    (a mapping of counts) is added up over ``parts`` and kept sorted by key, as one
    process would count it; every other field is a count, summed over ``parts``.
    """
    merged: dict[str, Any] = dict(fixed)
    for name in tallies:
        counts: Counter[str] = Counter()
        for p in parts:
            counts.update(getattr(p, name))
        merged[name] = dict(sorted(counts.items()))
    for f in dataclasses.fields(make):  # type: ignore[arg-type]
        if f.name not in merged:
            merged[f.name] = sum(getattr(p, f.name) for p in parts)
    return make(**merged)
