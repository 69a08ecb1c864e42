"""What every labeler returns, whatever its kind (LLM, embedding, keywords, simulator)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ontology.schema import OntologyDoc

#: ``progress(done, total)`` as the CLI and Streamlit progress bars accept it.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class StepLabelResult:
    """The leaf chosen for one step; ``category``/``symbol`` are ``unmapped`` when none fits.

    ``parse_status`` is ``ok`` for a usable label; anything else (``empty_step``,
    ``unparseable``, ``request_failed``, ``unknown_step``) marks a label that is stored and
    counted but was not produced by a clean answer. ``raw_output`` keeps what an LLM said.
    """

    step_index: int
    category: str
    symbol: str
    parse_status: str = "ok"
    raw_output: str | None = None
    #: the request's settings (llm.request_settings) for a label an LLM gave; None otherwise
    settings: dict[str, Any] | None = None


@dataclass(frozen=True)
class LabelItem:
    """One response to label: its stable key (for caching and seeding) and its steps."""

    key: str
    steps: tuple[str, ...]
    repeat: int = 0


class StepLabeler(Protocol):
    """Labels every step of one response against one ontology."""

    spec: str

    def label_steps(self, steps: Sequence[str], *, ontology: OntologyDoc) -> list[StepLabelResult]:
        """Return one result per step, in step order."""
        ...


@dataclass(frozen=True)
class LabelBatch:
    """One :meth:`BatchLabeler.label_batch` call.

    Attributes:
        items: The responses to label.
        ontology: The ontology document the labels refer to.
        session: Database session for LLM request caching (ignored by offline labelers).
        progress: ``progress(done, total)`` as the labeler counts its work.
    """

    items: Sequence[LabelItem]
    ontology: OntologyDoc
    session: object | None = None
    progress: Progress | None = None


@runtime_checkable
class BatchLabeler(Protocol):
    """A labeler that is faster on many responses at once (LLM requests, embeddings).

    A labeler subclasses it and implements :meth:`label_all`; :meth:`label_batch` and
    :meth:`label_steps` (a batch of one) are the same for every batch labeler.
    """

    spec: str

    def label_batch(
        self,
        items: Sequence[LabelItem],
        *,
        ontology: OntologyDoc,
        session: object | None = None,
        progress: Progress | None = None,
    ) -> list[list[StepLabelResult]]:
        """Return the results of every item, in item order."""
        return self.label_all(LabelBatch(items, ontology, session, progress))

    def label_steps(self, steps: Sequence[str], *, ontology: OntologyDoc) -> list[StepLabelResult]:
        """Label the steps of one response (a batch of one, without a request cache)."""
        return self.label_batch([LabelItem("", tuple(steps))], ontology=ontology)[0]

    def label_all(self, batch: LabelBatch) -> list[list[StepLabelResult]]:
        """Label the batch of one :meth:`label_batch` call, in item order."""
        ...


def label_items(
    labeler: StepLabeler,
    items: Sequence[LabelItem],
    *,
    ontology: OntologyDoc,
    session: object | None = None,
    progress: Progress | None = None,
) -> list[list[StepLabelResult]]:
    """Label many responses with any labeler, using its batch path when it has one.

    Args:
        labeler: The labeler.
        items: Responses to label.
        ontology: The ontology document the labels refer to.
        session: Database session for LLM request caching (ignored by offline labelers).
        progress: ``progress(done, total)`` over items.
    """
    if isinstance(labeler, BatchLabeler):
        return labeler.label_batch(items, ontology=ontology, session=session, progress=progress)
    out = []
    for i, item in enumerate(items, start=1):
        out.append(labeler.label_steps(item.steps, ontology=ontology))
        if progress is not None:
            progress(i, len(items))
    return out
