"""Acknowledgement calibrated to people: the ``acknowledgement`` study, offline round trip.

Two simulated runs are judged by ``sim/default``, whose acknowledgement verdict is a coin
where the response says nothing of the memory (the simulated responses never do); the
``acknowledgement`` study's slice of each run is pushed with a limit (stored inclusion
probabilities) to the in-process Label Studio, the simulated annotator pool answers with the
simulator's truth (``0``: no response acknowledges the memory) plus a known flip rate, and
the pull feeds the judge's calibrated rates, ``stats.json``, the drift report and
``driftlens compare``. Known dose both ways: the judge's own interval misses the people's
rate, the calibrated one covers it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
from sqlmodel import Session

from llm.specs import ModelSpec

RUNS = ("ack-a", "ack-b")
JUDGE = "sim/default"
FLIP = 0.1


def _runs(session: Session) -> Any:
    """Two judged, labelled runs with a pulled acknowledgement slice each; the client."""
    from annotation.selection import Selection
    from annotation.simulated import AnnotatorPool, OfflineLabelStudio
    from annotation.sync import ensure_project, pull, push, tasks_to_push
    from study.questions import QuestionRow, store_questions
    from study.reasoning.generation import GenerationOptions, run_generation
    from study.reasoning.judges import judge_run
    from study.reasoning.trajectories import label_run

    rows = [
        QuestionRow(f"k{i:02d}", f"Should a family move to town {i} or stay where they are?",
                    (), i)
        for i in range(30)
    ]  # fmt: skip
    store_questions(rows, session=session, source="test")
    client = OfflineLabelStudio()
    project = ensure_project("acknowledgement", client=client, session=session)
    session.commit()
    for run in RUNS:
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run=run, perturbations="filler,age", samples=2
            ),
            session=session,
        )
        label_run(run, "sim", session=session)
        judge_run(run, ModelSpec.parse(JUDGE), session=session)
        session.commit()
        tasks = tasks_to_push("acknowledgement", Selection(run=run, limit=70, seed=2),
                              session=session)  # fmt: skip
        push("acknowledgement", tasks, client=client, session=session)
        session.commit()
    AnnotatorPool(annotators=2, flip=FLIP, seed=4).annotate(
        client, "acknowledgement", project.project_id
    )
    pull("acknowledgement", client=client, session=session)
    session.commit()
    return client


def _people_rate(run: str, session: Session) -> float:
    """The pool's expected Yes share over every response the judge scored (exact)."""
    from annotation.selection import Selection
    from annotation.sync import tasks_to_push
    from study.reasoning.calibrated_judges import judged_items
    from study.reasoning.human.simulated import acknowledgement_truth

    data = {
        t.key: t.data for t in tasks_to_push("acknowledgement", Selection(run=run), session=session)
    }
    keys = judged_items(run, JUDGE, session=session)["acknowledgement"].keys
    truth = [acknowledgement_truth(data[k])["acknowledged"] == "1" for k in keys]
    return float(np.mean([1 - FLIP if t else FLIP for t in truth]))


def test_acknowledgement_round_trip_calibrates_the_coin_judge(
    db: Callable[[], AbstractContextManager[Session]], tmp_path: Path
) -> None:
    from study.compare.service import compare_runs
    from study.compare.types import CompareOptions
    from study.reasoning.analysis import analyze_run
    from study.reasoning.calibrated_judges import calibrated_judge_rates
    from study.reasoning.report.data import JUDGE_RATES_HEADING

    with db() as session:
        _runs(session)
        people = {run: _people_rate(run, session) for run in RUNS}
        rates = {
            run: {
                r.what: r
                for r in calibrated_judge_rates(run, JUDGE, session=session, bootstrap=200)[0]
            }
            for run in RUNS
        }
        result = analyze_run(RUNS[0], "sim", session=session, out_dir=tmp_path / "rep",
                             bootstrap=200)  # fmt: skip
        session.commit()
        cmp = compare_runs(
            list(RUNS), instrument="reasoning", session=session,
            options=CompareOptions(n_boot=200, labeler="sim"),
        )  # fmt: skip
    for run in RUNS:
        ack = rates[run]["acknowledgement"]
        assert ack.headline == "calibrated", ack.note
        assert ack.n_human >= 20 and ack.n_human_questions >= 20
        assert ack.calibrated_ci is not None
        # known dose: the judge's coin misses the people's rate, the calibration covers it
        assert not ack.model_only_ci[0] <= people[run] <= ack.model_only_ci[1]
        assert ack.calibrated_ci[0] <= people[run] <= ack.calibrated_ci[1]
        assert "no helpfulness study pulled" in (rates[run]["helpfulness"].note or "")
    # stats.json and the report carry the judge's rates with their headline
    stats = json.loads(Path(result.files["stats_json"]).read_text())
    rows = {r["what"]: r for r in stats["calibrated_judges"]["rows"]}
    assert rows["acknowledgement"]["headline"] == "calibrated"
    assert rows["acknowledgement"]["n_human"] == rates[RUNS[0]]["acknowledgement"].n_human
    assert rows["helpfulness"]["headline"] == "model-only"
    md = Path(result.files["report_md"]).read_text()
    assert JUDGE_RATES_HEADING in md and "acknowledgement" in md
    # driftlens compare: B − A of the calibrated rates, each run's value its headline
    row = next(r for r in cmp.rows if r.statistic == f"acknowledgement calibrated ({JUDGE})")
    assert row.test == "PPI++ jackknife t" and row.kind == "binary"
    a, b = rates[RUNS[0]]["acknowledgement"], rates[RUNS[1]]["acknowledgement"]
    assert a.calibrated is not None and b.calibrated is not None
    assert math.isclose(row.value_a, a.calibrated, rel_tol=1e-12)
    assert math.isclose(row.value_b, b.calibrated, rel_tol=1e-12)
    assert row.ci_low <= row.diff <= row.ci_high
    assert not [r for r in cmp.rows if r.statistic.startswith("helpfulness calibrated")]
