"""Sharded generation and labeling (the local executor) against the one-process path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from storage.models import GenerationRun, JudgeScore, Response
from storage.settings import Settings
from study.cluster.executors import LocalExecutor, make_executor
from study.cluster.shards import shard_by_question
from tests.cluster.ray_scenario import DISPOSITION_ARMS, small_batteries

STUDY = ("--perturbations", "noise,age", "--samples", "2", "--seed", "7")


def test_shards_cover_every_question_once_in_order() -> None:
    shards = shard_by_question([9, 3, 5, 3, 1, 7, 2], per_shard=3)
    assert [s.question_ids for s in shards] == [(1, 2, 3), (5, 7, 9)]
    assert shards[1].lease_key("generation_run:r") == "generation_run:r#shard:1"


def test_ray_refuses_sqlite_in_one_sentence(tmp_path: Path) -> None:
    from storage.errors import ConfigError

    settings = Settings(workspace=tmp_path, db_url=f"sqlite:///{tmp_path}/x.db")
    with pytest.raises(ConfigError, match="needs a database server"):
        make_executor("ray", settings=settings)
    assert isinstance(make_executor("local", settings=settings), LocalExecutor)


def test_a_vllm_task_reserves_one_gpu(tmp_path: Path) -> None:
    from study.cluster.ray_executor import RayExecutor

    pg = Settings(workspace=tmp_path, db_url="postgresql+psycopg://u@127.0.0.1:1/x")
    ray = make_executor("ray", settings=pg, address="ray://head:10001", gpus_per_task=1)
    assert ray == RayExecutor(address="ray://head:10001", num_gpus=1.0)


def test_analyze_refuses_an_executor_without_chunks_in_one_sentence(
    cli: Callable[..., object],
) -> None:
    from storage.errors import InputError

    res = cli("analyze", "--run", "r", "--labeler", "keywords", "--executor", "local")
    # the CLI's error handler prints an InputError as its one sentence
    assert isinstance(res.exception, InputError)  # type: ignore[attr-defined]
    assert str(res.exception) == (  # type: ignore[attr-defined]
        "--executor needs --chunk-questions (the statistics run per model)."
    )


def _drift_csv(run: str, *, session: Session) -> str:
    """The run's drift table as ``drift.csv`` text (what ``analyze`` writes first)."""
    from ontology.versions import get_version
    from study.reasoning.drift_files import stats_frame
    from study.reasoning.trajectories import drift_table_by_run, run_labels

    table = drift_table_by_run(
        run_labels([run], session=session),
        "keywords",
        session=session,
        version=get_version(None, session=session),
        alpha=0.5,
    )
    return str(stats_frame(table.rows).to_csv(index=False))


def test_sharded_run_stores_what_one_process_stores(
    tmp_path: Path, cli: Callable[..., object], session: Session
) -> None:
    lines = Path("study/data/sample_questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join(lines[:5]) + "\n", encoding="utf-8")
    assert cli("questions", "import", str(questions)).exit_code == 0  # type: ignore[attr-defined]
    plans = []
    for run, extra in (("one", ()), ("sharded", ("--executor", "local", "--shard-questions", "3"))):
        gen = cli("generate", "--model", "sim/default", "--run", run, *STUDY, *extra)
        assert gen.exit_code == 0, gen.output  # type: ignore[attr-defined]
        out = gen.output  # type: ignore[attr-defined]
        plans.append([ln for ln in out.splitlines() if ln.startswith("Plan: 5 questions x ")])
        lab = cli("label", "--run", run, "--labeler", "keywords", *extra)
        assert lab.exit_code == 0, lab.output  # type: ignore[attr-defined]
        judge = cli("judge", "--run", run, "--model", "sim/default", *extra)
        assert judge.exit_code == 0, judge.output  # type: ignore[attr-defined]
    assert len(plans[0]) == 1 and plans[0] == plans[1]  # the same plan line
    one = _drift_csv("one", session=session)
    assert one == _drift_csv("sharded", session=session)
    assert len(one.splitlines()) > 100
    scores = {
        run: sorted(
            session.execute(
                sa_select(
                    col(Response.question_id),
                    col(Response.condition),
                    col(Response.sample),
                    col(JudgeScore.kind),
                    col(JudgeScore.value),
                )
                .join(JudgeScore, col(JudgeScore.response_id) == col(Response.id))
                .join(GenerationRun, col(GenerationRun.id) == col(Response.run_id))
                .where(col(GenerationRun.name) == run)
            ).all()
        )
        for run in ("one", "sharded")
    }
    assert scores["one"] == scores["sharded"] and len(scores["one"]) > 100
    statuses = session.exec(select(GenerationRun.name, GenerationRun.status)).all()
    assert sorted(statuses) == [("one", "done"), ("sharded", "done")]


def _conflicts_report(run: str, out: Path, *, session: Session) -> dict[str, str]:
    """The conflicts report's CSV and JSON files of ``run`` (text by name).

    The model-roles line names its run; that name is the one thing two runs of the same
    study may differ in, so it reads ``RUN`` here.
    """
    from study.conflicts.report import build_report

    rep = build_report([run], session=session, out_dir=out, bootstrap=200)
    return {
        name: Path(path).read_text(encoding="utf-8").replace(f"in run {run}:", "in run RUN:")
        for name, path in sorted(rep.files.items())
        if Path(path).suffix in (".csv", ".json")
    }


def test_sharded_conflicts_run_reports_what_one_process_reports(
    tmp_path: Path, cli: Callable[..., object], session: Session
) -> None:
    assert cli("conflicts", "import", "--sample").exit_code == 0  # type: ignore[attr-defined]
    for run, extra in (("one", ()), ("sharded", ("--executor", "local", "--shard-questions", "2"))):
        args = ("--model", "sim/mc-balanced", "--run", run, "--distractors", "0,6", "--seed", "7")
        gen = cli("conflicts", "generate", *args, *extra)
        assert gen.exit_code == 0, gen.output  # type: ignore[attr-defined]
        # the same plan line from one process and from the coordinator
        assert "Plan: 42 banks x 2 doses x 1 samples = 84 requests" in gen.output  # type: ignore[attr-defined]
        judge = cli("conflicts", "judge", "--run", run, "--judge", "sim/judge-lenient", *extra)
        assert judge.exit_code == 0, judge.output  # type: ignore[attr-defined]
    # a rerun of the sharded run asks nothing again (every shard skips what is stored)
    again = cli(
        "conflicts",
        "generate",
        "--model",
        "sim/mc-balanced",
        "--run",
        "sharded",
        "--distractors",
        "0,6",
        "--executor",
        "local",
        "--shard-questions",
        "2",
    )
    assert "0 requested now" in again.output, again.output  # type: ignore[attr-defined]
    one = _conflicts_report("one", tmp_path / "one", session=session)
    sharded = _conflicts_report("sharded", tmp_path / "sharded", session=session)
    assert one == sharded and len(one) >= 2
    statuses = dict(session.exec(select(GenerationRun.name, GenerationRun.status)).all())
    assert statuses == {"one": "done", "sharded": "done"}


def test_sharded_sources_run_writes_the_files_one_process_writes(
    tmp_path: Path, cli: Callable[..., object], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ("sources", "run", "--model", "sim/src-rigid", "--limit", "5", "--bootstrap", "200")
    sharded = ("--executor", "local", "--shard-items", "2")
    for run, extra in (("one", ()), ("sharded", sharded)):
        # a workspace each: probes.jsonl says whether an answer came from the cache
        monkeypatch.setenv("DRIFTLENS_WORKSPACE", str(tmp_path / f"ws-{run}"))
        res = cli(*base, "--run", "r", "--out", str(tmp_path / run), *extra)
        assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
        # 5 items x 13 probes, from one process and from the coordinator
        assert " = 65 requests" in res.output.split("\n")[0]  # type: ignore[attr-defined]
    again = cli(*base, "--run", "r", "--out", str(tmp_path / "again"), *sharded)
    assert "answered now" in again.output and " 0 answered now" in again.output  # type: ignore[attr-defined]
    names = ("probes.csv", "probes.jsonl", "stats.json")
    one = {n: (tmp_path / "one" / n).read_text(encoding="utf-8") for n in names}
    assert one == {n: (tmp_path / "sharded" / n).read_text(encoding="utf-8") for n in names}
    assert one == {n: (tmp_path / "again" / n).read_text(encoding="utf-8") for n in names}
    assert one["probes.csv"].count("\n") > 60


def _disposition_rows(study: str, *, session: Session) -> tuple[list[tuple], list[tuple]]:
    """The study's responses and scores by natural key (database ids left out)."""
    from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore

    key = (
        col(DispositionArm.name),
        col(DispositionResponse.battery),
        col(DispositionResponse.stem),
        col(DispositionResponse.paraphrase),
        col(DispositionResponse.sample),
    )
    base = (
        sa_select(*key)
        .join(DispositionArm, col(DispositionArm.id) == col(DispositionResponse.arm_id))
        .where(col(DispositionArm.study) == study)
    )
    responses = session.execute(
        base.add_columns(
            col(DispositionResponse.position),
            col(DispositionResponse.status),
            col(DispositionResponse.answer),
            col(DispositionResponse.attempts),
            col(DispositionResponse.exhausted_attempts),
        )
    ).all()
    scores = session.execute(
        base.join(
            DispositionScore, col(DispositionScore.response_id) == col(DispositionResponse.id)
        ).add_columns(
            col(DispositionScore.kind),
            col(DispositionScore.repeat),
            col(DispositionScore.label),
            col(DispositionScore.value),
            col(DispositionScore.parse_status),
        )
    ).all()
    return sorted(map(tuple, responses)), sorted(map(tuple, scores), key=repr)


def _disposition_files(study: str, out: Path, *, session: Session) -> dict[str, str]:
    from study.disposition.analysis import analyze_study
    from study.disposition.runs import write_analysis

    files = write_analysis(analyze_study(study, session=session, n_boot=200, seed=0), out)
    return {
        # awareness.json names its study; the rest is the study's content alone
        name: Path(path).read_text(encoding="utf-8").replace(f'"study": "{study}"', '"study": S')
        for name, path in sorted(files.items())
    }


def test_sharded_disposition_study_stores_and_reports_what_one_process_does(
    tmp_path: Path, cli: Callable[..., object], session: Session
) -> None:
    batteries = small_batteries(tmp_path / "batteries.yaml")
    shares = ("--repeat-share", "0.2", "--grade-share", "0.5", "--awareness-share", "0.25")
    outputs = []
    for study, extra in (("one", ()), ("sharded", ("--executor", "local", "--shard-stems", "2"))):
        for name, model, opts in DISPOSITION_ARMS:
            add = cli("disposition", "arms", "add", name, "--model", model, "--study", study, *opts)
            assert add.exit_code == 0, add.output  # type: ignore[attr-defined]
        run = cli(
            "disposition", "run", "--study", study, "--judge", "sim/default",
            "--batteries", str(batteries), *shares, *extra,
        )  # fmt: skip
        assert run.exit_code == 0, run.output  # type: ignore[attr-defined]
        outputs.append(run.output)  # type: ignore[attr-defined]
    # the same plan line, per-arm summaries and classifier line from one process and shards
    assert outputs[0] == outputs[1] and "4 arms x 36 probes x 2 samples" in outputs[0]
    assert " scored twice." in outputs[0] and " 0 scored twice." not in outputs[0]
    one = _disposition_rows("one", session=session)
    assert one == _disposition_rows("sharded", session=session)
    kinds = {(s[5], s[6]) for s in one[1]}
    assert kinds == {("category", 0), ("category", 1), ("graded", 0), ("awareness", 0)}
    assert len(one[0]) == 4 * 72 and any(r[9] > 0 for r in one[0])  # re-asked answers
    files = _disposition_files("one", tmp_path / "one", session=session)
    assert files == _disposition_files("sharded", tmp_path / "sharded", session=session)
    assert {"rates_on", "stats_on", "stats_on_graded", "awareness"} <= set(files)
    # a rerun asks nothing again, and the study reads the same
    again = cli(
        "disposition", "run", "--study", "sharded", "--judge", "sim/default",
        "--batteries", str(batteries), *shares, "--executor", "local", "--shard-stems", "4",
    )  # fmt: skip
    assert again.exit_code == 0 and "72 stored before, 0 answered" in again.output  # type: ignore[attr-defined]
    assert "Classifier sim/default: 0 scored" in again.output  # type: ignore[attr-defined]
    assert files == _disposition_files("sharded", tmp_path / "again", session=session)
