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
"""

from __future__ import annotations

import json
import re
from typing import Any

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
