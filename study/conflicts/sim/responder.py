"""The simulated memory-conflict responder and memory systems: banks in, answers out.

The responder (task ``conflict-response``) composes an answer from moves drawn at the rates
of its profile (:mod:`study.conflicts.sim.moves`) for the bank it is shown; the study layer
registers the banks it renders (:func:`register_sim_banks`) before a simulated generation,
and an unregistered request is answered as if every memory were core. The lossy and the
dialogue extractors drop memories with known probabilities; the CAAP action selector
(task ``caap-select``) draws an action from a known mixture per conflict type.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from llm.seeds import stable_int
from llm.sim.hostile import HOSTILE_TEXT
from llm.sim.presets import SimPreset
from llm.sim.tasks import Messages, attempt_of, malformed_draw, register_task
from study.catalog.memory_bank import BANK_HEADER, REQUEST_HEADER
from study.conflicts.actions import ACTION_LINE, ACTIONS, SELECT_TASK
from study.conflicts.sim.moves import (
    HOSTILE_PROFILE,
    RESPONSE_TASK,
    TypeRates,
    compose,
    draw_moves,
    responder_profile,
)

# ------------------------------------------------------------------ bank registry


@dataclass(frozen=True)
class SimBank:
    """What the responder needs to know about one bank (never shown to it as such)."""

    type: str
    high_risk: bool
    side_a: tuple[str, ...]
    side_b: tuple[str, ...]
    distractors: frozenset[str]


_BANKS: dict[str, SimBank] = {}


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def register_sim_banks(banks: Iterable[tuple[str, SimBank]]) -> int:
    """Register banks by their request text; returns how many are registered in all."""
    for request, bank in banks:
        _BANKS[_norm(request)] = bank
    return len(_BANKS)


def split_bank_message(content: str) -> tuple[list[str], str]:
    """``(memories, request)`` of a rendered bank message (empty when it is not one)."""
    if not content.startswith(BANK_HEADER):
        return [], ""
    head, sep, request = content.partition(f"\n\n{REQUEST_HEADER} ")
    if not sep:
        return [], ""
    return [ln[2:] for ln in head.splitlines()[1:] if ln.startswith("- ")], request


@register_task(RESPONSE_TASK)
def _respond(messages: Messages, preset: SimPreset, sample_index: int, seed: int | None) -> str:
    user = next((c for r, c in messages if r == "user"), "")
    memories, request = split_bank_message(user)
    bank = _BANKS.get(_norm(request))
    if bank is None:
        bank = SimBank("CPC", False, tuple(memories[:1]), tuple(memories[1:2]), frozenset())
    shown_d = [m for m in memories if m in bank.distractors]
    shown = set(memories)
    side_a = [m for m in bank.side_a if m in shown]
    side_b = [m for m in bank.side_b if m in shown]
    profile = responder_profile(preset)
    rates = profile.at_dose(bank.type, len(shown_d))
    if not memories and profile.abstain_no_memory is not None:
        rates = replace(rates, abstain=profile.abstain_no_memory)  # the no-memory track
    action = chosen_action(messages)
    if action is not None:
        rates = action_rates(rates, action)
    if not side_a or not side_b:
        # the bank lost one side of the conflict (pipeline track): nothing to perceive
        rates = replace(rates, perception_full=0.0, explanation_full=0.0)
    # Common random numbers: the moves' draws depend on the request, not on the rendered
    # bank, so the same instance at two doses differs only where the dose moved a rate
    # (a model's stable disposition per instance; the paired design relies on it).
    move_rng = random.Random(
        stable_int("conflict-moves", preset.name, preset.seed, _norm(request), sample_index, seed)
    )
    moves = draw_moves(rates, high_risk=bank.high_risk, rng=move_rng)
    rng = random.Random(
        stable_int("conflict-response", preset.name, preset.seed, user, sample_index, seed)
    )
    text = compose(
        moves, type_=bank.type, side_a=side_a, side_b=side_b, distractors=shown_d, rng=rng
    )
    return f"{text} {HOSTILE_TEXT}" if profile.name == HOSTILE_PROFILE else text


# ------------------------------------------------------------------ lossy extractor


def lossy_extract(
    core: Sequence[str],
    relation: Sequence[int],
    side_a: Sequence[int],
    side_b: Sequence[int],
    *,
    p_drop_relation: float,
    p_drop_side: float,
    rng: random.Random,
) -> tuple[list[str], str]:
    """Extract a bank the way a lossy memory system would, and label what survived.

    Each relation-carrying memory is dropped with ``p_drop_relation``; with
    ``p_drop_side`` a whole side of the conflict is collapsed (only its other side kept,
    the latest-wins rule of many systems). Labels: ``FULL`` — both sides and every relation
    memory kept; ``PARTIAL`` — both sides kept but a relation memory lost; ``None`` — one
    side gone, no observable conflict.

    Returns:
        The kept memories (in order) and the observability label.
    """
    keep = [True] * len(core)
    collapse = rng.random() < p_drop_side
    if collapse:
        for i in side_a:
            keep[i] = False
    for i in relation:
        if rng.random() < p_drop_relation:
            keep[i] = False
    kept_a = any(keep[i] for i in side_a)
    kept_b = any(keep[i] for i in side_b)
    if not (kept_a and kept_b):
        label = "None"
    elif all(keep[i] for i in relation):
        label = "FULL"
    else:
        label = "PARTIAL"
    return [t for t, k in zip(core, keep, strict=True) if k], label


# ------------------------------------------------------------------ action policy (CAAP)


#: Action mixture of the simulated backbone per conflict type (``default`` for any profile
#: without its own): the bench and tests compare the observed mixture with these.
ACTION_MIX: dict[str, dict[str, dict[str, float]]] = {
    "mc-balanced": {
        "BOC": {"reversible_trial": 0.68, "conditionalize": 0.12, "clarify": 0.12, "commit": 0.08},
        "CPC": {"conditionalize": 0.52, "clarify": 0.38, "commit": 0.10},
        "SCC": {"verify": 0.74, "defer": 0.14, "conditionalize": 0.06, "commit": 0.06},
    },
    "default": {
        "BOC": {"conditionalize": 0.5, "commit": 0.3, "clarify": 0.2},
        "CPC": {"conditionalize": 0.5, "clarify": 0.3, "commit": 0.2},
        "SCC": {"verify": 0.5, "commit": 0.35, "defer": 0.15},
    },
}


def action_mix(preset: SimPreset | str, type_: str) -> dict[str, float]:
    """The simulated backbone's action probabilities for one conflict type."""
    name = preset if isinstance(preset, str) else preset.name
    table = ACTION_MIX.get(name, ACTION_MIX["default"])
    return table.get(type_, ACTION_MIX["default"]["CPC"])


def chosen_action(messages: Messages) -> str | None:
    """The action named in a stage-2 system message, if any."""
    for role, content in messages:
        if role != "system":
            continue
        for line in content.splitlines():
            if line.startswith(ACTION_LINE):
                act = line.removeprefix(ACTION_LINE).strip().rstrip(".")
                return act if act in ACTIONS else None
    return None


def action_rates(rates: TypeRates, action: str) -> TypeRates:
    """Move rates of an answer written to carry out ``action`` (what each action implies)."""
    if action == "commit":
        return replace(rates, commit=0.9, calibrate=0.1, clarify_targeted=0.05)
    if action == "conditionalize":
        return replace(rates, calibrate=0.9, commit=0.05)
    if action in ("clarify", "verify"):
        return replace(
            rates,
            clarify_targeted=0.85,
            clarify_generic=0.1,
            calibrate=max(rates.calibrate, 0.6),
            commit=0.05,
        )
    if action == "defer":
        return replace(rates, calibrate=0.85, commit=0.02, unsafe=0.0)
    # reversible_trial: a low-harm step to try, with what would change it
    return replace(rates, calibrate=0.85, commit=0.1, unsafe=0.0)


@register_task(SELECT_TASK)
def _select(messages: Messages, preset: SimPreset, sample_index: int, seed: int | None) -> str:
    user = next((c for r, c in messages if r == "user"), "")
    _memories, request = split_bank_message(user)
    bank = _BANKS.get(_norm(request))
    type_ = bank.type if bank is not None else "CPC"
    mix = action_mix(preset, type_)
    # the whole shown bank seeds the draw: each dose of an instance chooses independently
    rng = random.Random(stable_int("caap-select", preset.name, _norm(user), sample_index, seed))
    u, acc, action = rng.random(), 0.0, next(iter(mix))
    for name, p in mix.items():
        acc += p
        if u < acc:
            action = name
            break
    attempt = attempt_of(messages)
    frng = random.Random(stable_int("caap-format", preset.name, _norm(request), seed, attempt))
    if malformed_draw(frng, preset, attempt, first_factor=1.0):
        return json.dumps({"action": "ask", "reason": "outside the action set"})
    return json.dumps({"action": action, "reason": "least cautious action the evidence allows"})


# ------------------------------------------------------------------ dialogue extractor


def dialogue_extract(
    sessions: Sequence[Sequence[tuple[Sequence[int], Sequence[int]]]],
    relation: Sequence[int],
    *,
    window: int,
    p_miss: float,
    p_miss_relation: float,
    p_overwrite: float,
    rng: random.Random,
) -> list[int]:
    """Which facts a lossy memory system keeps after ingesting a multi-session dialogue.

    ``sessions`` holds, per session, the ``(states, revises)`` of each user turn. Adjacent
    sessions are ingested together in windows of up to ``window`` sessions. Each stated
    fact is written with probability ``1 - p_miss`` (``1 - p_miss_relation`` for a fact
    carrying the conflict's relation: the context, phase or source that extraction tends
    to drop). A turn that revises earlier facts triggers, with ``p_overwrite``, the
    latest-wins rule: the revised facts stored from *earlier* windows are deleted (inside
    one window the system sees both statements together and keeps both).

    Returns:
        The kept fact indices, in the order they were first stored.
    """
    rel = set(relation)
    stored: dict[int, int] = {}  # fact -> window it was stored in
    order: list[int] = []
    for w_start in range(0, len(sessions), max(1, window)):
        w = w_start // max(1, window)
        for session in sessions[w_start : w_start + max(1, window)]:
            for states, revises in session:
                if revises and rng.random() < p_overwrite:
                    for f in revises:
                        if f in stored and stored[f] < w:
                            del stored[f]
                for f in states:
                    if f in stored:
                        continue
                    if rng.random() < (p_miss_relation if f in rel else p_miss):
                        continue
                    stored[f] = w
                    if f not in order:
                        order.append(f)
    return [f for f in order if f in stored]
