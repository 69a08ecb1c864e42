"""Arms → generation with re-asks → classifier → analysis, on in-process simulator arms."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from sqlmodel import Session, select

from llm.seeds import derive_seed
from llm.specs import ModelSpec
from storage.disposition_models import DispositionResponse, DispositionScore
from study.disposition.analysis import analyze_study
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.plan import build_plan
from study.disposition.runs import ArmSpec, add_arms, run_study, write_analysis
from study.disposition.sim.model import DISPOSITION_PRESETS
from study.disposition.sim.responder import answer_probe
from study.disposition.sim_endpoint import probe_registry
from tests.cli_invoke import invoke_cli


def _small() -> BatteryDocument:
    doc = load_sample_batteries()
    return BatteryDocument(
        batteries=[b.model_copy(update={"stems": b.stems[:3]}) for b in doc.batteries[:2]]
    )


ARMS = [
    ArmSpec("ref", ModelSpec.parse("sim/disp-qwen-d000"), role="reference", dose=0, max_tokens=400),
    ArmSpec("d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100, max_tokens=400),
    ArmSpec(
        "off-ref", ModelSpec.parse("sim/disp-qwen-d000"), role="reference", dose=0, reasoning="off"
    ),
    ArmSpec("off-d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100, reasoning="off"),
    ArmSpec(
        "b-ref",
        ModelSpec.parse("sim/disp-qwen-d000"),
        role="reference",
        dose=0,
        reasoning="budget:64",
    ),
    ArmSpec("b-d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100, reasoning="budget:64"),
]


def _expected_exhaustions(doc: BatteryDocument, dose: float) -> dict[tuple, int]:
    """Re-derive each item's exhausted attempts from the simulator's own seeded draws."""
    reg = probe_registry(doc)
    out = {}
    for it in build_plan(doc.probes(), samples=2):
        info = reg[" ".join(it.probe.text.split())]
        n = 0
        for attempt in range(4):
            seed = derive_seed(it.seed, it.sample, attempt or None) or 0
            rep = answer_probe(
                info, preset=DISPOSITION_PRESETS["disp-qwen"], dose=dose, train_seed=0,
                seed=seed, enable_thinking=None, prefill=None, max_tokens=400,
            )  # fmt: skip
            if rep.finish_reason != "length":
                break
            n += 1
        out[it.key] = n
    return out


def test_study_runs_resumes_and_agrees_with_the_stats_command(
    session: Session, tmp_path: Path
) -> None:
    doc = _small()
    add_arms("t", ARMS, session=session)
    gens, scores = run_study(
        "t",
        doc,
        session=session,
        judge=ModelSpec.parse("sim/default"),
        repeat_share=0.2,
        grade_share=0.5,
    )
    assert [g.planned for g in gens] == [72] * 6
    assert scores.errors == 0 and scores.scored > 0
    rows = session.exec(select(DispositionResponse)).all()
    assert len(rows) == 6 * 72
    # re-asks: stored exhausted attempts equal the simulator's ground truth, exactly
    truth = _expected_exhaustions(doc, 100.0)
    d100 = [r for r in rows if r.arm_id == 2]
    got = {(r.battery, r.stem, r.paraphrase, r.sample): r.exhausted_attempts for r in d100}
    assert got == truth and sum(truth.values()) > 0
    for r in d100:
        assert r.status == (
            "exhausted" if truth[(r.battery, r.stem, r.paraphrase, r.sample)] == 4 else "ok"
        )
        assert r.attempts == min(truth[(r.battery, r.stem, r.paraphrase, r.sample)] + 1, 4)
    # reasoning off never exhausts; the two-phase route records its truncation
    assert all(r.exhausted_attempts == 0 and r.route == "template" for r in rows if r.arm_id == 4)
    budget = [r for r in rows if r.arm_id == 6]
    assert all(r.route == "two-phase" and r.reasoning_words is not None for r in budget)
    assert any(r.truncated for r in budget)
    assert all(len(r.request["requests"]) % 2 == 0 for r in budget)
    # only answered responses were scored, some twice
    scored = session.exec(select(DispositionScore)).all()
    assert {s.repeat for s in scored} == {0, 1}
    # resume: nothing new to do
    again, scores2 = run_study(
        "t", doc, session=session, judge=ModelSpec.parse("sim/default"), repeat_share=0.2
    )
    assert all(g.already_done == 72 and g.answered == 0 for g in again)
    assert scores2.scored == 0
    # groups are analysed apart; the written table gives the same JSON through the CLI
    analysis = analyze_study("t", session=session, n_boot=300, seed=5)
    agree, pairs = analysis.repeat_agreement
    assert pairs == scores.repeat_cases and agree / pairs > 0.9  # flips 0.75% per scoring
    assert [g.group for g in analysis.groups] == ["on", "off", "budget 64"]
    files = write_analysis(analysis, tmp_path)
    on = analysis.groups[0]
    exhausted_missing = on.stats.batteries["self_interest"].comparison.arm("d100").n_missing
    assert exhausted_missing == sum(
        1 for r in d100 if r.battery == "self_interest" and r.status != "ok"
    )
    out = tmp_path / "cli.json"
    result = invoke_cli(
        ["disposition", "stats", str(files["rates_on"]), "--json", str(out), "--reference",
         "ref", "-B", "300", "--seed", "5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text()) == json.loads(files["stats_on"].read_text())
    table = pd.read_csv(files["rates_on"], dtype=str, keep_default_na=False)
    assert set(table["arm"]) == {"ref", "d100"}
    # the graded review (1–7, half the answers): its own table and statistics, same agreement
    assert on.graded is not None and on.graded.unit == "points (1-7)"
    g100 = on.graded.batteries["self_interest"].comparison.arm("d100")
    assert 1 <= g100.aligned_rate <= 7 and g100.drift_pp < 0
    out2 = tmp_path / "graded.json"
    result = invoke_cli(
        ["disposition", "stats", str(files["graded_on"]), "--graded", "--json", str(out2),
         "--reference", "ref", "-B", "300", "--seed", "5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(out2.read_text()) == json.loads(files["stats_on_graded"].read_text())


def test_budget_arms_choose_the_server_route_only_for_vllm_endpoints() -> None:
    from storage.disposition_models import DispositionArm
    from study.disposition.generate import wants_server_budget
    from study.disposition.plan import PlanItem, Reasoning, item_seed, server_budget_request

    def arm(model: str, route: str = "auto") -> DispositionArm:
        return DispositionArm(
            study="s", name="a", model=model, reasoning="budget", budget=64,
            config={"version": 1, "budget_route": route},
        )  # fmt: skip

    assert wants_server_budget(arm("openai-api/vllm/Qwen3-8B"))
    assert wants_server_budget(arm("vllm//models/qwen"))
    # the simulator's presets (served or not) and the OpenAI API: the client-side route
    assert not wants_server_budget(arm("openai-api/dsim/disp-qwen-d100"))
    assert not wants_server_budget(arm("sim/disp-qwen-d100"))
    assert not wants_server_budget(arm("openai/gpt-4o-mini"))
    assert not wants_server_budget(arm("openai-api/vllm/Qwen3-8B", "client"))
    assert wants_server_budget(arm("openai/gpt-4o-mini", "server"))
    from study.disposition.items import load_sample_batteries

    probe = load_sample_batteries().probes()[0]
    item = PlanItem(probe, 1, item_seed(probe, 1))
    from llm.types import SamplingParams

    req = server_budget_request(item, Reasoning("budget", 64), SamplingParams(max_tokens=900), 0)
    assert req.thinking_token_budget == 64 and req.sampling.max_tokens == 900
    assert req.stop is None and req.continue_final_message is None and len(req.messages) == 1
