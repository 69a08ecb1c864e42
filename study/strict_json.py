"""Find exactly one JSON object in a model reply (shared by the question filter and judges).

Strict about the data, tolerant only of wrapping real models add around it:

* with ``require_answer_tag`` the reply must hold exactly one ``<answer>…</answer>`` block
  and only its content is read;
* a Markdown code fence around the object is removed;
* prose before or after is ignored, but the text must contain exactly one top-level JSON
  object: none (or only broken JSON) and two or more are both errors;
* Python-style single quotes, trailing commas, comments and other near-JSON are errors
  (``json.loads`` decides), so nothing a model did not clearly say is guessed.

Validation of the object's fields is the caller's job; every failure raises
:class:`StrictParseError` with a short reason meant to be quoted in a repair request.
:func:`run_with_repair` is the request loop around it: one request per case, strict
parse, one repair request for a reply that breaks the format.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from llm.specs import ModelSpec
from llm.structured import FLAG_FALLBACK, ResponseFormat, with_format
from llm.types import ChatBackend, ChatMessage, ChatRequest, ChatResult, SamplingParams
from storage.errors import ServiceError

T = TypeVar("T")

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
REPAIR_SEPARATOR = "\n----- repair -----\n"


class StrictParseError(ValueError):
    """A model reply that does not follow the requested format (the message says how)."""


def _objects(text: str) -> list[Any]:
    """Every top-level JSON object that decodes, scanning left to right."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    i = 0
    while True:
        start = text.find("{", i)
        if start < 0:
            return found
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            i = start + 1
            continue
        found.append(value)
        i = end


def extract_json_object(text: str | None, *, require_answer_tag: bool = False) -> dict[str, Any]:
    """Return the one JSON object in a reply.

    Args:
        text: The model's reply.
        require_answer_tag: Read only the content of a single ``<answer>`` block.

    Raises:
        StrictParseError: Empty reply, missing or repeated ``<answer>`` block, no JSON
            object, or more than one.
    """
    if text is None or not text.strip():
        raise StrictParseError("the reply was empty")
    body = text
    if require_answer_tag:
        blocks = _ANSWER_RE.findall(text)
        if len(blocks) != 1:
            raise StrictParseError(
                "no <answer>...</answer> block" if not blocks else "more than one <answer> block"
            )
        body = blocks[0]
    fences = _FENCE_RE.findall(body)
    if len(fences) == 1:
        body = fences[0]
    objects = _objects(body)
    if not objects:
        raise StrictParseError("no valid JSON object (use double quotes and close every brace)")
    if len(objects) > 1:
        raise StrictParseError("more than one JSON object; give exactly one")
    return objects[0]


def word_count(text: str) -> int:
    """Whitespace-separated words of a text."""
    return len(text.split())


def join_raw(raws: list[str]) -> str | None:
    """Every raw reply of one case, first attempt first (kept for audit)."""
    return REPAIR_SEPARATOR.join(raws) if raws else None


def reply_reason(raw: str | None, *, limit: int = 300) -> str:
    """A judge's stated reason, read off its kept raw replies (:func:`join_raw`): the last
    reply's prose before its answer block, in one line of at most ``limit`` characters
    (empty for a structured reply, which is the JSON object alone).

    Model text: the caller escapes it wherever it is shown.
    """
    if not raw:
        return ""
    last = raw.split(REPAIR_SEPARATOR)[-1]
    prose = " ".join(last.split("<answer>", 1)[0].split())
    if prose.startswith("{") and prose.endswith("}"):  # a structured reply: data, no prose
        return ""
    return prose if len(prose) <= limit else prose[: limit - 1] + "…"


def greedy_request(messages: Sequence[ChatMessage], *, max_tokens: int) -> ChatRequest:
    """A classification request: greedy and seeded (so cached replies are reproducible)."""
    return ChatRequest(
        messages=tuple(messages),
        sampling=SamplingParams(
            temperature=0.0,
            top_p=1.0,
            top_k=None,
            repetition_penalty=None,
            max_tokens=max_tokens,
            seed=0,
        ),
    )


def judge_settings(
    model: str, messages: Sequence[ChatMessage], *, max_tokens: int, prompt_version: str
) -> dict[str, Any]:
    """What is stored with every verdict: the judge, its prompt and how it was asked.

    :func:`llm.request_settings.request_settings` of the :func:`greedy_request` every
    judge request is (the prompt hash covers the system message, not the case).
    """
    from llm.request_settings import request_settings

    req = greedy_request(messages, max_tokens=max_tokens)
    return request_settings(model, req.messages, req.sampling, prompt_version=prompt_version)


def _with_attempt(request: ChatRequest, attempt: int | None) -> ChatRequest:
    return request if attempt is None else dataclasses.replace(request, attempt=attempt)


def answer_text(request: ChatRequest, result: ChatResult) -> str | None:
    """The reply as the parsers read it.

    A reply to a request sent with a JSON schema (not fallen back) is the answer itself,
    with no ``<answer>`` block around it: it is read as that block's content, so one
    parser serves both. Every other reply is read as it came.
    """
    text = result.text
    fmt = request.response_format
    if (
        text is None
        or fmt is None
        or fmt.kind != "json_schema"
        or FLAG_FALLBACK in result.output_flags
        or "<answer>" in text.lower()
    ):
        return text
    return f"<answer>{text}</answer>"


#: A judge whose final replies fail to parse for more than this share of its cases stops.
PARSE_FAILURE_MAX = 0.5
#: Cases settled before the share is first checked (a few early errors prove nothing).
PARSE_CHECK_AFTER = 20


class JudgeUnreadable(ServiceError):
    """A judge's replies failed to parse for too many cases (the run stopped)."""


def _example(raw: str) -> str:
    flat = " ".join(raw.split())
    return repr(flat[:60] + ("…" if len(flat) > 60 else ""))


class _ParseGate:
    """Holds parse errors until enough cases settled to tell a broken judge from bad luck.

    Errors are passed on while the share of unreadable cases stays at or below
    :data:`PARSE_FAILURE_MAX`; above it (once :data:`PARSE_CHECK_AFTER` cases settled, or
    at the end with three or more errors) :class:`JudgeUnreadable` is raised with the share
    and three examples, and the held errors are never stored.
    """

    def __init__(self, spec: str, on_answer: Callable[..., None]) -> None:
        self.spec = spec
        self.on_answer = on_answer
        self.settled = 0
        self.errors = 0
        self.examples: list[str] = []
        self.held: list[tuple[Any, ...]] = []
        self.open = False

    def ok(self, *args: Any) -> None:
        self.settled += 1
        self.on_answer(*args)

    def error(self, raw: str, *args: Any) -> None:
        self.settled += 1
        self.errors += 1
        if len(self.examples) < 3:
            self.examples.append(_example(raw))
        self.held.append(args)
        if self.open or self.settled >= PARSE_CHECK_AFTER:
            self.check()

    def check(self, *, final: bool = False) -> None:
        share = self.errors / self.settled if self.settled else 0.0
        if share > PARSE_FAILURE_MAX and (self.settled >= PARSE_CHECK_AFTER or self.errors >= 3):
            self.held.clear()
            raise JudgeUnreadable(
                f"The judge {self.spec} gave unreadable replies for {self.errors} of "
                f"{self.settled} cases ({share:.0%}, above the {PARSE_FAILURE_MAX:.0%} "
                f"allowed), so the run stopped; the first ones: {', '.join(self.examples)}."
            )
        if self.open or final or self.settled >= PARSE_CHECK_AFTER:
            self.open = True
            held, self.held = self.held, []
            for args in held:
                self.on_answer(*args)


def run_with_repair(
    target: ChatBackend | ModelSpec,
    first: Sequence[Sequence[ChatMessage]],
    *,
    max_tokens: int,
    parse: Callable[[int, str], T],
    repair_message: Callable[[int, StrictParseError], str],
    on_answer: Callable[[int, T | None, list[str], StrictParseError | None], None],
    session: Any,
    concurrency: int,
    progress: Callable[[int, int], None] | None = None,
    attempt: int | None = None,
    response_format: Callable[[int], ResponseFormat | None] | None = None,
) -> int:
    """Send one request per case, strictly parse each reply and repair a broken one once.

    A reply that breaks the format gets exactly one repair request: the conversation, the
    reply and ``repair_message`` (what was wrong). Requests go through
    :func:`llm.batch.run_chat_batch` with the session, so they are cached.

    Args:
        target: The backend, or the ``provider/model`` spec to build one from.
        first: The first conversation of every case.
        max_tokens: Room for the reply (every request is a :func:`greedy_request`).
        parse: ``parse(i, text)`` reads case ``i``'s reply or raises
            :class:`StrictParseError`.
        repair_message: ``repair_message(i, error)``, the user turn asking case ``i`` again.
        on_answer: ``on_answer(i, value, raws, error)`` as each case is settled: ``raws``
            holds the first reply, then the repaired one if one was asked for; ``value`` is
            ``None`` and ``error`` set when the repaired reply broke the format too.
        session: Session for the LLM cache.
        concurrency: Requests in flight.
        progress: ``progress(done, total)`` over the first requests.
        attempt: Set on every request (its own cache entry and seed): asks the same cases
            again, e.g. to score the same responses a second time.
        response_format: ``response_format(i)``, the structured output format of case
            ``i``'s answer, attached to its requests unless the mode is ``off``
            (:func:`llm.structured.with_format`).

    Returns:
        How many requests failed at the endpoint (their case gets no ``on_answer``).

    Raises:
        JudgeUnreadable: more than :data:`PARSE_FAILURE_MAX` of the settled cases stayed
            unreadable (checked once :data:`PARSE_CHECK_AFTER` settled, and at the end);
            the unreadable cases not yet passed to ``on_answer`` never are.
    """
    from llm.batch import run_chat_batch

    gate = _ParseGate(target.spec, on_answer)
    failed = 0
    repairs: list[tuple[int, tuple[ChatMessage, ...], str]] = []

    def settle(
        i: int,
        req: ChatRequest,
        res: ChatResult,
        before: list[str],
        broken: Callable[[str, StrictParseError], None],
    ) -> None:
        """Count an endpoint failure, else parse case ``i``'s reply: settled, or ``broken``.

        ``before`` holds the replies that came before this one (the first reply of a repair).
        """
        nonlocal failed
        text = answer_text(req, res)
        if res.error is not None or res.text is None or text is None:
            failed += 1
            return
        try:
            value = parse(i, text)
        except StrictParseError as exc:
            broken(res.text, exc)
            return
        gate.ok(i, value, [*before, res.text], None)

    def on_first(i: int, req: ChatRequest, res: ChatResult) -> None:
        def ask_again(text: str, exc: StrictParseError) -> None:
            convo = (
                *first[i],
                ChatMessage(role="assistant", content=text),
                ChatMessage(role="user", content=repair_message(i, exc)),
            )
            repairs.append((i, convo, text))

        settle(i, req, res, [], ask_again)

    def on_repair(j: int, req: ChatRequest, res: ChatResult) -> None:
        i, _convo, raw = repairs[j]
        settle(i, req, res, [raw], lambda text, exc: gate.error(text, i, None, [raw, text], exc))

    def request(case: int, convo: Sequence[ChatMessage]) -> ChatRequest:
        req = _with_attempt(greedy_request(convo, max_tokens=max_tokens), attempt)
        return with_format(req, response_format(case) if response_format else None)

    def send(
        requests: Sequence[ChatRequest],
        on_result: Callable[[int, ChatRequest, ChatResult], None],
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        run_chat_batch(
            target,
            list(requests),
            session=session,
            concurrency=concurrency,
            progress=progress,
            on_result=on_result,
        )

    if first:
        send([request(i, c) for i, c in enumerate(first)], on_first, progress)
    if repairs:
        send([request(i, convo) for i, convo, _ in repairs], on_repair)
    gate.check(final=True)
    return failed
