"""The LLM bank-observability judge: strict JSON, repair, stored errors, cache, HTTP."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable

import pytest
from click.testing import Result
from sqlmodel import Session

from llm.sim.backend import SimBackend
from llm.sim.registry import get_preset
from llm.specs import ModelSpec
from storage.repo.judges import judge_scores_for
from study.conflicts.items import import_bank_file
from study.conflicts.observability import (
    KIND,
    LABELS,
    judge_observability_run,
    observability_banks,
    observability_report,
    parse_observability,
    reference_memories,
    stored_observability,
)
from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
from study.conflicts.sim.observability import JUDGE_ERROR, true_observability
from study.strict_json import StrictParseError


def _pipeline_run(session: Session, name: str = "pipe") -> None:
    import_bank_file(None, session=session)
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-balanced"),
        run=name,
        doses=(0, 6),
        samples=1,
        track="pipeline",
    )
    generate_conflicts(opts, session=session)


def test_parse_is_strict() -> None:
    assert parse_observability('ok <answer>{"label": "PARTIAL", "reason": "x"}</answer>') == (
        "PARTIAL"
    )
    for bad in ('{"label": "FULL"}', '<answer>{"label": "MOSTLY"}</answer>', "FULL"):
        with pytest.raises(StrictParseError):
            parse_observability(bad)


def test_one_bank_per_instance_and_truth_rule_matches_extractor(session: Session) -> None:
    _pipeline_run(session)
    rows = observability_banks("pipe", session=session)
    assert len(rows) == 42  # one representative answer per instance, not per dose × sample
    assert all(r.response.sample == 0 and r.response.condition == "N0" for r in rows)
    assert {r.extractor_label for r in rows} == set(LABELS)
    for r in rows:
        assert true_observability(reference_memories(r.instance), r.extracted) == r.extractor_label


def test_judge_with_malformed_replies_stores_every_bank_and_reruns_free(session: Session) -> None:
    _pipeline_run(session)
    broken = get_preset("judge-strict").model_copy(update={"malformed_rate": 0.3})
    s = judge_observability_run(
        "pipe", ModelSpec.parse("sim/judge-strict"), session=session, backend=SimBackend(broken)
    )
    assert s.requested == 42 and s.failed == 0
    assert s.ok + s.repaired + s.errors == 42
    assert s.repaired > 0 and s.errors > 0  # 30 % broke first; 30 % of repairs broke again
    rows = observability_banks("pipe", session=session)
    scores = judge_scores_for(
        [r.response.id for r in rows if r.response.id], kind=KIND, session=session
    )
    assert len(scores) == 42
    for sc in scores:
        assert sc.raw_output  # every raw reply is kept, the malformed ones too
        if sc.parse_status == "error":
            assert sc.value is None
        else:
            assert sc.value in (0.0, 1.0, 2.0)
    assert sum(sc.parse_status == "error" for sc in scores) == s.errors
    again = judge_observability_run(
        "pipe", ModelSpec.parse("sim/judge-strict"), session=session, backend=SimBackend(broken)
    )
    assert again.requested == 0 and again.skipped == 42


def test_judge_agrees_with_extractor_at_its_known_error_rate(session: Session) -> None:
    _pipeline_run(session)
    clean = get_preset("judge-lenient").model_copy(update={"malformed_rate": 0.0})
    judge_observability_run(
        "pipe", ModelSpec.parse("sim/judge-lenient"), session=session, backend=SimBackend(clean)
    )
    rep = observability_report("pipe", session=session)
    pair = next(
        a for a in rep.agreement if {a.rater_a, a.rater_b} == {"extractor", "sim/judge-lenient"}
    )
    assert pair.n == 42
    # the simulated judge reports a wrong label with probability 0.08: expect ~3.4 of 42
    wrong = round((1 - (pair.exact or 0)) * 42)
    assert wrong <= 9
    assert JUDGE_ERROR["judge-lenient"] == 0.08
    assert rep.shares["extractor"]["None"][0] > 0


def test_served_judge_over_http_equals_in_process(session: Session) -> None:
    from llm.backends import get_backend
    from study.sim_endpoint import SimProcess

    _pipeline_run(session)
    key = secrets.token_urlsafe(12)
    spec = "openai-api/simulator/sim/judge-strict"
    with SimProcess(api_key=key) as url:
        env = {**os.environ, "SIMULATOR_BASE_URL": url, "SIMULATOR_API_KEY": key}
        served = judge_observability_run(
            "pipe",
            ModelSpec.parse(spec),
            session=session,
            backend=get_backend(ModelSpec.parse(spec), env=env),
        )
    assert served.requested == 42 and served.failed == 0
    judge_observability_run("pipe", ModelSpec.parse("sim/judge-strict"), session=session)
    labels = stored_observability(observability_banks("pipe", session=session), session=session)
    assert all(v[spec] == v["sim/judge-strict"] for v in labels.values())


def test_cli_observe_and_report(cli: Callable[..., Result]) -> None:
    assert cli("conflicts", "import", "--sample").exit_code == 0
    res = cli(
        "conflicts", "generate", "--model", "sim/mc-quiet", "--run", "p",
        "--distractors", "0", "--track", "pipeline",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    res = cli("conflicts", "observe", "--run", "p", "--judge", "sim/judge-strict")
    assert res.exit_code == 0, res.output
    assert "42 bank(s) labelled now" in res.output
    res = cli("conflicts", "observability", "--run", "p", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["banks"] == 42 and set(data["shares"]) == {"extractor", "sim/judge-strict"}
    assert sum(v[0] for v in data["shares"]["extractor"].values()) == 42
    res = cli("conflicts", "observability", "--run", "nope")
    assert res.exit_code != 0 and "nope" in str(res.exception)


def test_oracle_run_is_refused_with_one_sentence(cli: Callable[..., Result]) -> None:
    assert cli("conflicts", "import", "--sample").exit_code == 0
    res = cli(
        "conflicts", "generate", "--model", "sim/mc-quiet", "--run", "o", "--distractors", "0"
    )
    assert res.exit_code == 0, res.output
    res = cli("conflicts", "observe", "--run", "o", "--judge", "sim/judge-strict")
    assert res.exit_code != 0 and "not a pipeline-track" in str(res.exception)
