"""The ``keywords`` labeler: applies the definitions' triggers and exclusions mechanically.

It is fully offline and deterministic, and it reacts to definition edits (the rules are
read from the ontology document, never hard-coded). Scoring for a step and a leaf:

* +1 for every distinct leaf trigger found, +0.5 for every distinct trigger of its root;
* −1 for every distinct leaf exclusion found, −0.5 for every distinct root exclusion.

The best positive score wins; ties go to the leaf with more leaf-level matches, then to
document order (stable). A step with no positive score is ``unmapped``. Matching is on
whole words, case-insensitive; multi-word triggers match as phrases.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ontology.labelers.base import StepLabelResult
from ontology.schema import UNMAPPED, OntologyDoc

SPEC = "keywords"


def _pattern(terms: Sequence[str]) -> re.Pattern[str] | None:
    cleaned = sorted({t.strip().lower() for t in terms if t.strip()}, key=len, reverse=True)
    if not cleaned:
        return None
    alternatives = "|".join(re.escape(t).replace(r"\ ", r"\s+") for t in cleaned)
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE)


@dataclass(frozen=True)
class _LeafRules:
    leaf: str
    root: str
    triggers: re.Pattern[str] | None
    exclusions: re.Pattern[str] | None
    root_triggers: re.Pattern[str] | None
    root_exclusions: re.Pattern[str] | None


def _distinct(pattern: re.Pattern[str] | None, text: str) -> int:
    if pattern is None:
        return 0
    return len({m.group(0).lower() for m in pattern.finditer(text)})


@lru_cache(maxsize=32)
def _rules(doc: OntologyDoc) -> tuple[_LeafRules, ...]:
    rules = []
    for root in doc.roots:
        root_t, root_x = _pattern(root.triggers), _pattern(root.exclusions)
        for leaf in root.leaves:
            rules.append(
                _LeafRules(
                    leaf=leaf.name,
                    root=root.name,
                    triggers=_pattern(leaf.triggers),
                    exclusions=_pattern(leaf.exclusions),
                    root_triggers=root_t,
                    root_exclusions=root_x,
                )
            )
    return tuple(rules)


def _score(rule: _LeafRules, text: str) -> tuple[float, int]:
    """Return ``(score, leaf-level trigger hits)`` of one leaf for one step."""
    leaf_hits = _distinct(rule.triggers, text)
    score = (
        leaf_hits
        + 0.5 * _distinct(rule.root_triggers, text)
        - _distinct(rule.exclusions, text)
        - 0.5 * _distinct(rule.root_exclusions, text)
    )
    return score, leaf_hits


def score_step(text: str, doc: OntologyDoc) -> dict[str, float]:
    """Return the score of every leaf for one step (exposed for inspection and tests)."""
    return {r.leaf: _score(r, text)[0] for r in _rules(doc)}


def label_step(text: str, doc: OntologyDoc) -> tuple[str, str]:
    """Return ``(category, leaf)`` for one step, or ``("unmapped", "unmapped")``."""
    best: tuple[float, int] | None = None
    best_rule: _LeafRules | None = None
    for r in _rules(doc):
        key = _score(r, text)
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
        out = []
        for i, step in enumerate(steps):
            if not step or not step.strip():
                out.append(StepLabelResult(i, UNMAPPED, UNMAPPED, "empty_step"))
                continue
            category, leaf = label_step(step, ontology)
            out.append(StepLabelResult(i, category, leaf))
        return out
