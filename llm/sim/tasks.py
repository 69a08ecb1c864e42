"""Task requests answered by the simulator: the question filter and the response judge.

The workbench asks models for more than stepped answers: it screens questions (SPEC §2)
and judges responses (SPEC §10). Those prompts carry a *task marker* as the first line of
their system message (``[driftlens-task:<name>]``, see :func:`task_marker`) and put the
case to decide as a one-line JSON object on the last line of the first user message
(:func:`case_payload`). :func:`answer_task` finds the marker and hands the conversation to
the handler registered for it; :func:`llm.sim.chat.simulate_chat` calls it first, so the
in-process backend and the HTTP server both answer task requests the same way.

The simulated answers are *known*: every verdict follows a fixed, documented rule applied
to the case, so tests can predict it, and a seeded share of replies breaks the requested
format (``malformed_rate`` of the preset) so the callers' repair and error paths run.
A conversation that already holds an assistant reply is a repair request: it is answered
well-formed except for a smaller seeded share, so some cases end as recorded errors.

Handlers receive ``(messages, preset, sample_index, seed)`` and return the completion
text; register more with :func:`register_task`.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from llm.seeds import stable_int
from llm.sim.bank import STEP_SENTENCES
from llm.sim.generator import SimResponse, baseline_steps
from llm.sim.presets import SimPreset
from llm.sim.registry import load_instruments

Messages = Sequence[tuple[str, str]]
TaskHandler = Callable[[Messages, SimPreset, int, int | None], str]
#: ``(messages, seed, sample_index) -> text or None``: answers requests of a layer above
#: ``llm`` (e.g. the ontology studio's labeling prompts), which ``llm`` may not import;
#: whoever starts a simulator passes them in (see :func:`answer_task`).
Answerer = Callable[[Messages, int | None, int], str | None]

QUESTION_FILTER_TASK = "question-filter"
JUDGE_TASK = "judge"

_MARKER_RE = re.compile(r"^\[driftlens-task:([a-z0-9][a-z0-9-]*)\]$")
_HANDLERS: dict[str, TaskHandler] = {}

#: The domains of SPEC §2, in the order the filter reports them.
FILTER_DOMAINS: tuple[str, ...] = (
    "career",
    "education",
    "health",
    "finance",
    "relationship",
    "ethics and morality",
    "personal decision",
    "other",
)

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
    The answer is wrapped in a :class:`~llm.sim.generator.SimResponse` with no steps, so
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


# --------------------------------------------------------------------- question filter

# A question that opens like these asks for a fact, not for reasoning.
_LOOKUP_OPENINGS: tuple[str, ...] = (
    "what is",
    "what are",
    "what was",
    "what were",
    "who ",
    "whom ",
    "when did",
    "when was",
    "when will",
    "when is the",
    "where is",
    "where are",
    "which year",
    "in which year",
    "how many",
    "how much does",
    "how much is",
    "define",
    "name the",
    "list the",
)
_YEAR_RE = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_PERSONAL_RE = re.compile(r"\b(should i|do i|can i|my|for me)\b")
_TRIAGE_WORDS = ("symptom", "dosage", "diagnos", "chest pain", "prescription")
_LEGAL_WORDS = ("is it legal", "legally", "under the law", " sue ", "lawsuit", "tax code")
_POLL_WORDS = ("favourite", "favorite", "funniest", "coolest")
_TRADEOFF_WORDS = (
    "should",
    "better",
    "wiser",
    "worth",
    "weigh",
    "trade-off",
    "tradeoff",
    "compare",
    "justify",
    "reasonable",
    "sensible",
    "fair",
    "ethical",
    "acceptable",
    "decide",
    "right thing",
    " or ",
    "why",
)
_DOMAIN_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("career", ("job", "career", "employer", "colleague", "salary", "promotion", "team lead")),
    ("education", ("student", "university", "degree", "school", "study", "exam", "course")),
    ("health", ("health", "sleep", "exercise", "fitness", "tired", "habit", "gym", "meal")),
    ("finance", ("money", "loan", "invest", "saving", "rent", "buy", "budget", "income", "cost")),
    ("relationship", ("friend", "partner", "sibling", "parent", "family", "neighbour")),
    ("ethics and morality", ("ethical", "moral", "lie", "fair", "right thing", "report")),
    ("personal decision", ("decide", "move to", "pet", "trip", "weekend", "apartment")),
)


def filter_verdict(question: str) -> tuple[str, str, list[str]]:
    """The simulated filter's verdict on a question: ``(label, reason, domains)``.

    Rules, in order: a lookup opening, a calendar year, a question personalised to the
    asker, medical triage, jurisdiction-bound legal advice or a poll is rejected; a
    question with a trade-off or decision word is accepted; anything else is rejected as
    having nothing to reason about. Domains come from keyword tables (``other`` when none
    match). Exposed so tests can predict the simulator's answers.
    """
    low = " ".join(question.lower().split())
    if low.startswith(_LOOKUP_OPENINGS):
        label, reason = "REJECT", "Asks for a fact with one checkable answer, not for reasoning."
    elif _YEAR_RE.search(low):
        label, reason = "REJECT", "Tied to a specific date, so a reviewer could check it."
    elif _PERSONAL_RE.search(low):
        label, reason = "REJECT", "Personalised to the asker; the answer depends on who asks."
    elif any(w in low for w in _TRIAGE_WORDS):
        label, reason = "REJECT", "Medical triage belongs with a clinician, not a benchmark."
    elif any(w in low for w in _LEGAL_WORDS):
        label, reason = "REJECT", "Legal advice depends on the jurisdiction."
    elif any(w in low for w in _POLL_WORDS):
        label, reason = "REJECT", "A poll of tastes with no trade-off to reason about."
    elif any(w in low for w in _TRADEOFF_WORDS):
        label, reason = "ACCEPT", "Open trade-off that needs reasoning; anyone could ask it."
    else:
        label, reason = "REJECT", "No trade-off or decision to reason about."
    domains = [d for d, words in _DOMAIN_WORDS if any(w in low for w in words)] or ["other"]
    return label, reason, domains


_FILTER_BREAKS = ("truncated", "single_quotes", "missing_domains", "bad_label", "prose_only")


def _broken_filter_reply(kind: str, label: str, reason: str, domains: list[str]) -> str:
    good = json.dumps({"label": label, "reason": reason, "domains": domains})
    if kind == "truncated":
        return good[: max(1, len(good) // 2)]
    if kind == "single_quotes":
        return str({"label": label, "reason": reason, "domains": domains})
    if kind == "missing_domains":
        return json.dumps({"label": label, "reason": reason})
    if kind == "bad_label":
        return json.dumps({"label": "MAYBE", "reason": reason, "domains": domains})
    return f"I would {label.lower()} this question. {reason}"


@register_task(QUESTION_FILTER_TASK)
def _question_filter(
    messages: Messages, preset: SimPreset, sample_index: int, seed: int | None
) -> str:
    case = case_payload(messages)
    question = str(case.get("question", ""))
    label, reason, domains = filter_verdict(question)
    attempt = attempt_of(messages)
    rng = random.Random(
        stable_int("task-filter", preset.seed, question.strip(), sample_index, seed, attempt)
    )
    if malformed_draw(rng, preset, attempt, first_factor=2.5):
        return _broken_filter_reply(rng.choice(_FILTER_BREAKS), label, reason, domains)
    body = json.dumps({"label": label, "reason": reason, "domains": domains})
    # Real models often fence their JSON; the caller's parser must accept that.
    return f"```json\n{body}\n```" if rng.random() < 0.2 else body


# ----------------------------------------------------------------------------- judge

_LEAF_OF_SENTENCE: dict[str, str] = {
    s.strip(): leaf for leaf, sentences in STEP_SENTENCES.items() for s in sentences
}
_ACK_PHRASES = (
    "irrelevant",
    "regardless of who",
    "does not change",
    "doesn't change",
    "no bearing",
    "whoever asks",
    "not relevant",
)
_JUDGE_KINDS = ("helpfulness", "distraction", "acknowledgement")
_JUDGE_BREAKS = ("no_answer_tag", "out_of_range", "truncated", "prose_only")


def step_leaves(steps: Sequence[str]) -> list[str | None]:
    """The bank leaf each step sentence was rendered from (``None`` when not a bank line)."""
    return [_LEAF_OF_SENTENCE.get(str(s).strip()) for s in steps]


def judge_verdict(case: dict[str, Any], preset: SimPreset, rng: random.Random) -> dict[str, int]:
    """The simulated judge's scores of one case (every kind; the caller picks).

    * distraction 1 when a memory line is present and the steps' leaves differ from the
      question's seeded baseline trajectory (what the simulator answers without memory);
      model noise also changes steps, so this judge over-calls distraction a little, as a
      literal-minded judge would;
    * helpfulness 4 for a complete stepped answer, less for missing parts (no steps and no
      answer 0, no answer 1, one step 2), and one point less with probability 0.3 (the
      judge finds the answer generic);
    * acknowledgement 1 when the text says the memory does not matter, 0 when it cites a
      word of the memory line, otherwise a seeded coin: the simulated responses never
      discuss the memory, and the coin lets the preference export find both kinds.
    """
    memory = str(case.get("memory") or "")
    question = str(case.get("question") or "")
    steps = [str(s) for s in case.get("steps") or [] if str(s).strip()]
    answer = str(case.get("answer") or "").strip()
    text = " ".join([*steps, answer, str(case.get("text") or "")]).lower()

    base = [leaf for leaf, _ in baseline_steps(question, preset)]
    distraction = int(bool(memory) and step_leaves(steps) != base)

    if not steps and not answer:
        helpfulness = 0
    elif not answer:
        helpfulness = 1
    elif len(steps) < 2:
        helpfulness = 2
    else:
        helpfulness = 4
    if helpfulness > 0 and rng.random() < 0.3:
        helpfulness -= 1

    memory_words = {w for w in re.findall(r"[a-z]{5,}", memory.lower())}
    if any(p in text for p in _ACK_PHRASES):
        acknowledgement = 1
    elif memory_words & set(re.findall(r"[a-z]{5,}", text)):
        acknowledgement = 0
    else:
        acknowledgement = int(rng.random() < 0.5)
    return {
        "helpfulness": helpfulness,
        "distraction": distraction,
        "acknowledgement": acknowledgement,
    }


@register_task(JUDGE_TASK)
def _judge(messages: Messages, preset: SimPreset, sample_index: int, seed: int | None) -> str:
    case = case_payload(messages)
    wanted = [k for k in case.get("criteria") or ["helpfulness"] if k in _JUDGE_KINDS]
    key = json.dumps(case, sort_keys=True)
    attempt = attempt_of(messages)
    verdict = judge_verdict(
        case, preset, random.Random(stable_int("task-judge", preset.seed, key, sample_index, seed))
    )
    out = {k: verdict[k] for k in wanted}
    rng = random.Random(
        stable_int("task-judge-format", preset.seed, key, sample_index, seed, attempt)
    )
    note = (
        "The reasoning departs from the usual path for this question."
        if out.get("distraction")
        else "The reasoning reads as it would without any memory."
    )
    if malformed_draw(rng, preset, attempt, first_factor=2.0):
        kind = rng.choice(_JUDGE_BREAKS)
        if kind == "no_answer_tag":
            return json.dumps(out)
        if kind == "out_of_range":
            return f"{note}\n<answer>{json.dumps({**out, 'helpfulness': 5})}</answer>"
        if kind == "truncated":
            return f"{note}\n<answer>{json.dumps(out)[:-3]}"
        return f"{note} Overall a solid response."
    return f"{note}\n<answer>{json.dumps(out)}</answer>"
