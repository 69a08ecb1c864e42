"""Simulated bank-observability judge: did an extracted bank keep the conflict?

Task ``conflict-observability``. The case (last line of the first user message) holds the
curated conflict — its ``reference`` memories, each with its ``role`` (``side_a``,
``side_b``, ``relation`` or several, comma-joined) — and the ``extracted`` memories a
memory system kept. The true label follows the rule the lossy extractor is labelled by
(:func:`true_observability`): ``None`` when either side is gone, ``FULL`` when every
relation memory survived, ``PARTIAL`` otherwise. The simulated judge reports the truth
but moves to another label with a known probability (:data:`JUDGE_ERROR`), and a seeded
share of replies breaks the format (the preset's ``malformed_rate``), so the caller's
repair and error paths run.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from typing import Any

from llm.seeds import stable_int
from llm.sim.presets import SimPreset
from llm.sim.tasks import Messages, attempt_of, case_payload, malformed_draw, register_task

OBSERVABILITY_TASK = "conflict-observability"
LABELS: tuple[str, ...] = ("FULL", "PARTIAL", "None")
#: Probability that the simulated judge reports a label other than the true one.
JUDGE_ERROR: dict[str, float] = {"judge-lenient": 0.08, "judge-strict": 0.12}
DEFAULT_JUDGE_ERROR = 0.1


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def true_observability(reference: Iterable[Mapping[str, Any]], extracted: Iterable[str]) -> str:
    """The label of an extracted bank given the curated memories and their roles."""
    kept = {_norm(t) for t in extracted}
    side_a = side_b = False
    relation_all = True
    for ref in reference:
        roles = set(str(ref.get("role", "")).split(","))
        present = _norm(str(ref.get("text", ""))) in kept
        side_a |= "side_a" in roles and present
        side_b |= "side_b" in roles and present
        if "relation" in roles and not present:
            relation_all = False
    if not (side_a and side_b):
        return "None"
    return "FULL" if relation_all else "PARTIAL"


def judge_error(preset: SimPreset | str) -> float:
    """The error rate of a simulated observability judge."""
    name = preset if isinstance(preset, str) else preset.name
    return JUDGE_ERROR.get(name, DEFAULT_JUDGE_ERROR)


@register_task(OBSERVABILITY_TASK)
def _observe(messages: Messages, preset: SimPreset, sample_index: int, seed: int | None) -> str:
    case = case_payload(messages)
    key = json.dumps(case, sort_keys=True)
    truth = true_observability(case.get("reference") or [], case.get("extracted") or [])
    rng = random.Random(stable_int("conflict-observe", preset.name, key, sample_index, seed))
    label = truth
    if rng.random() < judge_error(preset):
        label = rng.choice([x for x in LABELS if x != truth])
    reason = {
        "FULL": "Both sides and every memory that explains the relation are still there.",
        "PARTIAL": "Both sides are there, but a memory that explains the relation is gone.",
        "None": "One side of the conflict is missing, so no conflict can be seen.",
    }[label]
    verdict = {"label": label, "reason": reason}
    attempt = attempt_of(messages)
    frng = random.Random(stable_int("conflict-observe-format", preset.name, key, seed, attempt))
    if malformed_draw(frng, preset, attempt, first_factor=1.0):
        kind = frng.choice(("no_answer_tag", "unknown_label", "prose_only"))
        if kind == "no_answer_tag":
            return json.dumps(verdict)
        if kind == "unknown_label":
            return f"<answer>{json.dumps({'label': 'MOSTLY', 'reason': reason})}</answer>"
        return "The bank looks mostly fine to me."
    return (
        f"I compared the kept memories with the reference.\n<answer>{json.dumps(verdict)}</answer>"
    )
