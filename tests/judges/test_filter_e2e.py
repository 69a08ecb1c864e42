"""The question filter end to end: simulator in-process and over HTTP, resume, repair, errors."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from sqlmodel import Session
from typer.testing import Result

from llm.sim.server import SimServer
from llm.specs import ModelSpec
from storage.errors import InputError
from storage.models import Question
from storage.repo.questions import list_questions
from study.questions import import_sample_questions
from study.reasoning.question_filter import filter_questions
from study.reasoning.sim.tasks import filter_verdict
from study.strict_json import REPAIR_SEPARATOR
from tests.scripted_backend import ScriptedBackend

LOOKUPS = {
    "lk-1": "What is the boiling point of water at sea level?",
    "lk-2": "Who painted the Mona Lisa?",
    "lk-3": "Should I move to Berlin for my new job?",
}


def _seed(session: Session) -> None:
    import_sample_questions(session=session)
    for key, text in LOOKUPS.items():
        session.add(Question(external_id=key, text=text))
    session.commit()


def _check_stored(session: Session, model: str) -> dict[str, Question]:
    rows = {q.external_id: q for q in list_questions(session=session)}
    for q in rows.values():
        assert q.filter_model == model
        assert q.filter_raw  # raw output always kept
        if q.filter_error is None:
            label, reason, domains = filter_verdict(q.text)
            assert (q.filter_label, q.filter_reason, q.filter_domains) == (label, reason, domains)
        else:
            # Never silently accepted: no verdict, both raw replies kept.
            assert q.filter_label is None and q.filter_reason is None
            assert q.filter_raw.count(REPAIR_SEPARATOR) == 1
            assert q.filter_error.startswith("unparseable after a repair request")
    return rows


def test_in_process_filter_stores_verdicts_and_rerun_sends_nothing(
    session: Session, sim_calls: list[str]
) -> None:
    _seed(session)
    progress: list[tuple[int, int]] = []
    s = filter_questions(
        ModelSpec.parse("sim/default"),
        session=session,
        progress=lambda d, t: progress.append((d, t)),
    )
    assert s.questions == s.requested == 51 and s.skipped == 0 and s.failed == 0
    assert s.accepted + s.rejected + s.errors == 51
    assert s.rejected >= 3
    assert progress[-1] == (51, 51)
    rows = _check_stored(session, "sim/default")
    for key in LOOKUPS:
        assert rows[key].filter_label in ("REJECT", None)  # None only if unparseable
    assert s.repaired + s.errors >= 1  # the default preset breaks some replies
    first_calls = len(sim_calls)
    assert first_calls == 51 + s.repaired + s.errors  # one request each, one repair each

    again = filter_questions(ModelSpec.parse("sim/default"), session=session)
    assert (again.skipped, again.requested) == (51, 0)
    assert len(sim_calls) == first_calls  # nothing sent

    redo = filter_questions(ModelSpec.parse("sim/default"), session=session, redo=True)
    assert redo.requested == 51
    assert len(sim_calls) == first_calls  # identical requests come from the LLM cache
    assert (redo.accepted, redo.rejected, redo.errors) == (s.accepted, s.rejected, s.errors)

    other = filter_questions(ModelSpec.parse("sim/null"), session=session)
    assert other.requested == 51 and other.errors == 0  # a new model screens again
    _check_stored(session, "sim/null")


def test_filter_over_http_through_the_openai_client(
    session: Session, monkeypatch: pytest.MonkeyPatch, sim_calls: list[str]
) -> None:
    _seed(session)
    with SimServer(api_key="filter-key") as url:
        monkeypatch.setenv("SIMTASK_BASE_URL", url)
        monkeypatch.setenv("SIMTASK_API_KEY", "filter-key")
        model = "openai-api/simtask/sim/default"
        s = filter_questions(ModelSpec.parse(model), session=session, concurrency=8)
        assert s.requested == 51 and s.failed == 0
        sent = len(sim_calls)
        assert sent == 51 + s.repaired + s.errors
        rows = _check_stored(session, model)
        assert rows["lk-2"].filter_label in ("REJECT", None)
        again = filter_questions(ModelSpec.parse(model), session=session)
        assert again.requested == 0 and len(sim_calls) == sent


def test_repair_then_error_with_a_scripted_model(session: Session) -> None:
    session.add(Question(external_id="a", text="Should a city fund buses or roads?"))
    session.add(Question(external_id="b", text="Is it fair to judge the past by today?"))
    session.add(Question(external_id="c", text="Should a friend lend money?"))
    session.add(Question(external_id="d", text="Should a team share credit equally?"))
    session.commit()
    wordy = " ".join(["reason"] * 20)
    good = json.dumps({"label": "ACCEPT", "reason": "Trade-off.", "domains": ["finance"]})

    def script(messages: list[tuple[str, str]]) -> str | None:
        question = json.loads(messages[1][1].rsplit("\n", 1)[-1])["question"]
        repair = len(messages) > 2
        if "buses" in question:
            return good if repair else "```json\n{'label': 'ACCEPT'}\n```"
        if "past" in question:
            return "still not JSON" if repair else '{"label": "ACCEPT", "reason": "x"}'
        if "credit" in question:
            return json.dumps({"label": "REJECT", "reason": wordy, "domains": []})
        return None  # endpoint failure: nothing stored

    backend = ScriptedBackend(script)
    s = filter_questions(ModelSpec.parse(backend.spec), session=session, backend=backend)
    assert (s.accepted, s.rejected, s.errors, s.failed, s.repaired) == (1, 1, 1, 1, 1)
    assert s.long_reasons == 1
    rows = {q.external_id: q for q in list_questions(session=session)}
    assert rows["a"].filter_label == "ACCEPT" and rows["a"].filter_domains == ["finance"]
    assert rows["a"].filter_raw is not None and REPAIR_SEPARATOR in rows["a"].filter_raw
    assert rows["b"].filter_label is None
    assert rows["b"].filter_error is not None and "no valid JSON object" in rows["b"].filter_error
    assert rows["b"].filter_raw == '{"label": "ACCEPT", "reason": "x"}' + REPAIR_SEPARATOR + (
        "still not JSON"
    )
    # The repair request quotes what was wrong.
    repair_texts = [m[-1][1] for m in backend.requests if len(m) > 2]
    assert any("missing key 'domains'" in t for t in repair_texts)
    assert rows["d"].filter_label == "REJECT" and rows["d"].filter_reason == wordy  # kept
    assert rows["c"].filter_label is None and rows["c"].filter_error is None
    assert rows["c"].filter_model is None
    # A rerun asks only about the failed question.
    backend.requests.clear()
    again = filter_questions(ModelSpec.parse(backend.spec), session=session, backend=backend)
    assert again.requested == 1 and len(backend.requests) == 1


def test_no_questions_is_an_input_error(session: Session) -> None:
    with pytest.raises(InputError, match="No questions"):
        filter_questions(ModelSpec.parse("sim/default"), session=session)


def test_cli_filter_and_list(cli: Callable[..., Result], session: Session) -> None:
    _seed(session)
    res = cli("questions", "filter", "--model", "sim/default", "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["requested"] == 51 and summary["model"] == "sim/default"
    res = cli("questions", "list", "--json")
    rows = [json.loads(line) for line in res.output.splitlines()]
    lookup = next(r for r in rows if r["id"] == "lk-1")
    assert lookup["filter_label"] in ("REJECT", None) and lookup["filter_model"] == "sim/default"
    table = cli("questions", "list")
    assert table.exit_code == 0 and "REJECT" in table.output
    again = cli("questions", "filter", "--model", "sim/default")
    assert again.exit_code == 0 and "0 asked now" in again.output
