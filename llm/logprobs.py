"""Token logprobs: parsing what engines return, and turning top-k into a choice distribution.

Engines report, for each generated token, its log-probability and the ``k`` most likely
alternatives at that position (``top_logprobs``). An instrument that asks a
multiple-choice question reads the position where the answer letter is
(:func:`answer_position`) and turns the alternatives there into a distribution over the
letters (:func:`choice_distribution`). Parsers for the OpenAI wire format (also what
vLLM's server sends) and for vLLM's in-process output, and the JSON form stored in the
cache and on response rows, live here too so every backend produces the same
:class:`~llm.types.TokenLogprob` tuples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm.types import TokenLogprob

__all__ = [
    "ChoiceDistribution",
    "LogprobsCheck",
    "answer_position",
    "check_logprobs",
    "choice_distribution",
    "logprobs_from_json",
    "logprobs_text",
    "logprobs_to_json",
    "parse_openai_logprobs",
    "parse_vllm_logprobs",
]


@dataclass(frozen=True)
class ChoiceDistribution:
    """A distribution over answer choices read from one position's top-k logprobs.

    Attributes:
        probs: Probability of every choice (all choices are keys), normalised to sum to 1
            over the choices found in the top-k; choices not found get 0.0. All 0.0 when
            none was found.
        captured_mass: Sum of ``exp(logprob)`` of the matching tokens before normalising
            (how much of the model's probability the choices hold at that position).
        missing: Choices with no matching token in the top-k.
        found: ``False`` when no choice matched any token (the caller decides what that
            means; ``probs`` is then all zeros).
    """

    probs: dict[str, float]
    captured_mass: float
    missing: tuple[str, ...]
    found: bool


def choice_distribution(
    top: Sequence[tuple[str, float]], choices: Sequence[str]
) -> ChoiceDistribution:
    """Turn the top-k alternatives at one position into a distribution over ``choices``.

    A token counts for a choice only when ``token.strip() == choice`` exactly (so ``" B"``
    and ``"B"`` count for ``B``, but ``"b"``, ``"B)"`` or ``"Blue"`` do not); several
    tokens for the same choice add up.

    Args:
        top: ``(token, logprob)`` pairs at the answer position (e.g.
            :attr:`TokenLogprob.top`).
        choices: The answer choices (e.g. ``("A", "B", "C", "D")``); duplicates are
            ignored.

    Returns:
        The distribution (see :class:`ChoiceDistribution`).
    """
    wanted = list(dict.fromkeys(choices))
    mass = dict.fromkeys(wanted, 0.0)
    seen: set[str] = set()
    # A top-k list names each token once; a repeated token (some servers repeat the
    # sampled token) must not count twice.
    for token, logprob in dict(top).items():
        key = token.strip()
        if key in mass and math.isfinite(logprob):
            mass[key] += math.exp(logprob)
            seen.add(key)
    captured = sum(mass.values())
    missing = tuple(c for c in wanted if c not in seen)
    if captured <= 0.0:
        return ChoiceDistribution(dict.fromkeys(wanted, 0.0), 0.0, missing, False)
    probs = {c: m / captured for c, m in mass.items()}
    return ChoiceDistribution(probs, captured, missing, True)


def answer_position(
    logprobs: Sequence[TokenLogprob] | None,
    *,
    after: str | None = None,
    choices: Sequence[str] | None = None,
    max_skip: int = 3,
) -> TokenLogprob | None:
    """Find the token where the answer is, or ``None``.

    The search starts at the first token that begins at or after the end of the first
    occurrence of ``after`` in the decoded text (at the first token when ``after`` is
    ``None``, e.g. after an assistant prefill such as ``"Answer:"`` that the model
    continued). Whitespace-only tokens are skipped. Without ``choices`` the first other
    token is the answer; with ``choices`` the first token whose stripped text is a choice,
    allowing up to ``max_skip`` other tokens before it (``"(B)"`` → ``"B"``).

    Args:
        logprobs: The completion's token logprobs.
        after: Text that precedes the answer in the completion, e.g. ``"Answer:"``.
        choices: The answer choices.
        max_skip: Non-choice tokens tolerated before the choice token.

    Returns:
        The answer token with its top-k alternatives, or ``None`` when there are no
        logprobs, ``after`` does not occur, or no choice token comes soon enough.
    """
    if not logprobs:
        return None
    start = 0
    if after is not None:
        text = logprobs_text(logprobs)
        at = text.find(after)
        if at < 0:
            return None
        end = at + len(after)
        offset = 0
        start = len(logprobs)
        for i, tok in enumerate(logprobs):
            if offset >= end:
                start = i
                break
            offset += len(tok.token)
    wanted = set(choices) if choices is not None else None
    skipped = 0
    for tok in logprobs[start:]:
        stripped = tok.token.strip()
        if not stripped:
            continue
        if wanted is None or stripped in wanted:
            return tok
        skipped += 1
        if skipped > max_skip:
            return None
    return None


@dataclass(frozen=True)
class LogprobsCheck:
    """What a batch of answers says about an endpoint's logprobs.

    Attributes:
        checked: Answers looked at (failed requests are not answers).
        missing: Answers that carry no logprobs at all.
        short: Answers with a position holding fewer alternatives than asked for.
        misplaced: Answers whose logprobs are not those of the generated tokens (more
            positions than tokens were generated, or tokens that spell another text).
        fewest: The fewest alternatives seen at one position (``None``: no logprobs).
        top_k: The alternatives asked for per position.
    """

    checked: int
    missing: int
    short: int
    misplaced: int
    fewest: int | None
    top_k: int

    @property
    def problem(self) -> str | None:
        """One sentence naming what is wrong, or ``None`` when the logprobs are usable."""
        if self.checked == 0:
            return None
        if self.missing:
            return f"returned no logprobs for {self.missing} of {self.checked} answers"
        if self.misplaced:
            return (
                f"returned logprobs for other positions than the generated tokens in "
                f"{self.misplaced} of {self.checked} answers"
            )
        if self.short:
            return (
                f"returned {self.fewest} alternatives per position where {self.top_k} were "
                f"asked for ({self.short} of {self.checked} answers)"
            )
        return None


def check_logprobs(
    answers: Iterable[tuple[str | None, Sequence[TokenLogprob] | None]],
    *,
    top_k: int,
    max_tokens: int | None = None,
) -> LogprobsCheck:
    """Check that answers carry the logprobs that were asked for.

    Engines that drop ``logprobs`` (some OpenAI-compatible proxies), cap ``top_logprobs``
    below the request, or send the prompt's logprobs instead of the completion's, leave a
    letter reading at chance without any error; this names each case.

    Args:
        answers: ``(text, logprobs)`` of every answered request.
        top_k: Alternatives asked for per position (``0``: only the sampled token).
        max_tokens: Tokens the request allowed (more positions than this are not the
            completion's).

    Returns:
        The counts (see :class:`LogprobsCheck`).
    """
    checked = missing = short = misplaced = 0
    fewest: int | None = None
    for text, logprobs in answers:
        checked += 1
        if not logprobs:
            missing += 1
            continue
        k = min(len(t.top) for t in logprobs)
        fewest = k if fewest is None else min(fewest, k)
        short += k < top_k
        misplaced += (max_tokens is not None and len(logprobs) > max_tokens) or not _spells(
            logprobs, text or ""
        )
    return LogprobsCheck(checked, missing, short, misplaced, fewest, top_k)


def _spells(logprobs: Sequence[TokenLogprob], text: str) -> bool:
    # Byte-level tokens of non-ASCII text do not decode one by one, and engines differ in
    # leading whitespace: compare only ASCII texts, with the whitespace removed.
    if not text.isascii():
        return True
    return "".join(logprobs_text(logprobs).split()) == "".join(text.split())


def logprobs_text(logprobs: Iterable[TokenLogprob]) -> str:
    """The text the tokens spell (equals the completion text for engines that decode 1:1)."""
    return "".join(t.token for t in logprobs)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def parse_openai_logprobs(choice_logprobs: Any) -> tuple[TokenLogprob, ...] | None:
    """Parse ``choices[0].logprobs`` of an OpenAI-format chat completion.

    Accepts the ``openai`` client's objects or plain JSON dicts: ``{"content": [{"token",
    "logprob", "top_logprobs": [{"token", "logprob"}, ...]}, ...]}``.

    Returns:
        One :class:`TokenLogprob` per generated token, or ``None`` when the response
        carries no logprobs.
    """
    if choice_logprobs is None:
        return None
    content = _get(choice_logprobs, "content")
    if content is None:
        return None
    out: list[TokenLogprob] = []
    for item in content:
        token = str(_get(item, "token") or "")
        logprob = _float(_get(item, "logprob"))
        top = tuple(
            (str(_get(alt, "token") or ""), _float(_get(alt, "logprob")))
            for alt in (_get(item, "top_logprobs") or ())
        )
        out.append(TokenLogprob(token, logprob, tuple(sorted(top, key=lambda p: -p[1]))))
    return tuple(out)


def parse_vllm_logprobs(
    token_ids: Sequence[int],
    position_logprobs: Sequence[Mapping[int, Any] | None] | None,
    *,
    top_k: int | None = None,
) -> tuple[TokenLogprob, ...] | None:
    """Parse ``CompletionOutput.logprobs`` of in-process vLLM.

    vLLM gives, per generated position, a dict ``token_id -> Logprob(logprob, rank,
    decoded_token)`` holding the ``k`` most likely tokens plus the sampled one (which
    may rank below ``k``).

    Args:
        token_ids: ``CompletionOutput.token_ids`` (the sampled tokens).
        position_logprobs: ``CompletionOutput.logprobs`` (``None`` when not asked for).
        top_k: Keep this many alternatives per position (the ``logprobs=k`` asked for), so
            ``top`` means the same as the OpenAI format's; ``None`` keeps all.

    Returns:
        One :class:`TokenLogprob` per generated token, or ``None`` without logprobs.
    """
    if position_logprobs is None:
        return None
    out: list[TokenLogprob] = []
    for token_id, entries in zip(token_ids, position_logprobs, strict=False):
        entries = entries or {}
        ranked = sorted(
            (
                (str(_get(lp, "decoded_token") or ""), _float(_get(lp, "logprob")))
                for lp in entries.values()
            ),
            key=lambda p: -p[1],
        )
        if top_k is not None:
            ranked = ranked[:top_k]
        chosen = entries.get(token_id)
        token = str(_get(chosen, "decoded_token") or "") if chosen is not None else ""
        logprob = _float(_get(chosen, "logprob")) if chosen is not None else float("nan")
        out.append(TokenLogprob(token, logprob, tuple(ranked)))
    return tuple(out)


def logprobs_to_json(logprobs: Sequence[TokenLogprob] | None) -> list[dict[str, Any]] | None:
    """The JSON form stored in the cache and on response rows (``None`` stays ``None``)."""
    if logprobs is None:
        return None
    return [
        {
            "token": t.token,
            "logprob": _finite(t.logprob),
            "top": [[tok, _finite(lp)] for tok, lp in t.top],
        }
        for t in logprobs
    ]


def logprobs_from_json(data: Any) -> tuple[TokenLogprob, ...] | None:
    """Inverse of :func:`logprobs_to_json` (``None`` or malformed input gives ``None``)."""
    if not isinstance(data, list):
        return None
    out: list[TokenLogprob] = []
    for item in data:
        if not isinstance(item, Mapping):
            return None
        top = tuple((str(tok), _float(lp)) for tok, lp in item.get("top") or ())
        out.append(TokenLogprob(str(item.get("token", "")), _float(item.get("logprob")), top))
    return tuple(out)


def _finite(value: float) -> float | None:
    # -inf/NaN are not JSON (PostgreSQL's json type rejects them): stored as null.
    return value if math.isfinite(value) else None


def _float(value: Any) -> float:
    # JSON has no -inf: servers send very negative numbers or null for impossible tokens.
    if value is None:
        return float("-inf")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("-inf")
