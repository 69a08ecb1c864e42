"""Reasoning drift net of labeler error: DTW/SRI calibrated by human step labels (issue 35).

A simulated run is labelled by a *confusing* simulated LLM labeler (``sim:confuse``: two
leaf pairs swapped at a known rate), a question slice of ``label_check`` is pushed with
``unit=question`` to the in-process Label Studio, the simulated annotator pool answers with
the simulator's true leaves, and the pull feeds :func:`study.reasoning.analysis.analyze_run`.
Known dose both ways: with the confusing labeler the model-only mean DTW sits far above the
drift of the true leaves and the calibrated one comes back to it; with a perfect labeler the
two agree.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlmodel import Session

from driftlens_core import pair_drift
from llm.specs import ModelSpec
from study.reasoning.calibrated import (
    STEP_COLUMNS,
    calibrate_drift,
    human_drift_rows,
)

RUN = "cal-r"
CONFUSING = "sim:confuse=1~2@0.5+3~4@0.5+5~6@0.5;seed=3"


def _workspace(
    session: Session, *, questions: int, labeler: str, run: str = RUN, model: str = "sim/default"
) -> None:
    from study.questions import QuestionRow, store_questions
    from study.reasoning.generation import GenerationOptions, run_generation
    from study.reasoning.trajectories import label_run

    rows = [
        QuestionRow(f"c{i:02d}", f"Should a family move to town {i} or stay where they are?",
                    (), i)
        for i in range(questions)
    ]  # fmt: skip
    store_questions(rows, session=session, source="test")
    run_generation(
        GenerationOptions(
            model=ModelSpec.parse(model), run=run, perturbations="filler,age", samples=2
        ),
        session=session,
    )
    label_run(run, labeler, session=session)
    session.commit()


def _slice(
    session: Session,
    *,
    limit: int,
    unit: str = "question",
    flip: float = 0.0,
    run: str = RUN,
    client: Any = None,
) -> Any:
    """Push a label_check slice of ``run``, let the pool answer, pull; the client used."""
    from annotation.selection import Selection
    from annotation.simulated import AnnotatorPool, OfflineLabelStudio
    from annotation.sync import ensure_project, pull, push, tasks_to_push

    client = client or OfflineLabelStudio()
    project = ensure_project("label_check", client=client, session=session)
    session.commit()
    sel = Selection(run=run, limit=limit, seed=2, unit=unit)  # type: ignore[arg-type]
    tasks = tasks_to_push("label_check", sel, session=session)
    push("label_check", tasks, client=client, session=session)
    session.commit()
    AnnotatorPool(annotators=2, flip=flip, seed=4).annotate(
        client, "label_check", project.project_id
    )
    pull("label_check", client=client, session=session)
    session.commit()
    return client


def _true_mean_dtw(session: Session, condition_prefix: str) -> float:
    """Mean DTW of the run's pairs of a condition from the simulator's true leaves."""
    from sqlmodel import select

    from ontology.labelers.sim import true_leaf
    from ontology.versions import document, get_version
    from storage.models import GenerationRun, Question, Response

    symbol_of = document(get_version(None, session=session)).symbol_of
    run = session.exec(select(GenerationRun).where(GenerationRun.name == RUN)).one()
    seqs: dict[tuple[str, str, int], list[int]] = {}
    for r, q in session.exec(
        select(Response, Question)
        .where(Response.run_id == run.id)
        .where(Response.question_id == Question.id)
    ):
        seqs[(q.external_id, r.condition, r.sample)] = [
            symbol_of.get(true_leaf(s) or "", 0) for s in (r.steps or [])
        ]
    base, other = [], []
    for (qid, c, s), seq in seqs.items():
        if c.startswith(condition_prefix) and (c != "baseline" or s > 0):
            base.append(seqs[(qid, "baseline", 0)])
            other.append(seq)
    return float(np.mean(pair_drift(base, other).dtw))


def _analyze(session: Session, tmp_path: Path, labeler: str) -> dict[str, Any]:
    from study.reasoning.analysis import analyze_run

    result = analyze_run(RUN, labeler, session=session, out_dir=tmp_path / "rep", bootstrap=200)
    session.commit()
    return result.stats


def _row(stats: dict[str, Any], condition: str, what: str = "mean") -> dict[str, Any]:
    rows = [
        r
        for r in stats["calibrated"]["rows"]
        if r["metric"] == "dtw" and r["condition"] == condition and r["what"] == what
    ]
    assert len(rows) == 1, stats["calibrated"]["rows"]
    return rows[0]


def test_confusing_labeler_biases_model_only_and_the_human_slice_corrects_it(
    db: Callable[[], AbstractContextManager[Session]], tmp_path: Path
) -> None:
    with db() as session:
        _workspace(session, questions=40, labeler=CONFUSING)
        _slice(session, limit=24)
        truth = _true_mean_dtw(session, "attribute")
        stats = _analyze(session, tmp_path, CONFUSING)
    row = _row(stats, "attribute/age")
    assert row["headline"] == "calibrated" and row["n_human_questions"] == 24
    lo, hi = row["calibrated_ci"]
    assert lo <= truth <= hi, (truth, row)
    mlo, mhi = row["model_only_ci"]
    assert not mlo <= truth <= mhi, (truth, row)  # the confusion inflates model-only DTW
    assert row["model_only"] - truth > 0.05
    assert stats["calibrated"]["n_human_questions"] == 24
    report = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "Calibrated to people" in report and "24 / 40" in report
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert "Calibrated to people" in html


def test_perfect_labeler_calibrated_and_model_only_agree(
    db: Callable[[], AbstractContextManager[Session]], tmp_path: Path
) -> None:
    with db() as session:
        _workspace(session, questions=30, labeler="sim")
        _slice(session, limit=22)
        truth = _true_mean_dtw(session, "attribute")
        stats = _analyze(session, tmp_path, "sim")
    row = _row(stats, "attribute/age")
    # a perfect labeler's drift is the true leaves' drift; the humans agree with every
    # label, so the calibrated estimate differs only by the slice's share (λ < 1)
    assert row["model_only"] == pytest.approx(truth, abs=1e-9)
    assert row["calibrated"] == pytest.approx(row["model_only"], abs=0.01)
    lo, hi = row["calibrated_ci"]
    assert lo <= truth <= hi and row["headline"] == "calibrated"


def test_step_by_step_slice_keeps_model_only_in_one_sentence(
    db: Callable[[], AbstractContextManager[Session]], tmp_path: Path
) -> None:
    with db() as session:
        _workspace(session, questions=20, labeler=CONFUSING)
        _slice(session, limit=300, unit="task")
        stats = _analyze(session, tmp_path, CONFUSING)
    cal = stats["calibrated"]
    assert all(r["headline"] == "model-only" for r in cal["rows"])
    assert any("unit=question" in n for n in cal["notes"]), cal["notes"]


def test_too_few_human_questions_keep_model_only(
    db: Callable[[], AbstractContextManager[Session]], tmp_path: Path
) -> None:
    with db() as session:
        _workspace(session, questions=30, labeler=CONFUSING)
        _slice(session, limit=8)
        stats = _analyze(session, tmp_path, CONFUSING)
    row = _row(stats, "attribute/age")
    assert row["headline"] == "model-only" and row["calibrated"] is not None
    assert "fewer than the 20" in row["note"]


# -- plain tables ---------------------------------------------------------------------------


CONDITIONS = (("n1", "noise", 0.2), ("n2", "noise", 0.2), ("a", "attribute", 0.5))


def _tables(bias: float, *, questions: int = 60, slice_: int = 30, seed: int = 0):
    """A drift table whose model DTW is the human DTW plus ``bias`` (and noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(questions):
        u = rng.normal(0, 0.05)
        for cond, klass, mu in CONDITIONS:
            y = mu + u + rng.normal(0, 0.05)
            rows.append((f"q{q}", cond, klass, y, y + bias + rng.normal(0, 0.02)))
    df = pd.DataFrame(rows, columns=["question_id", "condition", "condition_class", "y", "dtw"])
    df["model"], df["sample"], df["sri"] = "m", 0, df["dtw"]
    chosen = {f"q{q}" for q in rng.choice(questions, slice_, replace=False)}
    human = df[df["question_id"].isin(chosen)].copy()
    human["dtw"] = human["y"]
    human["sri"] = human["y"]
    human["inclusion_probability"] = slice_ / questions
    return df.drop(columns="y"), human.drop(columns="y")


def test_plain_table_statistic_recovers_the_human_mean_and_difference() -> None:
    drift, human = _tables(bias=0.15)
    out = calibrate_drift(drift, human, metrics=("dtw",))
    by = {(r.what, r.condition): r for r in out.rows}
    a = by[("mean", "a")]
    assert a.headline == "calibrated" and a.n_human_questions == 30
    assert a.calibrated_ci is not None and a.calibrated_ci[0] <= 0.5 <= a.calibrated_ci[1]
    assert not a.model_only_ci[0] <= 0.5 <= a.model_only_ci[1]  # biased by +0.15
    d = by[("vs_noise", "a")]
    assert d.calibrated_ci is not None and d.calibrated_ci[0] <= 0.3 <= d.calibrated_ci[1]
    # a constant bias cancels in the difference: model-only covers there too
    assert d.model_only_ci[0] <= 0.3 <= d.model_only_ci[1]


def test_plain_table_humans_on_pairs_the_llm_never_labelled_are_left_out() -> None:
    drift, human = _tables(bias=0.0)
    extra = human.iloc[:3].copy()
    extra["question_id"] = "never"
    steps = pd.DataFrame([("m", "never", "a", 0, 0, "x", 0.5)], columns=list(STEP_COLUMNS))
    got = human_drift_rows(drift.assign(n_base=1, n_other=1), steps, {"x": 1})
    assert got.unmatched == 1 and got.rows.empty
    out = calibrate_drift(drift, pd.concat([human, extra]), metrics=("dtw",))
    assert all(r.n_human_questions <= 30 for r in out.rows)


def test_plain_table_without_inclusion_probabilities_keeps_model_only() -> None:
    drift, human = _tables(bias=0.15)
    human["inclusion_probability"] = np.nan
    out = calibrate_drift(drift, human, metrics=("dtw",))
    assert all(r.headline == "model-only" for r in out.rows)
    assert all("inclusion probabilities" in (r.note or "") for r in out.rows)


def test_human_labels_under_another_ontology_version_keep_model_only(
    db: Callable[[], AbstractContextManager[Session]], tmp_path: Path
) -> None:
    from ontology.versions import document, edit_leaf, get_version
    from study.reasoning.analysis import analyze_run
    from study.reasoning.trajectories import label_run

    with db() as session:
        _workspace(session, questions=24, labeler=CONFUSING)
        _slice(session, limit=24)  # the humans label steps under the first version
        v1 = get_version(None, session=session)
        leaf = document(v1).leaf_names[0]
        v2 = edit_leaf(v1, leaf, definition="Another scheme's first leaf.", triggers=[leaf.lower()],
                    exclusions=[], session=session)  # fmt: skip
        label_run(RUN, CONFUSING, session=session, ontology_version=v2.id)
        session.commit()
        result = analyze_run(
            RUN, CONFUSING, session=session, out_dir=tmp_path / "rep", bootstrap=200,
            ontology_version=v2.id,
        )  # fmt: skip
        session.commit()
    cal = result.stats["calibrated"]
    assert all(r["headline"] == "model-only" for r in cal["rows"])
    assert cal["n_human_questions"] == 0
    note = cal["notes"][0]
    assert "not the analysis's" in note and "model-only headline is kept" in note
    assert "\n" not in note


def test_compare_adds_calibrated_mean_drift_rows_beside_d_rel(
    db: Callable[[], AbstractContextManager[Session]],
) -> None:
    from study.compare.service import compare_runs
    from study.compare.types import CompareOptions

    with db() as session:
        _workspace(session, questions=24, labeler=CONFUSING)
        _workspace(session, questions=24, labeler=CONFUSING, run="cal-s", model="sim/strong")
        client = _slice(session, limit=22)
        _slice(session, limit=22, run="cal-s", client=client)
        result = compare_runs(
            [RUN, "cal-s"], instrument="reasoning", session=session,
            options=CompareOptions(n_boot=200, labeler=CONFUSING),
        )  # fmt: skip
    rows = [r for r in result.rows if r.statistic == "mean drift (dtw) calibrated"]
    by = {r.scope: r for r in rows}
    assert set(by) >= {"attribute/age", "noise/filler"}, sorted(by)
    age = by["attribute/age"]
    assert age.test == "PPI++ jackknife t" and "22 + 22 human-labelled questions" in age.test_detail
    # sim/strong's attribute dose (0.5) is above sim/default's (0.28): B − A > 0
    assert age.ci_low < age.diff < age.ci_high and age.diff > 0
    assert [r for r in result.rows if r.statistic == "d_rel (dtw)"]


def test_analysis_page_shows_calibrated_beside_model_only(
    db: Callable[[], AbstractContextManager[Session]], tmp_path: Path
) -> None:
    from tests.app.apptest_support import open_page

    with db() as session:
        _workspace(session, questions=24, labeler=CONFUSING)
        _slice(session, limit=22)
        _analyze(session, tmp_path, CONFUSING)
    at = open_page("analysis.py", timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    assert "Calibrated to people" in [s.value for s in at.subheader]
    assert any("22 questions" in t.value for t in at.text)
    frames = [d.value for d in at.dataframe if "calibrated [95% CI]" in d.value.columns]
    assert len(frames) == 1
    shown = frames[0]
    age = shown[(shown["metric"] == "dtw") & (shown["condition"] == "attribute/age")]
    assert set(age["headline"]) == {"calibrated"}
    assert set(age["human questions / questions"]) == {"22 / 24"}


def test_slice_notes_say_what_was_left_out_in_one_sentence_each() -> None:
    from study.reasoning.calibrated import HumanDrift, HumanStepLabels, slice_notes

    labels = HumanStepLabels(
        pd.DataFrame(columns=list(STEP_COLUMNS)), undecided=5, other_version=3,
        versions=("driftlens@1",), step_unit=2,
    )  # fmt: skip
    notes = slice_notes(labels, HumanDrift(pd.DataFrame(), incomplete=4, unmatched=6), "x@2")
    assert len(notes) == 5 and all("\n" not in n for n in notes)
    assert "under ontology driftlens@1, not the analysis's x@2" in notes[0]
    assert "drawn step by step" in notes[1]
    assert "6 human-labelled responses were never labelled" in notes[2]
    assert "none of the 5 human-checked steps" in notes[3]
    assert "4 pairs of slice questions" in notes[4]


def test_calibrated_block_reads_back_from_stats_json() -> None:
    import json

    from study.reasoning.calibrated import CalibratedDrift, calibrated_frame

    drift, human = _tables(bias=0.15)
    out = calibrate_drift(drift, human, metrics=("dtw",))
    back = CalibratedDrift.from_dict(json.loads(json.dumps(out.to_dict())))
    assert back == out
    frame = calibrated_frame(back)
    assert list(frame["human questions / questions"].unique()) == ["30 / 60"]
