"""One run set-up for the instruments that store their answers as a generation run.

Reasoning drift (:func:`study.reasoning.generation.ensure_run`) and memory conflicts
(:mod:`study.conflicts.plan`) both store a run as a ``GenerationRun`` of one model: the
model's row (created on first use from its ``provider/model`` spec) and the run's row,
created on first use and checked against what is stored on a resume (same model, prompt
version, sampling, catalog: a mismatch is one ``ConfigError`` sentence). Each instrument says
only what its run is (prompt version, sampling, config); this module does the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from llm.specs import parse_spec
from llm.types import SamplingParams
from storage.models import GenerationRun, ModelSpec
from storage.repo.runs import get_or_create_model_spec, get_or_create_run


def model_row(model: str, *, session: Session) -> ModelSpec:
    """The stored row of a ``provider/model`` spec (created on first use).

    Raises:
        ConfigError: The spec is malformed.
    """
    info = parse_spec(model)
    row = get_or_create_model_spec(
        info.spec,
        provider=info.provider,
        model=info.model,
        service=info.service,
        simulated=info.simulated,
        session=session,
    )
    assert row.id is not None
    return row


def ensure_model_run(
    name: str,
    *,
    model: str,
    prompt_version: str,
    sampling: SamplingParams,
    config: Mapping[str, Any],
    session: Session,
    catalog_id: int | None = None,
) -> GenerationRun:
    """The run row of ``name`` for ``model`` (created, or checked against the stored one).

    Raises:
        ConfigError: The model spec is malformed, or the run exists with a different model,
            prompt version, sampling or catalog.
    """
    row = model_row(model, session=session)
    assert row.id is not None
    return get_or_create_run(
        name,
        model_spec_id=row.id,
        prompt_version=prompt_version,
        sampling=sampling.model_dump(),
        config=config,
        simulated=parse_spec(model).simulated,
        catalog_id=catalog_id,
        session=session,
    )
