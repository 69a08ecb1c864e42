"""The simulator's truth of a label-check task, for the simulated annotator pool.

:class:`annotation.simulated.AnnotatorPool` answers a ``label_check`` task with what the
step truly is: the drift simulator renders every step from a bank sentence whose leaf is
known (:func:`ontology.labelers.sim.true_leaf`), so the pool says Yes when the LLM's leaf
is that leaf and No with the true leaf as the better one otherwise; the pool adds its known
noise to the Yes / No. A step not from the bank (a real model's) gets no answer, so the pool
is for the simulator's runs alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.simulated import register_truth


def label_check_truth(data: Mapping[str, Any]) -> dict[str, str]:
    """The true verdict on a label-check task's leaf, and the true leaf when it is wrong."""
    from ontology.labelers.sim import true_leaf

    leaf = true_leaf(str(data.get("step") or ""))
    if leaf is None:
        return {}
    if leaf == str(data.get("assigned_leaf") or ""):
        return {"agree": "yes"}
    return {"agree": "no", "better_leaf": leaf}


register_truth("label_check", label_check_truth)
