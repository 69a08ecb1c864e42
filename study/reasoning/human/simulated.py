"""The simulator's truth of a label-check and an acknowledgement task, for the simulated pool.

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


def acknowledgement_truth(data: Mapping[str, Any]) -> dict[str, str]:
    """Whether the response truly says the memory does not matter (``1``) or not (``0``).

    The simulated responses never discuss the memory unless their text carries one of the
    simulator's acknowledgement phrases (:func:`study.reasoning.sim.tasks.acknowledges_memory`);
    the simulated judge calls the rest by a coin, so its rate is biased where people's is not.
    """
    from study.reasoning.sim.tasks import acknowledges_memory

    return {"acknowledged": "1" if acknowledges_memory(str(data.get("response") or "")) else "0"}


register_truth("label_check", label_check_truth)
register_truth("acknowledgement", acknowledgement_truth)
