"""The two requests the studio sends to models, in our own words (SPEC §5).

* the **labeling request**: the ontology plus one reasoning passage; the model answers
  one ``{step_index, category, symbol}`` per step as a JSON array inside ``<answer>``;
* the **rewrite request**: two confused definitions plus the disagreeing steps; the model
  answers two new definitions in ``<def1>…</def1><def2>…</def2>``.

Both system messages start with a marker (:data:`LABELING_MARKER`,
:data:`REWRITE_MARKER`) so that a simulated model can recognise the request it is asked to
answer. Bump the ``*_PROMPT_VERSION`` when any wording or layout here changes: it is stored
on every labeler spec and proposal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ontology.schema import UNMAPPED, LeafDef, OntologyDoc, RootDef

LABEL_PROMPT_VERSION = "label-v1"
REWRITE_PROMPT_VERSION = "rewrite-v1"
PARAPHRASE_PROMPT_VERSION = "paraphrase-v1"

LABELING_MARKER = "[driftlens label-steps v1]"
REWRITE_MARKER = "[driftlens rewrite-definitions v1]"
PARAPHRASE_MARKER = "[driftlens paraphrase-definition v1]"

LABEL_SYSTEM = (
    f"{LABELING_MARKER}\n"
    "You classify the steps of a reasoning passage by the value each step appeals to. "
    "You are given a value ontology: root categories, each split into leaf values with an "
    "operational definition, trigger words, exclusions and examples. Apply the definitions "
    "literally: a step belongs to the leaf whose definition it satisfies and whose "
    "exclusions it does not violate. Judge each step on its own text."
)

LABEL_INSTRUCTIONS = (
    "For every step of the passage return exactly one object\n"
    '{{"step_index": <the step number>, "category": "<root name>", "symbol": "<leaf name>"}}\n'
    "using the names exactly as written in the ontology. When no leaf fits a step, use "
    '"{unmapped}" for both category and symbol. Return one object per step, in step order, '
    "as a JSON array, and put the array inside <answer></answer>. Write nothing after "
    "</answer>."
)

REPAIR_TEMPLATE = (
    "Your reply could not be used: {error}. Reply again with only the JSON array inside "
    "<answer></answer>: one object per step for the step numbers {indices}, each with "
    '"step_index", "category" and "symbol" spelled exactly as in the ontology.'
)

REWRITE_SYSTEM = (
    f"{REWRITE_MARKER}\n"
    "You edit the operational definitions of a value ontology used to label reasoning "
    "steps. Labelers keep confusing two leaf values; you rewrite both definitions so that "
    "any step belongs to at most one of them."
)

REWRITE_INSTRUCTIONS = (
    "Rewrite the two definitions so that they are mutually exclusive:\n"
    "1. Decide, for every example step below, which of the two leaves it belongs to, and "
    "make the new definitions reflect those decisions.\n"
    "2. Add the keywords, verbs and edge cases that tell the two apart.\n"
    "3. Remove wording the two definitions share; do not use the same adjective in both.\n"
    '4. Make the criteria countable where possible ("names a person or group", "mentions a '
    'price or a duration").\n'
    "5. Keep each definition about as long as it is now.\n"
    "You may end a definition with a line 'Triggers: word, word, ...' and a line "
    "'Exclusions: word, word, ...'.\n"
    "Answer with the first leaf's new definition inside <def1></def1> and the second leaf's "
    "inside <def2></def2>, and nothing else."
)

#: The start of the refinement loop's second rewrite request for a pair (after the gate
#: rejected the first proposal); the gate's reasons follow.
RETRY_MARKER = "The proposal was rejected"
REWRITE_RETRY = (
    RETRY_MARKER + " by a held-out check: {reasons}. Rewrite the two definitions again so "
    "that they separate the example steps better, following the same rules."
)

PARAPHRASE_SYSTEM = (
    f"{PARAPHRASE_MARKER}\n"
    "You restate a definition in different words without changing what it includes or "
    "excludes."
)

PARAPHRASE_INSTRUCTIONS = (
    "Rewrite the definition below so that it means exactly the same thing: the same "
    "inclusions, the same exclusions, the same scope. Change the wording and the sentence "
    "order, not the meaning. Answer with the new definition inside <def1></def1>."
)

_STEP_RE = re.compile(r"<step_(\d+)>(.*?)</step_\1>", re.DOTALL)


def _terms(label: str, terms: Sequence[str]) -> str:
    return f" {label}: {', '.join(terms)}." if terms else ""


def _root_block(root: RootDef) -> list[str]:
    lines = [
        f"ROOT {root.name}: {root.definition.strip()}"
        f"{_terms('Triggers', root.triggers)}{_terms('Exclusions', root.exclusions)}"
    ]
    for leaf in root.leaves:
        lines.append(f"  - LEAF {leaf.name}: {leaf_text(leaf)}")
    return lines


def leaf_text(leaf: LeafDef, *, examples: bool = True) -> str:
    """One leaf's definition with its triggers, exclusions and (optionally) examples."""
    text = (
        f"{leaf.definition.strip()}"
        f"{_terms('Triggers', leaf.triggers)}{_terms('Exclusions', leaf.exclusions)}"
    )
    if examples and leaf.examples:
        text += " Examples: " + " | ".join(f'"{e}"' for e in leaf.examples)
    return text


def definition_block(leaf: LeafDef) -> str:
    """A leaf's definition with ``Triggers:``/``Exclusions:`` lines (what rewrites edit).

    :func:`ontology.parsing.split_definition` reads this format back.
    """
    lines = [leaf.definition.strip()]
    if leaf.triggers:
        lines.append(f"Triggers: {', '.join(leaf.triggers)}")
    if leaf.exclusions:
        lines.append(f"Exclusions: {', '.join(leaf.exclusions)}")
    return "\n".join(lines)


def render_ontology(doc: OntologyDoc) -> str:
    """The ontology as the labeling request shows it."""
    lines: list[str] = []
    for root in doc.roots:
        lines.extend(_root_block(root))
    return "\n".join(lines)


def render_passage(steps: Sequence[tuple[int, str]]) -> str:
    """The passage as numbered ``<step_N>`` blocks (``N`` is the 1-based step index)."""
    return "\n".join(f"<step_{n}>{text.strip()}</step_{n}>" for n, text in steps)


def labeling_messages(doc: OntologyDoc, steps: Sequence[tuple[int, str]]) -> list[tuple[str, str]]:
    """Build the labeling request as ``(role, content)`` pairs.

    Args:
        doc: The ontology.
        steps: ``(1-based step number, step text)`` of the steps to label.
    """
    user = (
        "ONTOLOGY\n"
        f"{render_ontology(doc)}\n\n"
        "PASSAGE\n"
        f"{render_passage(steps)}\n\n"
        "TASK\n"
        f"{LABEL_INSTRUCTIONS.format(unmapped=UNMAPPED)}"
    )
    return [("system", LABEL_SYSTEM), ("user", user)]


def passage_steps(user_message: str) -> list[tuple[int, str]]:
    """Recover ``(step number, text)`` from the PASSAGE section of a labeling request."""
    start = user_message.find("PASSAGE\n")
    end = user_message.find("\n\nTASK\n", start)
    region = user_message[start:end] if start >= 0 else user_message
    return [(int(m.group(1)), m.group(2)) for m in _STEP_RE.finditer(region)]


def rewrite_messages(
    name_a: str,
    def_a: str,
    name_b: str,
    def_b: str,
    evidence: Sequence[str],
) -> list[tuple[str, str]]:
    """Build the rewrite request for two leaves and the steps labelers split between them."""
    examples = "\n".join(f"{i}. {text.strip()}" for i, text in enumerate(evidence, start=1))
    user = (
        f"LEAF 1: {name_a}\nCURRENT DEFINITION 1:\n{def_a.strip()}\nEND DEFINITION 1\n\n"
        f"LEAF 2: {name_b}\nCURRENT DEFINITION 2:\n{def_b.strip()}\nEND DEFINITION 2\n\n"
        "STEPS SOME LABELERS PUT UNDER LEAF 1 AND OTHERS UNDER LEAF 2\n"
        f"{examples or '(none)'}\n\n"
        "TASK\n"
        f"{REWRITE_INSTRUCTIONS}"
    )
    return [("system", REWRITE_SYSTEM), ("user", user)]


def paraphrase_messages(name: str, definition: str) -> list[tuple[str, str]]:
    """Build the request for a meaning-preserving rewrite of one definition."""
    user = (
        f"LEAF: {name}\nCURRENT DEFINITION 1:\n{definition.strip()}\nEND DEFINITION 1\n\n"
        f"TASK\n{PARAPHRASE_INSTRUCTIONS}"
    )
    return [("system", PARAPHRASE_SYSTEM), ("user", user)]
