"""Steps stored as spans of the response text: lossless, and invisible to every reader."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text as sql_text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from storage.models import Response
from storage.repo.runs import upsert_responses
from storage.step_spans import MIN_SPAN_CHARS, has_spans, pack_steps, unpack_steps
from study.reasoning.parsing import parse_response, render_response
from tests.storage._world import World, seed_world

# Text with multi-byte characters, line breaks and tag-like pieces.
_TEXT = st.text(alphabet=st.sampled_from(list("ab c\n<>/_1é€😀&;")), max_size=120)


@given(_TEXT, st.lists(st.tuples(st.integers(0, 120), st.integers(0, 40)), max_size=8))
def test_substring_steps_round_trip(text: str, cuts: list[tuple[int, int]]) -> None:
    steps = [text[a : a + n] for a, n in cuts]
    stored = pack_steps(text, steps)
    assert unpack_steps(text, stored) == steps
    assert len(stored) == len(steps)  # SQL counts steps with json_array_length
    # Through JSON (what the column holds) too.
    assert unpack_steps(text, json.loads(json.dumps(stored))) == steps


@given(st.one_of(st.none(), _TEXT), st.lists(_TEXT, max_size=6))
def test_any_steps_round_trip(text: str | None, steps: list[str]) -> None:
    stored = pack_steps(text, steps)
    assert unpack_steps(text, stored) == steps
    # Packing the unpacked form again gives the same stored value (the migration's no-op).
    assert pack_steps(text, unpack_steps(text, stored)) == stored


def test_parsed_steps_become_spans_and_the_others_stay_strings() -> None:
    steps = ["First, recall the definition.", "Then apply it to the case.", "ok"]
    text = render_response(steps, "42")
    stored = pack_steps(text, list(parse_response(text).steps))
    assert [isinstance(s, list) for s in stored] == [True, True, False]  # "ok" is short
    assert len(json.dumps(stored)) < len(json.dumps(steps)) / 2
    # A step whose HTML entities the parser decoded is not in the text: kept whole.
    escaped = "<think><step_1>a &amp; b are both below the limit</step_1></think><answer>x</answer>"
    parsed = list(parse_response(escaped).steps)
    assert parsed == ["a & b are both below the limit"]
    assert pack_steps(escaped, parsed) == parsed and not has_spans(parsed)
    # A repeated step finds its own occurrence after the previous one.
    twice = render_response(["the same long step text", "the same long step text"], "y")
    spans = pack_steps(twice, ["the same long step text"] * 2)
    assert spans[0] != spans[1] and len("the same long step text") >= MIN_SPAN_CHARS


def test_a_span_outside_the_text_is_an_error_not_a_wrong_step() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        unpack_steps("short", [[0, 50]])
    with pytest.raises(ValueError, match="no text"):
        unpack_steps(None, [[0, 1]])


def _write(world: World, session: Session, steps: list[str], text: str, sample: int) -> int:
    """Write one response through the bulk path (the one generation uses): packed."""
    upsert_responses(
        [
            Response(
                run_id=world.run_id,
                question_id=world.question_ids[0],
                sample=sample,
                text=text,
                steps=steps,
                answer="x",
            )
        ],
        session=session,
    )
    session.commit()
    rid = session.exec(
        select(Response.id).where(Response.run_id == world.run_id, Response.sample == sample)
    ).one()
    assert rid is not None
    return rid


def test_orm_readers_see_strings_whatever_the_stored_form(engine: Engine) -> None:
    steps = ["Weigh the first option carefully.", "ok", "Compare it with the second one."]
    text = render_response(steps, "x")
    with Session(engine) as session:
        world = seed_world(session)
        rid = _write(world, session, steps, text, sample=5)
    with engine.connect() as conn:
        raw = json.loads(
            conn.execute(sql_text(f"SELECT steps FROM response WHERE id = {rid}")).one()[0]
        )
    assert has_spans(raw) and unpack_steps(text, raw) == steps

    with Session(engine) as session:
        row = session.get(Response, rid)
        assert row is not None and row.steps == steps  # load event
        assert session.exec(select(Response).where(col(Response.id) == rid)).one().steps == steps
        session.expire(row)
        assert row.steps == steps  # expired attributes reloaded (refresh event)
        session.expire(row, ["steps"])
        assert row.steps == steps  # the steps alone, text still loaded
        session.expire(row, ["steps", "text"])
        session.refresh(row, ["steps"])
        assert row.steps == steps  # the steps alone, the text read for them
        again = session.exec(
            select(Response)
            .where(col(Response.id) == rid)
            .execution_options(populate_existing=True)
        ).one()
        assert again is row and row.steps == steps  # re-populated in place
        # Writing an object back through the ORM stores plain strings: valid stored form.
        row.answer = "y"
        session.add(row)
        session.commit()
        assert not session.is_modified(row)
        assert row.steps == steps and row.model_dump()["steps"] == steps


def test_orm_rows_are_written_as_plain_strings_and_read_back_equal(engine: Engine) -> None:
    steps = ["A plain step written through an ORM object."]
    with Session(engine) as session:
        world = seed_world(session)
        row = Response(
            run_id=world.run_id,
            question_id=world.question_ids[0],
            sample=9,
            text=render_response(steps, "x"),
            steps=steps,
        )
        session.add(row)
        session.commit()
        rid = row.id
    with engine.connect() as conn:
        raw = conn.execute(sql_text(f"SELECT steps FROM response WHERE id = {rid}")).one()[0]
    assert json.loads(raw) == steps
    with Session(engine) as session:
        got = session.get(Response, rid)
        assert got is not None and got.steps == steps
