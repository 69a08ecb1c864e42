"""Model output that a database can store: NUL characters are replaced and flagged.

PostgreSQL's ``text`` and ``jsonb`` refuse the NUL character (``\\x00``); a model that
emits one (it happens with small or broken models) must not crash the run that stores
its answer. Every result goes through :func:`sanitize_result` in the batch runner, before
it is cached or handed to a caller, so no path stores a NUL.
"""

from __future__ import annotations

from dataclasses import replace

from llm.types import ChatResult, TokenLogprob

NUL = "\x00"
REPLACEMENT = "\ufffd"
#: ``ChatResult.output_flags`` entry of an output whose NUL characters were replaced.
FLAG_NUL_REPLACED = "nul_replaced"


def strip_nul(text: str | None) -> str | None:
    """``text`` with every NUL replaced by U+FFFD (``None`` stays ``None``)."""
    if text is None or NUL not in text:
        return text
    return text.replace(NUL, REPLACEMENT)


def sanitize_result(result: ChatResult) -> ChatResult:
    """Replace NULs in the text, error and logprob tokens; flag the result when any was."""
    dirty = any(
        s is not None and NUL in s for s in (result.text, result.error, result.finish_reason)
    ) or any(NUL in t.token or any(NUL in alt for alt, _ in t.top) for t in result.logprobs or ())
    if not dirty:
        return result
    logprobs = None
    if result.logprobs is not None:
        logprobs = tuple(
            TokenLogprob(
                strip_nul(t.token) or "",
                t.logprob,
                tuple((strip_nul(alt) or "", lp) for alt, lp in t.top),
            )
            for t in result.logprobs
        )
    flags = result.output_flags
    if FLAG_NUL_REPLACED not in flags:
        flags = (*flags, FLAG_NUL_REPLACED)
    return replace(
        result,
        text=strip_nul(result.text),
        error=strip_nul(result.error),
        finish_reason=strip_nul(result.finish_reason),
        logprobs=logprobs,
        output_flags=flags,
    )
