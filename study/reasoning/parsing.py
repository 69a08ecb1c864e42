"""Parse stepped responses (``<think><step_N>…</step_N></think><answer>…</answer>``).

Real models bend the requested structure in many ways; the parser recovers what it can
and says, with one status code, how far the output was from the expected structure. It
never raises on any input, and the raw text is always stored next to the parse result,
so nothing is ever lost here.

Status codes, most important first (``parse_status`` is the first that applies; ``notes``
keeps every code that applied, plus informational notes such as ``html_entities``):

=================  ===========================================================================
``empty``          no text at all (``None``, empty or whitespace only)
``template_echo``  the output format was echoed back: ``<step_N>...</step_N>`` or
                   ``<answer>...</answer>`` holding only the placeholder ``...``; such steps
                   and answers are dropped (never counted as reasoning)
``no_steps``       no reasoning steps could be recovered
``no_answer``      no answer could be recovered (includes an empty ``<answer></answer>``)
``unclosed_tag``   a ``<think>``, ``<step_N>`` or ``<answer>`` tag was never closed
                   (typically a response cut at ``max_tokens``); its content is still used
``untagged_steps`` steps recovered from numbering (``1.``, ``Step 1:``, ``**Step 2**``) or
                   paragraphs instead of ``<step_N>`` tags (e.g. native ``<think>`` blocks)
``untagged_answer`` answer recovered from an ``Answer:`` label or the text after the
                   reasoning instead of ``<answer>`` tags
``empty_step``     one or more ``<step_N>`` tags were empty (they are left out of ``steps``)
``step_numbering`` duplicate, skipped or out-of-order step numbers (document order is kept)
``fenced``         the structure was wrapped in a markdown code fence
``tag_variant``    tags spelled differently (uppercase, ``<step1>``, ``<reasoning>``,
                   HTML-escaped, steps outside ``<think>``)
``extra_text``     prose outside the ``<think>``/``<answer>`` structure
``ok``             steps and answer found in exactly the expected structure
=================  ===========================================================================

A response is *usable* for drift analysis when it has at least one step and an answer,
whatever its status (:attr:`ParsedResponse.usable`).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

#: Status codes in priority order (the first that applies becomes ``parse_status``).
STATUS_PRIORITY: tuple[str, ...] = (
    "empty",
    "template_echo",
    "no_steps",
    "no_answer",
    "unclosed_tag",
    "untagged_steps",
    "untagged_answer",
    "empty_step",
    "step_numbering",
    "fenced",
    "tag_variant",
    "extra_text",
)
STATUS_OK = "ok"
#: Every value ``parse_status`` can take.
STATUS_VALUES: tuple[str, ...] = (*STATUS_PRIORITY, STATUS_OK)


@dataclass(frozen=True)
class ParsedResponse:
    """What the parser recovered from one response.

    Attributes:
        steps: Reasoning steps in document order, stripped, never empty strings.
        answer: The final answer, stripped, or ``None`` when none was found.
        parse_status: ``"ok"`` or the most important code of :data:`STATUS_PRIORITY`.
        notes: Every code that applied plus informational notes, in a stable order.
    """

    steps: tuple[str, ...]
    answer: str | None
    parse_status: str
    notes: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        """Whether the response has steps and an answer (drift can be computed)."""
        return bool(self.steps) and self.answer is not None


def render_response(steps: tuple[str, ...] | list[str], answer: str) -> str:
    """Render steps and an answer in exactly the structure the prompt asks for.

    Args:
        steps: Step texts, in order.
        answer: The final answer.

    Returns:
        ``<think><step_1>…</step_1>…</think><answer>…</answer>``.
    """
    body = "".join(f"<step_{i}>{s}</step_{i}>" for i, s in enumerate(steps, start=1))
    return f"<think>{body}</think><answer>{answer}</answer>"


# --------------------------------------------------------------------------- patterns

_FLAGS = re.IGNORECASE | re.DOTALL
_THINK_NAMES = r"think|thinking|reasoning|thought|thoughts"
_THINK_OPEN = re.compile(rf"<\s*({_THINK_NAMES})\s*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(rf"<\s*/\s*({_THINK_NAMES})\s*>", re.IGNORECASE)
_ANSWER_OPEN = re.compile(r"<\s*(answer|final_answer)\s*>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"<\s*/\s*(answer|final_answer)\s*>", re.IGNORECASE)
# ``<step_3>``, ``<step3>``, ``<Step-3>``, ``<step 3>``; the canonical spelling is checked apart.
_STEP_OPEN = re.compile(r"<\s*step[\s_-]?(\d+)\s*>", re.IGNORECASE)
_STEP_CLOSE = re.compile(r"<\s*/\s*step[\s_-]?(\d*)\s*>", re.IGNORECASE)
_ANY_TAG = re.compile(
    rf"<\s*/?\s*(?:{_THINK_NAMES}|answer|final_answer|step[\s_-]?\d*)\s*>", re.IGNORECASE
)
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)(?:\n?```|\Z)", re.DOTALL)
_ESCAPED_TAG = re.compile(r"&lt;\s*/?\s*(?:think|answer|step|reasoning)", re.IGNORECASE)
# Untagged numbering at the start of a line: "1.", "2)", "Step 3:", "**Step 4**", "### Step 5".
_NUMBERED = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:[*_]{1,2})?[ \t]*"
    r"(?:step[ \t]*(\d+)|(\d+)[.)])"
    r"[ \t]*(?:[*_]{1,2})?[ \t]*[:.)\-–—]?[ \t]*(?:[*_]{1,2}(?=\s))?",
    re.IGNORECASE | re.MULTILINE,
)
_ANSWER_LABEL = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:[*_]{1,2})?[ \t]*(?:final[ \t]+)?answer[ \t]*(?:[*_]{1,2})?"
    r"[ \t]*[:\-–—][ \t]*(?:[*_]{1,2}(?=\s))?",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass
class _Notes:
    codes: list[str]

    def add(self, code: str) -> None:
        if code not in self.codes:
            self.codes.append(code)


def parse_response(text: str | None) -> ParsedResponse:
    """Parse one model output into steps and an answer.

    Args:
        text: The raw model output (may be ``None`` when the request failed).

    Returns:
        The steps, the answer and a status code (see the module docstring).
    """
    if text is None or not text.strip():
        return ParsedResponse((), None, "empty", ("empty",))
    notes = _Notes([])
    work = _unfence(text.strip(), notes)
    if _ESCAPED_TAG.search(work):
        # Some serving stacks escape the model's tags; the structure is still there.
        work = html.unescape(work)
        notes.add("tag_variant")
        notes.add("html_entities")

    answer, before_answer, after_answer = _find_answer(work, notes)
    steps = _find_steps(before_answer, notes)
    if answer is None:
        answer = _untagged_answer(before_answer, notes)
        if answer is not None:
            # The labelled answer is not reasoning; re-read the steps without it.
            steps = _find_steps(_cut_answer_label(before_answer), _Notes([]))
    if after_answer.strip():
        notes.add("extra_text")
    # A small or base model may copy the requested format literally; its "..." steps
    # are the template, not reasoning, and must not count as steps.
    kept = [step for step in steps if not _PLACEHOLDER.match(step)]
    if len(kept) != len(steps) or (answer is not None and _PLACEHOLDER.match(answer)):
        notes.add("template_echo")
        steps = kept
        if answer is not None and _PLACEHOLDER.match(answer):
            answer = None

    if not steps:
        notes.add("no_steps")
    if answer is None:
        notes.add("no_answer")
    status = next((c for c in STATUS_PRIORITY if c in notes.codes), STATUS_OK)
    ordered = tuple(sorted(notes.codes, key=_note_order))
    return ParsedResponse(tuple(steps), answer, status, ordered)


_PLACEHOLDER = re.compile(r"^(?:\.{2,}|…+)$")


def _note_order(code: str) -> tuple[int, str]:
    try:
        return STATUS_PRIORITY.index(code), code
    except ValueError:
        return len(STATUS_PRIORITY), code


def _clean(fragment: str) -> str:
    """Strip whitespace around a fragment and decode HTML entities inside it."""
    out = fragment.strip()
    return html.unescape(out) if "&" in out and re.search(r"&[#\w]+;", out) else out


def _unfence(text: str, notes: _Notes) -> str:
    """Unwrap a markdown fence that holds the structure (or the whole output)."""
    if text.startswith("```"):
        match = _FENCE.match(text)
        if match:
            notes.add("fenced")
            rest = text[match.end() :].strip()
            if rest:
                notes.add("extra_text")
            return match.group(1).strip() + ("\n\n" + rest if rest else "")
    for match in _FENCE.finditer(text):
        inner = match.group(1)
        if _ANY_TAG.search(inner):
            notes.add("fenced")
            outside = (text[: match.start()] + text[match.end() :]).strip()
            if outside and not _ANY_TAG.search(outside):
                notes.add("extra_text")
                return inner.strip()
            return (text[: match.start()] + inner + text[match.end() :]).strip()
    return text


def _find_answer(text: str, notes: _Notes) -> tuple[str | None, str, str]:
    """Locate the tagged answer; return ``(answer, text_before, text_after)``."""
    opens = list(_ANSWER_OPEN.finditer(text))
    if not opens:
        return None, text, ""
    # Models sometimes restate the format first; the last answer block is the real one.
    # Skip opening tags that are only a restatement inside <think> ... </think> by taking
    # the last opening tag after the last reasoning close, if there is one.
    think_closes = list(_THINK_CLOSE.finditer(text))
    candidates = [m for m in opens if not think_closes or m.start() >= think_closes[-1].end()]
    open_match = candidates[-1] if candidates else opens[-1]
    if len(opens) > 1:
        notes.add("extra_text")
    if open_match.group(0) != "<answer>":
        notes.add("tag_variant")
    close = _ANSWER_CLOSE.search(text, open_match.end())
    if close is None:
        notes.add("unclosed_tag")
        body, after = text[open_match.end() :], ""
    else:
        if close.group(0) != "</answer>":
            notes.add("tag_variant")
        body, after = text[open_match.end() : close.start()], text[close.end() :]
    answer = _clean(body)
    if not answer:
        notes.add("empty_answer")
        return None, text[: open_match.start()], after
    return answer, text[: open_match.start()], after


def _find_steps(text: str, notes: _Notes) -> list[str]:
    """Recover the steps from the text before the answer."""
    region, outside = _reasoning_region(text, notes)
    tagged = list(_STEP_OPEN.finditer(region))
    if not tagged:
        # Models with native reasoning (Qwen, DeepSeek) may put steps outside <think>.
        tagged_out = list(_STEP_OPEN.finditer(text))
        if tagged_out:
            notes.add("tag_variant")
            region, outside = text, ""
            tagged = tagged_out
    if tagged:
        if "no_think" in notes.codes:
            notes.add("tag_variant")
        if outside.strip() and not _ANY_TAG.search(outside):
            notes.add("extra_text")
        return _tagged_steps(region, tagged, notes)
    if outside.strip():
        notes.add("extra_text")
    steps = _untagged_steps(region)
    if steps:
        notes.add("untagged_steps")
    return steps


def _reasoning_region(text: str, notes: _Notes) -> tuple[str, str]:
    """Return ``(reasoning, outside)``: the inside of ``<think>`` (or all of ``text``)."""
    opens = list(_THINK_OPEN.finditer(text))
    if not opens:
        if _THINK_CLOSE.search(text):
            # "<think>" prefilled by the chat template: only the closing tag is generated.
            close = _THINK_CLOSE.search(text)
            assert close is not None
            notes.add("tag_variant")
            return text[: close.start()], text[close.end() :]
        notes.add("no_think")
        return text, ""
    # With a native reasoning block followed by the requested one, prefer the block
    # that holds step tags.
    chosen = opens[-1]
    for match in opens:
        close = _THINK_CLOSE.search(text, match.end())
        inner = text[match.end() : close.start() if close else len(text)]
        if _STEP_OPEN.search(inner):
            chosen = match
            break
    if chosen.group(0) != "<think>":
        notes.add("tag_variant")
    close = _THINK_CLOSE.search(text, chosen.end())
    if close is None:
        notes.add("unclosed_tag")
        inner, after = text[chosen.end() :], ""
    else:
        inner, after = text[chosen.end() : close.start()], text[close.end() :]
    outside = text[: chosen.start()] + "\n" + after
    if len(opens) > 1:
        notes.add("extra_text")
    return inner, outside


def _tagged_steps(region: str, opens: list[re.Match[str]], notes: _Notes) -> list[str]:
    steps: list[str] = []
    numbers: list[int] = []
    for i, match in enumerate(opens):
        if not re.fullmatch(r"<step_\d+>", match.group(0)):
            notes.add("tag_variant")
        limit = opens[i + 1].start() if i + 1 < len(opens) else len(region)
        close = _STEP_CLOSE.search(region, match.end(), limit)
        if close is None:
            notes.add("unclosed_tag")
            body = region[match.end() : limit]
        else:
            if not re.fullmatch(r"</step_\d+>", close.group(0)):
                notes.add("tag_variant")
            body = region[match.end() : close.start()]
            between = region[close.end() : limit]
            if between.strip():
                notes.add("extra_text")
        numbers.append(int(match.group(1)))
        cleaned = _clean(body)
        if cleaned:
            steps.append(cleaned)
        else:
            notes.add("empty_step")
    if opens and region[: opens[0].start()].strip():
        notes.add("extra_text")
    if numbers != list(range(1, len(numbers) + 1)):
        notes.add("step_numbering")
    return steps


def _untagged_steps(region: str) -> list[str]:
    """Split untagged reasoning by numbering markers, else by paragraphs."""
    region = region.strip()
    if not region:
        return []
    markers = list(_NUMBERED.finditer(region))
    if markers:
        pieces = []
        preamble = region[: markers[0].start()].strip()
        for i, match in enumerate(markers):
            end = markers[i + 1].start() if i + 1 < len(markers) else len(region)
            pieces.append(_clean(region[match.end() : end]))
        steps = [p for p in pieces if p]
        # A one-line lead-in ("Let me think:") is not a step; a real paragraph is.
        if preamble and len(preamble.split()) > 12:
            steps.insert(0, _clean(preamble))
        return steps
    return [_clean(p) for p in re.split(r"\n[ \t]*\n", region) if p.strip()]


def _untagged_answer(text: str, notes: _Notes) -> str | None:
    """Recover an answer without tags: an ``Answer:`` label or text after ``</think>``."""
    labels = list(_ANSWER_LABEL.finditer(text))
    if labels:
        answer = _clean(text[labels[-1].end() :])
        if answer:
            notes.add("untagged_answer")
            return answer
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        after = _ANY_TAG.sub("", text[closes[-1].end() :])
        answer = _clean(after)
        if answer:
            notes.add("untagged_answer")
            # The trailing prose is the answer, not extra text.
            if "extra_text" in notes.codes and not text[: _first_think(text)].strip():
                notes.codes.remove("extra_text")
            return answer
    return None


def _first_think(text: str) -> int:
    match = _THINK_OPEN.search(text)
    return match.start() if match else 0


def _cut_answer_label(text: str) -> str:
    labels = list(_ANSWER_LABEL.finditer(text))
    return text[: labels[-1].start()] if labels else text
