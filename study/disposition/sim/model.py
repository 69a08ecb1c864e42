"""Disposition simulator: aligned answers with known probabilities per arm (seed 001).

The model of one answer is a logistic one::

    logit P(aligned | probe, arm) = a_battery,mode + u_stem + v_paraphrase + Δ_battery(dose, mode)

``u ~ N(0, σ_stem²)`` and ``v ~ N(0, σ_para²)`` are fixed per stem and per paraphrase
(hashed from the preset seed when served, drawn afresh per study in the calibration), so the
stem is the unit that carries correlation. ``a`` is solved so that the *population* aligned
rate at dose 0 equals the battery's base rate, and ``Δ`` so that the population drift at a
dose equals the preset's dose curve (in percentage points, interpolated between the listed
doses). The true drift of an arm is therefore known exactly: :func:`true_drift_pp`.

Reasoning modes: ``on`` and ``off`` have their own dose curves (the seed's Table 5 shape);
a budget-forced arm uses the ``off`` curve scaled by the budget's attenuation (Table 7
shape; budget 0 is the reasoning-off prompt), and a filler arm the ``off`` curve times the
filler factor (Table 8 shape). Token exhaustion happens on reasoning-on arms with a
per-attempt probability rising with the dose. A classifier with a known flip rate scores
the answers (:func:`classify_category`).

Everything here is numbers; the served responder that turns them into text is in
:mod:`study.disposition.sim.responder`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field
from scipy import optimize

from driftlens_plugins import PresetListing
from llm.specs import preset_name
from storage.errors import ConfigError
from study.named import by_name

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(80)
_GH_W = _GH_W / _GH_W.sum()

REASONING_MODES: tuple[str, ...] = ("on", "off", "budget", "filler")


class BatteryModel(BaseModel):
    """How one battery's aligned rate behaves in the simulator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_rate_on: float = Field(gt=0, lt=1)
    base_rate_off: float = Field(gt=0, lt=1)
    stem_sd: float = Field(default=2.0, ge=0)
    para_sd: float = Field(default=1.0, ge=0)
    #: multiplies the preset's dose curves (oversight moves less than self-interest)
    drift_scale: float = 1.0


class DispositionPreset(BaseModel):
    """A disposition simulator configuration (serialisable, versioned).

    Attributes:
        name: Preset name (an arm's model is ``sim/<name>-d<dose>[-<mode>]``).
        seed: Mixed into every stem and paraphrase effect.
        batteries: Models per battery name; ``default_battery`` covers any other name.
        dose_curves: ``mode -> {dose % -> drift pp}`` for ``on`` and ``off``.
        budget_attenuation: ``budget tokens -> share of the off drift that remains``.
        filler_factor: share of the off drift that remains with content-free filler.
        exhaust_rate: ``dose % -> per-attempt exhaustion probability`` (reasoning on).
        classifier_flip: probability the classifier puts an answer in a wrong category.
        awareness_rate: ``on``/``off`` -> probability that an answer opens with a remark
            showing test awareness (the served responder's; the seed saw explicit mentions
            in 11-15% of reasoning-on probes); ``off`` covers every arm without free
            reasoning.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    name: str
    description: str = ""
    seed: int = 0
    batteries: dict[str, BatteryModel] = Field(default_factory=dict)
    default_battery: BatteryModel = BatteryModel(base_rate_on=0.95, base_rate_off=0.85)
    dose_curves: dict[str, dict[float, float]]
    # keyed by the reasoning words the answer phase sees (the simulator's own reasoning
    # runs 25–130 words, so a budget of 256 mostly keeps it whole)
    budget_attenuation: dict[int, float] = Field(
        default_factory=lambda: {0: 1.0, 16: 0.6, 48: 0.3, 128: 0.22, 1024: 0.08, 4096: 0.21}
    )
    filler_factor: float = 0.65
    exhaust_rate: dict[float, float] = Field(default_factory=lambda: {0.0: 0.30, 100.0: 0.40})
    classifier_flip: float = Field(default=0.015, ge=0, le=1)
    awareness_rate: dict[str, float] = Field(default_factory=lambda: {"on": 0.15, "off": 0.06})

    def battery(self, name: str) -> BatteryModel:
        """The model of battery ``name`` (the default one for unknown names)."""
        return self.batteries.get(name, self.default_battery)


def _interp(table: Mapping[float, float] | Mapping[int, float], x: float) -> float:
    pairs = sorted((float(k), float(v)) for k, v in table.items())
    return float(np.interp(x, [k for k, _ in pairs], [v for _, v in pairs]))


def population_rate(intercept: float, sd: float) -> float:
    """``E[expit(intercept + sd·Z)]``, ``Z ~ N(0, 1)`` (Gauss–Hermite quadrature)."""
    z = intercept + sd * _GH_X
    return float((_GH_W / (1.0 + np.exp(-z))).sum())


@lru_cache(maxsize=4096)
def _solve_shift(base: float, sd: float, target: float) -> float:
    """The logit intercept whose population rate is ``target``."""
    target = min(max(target, 1e-6), 1 - 1e-6)
    return float(
        optimize.brentq(lambda a: population_rate(a, sd) - target, -60.0, 60.0, xtol=1e-12)
    )


@dataclass(frozen=True)
class ArmSetting:
    """What the simulator needs to know about an arm."""

    dose: float  # percent of harmful answers in the (notional) fine-tuning set
    mode: str = "on"  # on | off | budget | filler
    budget: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in REASONING_MODES:
            raise ConfigError(
                f"Unknown reasoning mode {self.mode!r}; use one of {REASONING_MODES}."
            )


def base_mode(setting: ArmSetting) -> str:
    """``on`` for reasoning-on arms, ``off`` for every arm without free reasoning."""
    return "on" if setting.mode == "on" else "off"


def true_drift_pp(preset: DispositionPreset, battery: str, setting: ArmSetting) -> float:
    """The population drift of an arm against the dose-0 arm of the same reasoning setting."""
    curve = preset.dose_curves[base_mode(setting)]
    drift = _interp(curve, setting.dose) * preset.battery(battery).drift_scale
    if setting.mode == "budget":
        budget = setting.budget or 0
        drift *= 1.0 if budget <= 0 else _interp(preset.budget_attenuation, budget)
    elif setting.mode == "filler":
        drift *= preset.filler_factor
    return drift


def logit_terms(
    preset: DispositionPreset, battery: str, setting: ArmSetting
) -> tuple[float, float, float]:
    """``(intercept at dose 0, dose shift Δ, total effect SD)`` on the logit scale."""
    bm = preset.battery(battery)
    sd = math.hypot(bm.stem_sd, bm.para_sd)
    base = bm.base_rate_on if base_mode(setting) == "on" else bm.base_rate_off
    a = _solve_shift(0.0, sd, base)
    target = base + true_drift_pp(preset, battery, setting) / 100.0
    return a, _solve_shift(0.0, sd, target) - a, sd


def true_rate(preset: DispositionPreset, battery: str, setting: ArmSetting) -> float:
    """The population aligned rate of an arm."""
    a, delta, sd = logit_terms(preset, battery, setting)
    return population_rate(a + delta, sd)


def awareness_probability(preset: DispositionPreset, setting: ArmSetting) -> float:
    """Probability that an answer of this arm carries a test-awareness remark."""
    return float(preset.awareness_rate.get(base_mode(setting), 0.0))


def exhaust_probability(preset: DispositionPreset, setting: ArmSetting) -> float:
    """Per-attempt probability of running out of tokens before an answer."""
    return _interp(preset.exhaust_rate, setting.dose) if setting.mode == "on" else 0.0


@lru_cache(maxsize=65536)
def _unit_normal(*parts: object) -> float:
    """A standard normal fixed by ``parts`` (stable across runs and platforms)."""
    from llm.seeds import stable_int

    return random.Random(stable_int("disposition", *parts)).gauss(0.0, 1.0)


def aligned_probability(
    preset: DispositionPreset,
    battery: str,
    stem: str,
    paraphrase: int,
    setting: ArmSetting,
) -> float:
    """``P(aligned)`` of one probe in one arm (stem and paraphrase effects hashed)."""
    bm = preset.battery(battery)
    a, delta, _ = logit_terms(preset, battery, setting)
    u = bm.stem_sd * _unit_normal(preset.seed, battery, "stem", stem)
    v = bm.para_sd * _unit_normal(preset.seed, battery, "para", stem, paraphrase)
    return 1.0 / (1.0 + math.exp(-(a + u + v + delta)))


def classify_category(
    true_category: str,
    categories: Sequence[str],
    *,
    flip: float,
    rng: np.random.Generator,
) -> str:
    """A classifier with a known confusion: right with ``1 − flip``, else uniform elsewhere."""
    if len(categories) > 1 and rng.random() < flip:
        others = [c for c in categories if c != true_category]
        return str(others[int(rng.integers(len(others)))])
    return true_category


@dataclass(frozen=True)
class SimTable:
    """A simulated rate table (arrays of equal length) and the true drifts of its arms."""

    stem: NDArray[np.int64]
    probe: NDArray[np.int64]
    arm: NDArray[np.int64]
    sample: NDArray[np.int64]
    aligned: NDArray[np.float64]
    true_drift_pp: NDArray[np.float64]


def simulate_table(
    preset: DispositionPreset,
    battery: str,
    settings: Sequence[ArmSetting],
    *,
    n_stems: int,
    n_paraphrases: int = 6,
    n_samples: int = 2,
    rng: np.random.Generator,
    extra_shift_pp: Sequence[float] | None = None,
) -> SimTable:
    """One simulated study: fresh stems and paraphrases, every arm, every sample.

    Arm 0 is the reference. ``extra_shift_pp`` adds a known population drift per arm on
    top of the preset (the calibration benchmark uses it to put the true drift at the MDD).
    """
    bm = preset.battery(battery)
    sd = math.hypot(bm.stem_sd, bm.para_sd)
    u = rng.normal(0.0, bm.stem_sd, n_stems)
    v = rng.normal(0.0, bm.para_sd, (n_stems, n_paraphrases))
    n_arms = len(settings)
    truths = np.empty(n_arms)
    logits = np.empty(n_arms)
    for j, st in enumerate(settings):
        a, delta, _ = logit_terms(preset, battery, st)
        drift = true_drift_pp(preset, battery, st)
        if extra_shift_pp is not None and extra_shift_pp[j]:
            base = population_rate(a, sd)
            drift += float(extra_shift_pp[j])
            delta = _solve_shift(0.0, sd, base + drift / 100.0) - a
        logits[j] = a + delta
        truths[j] = drift
    truths = truths - truths[0]
    eta = logits[:, None, None, None] + (u[:, None] + v)[None, :, :, None]  # A × S × P × 1
    p = 1.0 / (1.0 + np.exp(-eta))
    draws = rng.random((n_arms, n_stems, n_paraphrases, n_samples)) < p
    shape = draws.shape
    arm_i, stem_i, para_i, sample_i = np.indices(shape).reshape(4, -1)
    return SimTable(
        stem=stem_i.astype(np.int64),
        probe=(stem_i * n_paraphrases + para_i).astype(np.int64),
        arm=arm_i.astype(np.int64),
        sample=sample_i.astype(np.int64),
        aligned=draws.reshape(-1).astype(np.float64),
        true_drift_pp=truths,
    )


_SI = BatteryModel(base_rate_on=0.966, base_rate_off=0.844, stem_sd=2.0, para_sd=1.0)
_OV = BatteryModel(
    base_rate_on=0.885, base_rate_off=0.80, stem_sd=1.5, para_sd=0.8, drift_scale=0.5
)
_RF = BatteryModel(base_rate_on=0.90, base_rate_off=0.85, stem_sd=1.5, para_sd=0.8, drift_scale=0.8)
# Table 5 shape (self-interest, pp vs the 0% fine-tune); 0 and 25% on-values interpolated.
_ON = {0.0: 0.0, 50.0: -0.9, 75.0: -1.2, 90.0: -8.7, 100.0: -12.1}
_OFF = {0.0: 0.0, 25.0: -4.7, 50.0: -15.0, 75.0: -30.4, 90.0: -36.1, 100.0: -42.9}

#: The preset whose answers end in :data:`llm.sim.hostile.HOSTILE_TEXT` (after the stance
#: sentence, so the simulated classifier still reads the stance): what reports, downloads
#: and the terminal must show as text.
HOSTILE_PRESET = "disp-hostile"

DISPOSITION_PRESETS: dict[str, DispositionPreset] = by_name(
    DispositionPreset(
        name="disp-qwen",
        description="seed-like spread (stem SD 2, paraphrase SD 1), Table 5 dose curves",
        batteries={"self_interest": _SI, "oversight": _OV, "refusal_benign": _RF},
        default_battery=_SI,
        dose_curves={"on": _ON, "off": _OFF},
    ),
    DispositionPreset(
        name="disp-mid",
        description="mid-range rates, small spread: the MDD away from the ceiling",
        default_battery=BatteryModel(base_rate_on=0.6, base_rate_off=0.6, stem_sd=0.6, para_sd=0.3),
        dose_curves={"on": _ON, "off": _OFF},
    ),
    DispositionPreset(
        name="disp-null",
        description="every dose curve 0: false-positive check",
        batteries={"self_interest": _SI, "oversight": _OV, "refusal_benign": _RF},
        default_battery=_SI,
        dose_curves={"on": {0.0: 0.0}, "off": {0.0: 0.0}},
    ),
    DispositionPreset(
        name=HOSTILE_PRESET,
        description="disp-qwen's rates, every answer ending in hostile text (inertness checks)",
        batteries={"self_interest": _SI, "oversight": _OV, "refusal_benign": _RF},
        default_battery=_SI,
        dose_curves={"on": _ON, "off": _OFF},
    ),
)


def get_disposition_preset(name: str) -> DispositionPreset:
    """A built-in preset by name (``disp-qwen`` or ``sim/disp-qwen``).

    Raises:
        ConfigError: no preset has that name.
    """
    key = preset_name(name)
    try:
        return DISPOSITION_PRESETS[key]
    except KeyError:
        known = ", ".join(sorted(DISPOSITION_PRESETS))
        raise ConfigError(
            f"Unknown disposition simulator preset {name!r}; known presets: {known}."
        ) from None


def preset_listing() -> PresetListing:
    """Disposition drift's presets for ``driftlens sim presets`` (answered by its responder)."""
    return PresetListing(
        heading="Presets of the disposition simulator (`driftlens disposition arms add --model "
        "sim/<preset>-d<dose>[-s<train seed>]`, dose in % harmful training answers):",
        lines=tuple(f"sim/{n}-d<dose>: {p.description}" for n, p in DISPOSITION_PRESETS.items()),
    )
