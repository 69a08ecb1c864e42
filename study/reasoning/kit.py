"""Reasoning drift's smallest simulated study, as the instrument checks drive it.

The first six shipped sample questions, baseline and six memory lines (the three
``whitespace`` lines, the noise floor, and the three ``bereavement`` lines), two samples:
84 answers generated with the memory injected, every step labelled by the simulated
labeler ``sim`` (it reads the bank sentence's true leaf), drift measured by DTW and SRI.
``sim/null`` edits no trajectory under any memory and ``sim/strong`` edits a step under a
life event with probability 0.85, so their d_rel of the life-event class differs by a known
amount. An interruption is a run of the first questions only (the run's own resumable path,
:func:`study.reasoning.generation.run_generation` with a question scope); the sharded run
is the cluster's :func:`~study.reasoning.sharded.generate.run_generation_sharded`,
:func:`~study.reasoning.sharded.label.label_run_sharded` and
:func:`~study.reasoning.sharded.judge.judge_run_sharded`. ``sim/hostile`` answers with
hostile text in a last step and the answer. Every run is also judged by the response
judge (``driftlens judge``: helpfulness, distraction, acknowledgement) ``sim/default``.
Judge robustness relabels a run's sample with ``sim`` (resampled) and ``keywords``, and
re-judges its answers with ``sim/default`` (resampled) and ``sim/judge-strict``; the human
round trip is the ``label_check`` study and the three response studies (``helpfulness``,
``distraction``, ``acknowledgement``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlmodel import Session

from driftlens_plugins import KitJudge, RunOutcome, StudyKit
from llm.sim.hostile import HOSTILE_VISIBLE
from llm.specs import ModelSpec

#: Questions of the smallest study (the first of the shipped sample).
N_QUESTIONS = 6
#: Its memory lines: the noise floor's whitespace lines and a life event's.
PERTURBATIONS = "whitespace,bereavement"
SAMPLES = 2
#: The labeler of every kit run (the comparison and the report read its labels).
LABELER = "sim"
#: The response judge of every kit run (helpfulness, distraction, acknowledgement).
RESPONSE_JUDGE = "sim/default"
#: The alternative response judge the robustness check re-judges a run with.
ALTERNATIVE_RESPONSE_JUDGE = "sim/judge-strict"
#: Human studies the round trip makes from a run: the labels' and the response judge's.
HUMAN_KINDS = ("label_check", "helpfulness", "distraction", "acknowledgement")
#: Tasks the human round trip takes from a run, per study kind.
HUMAN_TASKS = 24


def _seed_workspace(*, session: Session) -> None:
    """The ontology and the catalog, and the study's questions where the workspace has none.

    A run is over the workspace's questions (as every ``generate``): in the checks' fresh
    workspace those are the six; a run job in a workspace with questions of its own asks
    those.
    """
    from ontology.versions import seed_ontologies
    from study.catalog.store import ensure_default_catalog
    from study.questions import (
        SAMPLE_SOURCE,
        list_questions,
        read_questions,
        sample_questions_path,
        store_questions,
    )

    seed_ontologies(session=session)
    ensure_default_catalog(session=session)
    if not list_questions(session=session):
        rows = read_questions(sample_questions_path())[:N_QUESTIONS]
        store_questions(rows, session=session, source=SAMPLE_SOURCE)
    session.commit()


def _stored(name: str, *, session: Session) -> int:
    from storage.repo.runs import existing_response_keys, get_run

    row = get_run(name, session=session)
    if row is None or row.id is None:
        return 0
    return len(existing_response_keys(row.id, session=session))


def _run(
    name: str,
    *,
    model: str,
    session: Session,
    settings: Any,
    limit: int | None = None,
    executor: Any = None,
    per_shard: int | None = None,
) -> RunOutcome:
    from study.cluster.coordinator import ShardedPass
    from study.reasoning.generation import (
        GenerationOptions,
        GenerationScope,
        resolve_run,
        run_generation,
    )
    from study.reasoning.judges import judge_run
    from study.reasoning.sharded.generate import run_generation_sharded
    from study.reasoning.sharded.judge import judge_run_sharded
    from study.reasoning.sharded.label import label_run_sharded
    from study.reasoning.trajectories import label_run

    _seed_workspace(session=session)
    options = GenerationOptions(model=ModelSpec.parse(model), run=name, perturbations=PERTURBATIONS,
                                samples=SAMPLES, seed=7)  # fmt: skip
    resolved = resolve_run(options, session=session)
    per_question = (1 + len(resolved.chosen)) * SAMPLES
    total = len(resolved.questions) * per_question
    before = _stored(name, session=session)
    if executor is not None:

        def sharding() -> ShardedPass:
            return ShardedPass(session=session, settings=settings, executor=executor,
                               per_shard=per_shard or 2)  # fmt: skip

        run_generation_sharded(options, sharding=sharding())
        label_run_sharded(name, LABELER, sharding=sharding())
        judge_run_sharded(name, ModelSpec.parse(RESPONSE_JUDGE), sharding=sharding())
    else:
        scope = None
        if limit is not None:  # the first questions only: an interruption between questions
            keep = max(1, min(len(resolved.questions) - 1, math.ceil(limit / per_question)))
            ids = frozenset(q.id for q in resolved.questions[:keep] if q.id is not None)
            scope = GenerationScope(question_ids=ids, lease_key=f"generation_run:{name}#partial")
        run_generation(options, session=session, scope=scope)
        session.commit()
        label_run(name, LABELER, session=session)  # labelling resumes too
        judge_run(name, ModelSpec.parse(RESPONSE_JUDGE), session=session)  # so does judging
    session.commit()
    stored = _stored(name, session=session)
    return RunOutcome(run=name, stored=stored, added=stored - before, total=total)


def _report(runs: Sequence[str], out: Path, *, session: Session) -> Path:
    """The drift report of the runs (with its CSV tables) and each run's responses download."""
    from study.reasoning.analysis import analyze_run
    from study.reasoning.downloads import responses_jsonl

    result = analyze_run(list(runs), LABELER, session=session, out_dir=out, bootstrap=200)
    for run in runs:
        (out / f"responses-{run}.jsonl").write_bytes(responses_jsonl(run, session=session))
    return Path(result.files["report_html"])


def _human_selection(run: str) -> Mapping[str, Any]:
    return {"run": run, "labeler": LABELER, "limit": HUMAN_TASKS}


def _terminal(runs: Sequence[str], out: Path) -> list[str]:
    """``driftlens show`` of the first run: its answers and verdict reasons as printed."""
    return ["show", "--run", runs[0], "--limit", "6"]


def study_kit() -> StudyKit:
    """No drift against strong drift on six questions, labelled offline, and a hostile model."""
    return StudyKit(
        models=("sim/null", "sim/strong"),
        run=_run,
        report=_report,
        job="run",
        hostile_model="sim/hostile",
        human_kinds=HUMAN_KINDS,
        judges=(LABELER, "keywords"),
        compare_options={"labeler": LABELER},
        judge_options={"labeler": LABELER},
        more_judges=(
            KitJudge((RESPONSE_JUDGE, ALTERNATIVE_RESPONSE_JUDGE), what="response judge"),
        ),
        human_selection=_human_selection,
        terminal=_terminal,
        hostile_text=HOSTILE_VISIBLE,
    )
