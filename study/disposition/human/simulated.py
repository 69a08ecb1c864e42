"""The simulator's truth of a ``disposition_check`` task, for the simulated annotator pool.

:class:`annotation.simulated.AnnotatorPool` answers a task with the category the simulated
answer truly takes: its stance sentence is read back to its role
(:func:`study.disposition.sim.responder.stance_role`, as the simulated classifier reads it)
and mapped to the battery's category of that role; the pool adds its known noise. The
aligned category is looked up in the shipped batteries by the task's battery name (the task
does not carry it: annotators would see it). Only simulated answers carry the stance
sentences; a real model's answer reads as ``no_stance``, so the pool is for the simulator's
studies alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from annotation.simulated import register_truth
from study.disposition.sim.responder import ProbeInfo, stance_role


@cache
def _aligned_of() -> dict[str, str]:
    from study.disposition.items import load_sample_batteries

    return {b.name: b.aligned_category for b in load_sample_batteries().batteries}


def category_truth(data: Mapping[str, Any]) -> dict[str, str]:
    """The true category of a ``disposition_check`` task's answer (none: left unanswered)."""
    categories = tuple(
        str(c.get("value")) for c in data.get("categories") or [] if isinstance(c, Mapping)
    )
    aligned = _aligned_of().get(str(data.get("battery", "")))
    if not categories or aligned is None:
        return {}
    info = ProbeInfo("", "", 0, categories, aligned)
    role = stance_role(str(data.get("answer") or ""))
    return {"category": info.role_categories()[role] if role is not None else info.no_stance}


register_truth("disposition_check", category_truth)
