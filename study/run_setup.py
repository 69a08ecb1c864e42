"""One run set-up for the instruments' runs: the run's lease and its stored run row.

* :func:`run_lease` — one lease per run for every instrument's run and judge commands
  (reasoning drift's generation, disposition, memory conflicts, source reliance). Two
  processes on the same run would each ask the whole plan (a 42-request disposition plan
  cost 78 and 84 requests when run twice at once), so a second process is refused in one
  sentence naming the holder.
* :func:`ensure_model_run` — reasoning drift (:func:`study.reasoning.generation.ensure_run`)
  and memory conflicts (:mod:`study.conflicts.plan`) both store a run as a
  ``GenerationRun`` of one model: the model's row (created on first use from its
  ``provider/model`` spec) and the run's row, created on first use and checked against what
  is stored on a resume (same model, prompt version, sampling, catalog: a mismatch is one
  ``ConfigError`` sentence). Each instrument says only what its run is (prompt version,
  sampling, config); this module does the rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlmodel import Session

from llm.specs import ModelSpec
from llm.types import SamplingParams
from storage.models import GenerationRun, ModelSpecRow
from storage.repo.leases import Lease, acquire_lease, release_lease
from storage.repo.runs import get_or_create_model_spec, get_or_create_run


@contextmanager
def run_lease(key: str, *, session: Session, what: str) -> Iterator[Lease]:
    """Hold the lease ``key`` for the block (released whatever happens).

    Args:
        key: what the lease is for, ``<instrument>_<stage>:<run name>``.
        session: the caller's session (the lease commits at once).
        what: how the refusal names the work, e.g. ``Conflicts run 'demo'``.

    Raises:
        storage.repo.leases.LeaseHeldError: another live process holds it.
    """
    lease = acquire_lease(key, session=session, what=what)
    try:
        yield lease
    finally:
        session.rollback()  # whatever failed mid-write must not block the release
        release_lease(lease, session=session)


def model_row(info: ModelSpec, *, session: Session) -> ModelSpecRow:
    """The stored row of a parsed ``provider/model`` spec (created on first use)."""
    row = get_or_create_model_spec(
        info.spec,
        provider=info.provider,
        model=info.model,
        service=info.service,
        simulated=info.simulator_output,
        session=session,
    )
    assert row.id is not None
    return row


def ensure_model_run(
    name: str,
    *,
    model: ModelSpec,
    prompt_version: str,
    sampling: SamplingParams,
    config: Mapping[str, Any],
    session: Session,
    catalog_id: int | None = None,
) -> GenerationRun:
    """The run row of ``name`` for ``model`` (created, or checked against the stored one).

    Raises:
        ConfigError: The run exists with a different model,
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
        simulated=model.simulator_output,
        catalog_id=catalog_id,
        session=session,
    )
