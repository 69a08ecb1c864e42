"""The out-of-core analysis writes the same files as the in-memory one (issue 24).

Three runs (two of one model, so a model label carries its run name), questions whose ids
do not sort like their database ids, slices of two questions (every slice boundary
crossed several times): ``drift.csv``, ``pairs.csv``, ``stats.json``, the report's tables
and ``report.md`` byte for byte; the Parquet copies as equal tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal
from sqlmodel import select

from llm.specs import ModelSpec
from ontology.versions import seed_ontologies
from storage.models import GenerationRun
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.cluster.executors import LocalExecutor
from study.questions import QuestionRow, store_questions
from study.reasoning import out_of_core
from study.reasoning.analysis import analyze_run
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.out_of_core import question_slices
from study.reasoning.sharded import analysis as cluster_analysis
from study.reasoning.sharded.analysis import StatsExecutor
from study.reasoning.trajectories import label_run

TEXTS = (
    "Should a small team rewrite a working legacy system or keep patching it?",
    "Is it better to rent or to buy a home when prices are high?",
    "How should someone weigh a higher salary against a longer commute?",
    "Should a student take a gap year before university?",
    "Is it wise to lend money to a close friend?",
)
#: External ids whose text order differs from the insertion (database id) order.
IDS = ("q9", "q10", "a2", "q1", "b")
RUNS = {"r-default": "sim/default", "r-strong": "sim/strong", "r-again": "sim/default"}


def test_out_of_core_analysis_writes_the_in_memory_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[int] = []
    real_build = out_of_core.build_drift_files

    def counted_build(*args: Any, **kwargs: Any) -> Any:
        builds.append(len(args[0]))  # the models built in this call
        return real_build(*args, **kwargs)

    monkeypatch.setattr(out_of_core, "build_drift_files", counted_build)
    with open_workspace_session(resolve_settings()) as session:
        seed_ontologies(session=session)
        pairs = enumerate(zip(IDS, TEXTS, strict=True))
        rows = [QuestionRow(k, t, (), i + 1) for i, (k, t) in pairs]
        store_questions(rows, session=session, source="test")
        for run, model in RUNS.items():
            options = GenerationOptions(
                model=ModelSpec.parse(model),
                run=run,
                perturbations="age,filler,job_loss",
                samples=2,
            )
            run_generation(options, session=session)
            label_run(run, "keywords", session=session)
        runs = list(RUNS)
        ids = session.exec(select(GenerationRun.id)).all()
        slices = question_slices([i for i in ids if i is not None], session=session, chunk=2)
        assert [[k for _i, k in s] for s in slices] == [["a2", "b"], ["q1", "q10"], ["q9"]]
        mem = analyze_run(
            runs, "keywords", session=session, out_dir=tmp_path / "mem", bootstrap=200
        )
        ooc = analyze_run(
            runs,
            "keywords",
            session=session,
            out_dir=tmp_path / "ooc",
            bootstrap=200,
            chunk_questions=2,
        )

        def on_executor(out: str) -> Any:
            """Each model's statistics in a task of the local executor."""
            return analyze_run(
                runs,
                "keywords",
                session=session,
                out_dir=tmp_path / out,
                bootstrap=200,
                chunk_questions=2,
                executor=StatsExecutor(LocalExecutor(), resolve_settings()),
            )

        tasks = on_executor("tasks")
        # the tasks reduced the coordinator's parts: the rows were built once, not twice
        assert builds == [3, 3]
        # a worker that cannot read the coordinator's part rebuilds it, to the same stats
        monkeypatch.setattr(cluster_analysis, "_readable_part", lambda task: None)
        rebuilt = on_executor("rebuilt")
        assert builds == [3, 3, 3, 1, 1, 1]
        assert rebuilt.stats == tasks.stats
    assert mem.stats == ooc.stats == tasks.stats
    assert len(mem.stats["models"]) == 3
    a, b = tmp_path / "mem", tmp_path / "ooc"
    assert (a / "stats.json").read_bytes() == (tmp_path / "tasks" / "stats.json").read_bytes()
    for name in ("drift.csv", "pairs.csv", "stats.json", "report.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    tables = sorted(p.relative_to(a) for p in (a / "tables").rglob("*") if p.is_file())
    assert tables
    assert tables == sorted(p.relative_to(b) for p in (b / "tables").rglob("*") if p.is_file())
    for rel in tables:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    for name in ("drift.parquet", "pairs.parquet"):
        assert_frame_equal(pd.read_parquet(a / name), pd.read_parquet(b / name))
    assert not (b / ".parts").exists()
    assert len((a / "drift.csv").read_text().splitlines()) > 100
