"""The simulator's truth of reasoning drift's studies (label check, helpfulness,
distraction, acknowledgement), for the simulated pool.

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


def helpfulness_truth(data: Mapping[str, Any]) -> dict[str, str]:
    """The helpfulness of a simulated response as the simulated judge scores it before its
    noise (:func:`study.reasoning.sim.tasks.judge_verdict`).

    The task shows the parsed answer, or the whole reply when no answer parsed (its
    ``<step_…>`` / ``</think>`` tags still in it). A parsed answer of the stepped responder
    is a complete stepped answer (a preset draws at least three steps): 4; a reply whose
    answer did not parse has no answer: 1; no text: 0. The simulated judge takes a point
    off with probability 0.3, so its mean sits below the pool's.
    """
    text = str(data.get("response") or "").strip()
    if not text:
        return {"score": "0"}
    unparsed = "</think>" in text or "<step_" in text
    return {"score": "1" if unparsed else "4"}


#: The last step the distraction study offers (its choices: no, 1-6).
DISTRACTION_STEPS = 6


def distraction_truth(data: Mapping[str, Any]) -> dict[str, str]:
    """The earliest step whose leaf differs from the question's baseline trajectory under
    the model's preset (``no`` when none does), as the simulated judge reads distraction.

    The simulator renders every step from a bank sentence (:func:`step_leaves` reads the
    leaf back) and answers a question without memory with its seeded baseline
    (:func:`study.reasoning.sim.generator.baseline_steps`); a step whose leaf departs from
    it is the edit. Model noise edits steps too, so this truth counts a noise edit as
    influence, like the simulated judge: known-dose evidence on distraction needs the
    ``sim/null`` preset's noise floor beside it. A first edit past the study's sixth step
    is answered 6; a model that is not a simulator preset or a step from no bank sentence
    (a hostile step) gets no answer.
    """
    from llm.sim.registry import lookup
    from llm.specs import ModelSpec
    from storage.errors import ConfigError
    from study.reasoning.sim.generator import baseline_steps
    from study.reasoning.sim.tasks import step_leaves

    try:
        name = ModelSpec.parse(str(data.get("model") or "")).simulator_preset
    except ConfigError:  # a spec no longer parsable: not the simulator's run
        return {}
    preset = None if name is None else lookup(name)
    if preset is None:
        return {}
    steps = [
        part.split(":", 1)[1].strip()
        for part in str(data.get("steps_text") or "").split("\n\n")
        if part.startswith("Step ") and ":" in part
    ]
    leaves = step_leaves(steps)
    if any(leaf is None for leaf in leaves):
        return {}
    base = [leaf for leaf, _ in baseline_steps(str(data.get("question") or ""), preset)]
    for i in range(max(len(leaves), len(base))):
        if i >= len(leaves) or i >= len(base) or leaves[i] != base[i]:
            # the study offers steps 1-6: a later first edit is its last choice (the rate
            # reads only "no" against a step)
            return {"step": str(min(i + 1, DISTRACTION_STEPS))}
    return {"step": "no"}


register_truth("label_check", label_check_truth)
register_truth("helpfulness", helpfulness_truth)
register_truth("distraction", distraction_truth)
register_truth("acknowledgement", acknowledgement_truth)
