"""The simulator's structured outputs: a reply made to follow the requested format.

A real engine with constrained decoding can only emit text the format allows; the
simulator gets the same effect after the fact. Its handlers write their usual reply (an
``<answer>`` block, a letter in prose, ...) with no malformed draws (constrained decoding
never breaks the syntax), and :func:`conform_text` keeps only the part the format asks for:

* JSON schema: the first JSON value of the reply (inside ``<answer>`` when there is one),
  wrapped under the schema's one array property when the schema's root is an object and the
  reply held a bare array; re-serialised compactly;
* choice: the reply itself when it is one of the choices, else the first choice that stands
  as a word of its own in the reply, else the first choice (the engine must emit one);
* regex: the first match of the pattern in the reply.

When nothing in the reply fits (a handler that wrote no JSON at all) the reply is returned
unchanged, so the caller's check (:meth:`llm.structured.ResponseFormat.accepts`) sees an
endpoint that did not honour the format: the simulator can show the feature failing too.

:func:`read_format` reads the format of an HTTP request body (``response_format`` json_schema,
or vLLM's ``structured_outputs`` json/choice/regex), as the served simulator needs it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from llm.structured import ResponseFormat

__all__ = ["conform_text", "read_format"]

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def _first_json(text: str) -> Any:
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "[{":
            try:
                return decoder.raw_decode(text, i)[0]
            except json.JSONDecodeError:
                continue
    return None


def _conform_json(text: str, schema: dict[str, Any]) -> str | None:
    blocks = _ANSWER_RE.findall(text)
    value = _first_json(blocks[0] if blocks else text)
    if value is None:
        return None
    props = schema.get("properties") or {}
    if schema.get("type") == "object" and isinstance(value, list):
        arrays = [k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "array"]
        if len(arrays) != 1:
            return None
        value = {arrays[0]: value}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def conform_text(text: str | None, fmt: ResponseFormat | None) -> str | None:
    """The part of ``text`` that ``fmt`` allows (see the module docstring)."""
    if text is None or fmt is None:
        return text
    if fmt.kind == "json_schema":
        out = _conform_json(text, dict(fmt.schema or {}))
        return text if out is None else out
    if fmt.kind == "choice":
        choices = fmt.choices or ()
        if text.strip() in choices:
            return text.strip()
        for choice in choices:
            if re.search(rf"(?<!\w){re.escape(choice)}(?!\w)", text):
                return choice
        return choices[0] if choices else text
    found = re.search(fmt.pattern or "", text)
    return found.group(0) if found else text


def read_format(body: dict[str, Any]) -> ResponseFormat | str | None:
    """The format an HTTP request body asks for, ``None``, or an error sentence (a 400).

    ``structured_outputs`` (vLLM) wins over ``response_format``, as vLLM merges them.
    """
    so = body.get("structured_outputs")
    if so is not None:
        if not isinstance(so, dict):
            return "'structured_outputs' must be an object."
        given = [k for k in ("json", "choice", "regex") if so.get(k) is not None]
        if len(given) > 1:
            return "You can only use one kind of constraints for structured outputs."
        if given == ["choice"]:
            choices = so["choice"]
            if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
                return "'structured_outputs.choice' must be a list of strings."
            return ResponseFormat("choice", "choice", choices=tuple(choices))
        if given == ["regex"]:
            try:
                re.compile(str(so["regex"]))
            except re.error:
                return "'structured_outputs.regex' is not a valid regular expression."
            return ResponseFormat("regex", "regex", pattern=str(so["regex"]))
        if given == ["json"]:
            schema = so["json"]
            schema = json.loads(schema) if isinstance(schema, str) else schema
            return ResponseFormat("json_schema", "json", schema=schema)
    rf = body.get("response_format")
    # text, and OpenAI's JSON mode (json_object: any JSON, no schema; Mem0 asks for it),
    # constrain nothing the simulator checks: its answers to such requests are JSON already
    if rf is None or (isinstance(rf, dict) and rf.get("type") in ("text", "json_object")):
        return None
    if not isinstance(rf, dict) or rf.get("type") != "json_schema":
        return "'response_format' must be of type 'json_schema', 'json_object' or 'text'."
    js = rf.get("json_schema")
    if not isinstance(js, dict) or not isinstance(js.get("schema"), dict):
        return "When response_format type is 'json_schema', the 'json_schema' field must be set."
    return ResponseFormat("json_schema", str(js.get("name") or "json"), schema=js["schema"])
