"""What every labeler returns, whatever its kind (LLM, embedding, keywords, simulator)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ontology.schema import OntologyDoc


@dataclass(frozen=True)
class StepLabelResult:
    """The leaf chosen for one step; ``category``/``symbol`` are ``unmapped`` when none fits."""

    step_index: int
    category: str
    symbol: str
    parse_status: str = "ok"


class StepLabeler(Protocol):
    """Labels every step of one response against one ontology."""

    spec: str

    def label_steps(self, steps: Sequence[str], *, ontology: OntologyDoc) -> list[StepLabelResult]:
        """Return one result per step, in step order."""
        ...
