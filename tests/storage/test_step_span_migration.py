"""Revision 0010 stores parsed steps as spans of the response text, in place.

The workspace of the 0005/0007 conversion tests (simulated generation, the cache, a judge)
plus a response whose steps cannot all be spans is written at head (steps packed), taken
back to revision 0009 (every step a string), checked to be that layout, and upgraded
again: every export, stored request, cache entry, step list and keyword label is
identical before and after, the converted rows hold exactly what generation writes, and
running the conversion again changes nothing. SQLite always; PostgreSQL when
``DRIFTLENS_TEST_PG_URL`` is set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import delete, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from storage import migrate
from storage.engine import make_engine
from storage.models import Response, StepLabel
from storage.repo.runs import require_run, upsert_responses
from storage.step_spans import has_spans, pack_steps, unpack_steps
from study.reasoning.parsing import parse_response
from study.reasoning.trajectories import label_run
from tests.storage._migration_support import revision_module
from tests.storage.test_request_migration import RUNS, _populate
from tests.storage.test_shared_text_migration import _exports

REVISION = "0010_step_spans"
PREVIOUS = "0009_source_claims"

# Step 1 is decoded from HTML entities (not in the text), step 2 too short for a span,
# step 3 an exact substring.
ODD_TEXT = (
    "<think><step_1>rent &amp; buy cost the same here</step_1><step_2>so</step_2>"
    "<step_3>the tie-breaker is how long I stay</step_3></think><answer>rent</answer>"
)


def _add_odd_response(engine: Engine) -> None:
    parsed = parse_response(ODD_TEXT)
    with Session(engine) as session:
        run = require_run(RUNS[0], session=session)
        question_id = session.exec(
            select(Response.question_id).where(Response.run_id == run.id)
        ).first()
        assert question_id is not None and run.id is not None
        upsert_responses(
            [
                Response(
                    run_id=run.id,
                    question_id=question_id,
                    sample=7,
                    text=ODD_TEXT,
                    steps=list(parsed.steps),
                    answer=parsed.answer,
                    parse_status=parsed.parse_status,
                )
            ],
            session=session,
        )
        session.commit()


def _raw_steps(engine: Engine) -> dict[int, tuple[str | None, list[Any]]]:
    with engine.connect() as conn:
        return {
            int(i): (t, json.loads(s) if isinstance(s, str) else s)
            for i, t, s in conn.execute(text("SELECT id, text, steps FROM response"))
        }


def _steps_and_labels(engine: Engine) -> dict[str, Any]:
    """Every response's steps through the ORM, and keyword labels made from the stored form."""
    with Session(engine) as session:
        steps = {r.id: r.steps for r in session.exec(select(Response).order_by(col(Response.id)))}
        session.execute(delete(StepLabel))
        session.commit()
        for run in RUNS:
            label_run(run, "keywords", session=session)
        labels = sorted(
            session.exec(select(StepLabel.response_id, StepLabel.step_index, StepLabel.symbol))
        )
    assert labels and any(steps.values())
    return {"steps": steps, "labels": labels}


def test_populated_workspace_converts_in_place_with_identical_exports(
    any_url: str, tmp_path: Path
) -> None:
    engine = make_engine(any_url)
    _populate(engine)
    _add_odd_response(engine)
    before = _exports(engine, tmp_path / "before") | _steps_and_labels(engine)
    written = _raw_steps(engine)
    # Generation wrote spans; the odd response keeps its decoded and its short step whole.
    assert all(has_spans(s) for t, s in written.values() if s)
    odd = next(s for t, s in written.values() if t == ODD_TEXT)
    assert [type(x) for x in odd] == [str, str, list]
    assert unpack_steps(ODD_TEXT, odd) == list(parse_response(ODD_TEXT).steps)

    # Revision 0009: every step a string, the same steps.
    assert migrate.downgrade(engine, PREVIOUS) == PREVIOUS
    plain = _raw_steps(engine)
    assert not any(has_spans(s) for _, s in plain.values())
    assert {i: s for i, (_, s) in plain.items()} == {
        i: unpack_steps(t, s) for i, (t, s) in written.items()
    }
    # The exports are not read at 0009: today's ORM maps columns of later revisions
    # (0012's judge_score.settings), so they are compared once upgraded to head below.

    assert migrate.upgrade(engine) == migrate.head_revision()
    assert migrate.schema_diff(engine) == []
    # The conversion stores exactly what generation writes.
    assert _raw_steps(engine) == written
    assert _exports(engine, tmp_path / "after") | _steps_and_labels(engine) == before

    module = revision_module(REVISION)
    with engine.begin() as conn:
        assert module.convert(conn) == 0
    assert _raw_steps(engine) == written


def test_the_revision_packs_as_the_application_does() -> None:
    module = revision_module(REVISION)
    steps = list(parse_response(ODD_TEXT).steps)
    for text_value in (ODD_TEXT, None, "", "so"):
        assert module.pack(text_value, steps) == pack_steps(text_value, steps)
    packed = pack_steps(ODD_TEXT, steps)
    assert module.unpack(ODD_TEXT, packed) == unpack_steps(ODD_TEXT, packed) == steps
    assert module.MIN_SPAN_CHARS == 12
