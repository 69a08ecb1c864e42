"""The generic instrument store: runs and keyed records (:mod:`storage.instrument_models`).

Any instrument may keep its runs here instead of tables of its own (an instrument from
another package cannot add a schema revision). A run is found by ``(instrument, name)``;
a second start with other settings is refused, not merged. Records are keyed by
``(run, item, unit)`` and written with INSERT … ON CONFLICT DO NOTHING, so a resumed run
asks only the keys it lacks (:func:`stored_keys`) and a repeated write stores nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.errors import InputError, NotFoundError
from storage.instrument_models import InstrumentRecord, InstrumentRun
from storage.repo._upsert import upsert
from storage.repo.runs import check_run_name


@dataclass(frozen=True)
class RecordRow:
    """One record to store (or as read back).

    Attributes:
        item: what the runs are paired on (a question's id).
        unit: which answer of the item (a sample's index, a probe).
        text: the answer's text (untrusted: escaped wherever it is shown).
        value: the answer's score (``None``: unreadable).
        data: anything else the instrument keeps (plain JSON).
    """

    item: str
    unit: str
    text: str | None = None
    value: float | None = None
    data: Mapping[str, Any] | None = None


def start_run(
    instrument: str,
    name: str,
    *,
    model: str,
    config: Mapping[str, Any],
    simulated: bool,
    session: Session,
) -> InstrumentRun:
    """The run ``name`` of ``instrument``: created, or the stored one when it matches.

    Raises:
        InputError: the name is unusable, or the stored run has another model or settings
            (a resume must ask the same study).
    """
    check_run_name(name)
    row = get_instrument_run(instrument, name, session=session)
    if row is None:
        row = InstrumentRun(
            instrument=instrument, name=name, model=model, config=dict(config),
            simulated=simulated, status="running",
        )  # fmt: skip
        session.add(row)
        session.flush()
        return row
    if row.model != model or row.config != dict(config):
        raise InputError(
            f"Run {name!r} of {instrument} was started with model {row.model!r} and other "
            "settings; resume it with the same ones or choose a new name."
        )
    row.status = "running"
    session.add(row)
    session.flush()
    return row


def get_instrument_run(instrument: str, name: str, *, session: Session) -> InstrumentRun | None:
    """The stored run, or ``None``."""
    return session.exec(
        select(InstrumentRun).where(
            col(InstrumentRun.instrument) == instrument, col(InstrumentRun.name) == name
        )
    ).first()


def require_instrument_run(instrument: str, name: str, *, session: Session) -> InstrumentRun:
    """The stored run.

    Raises:
        NotFoundError: no such run (one sentence naming it).
    """
    row = get_instrument_run(instrument, name, session=session)
    if row is None:
        raise NotFoundError(f"No {instrument} run named {name!r} in this workspace.")
    return row


def list_instrument_runs(instrument: str, *, session: Session) -> list[InstrumentRun]:
    """The instrument's runs, oldest first."""
    return list(
        session.exec(
            select(InstrumentRun)
            .where(col(InstrumentRun.instrument) == instrument)
            .order_by(col(InstrumentRun.id))
        )
    )


def set_instrument_run_status(run: InstrumentRun, status: str, *, session: Session) -> None:
    """Set the run's status (``done``, ``interrupted``, ``failed``) and commit."""
    run.status = status
    session.add(run)
    session.commit()


def stored_keys(run_id: int, *, session: Session) -> set[tuple[str, str]]:
    """The ``(item, unit)`` keys the run already holds."""
    rows = session.exec(
        select(InstrumentRecord.item, InstrumentRecord.unit).where(
            col(InstrumentRecord.run_id) == run_id
        )
    )
    return {(str(i), str(u)) for i, u in rows}


def add_records(run_id: int, records: Sequence[RecordRow], *, session: Session) -> int:
    """Store ``records`` (a key already stored is left as it is); returns how many were sent."""
    rows = [
        {"run_id": run_id, "item": r.item, "unit": r.unit, "text": r.text, "value": r.value,
         "data": dict(r.data or {})}
        for r in records
    ]  # fmt: skip
    return upsert(session, InstrumentRecord, rows, key=["run_id", "item", "unit"])


def read_records(run_id: int, *, session: Session) -> list[RecordRow]:
    """Every record of the run, by item then unit."""
    rows = session.exec(
        select(InstrumentRecord)
        .where(col(InstrumentRecord.run_id) == run_id)
        .order_by(col(InstrumentRecord.item), col(InstrumentRecord.unit))
    )
    return [RecordRow(r.item, r.unit, r.text, r.value, dict(r.data or {})) for r in rows]


def record_count(run_id: int, *, session: Session) -> int:
    """How many records the run holds."""
    return int(
        session.exec(
            select(func.count())
            .select_from(InstrumentRecord)
            .where(col(InstrumentRecord.run_id) == run_id)
        ).one()
    )
