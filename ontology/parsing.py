"""Strict parsers of model answers: labeling arrays and rewritten definitions.

Strict means: exactly one ``<answer>`` block, valid JSON, an array with exactly one object
per requested step, names spelled as in the ontology (case and surrounding whitespace
forgiven), and a category that is the leaf's own root. Anything else raises
:class:`AnswerParseError` with a short reason the repair request quotes back to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from llm.structured import ResponseFormat
from ontology.schema import UNMAPPED, OntologyDoc

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


class AnswerParseError(ValueError):
    """A model answer that does not follow the requested format."""


def _lookup(names: Sequence[str]) -> dict[str, str]:
    return {n.strip().lower(): n for n in names}


def label_format(doc: OntologyDoc, step_indices: Sequence[int]) -> ResponseFormat:
    """The structured output format of a labeling answer (see :func:`parse_label_answer`).

    ``{"labels": {"<step>": {"category": ..., "symbol": ...}, ...}}``: one required property
    per asked step (so each step is labeled exactly once, in order), and per step one
    alternative per root whose ``symbol`` is one of that root's leaves (so a leaf always
    comes with its own root), or ``unmapped`` for both.
    """
    choices: list[dict[str, Any]] = []
    for root in doc.roots:
        leaves = [leaf.name for leaf in root.leaves]
        choices.append(_label_choice([root.name], leaves))
    choices.append(_label_choice([UNMAPPED], [UNMAPPED]))
    steps = {str(i): {"anyOf": choices} for i in step_indices}
    schema = {
        "type": "object",
        "properties": {
            "labels": {
                "type": "object",
                "properties": steps,
                "required": list(steps),
                "additionalProperties": False,
            }
        },
        "required": ["labels"],
        "additionalProperties": False,
    }
    return ResponseFormat("json_schema", "step_labels", schema=schema)


def _label_choice(categories: list[str], symbols: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": categories},
            "symbol": {"type": "string", "enum": symbols},
        },
        "required": ["category", "symbol"],
        "additionalProperties": False,
    }


def label_answer_json(labels: Mapping[int, tuple[str, str]]) -> str:
    """A labeling answer in the structured form of :func:`label_format` (the simulator's)."""
    body = {str(i): {"category": c, "symbol": s} for i, (c, s) in labels.items()}
    return json.dumps({"labels": body}, ensure_ascii=False, separators=(",", ":"))


def _structured_items(data: Any) -> list[Any] | None:
    """The items of the structured labeling object of :func:`label_format`, else ``None``."""
    if (
        not isinstance(data, dict)
        or set(data) != {"labels"}
        or not isinstance(data["labels"], dict)
    ):
        return None
    items: list[Any] = []
    for key, value in data["labels"].items():
        items.append({**value, "step_index": key} if isinstance(value, dict) else value)
    return items


def _whole_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        return None


def parse_label_answer(
    text: str | None, *, doc: OntologyDoc, step_indices: Sequence[int]
) -> dict[int, tuple[str, str]]:
    """Parse a labeling answer into ``{step number: (category, leaf)}``.

    Two forms are read: the prompt's JSON array inside one ``<answer>`` block, and a reply
    that is exactly the structured object of :func:`label_format` (what an engine with
    structured outputs returns); the same checks apply to both.

    Args:
        text: The model's reply.
        doc: The ontology the request showed.
        step_indices: The 1-based step numbers the request asked about.

    Raises:
        AnswerParseError: the reply breaks the format (the message says how).
    """
    if not text:
        raise AnswerParseError("the reply was empty")
    data: Any = _structured_items(_whole_json(text))
    if data is None:
        data = _answer_block_json(text)
        data = _structured_items(data) or data  # the structured object inside <answer>
    if not isinstance(data, list):
        raise AnswerParseError("the <answer> block must hold a JSON array")
    leaves = _lookup(doc.leaf_names)
    roots = _lookup([r.name for r in doc.roots])
    wanted = set(step_indices)
    out: dict[int, tuple[str, str]] = {}
    for item in data:
        if not isinstance(item, dict):
            raise AnswerParseError("every array element must be an object")
        index = item.get("step_index")
        if isinstance(index, str) and index.strip().isdigit():
            index = int(index.strip())
        if not isinstance(index, int) or isinstance(index, bool) or index not in wanted:
            raise AnswerParseError(f"step_index {index!r} is not one of the passage's steps")
        if index in out:
            raise AnswerParseError(f"step {index} is labeled twice")
        symbol, category = item.get("symbol"), item.get("category")
        if not isinstance(symbol, str) or not isinstance(category, str):
            raise AnswerParseError(f"step {index} needs string 'category' and 'symbol'")
        if symbol.strip().lower() == UNMAPPED or category.strip().lower() == UNMAPPED:
            if symbol.strip().lower() != category.strip().lower():
                raise AnswerParseError(f"step {index}: use unmapped for both fields or neither")
            out[index] = (UNMAPPED, UNMAPPED)
            continue
        leaf = leaves.get(symbol.strip().lower())
        if leaf is None:
            raise AnswerParseError(f"step {index}: {symbol!r} is not a leaf of the ontology")
        root = roots.get(category.strip().lower())
        if root != doc.root_of[leaf]:
            raise AnswerParseError(
                f"step {index}: leaf {leaf!r} belongs to {doc.root_of[leaf]!r}, not {category!r}"
            )
        out[index] = (root, leaf)
    missing = sorted(wanted - set(out))
    if missing:
        raise AnswerParseError(f"steps {missing} are missing")
    return out


def _answer_block_json(text: str) -> Any:
    blocks = _ANSWER_RE.findall(text)
    if len(blocks) != 1:
        raise AnswerParseError(
            "no <answer>...</answer> block" if not blocks else "more than one <answer> block"
        )
    try:
        return json.loads(blocks[0].strip())
    except json.JSONDecodeError as exc:
        raise AnswerParseError(f"the <answer> block is not valid JSON ({exc.msg})") from None


def _one_block(text: str, tag: str) -> str:
    blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL | re.IGNORECASE)
    if len(blocks) != 1 or not blocks[0].strip():
        raise AnswerParseError(f"expected exactly one non-empty <{tag}> block")
    return str(blocks[0]).strip()


def definitions_format(count: int = 2) -> ResponseFormat:
    """The structured output format of a rewrite (``count=2``) or paraphrase (``count=1``).

    A regex: the ``<defN>`` blocks :func:`parse_definitions` reads, one per line, each
    non-empty, without markup inside and at most 1,200 characters.
    """
    blocks = [rf"<def{i}>[^<>]{{1,1200}}</def{i}>" for i in range(1, count + 1)]
    return ResponseFormat("regex", f"definitions_{count}", pattern="\n".join(blocks))


def parse_definitions(text: str | None, *, count: int = 2) -> tuple[str, ...]:
    """Parse ``<def1>…</def1>`` (and ``<def2>…</def2>``) from a rewrite answer.

    Raises:
        AnswerParseError: a block is missing, repeated or empty.
    """
    if not text:
        raise AnswerParseError("the reply was empty")
    return tuple(_one_block(text, f"def{i}") for i in range(1, count + 1))


_TERMS_RE = re.compile(r"^\s*(triggers|exclusions)\s*:\s*(.*)$", re.IGNORECASE)


def split_definition(text: str) -> tuple[str, tuple[str, ...] | None, tuple[str, ...] | None]:
    """Split a rewritten definition into prose, triggers and exclusions.

    Lines ``Triggers: a, b`` and ``Exclusions: c, d`` (any case) are taken out of the prose;
    ``None`` means the line was absent, so the leaf keeps its current list.
    """
    prose: list[str] = []
    found: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        m = _TERMS_RE.match(line)
        if m:
            terms = tuple(t.strip().strip(".") for t in m.group(2).split(",") if t.strip(" ."))
            found[m.group(1).lower()] = terms
        else:
            prose.append(line)
    return " ".join(" ".join(prose).split()), found.get("triggers"), found.get("exclusions")
