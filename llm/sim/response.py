"""What the simulator answers with: a response and its ground truth, and the stepped responder.

A request without a task marker (:mod:`llm.sim.tasks`) asks for a stepped answer. Which
steps a simulated model writes is instrument knowledge (reasoning drift's value leaves,
doses and sentence bank, :mod:`study.reasoning.sim`), so ``llm`` only names its shape here:
a :class:`StepResponder` registered in :mod:`llm.sim.registry` answers the conversation
with a :class:`SimResponse`, whose ground truth (leaves, edits, dose) lets tests and the
calibration know the true drift. A :data:`Classifier` maps a memory line to its condition;
callers that hold the study's perturbation catalog pass one built from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from llm.sim.presets import SimPreset

#: ``memory line -> (condition_class, category)``.
Classifier = Callable[[str], tuple[str, str | None]]


@dataclass(frozen=True)
class SimEdit:
    """One edit of a trajectory.

    Attributes:
        kind: ``substitute``, ``insert``, ``delete`` or ``reorder``.
        position: Step index (0-based) in the trajectory being edited, at edit time.
        before: The leaf there before (``None`` for an insert).
        after: The leaf there after (``None`` for a delete; for a reorder the leaf that
            moved into ``position``).
        source: ``dose`` (caused by the memory line) or ``model_noise``.
    """

    kind: str
    position: int
    before: str | None
    after: str | None
    source: str


@dataclass(frozen=True)
class SimResponse:
    """A simulated response and its ground truth.

    Attributes:
        text: The response text (SPEC §4 format unless ``malformed`` is set).
        leaves: The true leaf of every step present in ``text``, in order.
        edits: Edits caused by the memory line (empty for the baseline and dose 0).
        noise_edits: Edits from model noise.
        baseline_leaves: The question's baseline trajectory before any edit.
        condition_class: ``baseline``, ``noise``, ``attribute`` or ``life_event``.
        category: The perturbation category, if known.
        dose: The dose that was applied.
        malformed: Which format break was applied, or ``None``.
        model: The model id (``sim/<preset>``).
    """

    text: str
    leaves: tuple[str, ...]
    edits: tuple[SimEdit, ...]
    noise_edits: tuple[SimEdit, ...]
    baseline_leaves: tuple[str, ...]
    condition_class: str
    category: str | None
    dose: float
    malformed: str | None
    model: str


class StepResponder(Protocol):
    """Answers a conversation that carries no task marker (pure: same inputs, same output)."""

    def __call__(
        self,
        messages: Sequence[tuple[str, str]],
        *,
        preset: SimPreset,
        sample_index: int,
        seed: int | None,
        classify_memory: Classifier | None,
    ) -> SimResponse:
        """Return the simulated response to ``messages`` with its ground truth."""
        ...
