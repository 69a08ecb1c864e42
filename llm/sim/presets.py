"""The simulator's preset: one simulated model's configuration, whatever its instrument.

A preset names a ``sim/<name>`` model and carries what the shared machinery reads (its
seed, the malformed-reply rate) and, for reasoning drift's stepped responder, the doses:
per step, the probability that a condition's memory line edits the baseline trajectory
(``class_doses``, ``category_doses``) and ``model_noise``, the edits of every sample. Each
instrument's presets live in its own folder and register in :mod:`llm.sim.registry`
(reasoning drift's ``default``, ``null`` and ``strong``: :mod:`study.reasoning.sim.presets`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

EDIT_KINDS: tuple[str, ...] = ("substitute", "insert", "delete", "reorder")


class EditWeights(BaseModel):
    """Relative weights of the edit kinds (normalised when drawn)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    substitute: float = Field(default=0.4, ge=0)
    insert: float = Field(default=0.2, ge=0)
    delete: float = Field(default=0.2, ge=0)
    reorder: float = Field(default=0.2, ge=0)

    @model_validator(mode="after")
    def _some_weight(self) -> EditWeights:
        if self.substitute + self.insert + self.delete + self.reorder <= 0:
            raise ValueError("at least one edit weight must be positive")
        return self

    def as_tuple(self) -> tuple[float, float, float, float]:
        """Return the weights in :data:`EDIT_KINDS` order."""
        return (self.substitute, self.insert, self.delete, self.reorder)


class SimPreset(BaseModel):
    """One simulator configuration (serialisable, versioned).

    Attributes:
        name: The preset name (``sim/<name>``).
        description: One line for ``driftlens sim presets``.
        seed: Mixed into every draw; two presets with different seeds answer differently.
        class_doses: Dose per condition class (``noise``, ``attribute``, ``life_event``).
        category_doses: Dose overrides per category id (e.g. ``bereavement``).
        model_noise: Per-step edit probability of every sample (sampling variation).
        edit_weights: Weights of substitute / insert / delete / reorder.
        affinity: Probability that a substituted or inserted leaf comes from the
            category's affine leaves (a teacher's memory pulls toward careers) rather
            than uniformly from all eleven.
        malformed_rate: Probability a response breaks the SPEC §4 format.
        min_steps: Fewest steps of a baseline trajectory.
        max_steps: Most steps of a baseline trajectory.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    name: str
    description: str = ""
    seed: int = 0
    class_doses: dict[str, float]
    category_doses: dict[str, float] = Field(default_factory=dict)
    model_noise: float = Field(default=0.05, ge=0, le=1)
    edit_weights: EditWeights = Field(default_factory=EditWeights)
    affinity: float = Field(default=0.7, ge=0, le=1)
    malformed_rate: float = Field(default=0.03, ge=0, le=1)
    min_steps: int = Field(default=3, ge=1)
    max_steps: int = Field(default=7, ge=1)

    @field_validator("class_doses", "category_doses")
    @classmethod
    def _doses_are_probabilities(cls, v: dict[str, float]) -> dict[str, float]:
        for key, dose in v.items():
            if not 0.0 <= dose <= 1.0:
                raise ValueError(f"dose of {key!r} must lie in [0, 1], got {dose}")
        return v

    @model_validator(mode="after")
    def _steps_ordered(self) -> SimPreset:
        if self.min_steps > self.max_steps:
            raise ValueError("min_steps must not exceed max_steps")
        return self

    def dose(self, condition_class: str, category: str | None) -> float:
        """Return the dose of a condition (0 for the baseline and unknown classes)."""
        if condition_class == "baseline":
            return 0.0
        if category is not None and category in self.category_doses:
            return self.category_doses[category]
        return self.class_doses.get(condition_class, 0.0)
