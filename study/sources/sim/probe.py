"""Known-truth answers to multiple-choice probes with user and document assertions.

The source-reliance instrument asks a question bare and with a user and/or a document
asserting an answer, and reads the answered letter and the distribution over letters. This
module answers such probes from a *behaviour preset* whose discrimination rates are the
truth the statistics must recover:

* the bare answer: the model "knows" a question (answers the gold letter) with probability
  ``bare_accuracy``, otherwise it answers one wrong letter; both are fixed per question;
* one assertion from source ``s`` that contradicts a correct own answer: keep it with
  probability ``par_plus[s]``, adopt the assertion with ``sdr_minus[s]``, else answer some
  third letter; one that corrects a wrong own answer: adopt with ``sdr_plus[s]``, keep the
  own answer with ``par_minus[s]``, else a third letter; one that agrees: keep
  (``1 − flip``);
* two assertions: one of them *leads* — the one nearer the question with probability
  ``recency`` (0.5: no order effect) — and the single-source rule of the leader applies
  (so agreeing sources behave like one, and conflicts go the leader's way);
* the letter distribution: per-question baseline logits, the answered letter lifted
  ``confidence`` above the best other letter, and every asserted letter pulled up by
  ``pull`` (so a correct assertion raises the correct answer's probability, ΔNLL < 0, and a
  wrong one lowers it, ΔNLL > 0). The answered letter is always the most probable one.

Every draw is a pure function of (preset, question key, the probe's assertions, seed), so
reruns are identical. The caller says what the probe is (:class:`Probe`): parsing the
prompt belongs to the layer that rendered it (``study.sources``), which passes a parser to
the backend, as the catalog passes its memory-line classifier.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from driftlens_plugins import PresetListing
from llm.seeds import stable_int
from llm.sim.tasks import case_payload, register_task
from llm.specs import preset_name
from storage.errors import ConfigError
from study.named import by_name

SOURCES: tuple[str, ...] = ("user", "doc")
LETTERS = "ABCDEFGHIJ"


class SourceRates(BaseModel):
    """A rate per source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user: float = Field(ge=0, le=1)
    doc: float = Field(ge=0, le=1)

    def of(self, source: str) -> float:
        """The rate of ``source`` (``user`` or ``doc``)."""
        return float(getattr(self, source))


class SourcePreset(BaseModel):
    """A behaviour preset for source-reliance probes (serialisable, versioned).

    Attributes:
        name: Preset name (``sim/<name>``).
        description: One line.
        seed: Mixed into every draw.
        bare_accuracy: Probability the bare answer is the gold one.
        par_plus: Keep a correct own answer against a wrong assertion.
        sdr_minus: Adopt a wrong assertion over a correct own answer.
        sdr_plus: Adopt a correct assertion over a wrong own answer.
        par_minus: Keep a wrong own answer against a correct assertion.
        recency: Probability that the assertion nearer the question leads (double source).
        doc_weight: Probability that the document leads a user-vs-document pair when order
            plays no part (0.5: neither source is preferred); combined with ``recency`` on
            the odds scale. The seed's documents outweigh users in such pairs (U%/D% < 1).
        flip: Probability of leaving an own answer that an assertion agrees with.
        confidence: Logit margin of the answered letter over the best other letter.
        pull: Logit added to each asserted letter.
        spread: SD of the per-question baseline logits.
        instruction_shift: How far a system instruction moves the rates: "self-only" moves
            every source toward keeping the own answer, "user-only" / "document-only"
            move that source toward adoption and the other toward being ignored.
        hostile: Every answered reply ends in :data:`llm.sim.hostile.HOSTILE_TEXT` after
            its letter (the letter and logprobs are unchanged): inertness checks.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    name: str
    description: str = ""
    seed: int = 0
    bare_accuracy: float = Field(default=0.8, ge=0, le=1)
    par_plus: SourceRates
    sdr_minus: SourceRates
    sdr_plus: SourceRates
    par_minus: SourceRates
    recency: float = Field(default=0.5, ge=0, le=1)
    doc_weight: float = Field(default=0.5, gt=0, lt=1)
    flip: float = Field(default=0.02, ge=0, le=1)
    confidence: float = Field(default=2.0, ge=0)
    pull: float = Field(default=1.0, ge=0)
    spread: float = Field(default=0.7, ge=0)
    instruction_shift: float = Field(default=0.3, ge=0, le=1)
    hostile: bool = False

    @model_validator(mode="after")
    def _pairs_are_distributions(self) -> SourcePreset:
        for s in SOURCES:
            if self.par_plus.of(s) + self.sdr_minus.of(s) > 1 + 1e-12:
                raise ValueError(f"par_plus + sdr_minus of {s!r} exceeds 1")
            if self.sdr_plus.of(s) + self.par_minus.of(s) > 1 + 1e-12:
                raise ValueError(f"sdr_plus + par_minus of {s!r} exceeds 1")
        return self


def _rates(user: float, doc: float | None = None) -> SourceRates:
    return SourceRates(user=user, doc=user if doc is None else doc)


def _preset(
    name: str,
    description: str,
    par: tuple[float, float],
    sdr: tuple[float, float],
    recency: float = 0.5,
    doc_weight: float = 0.5,
) -> SourcePreset:
    # the rest of each pair: most of it goes to the assertion / the own answer, a little
    # (10% of the remainder) to a third letter, so the "neither" rates are not zero
    return SourcePreset(
        name=name,
        description=description,
        par_plus=_rates(*par),
        sdr_minus=_rates(0.9 * (1 - par[0]), 0.9 * (1 - par[1])),
        sdr_plus=_rates(*sdr),
        par_minus=_rates(0.9 * (1 - sdr[0]), 0.9 * (1 - sdr[1])),
        recency=recency,
        doc_weight=doc_weight,
    )


#: src-paper's doc_weight: documents lead user-vs-document conflicts this often (no order
#: effect), so U%/D% lands below 1 as in the seed (mean 0.895): over six synthetic 500-item
#: studies 0.856 (SD 0.08, all below 1); at 0.5 it read 0.97-1.16 (the audit: 1.00-1.11).
DOC_WEIGHT_PAPER = 0.54

SOURCE_PRESETS: dict[str, SourcePreset] = by_name(
    _preset("src-rigid", "keeps its own answer, right or wrong", (0.8, 0.8), (0.2, 0.2)),
    _preset(
        "src-unreliable", "neither keeps right answers nor takes fixes", (0.2, 0.2), (0.2, 0.2)
    ),
    _preset("src-impressionable", "adopts whatever it is told", (0.35, 0.35), (0.9, 0.9)),
    _preset("src-selective", "keeps right answers, takes fixes", (0.8, 0.8), (0.8, 0.8)),
    _preset(
        "src-paper",
        "the published averages: users resisted more, documents adopted more",
        (0.41, 0.31),
        (0.87, 0.90),
        recency=0.55,
        doc_weight=DOC_WEIGHT_PAPER,
    ),
    SourcePreset(
        name="src-null",
        description="assertions are ignored (a flip now and then)",
        par_plus=_rates(1.0),
        sdr_minus=_rates(0.0),
        sdr_plus=_rates(0.0),
        par_minus=_rates(1.0),
        pull=0.0,
    ),
    SourcePreset(
        name="src-hostile",
        description="src-null's answers, every reply ending in hostile text (inertness checks)",
        par_plus=_rates(1.0),
        sdr_minus=_rates(0.0),
        sdr_plus=_rates(0.0),
        par_minus=_rates(1.0),
        pull=0.0,
        hostile=True,
    ),
)


def _near_leads(near: str, far: str, preset: SourcePreset) -> float:
    """P(the nearer assertion leads): recency, shifted toward the document by doc_weight."""
    if near == far or preset.doc_weight == 0.5:
        return preset.recency  # same draw as before doc_weight existed
    if preset.recency in (0.0, 1.0):
        return preset.recency
    odds = preset.recency / (1 - preset.recency)
    w = preset.doc_weight / (1 - preset.doc_weight)
    odds *= w if near == "doc" else 1 / w
    return odds / (1 + odds)


def get_source_preset(name: str) -> SourcePreset:
    """Look up a preset by name (with or without ``sim/``).

    Raises:
        ConfigError: unknown name.
    """
    key = preset_name(name)
    if key not in SOURCE_PRESETS:
        raise ConfigError(
            f"Unknown source-reliance preset {name!r}; use one of {', '.join(SOURCE_PRESETS)}."
        )
    return SOURCE_PRESETS[key]


@dataclass(frozen=True)
class Probe:
    """What a probe asks (as the rendering layer knows it).

    Attributes:
        key: A stable id of the question (its text or id): the bare answer depends on it.
        n_choices: Number of options.
        gold: Index of the correct option.
        assertions: ``(source, option index)`` in the order shown, the last nearest the
            question; empty for the bare probe.
        instruction: The system-instruction variant (``n``, ``d``, ``u``, ``s``).
    """

    key: str
    n_choices: int
    gold: int
    assertions: tuple[tuple[str, int], ...] = ()
    instruction: str = "n"


@dataclass(frozen=True)
class SimAnswer:
    """The simulated answer: a letter index and the distribution over the letters."""

    choice: int
    probs: tuple[float, ...]

    @property
    def letter(self) -> str:
        """The answered letter."""
        return LETTERS[self.choice]

    def top_logprobs(self) -> tuple[tuple[str, float], ...]:
        """``(letter, logprob)`` best first, the shape a ``top_logprobs`` list has."""
        pairs = [(LETTERS[i], math.log(max(p, 1e-300))) for i, p in enumerate(self.probs)]
        return tuple(sorted(pairs, key=lambda t: -t[1]))


def _question_state(
    probe: Probe, preset: SourcePreset, seed: int | None
) -> tuple[int, list[float]]:
    """The bare answer and baseline logits of a question (independent of the variant)."""
    rng = random.Random(stable_int("src-bare", preset.name, preset.seed, seed, probe.key))
    logits = [rng.gauss(0.0, preset.spread) for _ in range(probe.n_choices)]
    if rng.random() < preset.bare_accuracy:
        bare = probe.gold
    else:
        wrong = [i for i in range(probe.n_choices) if i != probe.gold]
        bare = wrong[rng.randrange(len(wrong))]
    return bare, logits


def _other(exclude: set[int], logits: Sequence[float], rng: random.Random) -> int:
    pool = [i for i in range(len(logits)) if i not in exclude]
    if not pool:  # two options only: nothing else to answer
        return min(exclude)
    return pool[rng.randrange(len(pool))]


def _shift(keep: float, adopt: float, toward: str, amount: float) -> tuple[float, float]:
    """Move a (keep, adopt) pair toward keeping or adopting by ``amount`` of the room left."""
    if toward == "keep":
        keep2 = keep + amount * (1.0 - keep)
        return keep2, min(adopt * (1.0 - amount), 1.0 - keep2)
    adopt2 = adopt + amount * (1.0 - adopt)
    return min(keep * (1.0 - amount), 1.0 - adopt2), adopt2


def _instructed(
    keep: float, adopt: float, source: str, instruction: str, amount: float
) -> tuple[float, float]:
    if instruction == "s" or (instruction in ("u", "d") and instruction != source[0]):
        return _shift(keep, adopt, "keep", amount)
    if instruction == source[0]:
        return _shift(keep, adopt, "adopt", amount)
    return keep, adopt


def _react(
    source: str,
    asserted: int,
    bare: int,
    gold: int,
    logits: Sequence[float],
    preset: SourcePreset,
    rng: random.Random,
    instruction: str = "n",
) -> int:
    """The single-source rule: the answer given ``source`` asserting ``asserted``."""
    u = rng.random()
    if asserted == bare:
        return bare if u >= preset.flip else _other({bare}, logits, rng)
    if bare == gold:  # a wrong assertion against a correct own answer
        keep, adopt = preset.par_plus.of(source), preset.sdr_minus.of(source)
    elif asserted == gold:  # a correct assertion against a wrong own answer
        adopt, keep = preset.sdr_plus.of(source), preset.par_minus.of(source)
    else:  # a wrong assertion against a different wrong own answer
        keep, adopt = preset.par_plus.of(source), preset.sdr_minus.of(source)
    keep, adopt = _instructed(keep, adopt, source, instruction, preset.instruction_shift)
    if u < keep:
        return bare
    if u < keep + adopt:
        return asserted
    return _other({bare, asserted}, logits, rng)


def simulate_probe(probe: Probe, preset: SourcePreset, *, seed: int | None = None) -> SimAnswer:
    """Answer one probe.

    Args:
        probe: The question and its assertions.
        preset: The behaviour preset.
        seed: Run seed (a different seed is a different "model instance").

    Returns:
        The answered letter and its distribution.

    Raises:
        ValueError: the probe is malformed (bad indices, unknown source).
    """
    if probe.n_choices < 2 or not 0 <= probe.gold < probe.n_choices:
        raise ValueError("a probe needs at least two options and a gold index among them")
    for source, idx in probe.assertions:
        if source not in SOURCES or not 0 <= idx < probe.n_choices:
            raise ValueError(f"bad assertion ({source!r}, {idx})")
    bare, logits = _question_state(probe, preset, seed)
    # the neutral instruction keeps the draw it had before instructions existed
    extra = () if probe.instruction == "n" else (probe.instruction,)
    rng = random.Random(
        stable_int("src-probe", preset.name, preset.seed, seed, probe.key, probe.assertions, *extra)
    )
    if not probe.assertions:
        choice = bare
    else:
        if len(probe.assertions) == 1:
            lead = probe.assertions[0]
        else:
            near, far = probe.assertions[-1], probe.assertions[0]
            lead = near if rng.random() < _near_leads(near[0], far[0], preset) else far
        choice = _react(lead[0], lead[1], bare, probe.gold, logits, preset, rng, probe.instruction)
    z = list(logits)
    for _, idx in probe.assertions:
        z[idx] += preset.pull
    best_other = max(v for i, v in enumerate(z) if i != choice)
    z[choice] = max(z[choice], best_other + preset.confidence)
    top = max(z)
    w = [math.exp(v - top) for v in z]
    total = sum(w)
    return SimAnswer(choice=choice, probs=tuple(x / total for x in w))


def fixed_wrong(bare: SimAnswer, gold: int) -> int:
    """The fixed wrong option from a bare answer: its own wrong answer, else the most
    probable wrong option (the rule of the two-phase plan)."""
    if bare.choice != gold:
        return bare.choice
    return max((i for i in range(len(bare.probs)) if i != gold), key=lambda i: bare.probs[i])


# --------------------------------------------------------------------------- tier-2 claims

TIER2_TASK = "tier2-claims"
_CLAIM_FRAMES = (
    "when people think this through, the option they settle on is [answer]",
    "looking at what the question asks, the best fit is [answer]",
    "working through the details points to [answer]",
    "the most sensible reading of the situation gives [answer]",
)


def _tier2_claim(
    messages: Sequence[tuple[str, str]], preset: object, sample_index: int, seed: int | None
) -> str:
    """A simulated claim writer: one neutral claim with the ``[answer]`` placeholder."""
    case = case_payload(messages)
    rng = random.Random(stable_int("tier2", case.get("id"), seed, sample_index))
    return json.dumps({"claim": _CLAIM_FRAMES[rng.randrange(len(_CLAIM_FRAMES))]})


register_task(TIER2_TASK)(_tier2_claim)


def preset_listing() -> PresetListing:
    """Source reliance's presets for ``driftlens sim presets`` (answered by its responder)."""
    return PresetListing(
        heading="Presets of the source-reliance simulator (`driftlens sources run --model`):",
        lines=tuple(f"sim/{n}: {p.description}" for n, p in SOURCE_PRESETS.items()),
    )
