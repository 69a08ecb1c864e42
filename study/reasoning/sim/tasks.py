"""Reasoning drift's simulated tasks: the question filter (SPEC §2) and the response judge.

Both answer by a fixed, documented rule applied to the case, so tests can predict every
verdict: :func:`filter_verdict` screens a question by its wording, :func:`judge_verdict`
scores a response against the simulator's baseline trajectory of its question (the steps'
leaves are read back from the sentence bank they were rendered from). The handlers register
their markers in :mod:`llm.sim.tasks` when this module is imported (the generic simulator
names :mod:`study.reasoning.sim` in ``llm.sim.registry.INSTRUMENT_SIM_MODULES``); the real
side's prompts (:mod:`study.reasoning.question_filter`, :mod:`study.reasoning.judges`) carry the
markers named here.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from typing import Any

from llm.seeds import stable_int
from llm.sim.presets import SimPreset
from llm.sim.tasks import Messages, attempt_of, case_payload, malformed_draw, register_task
from study.reasoning.sim.bank import STEP_SENTENCES
from study.reasoning.sim.generator import baseline_steps

QUESTION_FILTER_TASK = "question-filter"
JUDGE_TASK = "judge"

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


def acknowledges_memory(text: str) -> bool:
    """Whether a response's text says the memory does not matter (the simulator's truth of
    the ``acknowledgement`` study; the simulated responses never do unless told to)."""
    low = text.lower()
    return any(p in low for p in _ACK_PHRASES)


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
    if acknowledges_memory(text):
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
