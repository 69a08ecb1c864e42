"""Reasoning drift's simulator presets (family ``drift``): known doses per class and category.

A dose is the probability, per reasoning step, that the memory line causes an edit of
the baseline trajectory (:mod:`study.reasoning.sim.generator`). ``model_noise`` is the
same kind of edit applied to *every* sample, the baseline included; it stands for
sampling variation of a real model.

Why ``null`` keeps ``model_noise``: the calibration null test (SPEC §8) and the effect
size d_rel divide by the spread of drift under noise. With zero model noise every drift
would be exactly 0, the spread 0, and the false-positive rate undefined instead of
measured. ``null`` therefore differs from ``default`` only in the doses: every condition
is statistically a copy of the noise floor, so any "detected" drift is a false positive.

Importing the module registers the presets (:func:`llm.sim.registry.register_presets`).
"""

from __future__ import annotations

from driftlens_plugins import PresetListing
from llm.sim.presets import SimPreset
from llm.sim.registry import DRIFT_FAMILY, register_presets
from study.named import by_name

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


def dose_range(preset: SimPreset, condition_class: str) -> tuple[float, float]:
    """The smallest and largest dose of a class over its categories in ``preset``."""
    doses = [preset.class_doses.get(condition_class, 0.0)]
    doses += [
        d for c, d in preset.category_doses.items() if CATEGORY_CLASS.get(c) == condition_class
    ]
    return min(doses), max(doses)


#: The preset whose answers carry hostile text (:data:`llm.sim.hostile.HOSTILE_TEXT`: a
#: terminal escape, a bell, a right-to-left override, HTML, Markdown pipes, a leading CSV
#: formula). Reports, pages, terminals and downloads must show it as text; the instrument
#: checks run it.
HOSTILE_PRESET = "hostile"

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

#: The drift presets by name.
PRESETS: dict[str, SimPreset] = by_name(
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
    SimPreset(
        name=HOSTILE_PRESET,
        description="default doses, hostile text in a last step and the answer (inertness checks)",
        seed=0,
        class_doses={"noise": 0.0, "attribute": 0.28, "life_event": 0.6},
        category_doses=_DEFAULT_CATEGORY_DOSES,
        model_noise=0.05,
        # every answer well-formed: the hostile step and answer must parse, to be shown
        malformed_rate=0.0,
    ),
)

register_presets(DRIFT_FAMILY, PRESETS.values())


def preset_listing() -> PresetListing:
    """Reasoning drift's presets for ``driftlens sim presets``: their doses per class."""
    from llm.sim.registry import families

    def span(lo_hi: tuple[float, float]) -> str:
        lo, hi = lo_hi
        return f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}"

    drift = families().get(DRIFT_FAMILY, {})
    rows = tuple(
        (
            f"sim/{name}",
            span(dose_range(p, "noise")),
            span(dose_range(p, "attribute")),
            span(dose_range(p, "life_event")),
            f"{p.model_noise:.2f}",
            f"{p.malformed_rate:.0%}",
        )
        for name, p in drift.items()
    )
    return PresetListing(
        heading="Simulator presets (dose = edit probability per step)",
        columns=("preset", "noise", "attribute", "life event", "model noise", "malformed"),
        rows=rows,
        lines=tuple(f"sim/{name} (v{p.version}): {p.description}" for name, p in drift.items()),
        families=(DRIFT_FAMILY,),
    )
