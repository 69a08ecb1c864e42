"""Turning a model's reply into a letter answer and a distribution over the letters.

Two readings of one reply:

* **from the logprobs** (preferred): the top-k alternatives at the answer position (the
  first generated letter within a few tokens, else the first non-blank position, else the
  first position;
  :func:`llm.logprobs.answer_position`) become a distribution over the item's letters with
  :func:`llm.logprobs.choice_distribution` — a token counts for a letter only when its
  stripped text *is* that letter, so "Answer" never counts as "A"; letters absent from the
  top-k get probability 0 (their logprob is below the k-th; the source paper puts −100 on
  them, the same thing after normalising). The answer is the most probable letter
  (``choose="argmax"``, the paper's rule for local models) or the generated one
  (``choose="generated"``, its rule for API models);
* **from the text** (choice-only mode, models without logprobs): the first option letter
  the reply states (``B``, ``B.``, ``(B)``, ``**B**``, ``Answer: B``, ``The answer is B``).

No letter found either way gives ``unknown`` with a uniform distribution, and the reading
says so (``unknown=True``) so reports can count it. The raw top-k list is kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llm.logprobs import answer_position, choice_distribution
from llm.structured import ResponseFormat, choice_format
from llm.types import TokenLogprob

UNKNOWN = "unknown"

_TEXT_PATTERNS = (
    re.compile(r"^\W*([A-J])(?:\W|$)"),  # "B", " B.", "(B)", "**B**"
    re.compile(r"\banswer\s*(?:is|:)?\s*\W*([A-J])(?:\W|$)", re.IGNORECASE),
    re.compile(r"\boption\s*\W*([A-J])(?:\W|$)", re.IGNORECASE),
)


@dataclass(frozen=True)
class LetterReading:
    """What one reply answered.

    Attributes:
        letter: The chosen letter, or ``"unknown"``.
        probs: Probability per letter (sums to 1), or ``None`` in choice-only mode when a
            letter was read from the text.
        method: ``logprobs``, ``text`` or ``none``.
        unknown: True when no letter was found (``probs`` is then uniform).
        captured_mass: Probability the letters held at the answer position (logprobs only).
        missing: Letters not in the top-k (logprobs only).
        generated: The letter the reply's text states, if any.
        top: The raw ``(token, logprob)`` list at the answer position.
    """

    letter: str
    probs: dict[str, float] | None
    method: str
    unknown: bool
    captured_mass: float | None = None
    missing: tuple[str, ...] = ()
    generated: str | None = None
    top: tuple[tuple[str, float], ...] = ()


def letter_format(letters: Sequence[str]) -> ResponseFormat:
    """The structured output format of a letter answer: one of the item's letters (choice)."""
    return choice_format("option_letter", letters)


def letter_from_text(text: str | None, letters: Sequence[str]) -> str | None:
    """The first option letter a reply states, or ``None``."""
    if not text:
        return None
    allowed = set(letters)
    for pat in _TEXT_PATTERNS:
        for m in pat.finditer(text.strip()):
            if m.group(1) in allowed:
                return m.group(1)
    return None


def read_letter(
    text: str | None,
    logprobs: Sequence[TokenLogprob] | None,
    letters: Sequence[str],
    *,
    choose: str = "argmax",
) -> LetterReading:
    """Read the answer of one reply (see the module docstring).

    Args:
        text: The reply's text.
        logprobs: Its token logprobs (``None`` when not asked for or not returned).
        letters: The item's option letters.
        choose: ``argmax`` (most probable letter) or ``generated`` (the stated one, when it
            is a letter; else the argmax).

    Raises:
        ValueError: unknown ``choose``.
    """
    if choose not in ("argmax", "generated"):
        raise ValueError(f"unknown choose {choose!r}; use argmax or generated")
    generated = letter_from_text(text, letters)
    tok = answer_position(logprobs, choices=letters) if logprobs else None
    if tok is None and logprobs:
        # No letter was generated (e.g. " The" or a bare "\n"): the letters may still be
        # among the alternatives at the first position, which is where the answer belongs.
        tok = answer_position(logprobs) or logprobs[0]
    if tok is not None:
        top = tok.top or ((tok.token, tok.logprob),)
        dist = choice_distribution(top, letters)
        if dist.found:
            best = max(letters, key=lambda k: dist.probs[k])
            letter = generated if choose == "generated" and generated else best
            return LetterReading(
                letter=letter,
                probs=dict(dist.probs),
                method="logprobs",
                unknown=False,
                captured_mass=dist.captured_mass,
                missing=dist.missing,
                generated=generated,
                top=tuple(top),
            )
    if generated is not None:
        return LetterReading(
            letter=generated, probs=None, method="text", unknown=False, generated=generated
        )
    uniform = {k: 1.0 / len(letters) for k in letters}
    return LetterReading(letter=UNKNOWN, probs=uniform, method="none", unknown=True)


def remap_three(
    probs: dict[str, float] | None, correct: str, wrong: str
) -> tuple[float, float, float] | None:
    """``(P(correct), P(the fixed wrong), P(any other))`` of a letter distribution."""
    if probs is None:
        return None
    pc = probs.get(correct, 0.0)
    pw = probs.get(wrong, 0.0)
    return pc, pw, max(0.0, sum(probs.values()) - pc - pw)
