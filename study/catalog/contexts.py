"""Context families: what the model is told, rendered into chat messages one way for all.

Every instrument varies *what the model is told* and measures what changes. The thing told is
a context instance of one **family**:

* ``memory_line`` — one line about the user before the question (reasoning drift, the
  perturbation catalog; :class:`MemoryLineContext`);
* ``memory_bank`` — a bank of stored memories, some of them in conflict (memory conflicts);
* ``assertions`` — a user and/or a document asserting an answer (source reliance).

A family instance renders an item's system text and user text into the messages of one
request and says what it did (:class:`RenderedContext`): the condition key stored with the
response, the seed of any shuffle, and provenance that judges and reports may see but the
model does not. Rendering is a pure function of the instance, the texts and the seed, so a
rerun renders byte-identical prompts and hits the request cache.

New families implement :class:`ContextFamily` and register their name in
:data:`CONTEXT_FAMILIES` (the catalog's list of what can be rendered).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from llm.types import ChatMessage
from study.prompts import build_user_message

#: The context families the workbench knows, by name (``ContextFamily.family``).
CONTEXT_FAMILIES: tuple[str, ...] = ("memory_line", "memory_bank", "assertions")


@dataclass(frozen=True)
class RenderedContext:
    """The messages of one request and what the context contributed to them.

    Attributes:
        messages: The chat messages to send, in order.
        family: The family's name (one of :data:`CONTEXT_FAMILIES`).
        condition: The condition key stored with the response (a perturbation key, an
            assertion variant such as ``"u+d-"``, a bank id with its distractor dose...).
        seed: The seed of any random choice made while rendering (shuffles), or ``None``.
        provenance: What was shown and where it came from, for judges and reports only
            (never sent to the model); JSON-serialisable values.
    """

    messages: tuple[ChatMessage, ...]
    family: str
    condition: str
    seed: int | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class ContextFamily(Protocol):
    """One context instance that renders an item's texts into request messages."""

    @property
    def family(self) -> str:
        """The family's name (one of :data:`CONTEXT_FAMILIES`)."""
        ...

    @property
    def condition(self) -> str:
        """The condition key this instance stands for."""
        ...

    def render(self, *, system: str | None, user_text: str, seed: int) -> RenderedContext:
        """Render the messages of one request.

        Args:
            system: The instrument's system text, or ``None`` for no system message.
            user_text: The item's own text (a question, a request, a stem).
            seed: Seed for any random choice; families without one ignore it and record
                ``None``.

        Returns:
            The rendered request and what the context contributed.
        """
        ...


def _with_system(system: str | None, user: str) -> tuple[ChatMessage, ...]:
    head = () if system is None else (ChatMessage(role="system", content=system),)
    return (*head, ChatMessage(role="user", content=user))


@dataclass(frozen=True)
class MemoryLineContext:
    """A memory line before the user text (the reasoning-drift perturbation).

    An empty or ``None`` line is the baseline. The layout is exactly
    :func:`study.prompts.build_user_message`, so the reasoning instrument's prompts are
    instances of this family.

    Attributes:
        condition: The perturbation key (``"baseline"`` for none).
        memory_line: The stimulus text, verbatim.
    """

    condition: str
    memory_line: str | None = None
    family: str = field(default="memory_line", init=False)

    def render(self, *, system: str | None, user_text: str, seed: int) -> RenderedContext:
        """Render ``memory_line + separator + user_text`` (no randomness; ``seed`` unused)."""
        del seed
        return RenderedContext(
            messages=_with_system(system, build_user_message(user_text, self.memory_line)),
            family=self.family,
            condition=self.condition,
            provenance={"memory_line": self.memory_line or ""},
        )
