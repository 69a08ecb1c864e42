"""Task requests answered by the simulator: markers, payloads and the handler registry.

The workbench asks models for more than stepped answers: it screens questions, judges
responses, classifies and grades answers. Those prompts carry a *task marker* as the first
line of their system message (``[driftlens-task:<name>]``, see :func:`task_marker`) and put
the case to decide as a one-line JSON object on the last line of the first user message
(:func:`case_payload`). :func:`answer_task` finds the marker and hands the conversation to
the handler registered for it; :func:`llm.sim.chat.simulate_chat` calls it first, so the
in-process backend and the HTTP server both answer task requests the same way.

The handlers are instrument knowledge and live with their instrument
(``study/<instrument>/sim/``, e.g. reasoning drift's question filter and response judge in
:mod:`study.reasoning.sim.tasks`); they register here with :func:`register_task` when
imported, and :func:`answer_task` imports the instruments' simulator modules on the first
unknown marker (:func:`llm.sim.registry.load_instruments`).

The simulated answers are *known*: every verdict follows a fixed, documented rule applied
to the case, so tests can predict it, and a seeded share of replies breaks the requested
format (``malformed_rate`` of the preset, :func:`malformed_draw`) so the callers' repair and
error paths run. A conversation that already holds an assistant reply is a repair request:
it is answered well-formed except for a smaller seeded share, so some cases end as
recorded errors.

Handlers receive ``(messages, preset, sample_index, seed)`` and return the completion
text.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from llm.sim.presets import SimPreset
from llm.sim.registry import load_instruments
from llm.sim.response import SimResponse

Messages = Sequence[tuple[str, str]]
TaskHandler = Callable[[Messages, SimPreset, int, int | None], str]
#: ``(messages, seed, sample_index) -> text or None``: answers requests of a layer above
#: ``llm`` (e.g. the ontology studio's labeling prompts), which ``llm`` may not import;
#: whoever starts a simulator passes them in (see :func:`answer_task`).
Answerer = Callable[[Messages, int | None, int], str | None]

_MARKER_RE = re.compile(r"^\[driftlens-task:([a-z0-9][a-z0-9-]*)\]$")
_HANDLERS: dict[str, TaskHandler] = {}

#: A repair answer breaks the format again with this probability (when the preset has
#: any malformed rate at all), so a few cases end as recorded errors.
REPAIR_MALFORMED_RATE = 0.3


def task_marker(name: str) -> str:
    """Return the marker line that routes a request to task ``name``."""
    if not _MARKER_RE.match(f"[driftlens-task:{name}]"):
        raise ValueError(f"invalid task name {name!r}")
    return f"[driftlens-task:{name}]"


def register_task(name: str) -> Callable[[TaskHandler], TaskHandler]:
    """Register a handler for task ``name`` (decorator)."""
    task_marker(name)  # validates the name

    def deco(fn: TaskHandler) -> TaskHandler:
        _HANDLERS[name] = fn
        return fn

    return deco


def registered_tasks() -> tuple[str, ...]:
    """Names of the tasks the simulator answers (the instruments' included)."""
    load_instruments()
    return tuple(sorted(_HANDLERS))


def find_task(messages: Messages) -> str | None:
    """Return the task named by the first line of a system message, if any."""
    for role, content in messages:
        if role != "system":
            continue
        first = content.lstrip().split("\n", 1)[0].strip()
        found = _MARKER_RE.match(first)
        if found:
            return found.group(1)
    return None


def case_payload(messages: Messages) -> dict[str, Any]:
    """Decode the case: the last line of the first user message, a JSON object.

    The *first* user message is used because a repair request appends more user turns.
    An unreadable case gives ``{}`` (the handler then answers as a confused model would).
    """
    for role, content in messages:
        if role == "user":
            last = content.rstrip().rsplit("\n", 1)[-1]
            try:
                data = json.loads(last)
            except json.JSONDecodeError:
                return {}
            return data if isinstance(data, dict) else {}
    return {}


def attempt_of(messages: Messages) -> int:
    """How many assistant replies the conversation already holds (0 = first request)."""
    return sum(1 for role, _ in messages if role == "assistant")


def answer_task(
    messages: Messages,
    *,
    preset: SimPreset,
    sample_index: int,
    seed: int | None,
    answerers: Sequence[Answerer] = (),
) -> SimResponse | None:
    """Answer a task request, or return ``None`` when the conversation has no known task.

    Registered task markers come first; then each of ``answerers`` may claim the request.
    The answer is wrapped in a :class:`~llm.sim.response.SimResponse` with no steps, so
    callers keep one return type; ``condition_class`` is ``"task"`` and ``category`` the
    task name (``"external"`` for an answerer's reply).
    """
    name = find_task(messages)
    if name is not None and name not in _HANDLERS:
        load_instruments()  # the instruments register their task handlers when imported
    handler = _HANDLERS.get(name) if name is not None else None
    text: str | None = None
    if handler is not None:
        text = handler(messages, preset, sample_index, seed)
    else:
        for answer in answerers:
            text = answer(messages, seed, sample_index)
            if text is not None:
                name = "external"
                break
    if text is None:
        return None
    return SimResponse(
        text=text,
        leaves=(),
        edits=(),
        noise_edits=(),
        baseline_leaves=(),
        condition_class="task",
        category=name,
        dose=0.0,
        malformed=None,
        model=f"sim/{preset.name}",
    )


def malformed_draw(
    rng: random.Random, preset: SimPreset, attempt: int, first_factor: float
) -> bool:
    """Whether this reply breaks its format (every task handler, the instruments' too).

    A first request breaks with ``first_factor`` x the preset's malformed rate, a repair
    request with :data:`REPAIR_MALFORMED_RATE`; a preset without malformed replies never does.
    """
    if preset.malformed_rate <= 0:
        return False
    rate = REPAIR_MALFORMED_RATE if attempt > 0 else min(1.0, first_factor * preset.malformed_rate)
    return rng.random() < rate
