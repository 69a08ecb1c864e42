"""Turn a labeler spec string into a labeler and its stored ``LabelerSpec`` row."""

from __future__ import annotations

import hashlib
import json

from sqlmodel import Session, select

from ontology.labelers.base import StepLabeler
from ontology.labelers.keywords import KeywordLabeler
from storage.errors import ConfigError
from storage.models import LabelerSpec

# Labeler kinds available offline today; llm:, embed: and sim labelers join here.
KNOWN = ("keywords",)
PROMPT_VERSIONS = {"keywords": "keywords-v1"}


def make_labeler(spec: str) -> StepLabeler:
    """Return the labeler for ``spec`` (e.g. ``keywords``)."""
    if spec == "keywords":
        return KeywordLabeler()
    raise ConfigError(f"unknown labeler {spec!r}; available here: {', '.join(KNOWN)}")


def ensure_labeler_spec(spec: str, *, session: Session) -> LabelerSpec:
    """Return the stored spec row for ``spec``, creating it once (keyed by a hash)."""
    make_labeler(spec)  # validate before storing anything
    kind = spec.split(":", 1)[0]
    payload = {"spec": spec, "kind": kind, "prompt_version": PROMPT_VERSIONS.get(kind, "")}
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    row = session.exec(select(LabelerSpec).where(LabelerSpec.key == key)).first()
    if row is None:
        row = LabelerSpec(
            key=key,
            name=spec,
            kind=kind,
            prompt_version=payload["prompt_version"],
            params={"spec": spec},
        )
        session.add(row)
        session.flush()
    return row
