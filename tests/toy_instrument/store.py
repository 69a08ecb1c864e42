"""The toy's stored runs: plan, ask what the run lacks, score, store (resumable).

A coin run lives in the workbench's generic instrument store
(:mod:`storage.repo.instrument_runs`): one record per item and sample, keyed
``(item, sample)``, holding the reply and its score. A second call asks only the keys
the run lacks, so an interrupted run (``limit``) resumes where it stopped and a finished
one stores nothing more. ``scope`` restricts a call to some items (one shard of a
sharded run, :mod:`tests.toy_instrument.sharded`).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from sqlmodel import Session

from driftlens_plugins import RunOutcome
from llm.backends import get_backend
from llm.specs import ModelSpec
from storage.repo.instrument_runs import (
    RecordRow,
    add_records,
    record_count,
    set_instrument_run_status,
    start_run,
    stored_keys,
)
from tests.toy_instrument.items import SAMPLE, read_items
from tests.toy_instrument.plan import plan, run
from tests.toy_instrument.score import score

#: The plugin's name: the instrument store's key for its runs.
INSTRUMENT = "toy"


def _config(samples: int, items: Path) -> dict[str, object]:
    return {"samples": samples, "items": items.name}


def open_run(
    name: str, *, model: str, samples: int, session: Session, items: Path = SAMPLE
) -> tuple[int, int]:
    """Create (or find, settings checked) the run; returns ``(run id, plan size)``."""
    row = start_run(
        INSTRUMENT, name, model=model, config=_config(samples, items),
        simulated=model.startswith("sim/"), session=session,
    )  # fmt: skip
    session.commit()
    assert row.id is not None
    return row.id, len(read_items(items)) * samples


def run_coin(
    name: str,
    *,
    model: str,
    session: Session,
    samples: int = 8,
    items: Path = SAMPLE,
    limit: int | None = None,
    scope: Collection[str] | None = None,
    finish: bool = True,
) -> RunOutcome:
    """Run (or resume) the coin study ``name``: ask the keys it lacks, store their scores.

    Args:
        name: the run's name.
        model: the model spec (``sim/coin-yes``).
        session: workspace session (committed here).
        samples: answers per item.
        items: the items file.
        limit: store at most this many new answers (then stop, as an interruption would).
        scope: only these item ids (a shard); ``None``: every item.
        finish: set the run's status at the end (a shard leaves it to its coordinator).

    Raises:
        InputError: bad items, or the run exists with another model or settings.
    """
    run_id, total = open_run(name, model=model, samples=samples, session=session, items=items)
    have = stored_keys(run_id, session=session)
    todo = [
        r for r in plan(read_items(items), samples)
        if (scope is None or r.tag[0] in scope) and (r.tag[0], str(r.tag[1])) not in have
    ]  # fmt: skip
    if limit is not None:
        todo = todo[:limit]
    answers = run(get_backend(ModelSpec.parse(model)), todo) if todo else []
    rows = [
        RecordRow(item=a.key[0], unit=str(a.key[1]), text=a.text, value=_value(score(a.text)))
        for a in answers
    ]
    add_records(run_id, rows, session=session)
    session.commit()
    stored = record_count(run_id, session=session)
    if finish:
        from storage.instrument_models import InstrumentRun

        row = session.get(InstrumentRun, run_id)
        assert row is not None
        set_instrument_run_status(row, "done" if stored >= total else "interrupted",
                                  session=session)  # fmt: skip
    return RunOutcome(run=name, stored=stored, added=len(rows), total=total)


def _value(s: int | None) -> float | None:
    return None if s is None else float(s)
