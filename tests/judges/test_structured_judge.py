"""The response judge with structured outputs (issue 36): known dose on the simulator.

The simulator breaks a seeded share of its judge replies (``malformed_rate``). With
structured outputs on it answers in the schema, as constrained decoding does, so every
verdict parses at the first request; with them off the same cases need repairs and some
end as errors. Both directions are asserted, so the feature can be seen failing too.
"""

from __future__ import annotations

from sqlmodel import Session

from llm.sim.registry import get_preset
from llm.specs import ModelSpec
from llm.structured import use_structured
from study.reasoning.judges import PERTURBED_KINDS, judge_format, judge_run
from tests.judges.test_judge_e2e import RUN, _make_run


def test_structured_judge_parses_every_verdict_where_prompt_and_repair_does_not(
    session: Session,
) -> None:
    planned = _make_run(session)
    with use_structured("off"):
        off = judge_run(RUN, ModelSpec.parse("sim/default"), session=session)
    assert off.repaired + off.errors >= 1  # the dose: the simulator breaks the format
    # a second simulated judge (its verdicts are stored apart) with the same format breaks
    assert get_preset("strong").malformed_rate > 0
    with use_structured("auto"):
        auto = judge_run(RUN, ModelSpec.parse("sim/strong"), session=session)
    assert auto.requested == planned and auto.failed == 0
    assert (auto.repaired, auto.errors) == (0, 0)
    assert all(set(counts) == {"ok"} for counts in auto.by_kind.values())


def test_judge_schema_holds_exactly_the_asked_criteria() -> None:
    fmt = judge_format(PERTURBED_KINDS)
    schema = dict(fmt.schema or {})
    assert schema["required"] == list(PERTURBED_KINDS)
    assert schema["additionalProperties"] is False
    assert schema["properties"]["helpfulness"]["enum"] == [0, 1, 2, 3, 4]
    assert fmt.accepts('{"helpfulness": 3, "distraction": 0, "acknowledgement": 1}')
