"""Heuristic baselines and the two-stage conflict-aware action policy."""

from __future__ import annotations

from scipy.stats import binomtest
from sqlmodel import Session

from llm.sim.backend import SimBackend
from llm.sim.registry import get_preset
from llm.specs import ModelSpec
from storage.repo.requests import stored_messages
from storage.repo.runs import list_responses, require_run
from study.conflicts.items import import_bank_file, load_sample_banks
from study.conflicts.policy import (
    PolicySummary,
    action_mixture,
    heuristic_answer,
    parse_action,
    run_policy,
)
from study.conflicts.sim.responder import action_mix
from study.strict_json import StrictParseError


def test_heuristics_commit_or_ask_as_defined() -> None:
    inst = next(b for b in load_sample_banks() if b.instance_id == "p05_medication_record")
    shown = list(inst.core_memories)
    text, meta = heuristic_answer("recency", inst, shown)
    # the last side-memory in the record is side_a's index 5 (pharmacy label), after side_b's 4
    assert meta["committed_to"] == inst.core_memories[5] and "simply go with" in text
    _, maj = heuristic_answer("majority", inst, shown)
    assert maj["committed_to"] in [inst.core_memories[i] for i in inst.provenance.side_a]
    ask, _ = heuristic_answer("ask-only", inst, shown)
    assert ask.endswith("?")
    cond, _ = heuristic_answer("conditionalize-only", inst, shown)
    assert cond.count("If ") == 2
    _, lex = heuristic_answer("lexical-detector", inst, shown)
    assert isinstance(lex["detected"], bool)


def test_action_outside_the_set_is_rejected() -> None:
    assert parse_action('{"action": "verify", "reason": "x"}') == ("verify", "x")
    try:
        parse_action('{"action": "ask"}')
    except StrictParseError as exc:
        assert "must be one of" in str(exc)
    else:
        raise AssertionError("an unknown action was accepted")


def test_caap_two_stages_cached_stored_and_mixture_near_preset(session: Session) -> None:
    import_bank_file(None, session=session)
    backbone = SimBackend(get_preset("mc-balanced").model_copy(update={"malformed_rate": 0.1}))

    def run_caap() -> PolicySummary:
        return run_policy(
            "caap",
            "caap-1",
            session=session,
            backbone=ModelSpec.parse("sim/mc-balanced"),
            doses=(0, 3, 6),
            backend=backbone,
        )

    s = run_caap()
    assert s.planned == 126 and s.written + s.select_errors == 126
    again = run_caap()  # the same policy run again: everything already done
    assert again.already_done == 126 and again.written == 0
    run = require_run("caap-1", session=session)
    assert run.id is not None
    rows = list_responses(run.id, session=session)
    ok = [r for r in rows if r.parse_status == "ok"]
    assert all(r.request["policy"]["action"] in s.actions for r in ok)
    assert all("Chosen action:" in stored_messages(r, session=session)[0]["content"] for r in ok)
    mix = action_mixture(["caap-1"], session=session)
    for type_ in ("CPC", "BOC", "SCC"):
        cells = [m for m in mix if m["type"] == type_]
        n = cells[0]["n"]
        for action, p in action_mix("mc-balanced", type_).items():
            k = next((m["k"] for m in cells if m["action"] == action), 0)
            # compatible with the preset's probability (two-sided exact binomial test)
            assert binomtest(k, n, p).pvalue > 0.001, (type_, action, k, n, p)
