"""Designed calibration slices through the workspace: push, simulated pool, pull, headline.

An active ``conflict_rubric`` slice (more where two judges disagree) and the stem-stratified
``disposition_check`` slice store each task's probability; the calibrated estimates weight
by it; disposition's stats JSON and report show the calibrated rates beside the
classifier's (issue 35 items 2 and 3).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlmodel import Session

from annotation.selection import Selection
from llm.specs import ModelSpec
from storage.errors import InputError


def _push_pool_pull(study: str, sel: Selection, session: Session, *, flip: float = 0.2):
    from annotation.simulated import AnnotatorPool, OfflineLabelStudio
    from annotation.sync import ensure_project, pull, push, tasks_to_push

    client = OfflineLabelStudio()
    tasks = tasks_to_push(study, sel, session=session)
    project = ensure_project(study, client=client, session=session)
    session.commit()
    push(study, tasks, client=client, session=session)
    session.commit()
    AnnotatorPool(flip=flip, seed=2).annotate(client, study, project.project_id)
    pull(study, client=client, session=session)
    session.commit()
    return tasks


def test_active_conflicts_slice_leans_on_disagreement_and_feeds_the_calibrated_mean(
    session: Session,
) -> None:
    from annotation.tasks import INCLUSION_FIELD
    from study.conflicts.calibrated import calibrated_scores
    from study.conflicts.human.kinds import _rubric_disagreement
    from study.conflicts.items import import_bank_file
    from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
    from study.conflicts.score import judge_conflict_run

    import_bank_file(None, session=session)
    generate_conflicts(
        ConflictGenerationOptions(
            model=ModelSpec.parse("sim/mc-balanced"), run="act", doses=(0, 6), samples=2, seed=3
        ),
        session=session,
    )
    for judge in ("sim/judge-lenient", "sim/judge-strict"):
        judge_conflict_run("act", ModelSpec.parse(judge), session=session)
    session.commit()
    from annotation.tasks import build_tasks

    frame = build_tasks("conflict_rubric", Selection(run="act"), session=session)
    spread = _rubric_disagreement(frame, session)
    tasks = _push_pool_pull(
        "conflict_rubric", Selection(run="act", limit=60, active=True, seed=1), session
    )
    probs = [t.data[INCLUSION_FIELD] for t in tasks]
    assert 40 <= len(tasks) <= 80 and len(set(probs)) > 3 and max(probs) <= 1.0
    # more where the judges disagree than a simple random slice would give
    chosen = np.mean([spread[t.key] for t in tasks])
    assert chosen > np.mean(list(spread.values())) * 1.1
    cal = calibrated_scores(["act"], session=session, bootstrap=200, seed=1)
    assert cal is not None
    d2 = next(r for r in cal.rows if r.what == "d2" and r.judge == "sim/judge-lenient")
    assert d2.n_human > 0 and d2.calibrated is not None


def test_a_designed_slice_refuses_bad_requests_in_one_sentence(session: Session) -> None:
    from annotation.tasks import build_tasks

    for sel, needle in (
        (Selection(run="x", limit=5, active=True, stratify="model"), "not both"),
        (Selection(run="x", limit=5, active=True), "no judges whose disagreement"),
        (Selection(run="x", limit=5, stratify="model", questions=("q1",)), "drop question="),
    ):
        with pytest.raises(InputError, match=needle) as err:
            build_tasks("helpfulness", sel, session=session)
        assert "\n" not in str(err.value)


def test_disposition_slice_stores_stem_probabilities_and_reaches_the_report(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    from annotation.tasks import INCLUSION_FIELD
    from study.disposition.analysis import analyze_study
    from study.disposition.items import BatteryDocument, load_sample_batteries
    from study.disposition.report import write_disposition_report
    from study.disposition.runs import ArmSpec, add_arms, run_study, write_analysis

    doc = load_sample_batteries()
    doc = BatteryDocument(
        batteries=[b.model_copy(update={"stems": b.stems[:4]}) for b in doc.batteries[:1]]
    )
    add_arms(
        "dc",
        [
            ArmSpec(
                "ref",
                ModelSpec.parse("sim/disp-qwen-d000"),
                role="reference",
                dose=0,
                max_tokens=400,
            ),
            ArmSpec("d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100, max_tokens=400),
        ],
        session=session,
    )
    run_study("dc", doc, session=session, judge=ModelSpec.parse("sim/default"))
    session.commit()
    import annotation.simulated as simulated
    from study.disposition.human.simulated import category_truth

    off: set[Any] = set()

    def truth(data):  # bad input: three answers get a vote off their battery's categories
        if len(off) < 3 or data["external_key"] in off:
            off.add(data["external_key"])
            return {"category": "not-a-category"}
        return category_truth(data)

    monkeypatch.setitem(simulated._TRUTH, "disposition_check", truth)
    tasks = _push_pool_pull(
        "disposition_check", Selection(disposition="dc", limit=60, seed=1), session, flip=0.1
    )
    # bad input: a checked answer whose classifier category is then lost
    from sqlmodel import select

    from storage.disposition_models import DispositionResponse, DispositionScore
    from storage.repo.disposition import require_arms

    t = next(t for t in tasks if t.key not in off)
    resp = session.exec(
        select(DispositionResponse).where(
            DispositionResponse.stem == t.data["stem"],
            DispositionResponse.paraphrase == t.data["paraphrase"],
            DispositionResponse.sample == t.data["sample"],
        )
    ).all()
    arm_ids = {a.id: a.name for a in require_arms("dc", session=session)}
    rid = next(r.id for r in resp if arm_ids[r.arm_id] == t.data["arm"])
    for sc in session.exec(select(DispositionScore).where(DispositionScore.response_id == rid)):
        session.delete(sc)
    session.commit()
    # each stem gave k_s of its m_s answers: the stored probability is k_s / m_s, < 1
    assert len(tasks) == 60
    probs = {t.data[INCLUSION_FIELD] for t in tasks}
    assert all(0 < p < 1 for p in probs)
    analysis = analyze_study("dc", session=session, n_boot=200, seed=1)
    assert analysis.calibrated is not None
    rates = [r for r in analysis.calibrated.rows if r.what == "aligned_rate"]
    assert {r.arm for r in rates} == {"ref", "d100"}
    assert all(r.n_human > 0 and r.calibrated is not None for r in rates)
    # off-scale votes and the answer without a classifier category: counted, left out
    notes = " ".join(analysis.calibrated.notes)
    assert "6 human votes name no category" in notes  # 3 answers x 2 annotators
    assert "1 human-checked answers have no classifier category" in notes
    assert sum(r.n_human for r in rates) == 60 - 3 - 1
    files = write_analysis(analysis, tmp_path)
    stats = json.loads(Path(files["stats_on"]).read_text())
    rows = stats["calibrated"]["rows"]
    assert rows and {"headline", "model_only", "calibrated", "n_human"} <= set(rows[0])
    report = write_disposition_report(analysis, tmp_path)
    html = Path(report["report_html"]).read_text()
    assert "Calibrated to people" in html and "headline" in html
    # disposition analyze prints one line per drift naming its headline and human labels
    out = cli("disposition", "analyze", "--study", "dc", "--out", str(tmp_path / "cli"),
              "--bootstrap", "200")  # fmt: skip
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "on / " in text and " drift: headline " in text and "human labels of" in text
    # driftlens compare of the two arms: B − A calibrated beside the model-only rows
    from study.compare.service import compare_runs
    from study.compare.types import CompareOptions

    result = compare_runs(["dc:ref", "dc:d100"], instrument="disposition", session=session,
                          options=CompareOptions(n_boot=200))  # fmt: skip
    cal = [r for r in result.rows if r.statistic.startswith("aligned rate calibrated")]
    plain = [r for r in result.rows if r.statistic == "aligned rate"]
    assert (
        plain and len(cal) == 1 and cal[0].kind == "binary" and cal[0].test == "PPI++ jackknife t"
    )
    assert cal[0].ci_low < cal[0].diff < cal[0].ci_high and "human labels" in cal[0].test_detail
