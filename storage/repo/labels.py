"""Labeler specs and step labels (resume-safe upserts)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlmodel import Session, col, select

from storage.hashing import content_hash
from storage.models import LabelerSpec, StepLabel
from storage.repo._upsert import get_or_create, row_values, upsert
from storage.repo.chunks import id_chunks

STEP_LABEL_KEY = ("response_id", "step_index", "labeler_id", "ontology_version_id", "repeat")
_STEP_LABEL_UPDATE = (
    "category", "symbol", "parse_status", "raw_output", "round_id", "settings",
)  # fmt: skip


def get_or_create_labeler(
    *,
    kind: str,
    model: str | None = None,
    temperature: float | None = None,
    seed: int | None = None,
    prompt_version: str = "",
    params: Mapping[str, Any] | None = None,
    name: str | None = None,
    session: Session,
) -> LabelerSpec:
    """The labeler spec row for these settings.

    The row is found by its key, the sha256 of the settings' canonical JSON; a new row
    stores the same settings it was keyed by.
    """
    settings: dict[str, Any] = {
        "kind": kind,
        "model": model,
        "temperature": temperature,
        "seed": seed,
        "prompt_version": prompt_version,
        "params": dict(params or {}),
    }
    key = content_hash(settings)
    return get_or_create(
        session,
        LabelerSpec,
        LabelerSpec.key == key,
        lambda: LabelerSpec(key=key, name=name, **settings),
    )


def upsert_step_labels(labels: Sequence[StepLabel], *, session: Session) -> int:
    """Insert step labels, replacing any with the same key.

    The key is (response, step, labeler, ontology version, repeat); ``round_id`` is replaced
    too. Returns the number of rows written.
    """
    return upsert(
        session,
        StepLabel,
        [row_values(label) for label in labels],
        key=STEP_LABEL_KEY,
        update=_STEP_LABEL_UPDATE,
    )


def step_labels_for(
    response_ids: Sequence[int],
    *,
    labeler_id: int,
    ontology_version_id: int,
    repeat: int = 0,
    session: Session,
) -> dict[int, list[StepLabel]]:
    """Labels per response id, each list in step order (responses without labels omitted)."""
    out: dict[int, list[StepLabel]] = defaultdict(list)
    for chunk in id_chunks(response_ids):
        stmt = (
            select(StepLabel)
            .where(
                col(StepLabel.response_id).in_(chunk),
                StepLabel.labeler_id == labeler_id,
                StepLabel.ontology_version_id == ontology_version_id,
                StepLabel.repeat == repeat,
            )
            .order_by(col(StepLabel.response_id), col(StepLabel.step_index))
        )
        for label in session.exec(stmt):
            out[label.response_id].append(label)
    return dict(out)


def labeled_response_ids(
    *,
    labeler_id: int,
    ontology_version_id: int,
    repeat: int = 0,
    session: Session,
) -> set[int]:
    """Responses that already have labels from this labeler/version/repeat (for resuming)."""
    stmt = (
        select(StepLabel.response_id)
        .where(
            StepLabel.labeler_id == labeler_id,
            StepLabel.ontology_version_id == ontology_version_id,
            StepLabel.repeat == repeat,
        )
        .distinct()
    )
    return set(session.exec(stmt))


def step_label_settings(
    run_ids: Sequence[int], *, labeler_id: int, ontology_version_id: int, session: Session
) -> list[dict[str, Any] | None]:
    """The distinct request settings of a labeler's labels of the runs' responses.

    Labels of empty steps are left out (no request was made for a response whose steps
    were all empty, so they carry none); ``None`` stands for labels stored without settings.
    """
    from storage.models import Response

    stmt = (
        select(StepLabel.settings)
        .join(Response, col(Response.id) == col(StepLabel.response_id))
        .where(
            col(Response.run_id).in_(list(run_ids)),
            StepLabel.labeler_id == labeler_id,
            StepLabel.ontology_version_id == ontology_version_id,
            StepLabel.parse_status != "empty_step",
        )
        .distinct()
    )
    return [row[0] for row in session.execute(stmt)]
