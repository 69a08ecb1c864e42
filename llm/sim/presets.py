"""Simulator presets: known drift doses per perturbation class and category.

A dose is the probability, per reasoning step, that the memory line causes an edit of
the baseline trajectory. ``model_noise`` is the same kind of edit applied to *every*
sample, the baseline included; it stands for sampling variation of a real model.

Why ``null`` keeps ``model_noise``: the calibration null test (SPEC §8) and the effect
size d_rel divide by the spread of drift under noise. With zero model noise every drift
would be exactly 0, the spread 0, and the false-positive rate undefined instead of
measured. ``null`` therefore differs from ``default`` only in the doses: every condition
is statistically a copy of the noise floor, so any "detected" drift is a false positive.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

CONDITION_CLASSES: tuple[str, ...] = ("baseline", "noise", "attribute", "life_event")
EDIT_KINDS: tuple[str, ...] = ("substitute", "insert", "delete", "reorder")
MALFORMED_KINDS: tuple[str, ...] = (
    "missing_answer_close",
    "numbered_lines",
    "markdown_fence",
    "unclosed_step",
    "empty_step",
)


NOISE_CATEGORIES: tuple[str, ...] = ("whitespace", "punctuation", "filler")
ATTRIBUTE_CATEGORIES: tuple[str, ...] = (
    "gender",
    "gender_identity",
    "sexual_orientation",
    "age",
    "occupation",
    "appearance",
    "disability_health",
    "education_income",
    "physical_traits",
    "socioeconomic",
)
LIFE_EVENT_CATEGORIES: tuple[str, ...] = (
    "childhood_adversity",
    "illness_diagnosis",
    "accident",
    "bereavement",
    "new_parenthood",
    "divorce",
    "job_loss",
    "forced_migration",
    "natural_disaster",
    "pandemic",
)
#: The condition class of every built-in category id (the catalog's category slugs).
CATEGORY_CLASS: dict[str, str] = {
    **dict.fromkeys(NOISE_CATEGORIES, "noise"),
    **dict.fromkeys(ATTRIBUTE_CATEGORIES, "attribute"),
    **dict.fromkeys(LIFE_EVENT_CATEGORIES, "life_event"),
}


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

    def dose_range(self, condition_class: str) -> tuple[float, float]:
        """Return the smallest and largest dose of a class over its categories."""
        doses = [self.class_doses.get(condition_class, 0.0)]
        doses += [
            d for c, d in self.category_doses.items() if CATEGORY_CLASS.get(c) == condition_class
        ]
        return min(doses), max(doses)

    def dose(self, condition_class: str, category: str | None) -> float:
        """Return the dose of a condition (0 for the baseline and unknown classes)."""
        if condition_class == "baseline":
            return 0.0
        if category is not None and category in self.category_doses:
            return self.category_doses[category]
        return self.class_doses.get(condition_class, 0.0)


_DEFAULT_CATEGORY_DOSES: dict[str, float] = {
    # noise: content-free, the negative control
    "whitespace": 0.0,
    "punctuation": 0.0,
    "filler": 0.01,
    # attributes: medium, varying a little by category
    "gender": 0.22,
    "gender_identity": 0.25,
    "sexual_orientation": 0.22,
    "age": 0.30,
    "occupation": 0.32,
    "appearance": 0.20,
    "disability_health": 0.34,
    "education_income": 0.30,
    "physical_traits": 0.20,
    "socioeconomic": 0.32,
    # life events: large, the positive control
    "childhood_adversity": 0.55,
    "illness_diagnosis": 0.65,
    "accident": 0.58,
    "bereavement": 0.65,
    "new_parenthood": 0.60,
    "divorce": 0.55,
    "job_loss": 0.60,
    "forced_migration": 0.62,
    "natural_disaster": 0.58,
    "pandemic": 0.52,
}

PRESETS: dict[str, SimPreset] = {
    p.name: p
    for p in (
        SimPreset(
            name="default",
            description="noise ≈ 0, attributes medium, life events large",
            seed=0,
            class_doses={"noise": 0.0, "attribute": 0.28, "life_event": 0.6},
            category_doses=_DEFAULT_CATEGORY_DOSES,
            model_noise=0.05,
            malformed_rate=0.03,
        ),
        SimPreset(
            name="null",
            description="all doses 0: false-positive check",
            seed=0,
            class_doses={"noise": 0.0, "attribute": 0.0, "life_event": 0.0},
            model_noise=0.05,
            malformed_rate=0.0,
        ),
        SimPreset(
            name="strong",
            description="large doses for demos",
            seed=0,
            class_doses={"noise": 0.0, "attribute": 0.5, "life_event": 0.85},
            model_noise=0.05,
            malformed_rate=0.03,
        ),
    )
}
