"""The ``keywords`` labeler: applies the definitions' triggers and exclusions mechanically.

It is fully offline and deterministic, and it reacts to definition edits (the rules are
read from the ontology document, never hard-coded). Scoring for a step and a leaf:

* +1 for every distinct leaf trigger found, +0.5 for every distinct trigger of its root;
* −1 for every distinct leaf exclusion found, −0.5 for every distinct root exclusion.

A term is found when it occurs as whole words (case-insensitive); a multi-word term must
occur as consecutive words separated only by whitespace.

The best positive score wins; ties go to the leaf with more leaf-level matches, then to
document order (stable). A step with no positive score is ``unmapped``. Matching is on
whole words, case-insensitive; multi-word triggers match as phrases.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ontology.labelers.base import StepLabelResult
from ontology.schema import UNMAPPED, OntologyDoc

SPEC = "keywords"


_TOKEN = re.compile(r"[\w-]+")


def _normalise(term: str) -> str:
    return " ".join(term.lower().split())


def _term_set(terms: Sequence[str]) -> frozenset[str]:
    return frozenset(t for t in (_normalise(x) for x in terms) if t)


@dataclass(frozen=True)
class _LeafRules:
    leaf: str
    root: str
    triggers: frozenset[str]
    exclusions: frozenset[str]
    root_triggers: frozenset[str]
    root_exclusions: frozenset[str]


@dataclass(frozen=True)
class _Rules:
    leaves: tuple[_LeafRules, ...]
    max_words: int  # longest multi-word term, so phrases are built only that long
    phrase_starts: frozenset[str]  # first words of multi-word terms


@lru_cache(maxsize=32)
def _rules(doc: OntologyDoc) -> _Rules:
    leaves = []
    for root in doc.roots:
        root_t, root_x = _term_set(root.triggers), _term_set(root.exclusions)
        for leaf in root.leaves:
            leaves.append(
                _LeafRules(
                    leaf=leaf.name,
                    root=root.name,
                    triggers=_term_set(leaf.triggers),
                    exclusions=_term_set(leaf.exclusions),
                    root_triggers=root_t,
                    root_exclusions=root_x,
                )
            )
    every = [
        t
        for r in leaves
        for group in (r.triggers, r.exclusions, r.root_triggers, r.root_exclusions)
        for t in group
    ]
    return _Rules(
        tuple(leaves),
        max((t.count(" ") + 1 for t in every), default=1),
        frozenset(t.split(" ", 1)[0] for t in every if " " in t),
    )


def terms_in(
    text: str, max_words: int, phrase_starts: frozenset[str] | None = None
) -> frozenset[str]:
    """Every word and every whitespace-separated phrase of up to ``max_words`` words.

    A word is a maximal run of letters, digits, ``_`` and ``-`` (so "well-being" is one
    word and "cost/time" two), lower-cased. Matching rules against this set is one set
    intersection per rule instead of one regex scan per rule. ``phrase_starts`` limits
    phrases to those beginning with a word that starts some multi-word term.
    """
    matches = list(_TOKEN.finditer(text))
    words = [m.group(0).lower() for m in matches]
    found = set(words)
    # linked[i]: words i and i+1 are separated by whitespace only.
    linked = [text[a.end() : b.start()].isspace() for a, b in itertools.pairwise(matches)]
    for i, first in enumerate(words):
        if phrase_starts is not None and first not in phrase_starts:
            continue
        phrase = first
        for j in range(i, min(i + max_words - 1, len(linked))):
            if not linked[j]:
                break
            phrase = f"{phrase} {words[j + 1]}"
            found.add(phrase)
    return frozenset(found)


def _score(rule: _LeafRules, found: frozenset[str]) -> tuple[float, int]:
    """Return ``(score, leaf-level trigger hits)`` of one leaf for one step."""
    leaf_hits = len(rule.triggers & found)
    score = (
        leaf_hits
        + 0.5 * len(rule.root_triggers & found)
        - len(rule.exclusions & found)
        - 0.5 * len(rule.root_exclusions & found)
    )
    return score, leaf_hits


def score_step(text: str, doc: OntologyDoc) -> dict[str, float]:
    """Return the score of every leaf for one step (exposed for inspection and tests)."""
    rules = _rules(doc)
    found = terms_in(text, rules.max_words, rules.phrase_starts)
    return {r.leaf: _score(r, found)[0] for r in rules.leaves}


def label_step(text: str, doc: OntologyDoc) -> tuple[str, str]:
    """Return ``(category, leaf)`` for one step, or ``("unmapped", "unmapped")``."""
    return _label_with(_rules(doc), text)


def _label_with(rules: _Rules, text: str) -> tuple[str, str]:
    found = terms_in(text, rules.max_words, rules.phrase_starts)
    best: tuple[float, int] | None = None
    best_rule: _LeafRules | None = None
    for r in rules.leaves:
        key = _score(r, found)
        if key[0] <= 0:
            continue
        if best is None or key > best:  # strict: earlier leaves win ties
            best, best_rule = key, r
    if best_rule is None:
        return UNMAPPED, UNMAPPED
    return best_rule.root, best_rule.leaf


class KeywordLabeler:
    """Offline labeler driven by the ontology's triggers and exclusions."""

    spec = SPEC

    def label_steps(self, steps: Sequence[str], *, ontology: OntologyDoc) -> list[StepLabelResult]:
        """Label every step; an empty step is ``unmapped`` with parse status ``empty_step``."""
        # Hashing a whole document for the rule cache is not free: do it once per call.
        rules = _rules(ontology)
        out = []
        for i, step in enumerate(steps):
            if not step or not step.strip():
                out.append(StepLabelResult(i, UNMAPPED, UNMAPPED, "empty_step"))
                continue
            category, leaf = _label_with(rules, step)
            out.append(StepLabelResult(i, category, leaf))
        return out
