"""Disposition drift's smallest simulated study, as the instrument checks drive it.

Every kit run is one arm of the study :data:`STUDY` (a disposition run is an arm, named
``STUDY:ARM`` wherever runs are listed), answering the first four stems of the shipped
``self_interest`` battery (six paraphrases each, two samples: 48 answers) with reasoning
off, classified by the simulated classifier ``sim/default``. ``sim/disp-qwen-d000`` and
``sim/disp-qwen-d100`` are the 0 % and 100 % fine-tunes of the simulator's Table 5 curve:
the aligned rate falls by about 43 points (reasoning off), a known difference.
``sim/disp-hostile-d050`` ends every answer in hostile text. An interruption is a run of
the first stems only (the study's own resumable path,
:func:`study.disposition.runs.run_study`, on fewer stems); the sharded run is
:func:`study.disposition.sharded.run_study_sharded`. Judge robustness re-classifies a
sample with ``sim/default`` resampled and ``sim/judge-strict``; the human round trip is the
``disposition_check`` study of the arm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from driftlens_plugins import RunOutcome, StudyKit
from llm.sim.hostile import HOSTILE_VISIBLE
from llm.specs import ModelSpec

#: The study every kit run is an arm of.
STUDY = "kit"
#: Stems of the smallest study (the first of the shipped ``self_interest`` battery).
N_STEMS = 4
SAMPLES = 2
#: The classifier of every kit run (the comparison and the report read its categories).
JUDGE = "sim/default"
#: Disposition-check tasks the human round trip takes from an arm.
HUMAN_TASKS = 24


def _batteries(stems: int = N_STEMS) -> Any:
    from study.disposition.items import BatteryDocument, load_sample_batteries

    first = load_sample_batteries().batteries[0]
    return BatteryDocument(batteries=[first.model_copy(update={"stems": first.stems[:stems]})])


def _stored(arm_id: int | None, *, session: Session) -> int:
    from storage.disposition_models import DispositionResponse

    if arm_id is None:
        return 0
    query = select(func.count()).select_from(DispositionResponse)
    return int(session.exec(query.where(col(DispositionResponse.arm_id) == arm_id)).one())


def _arm(name: str, model: str, *, session: Session) -> Any:
    """The kit study's arm ``name`` (added on its first run; its model must not change)."""
    from llm.specs import preset_name
    from storage.errors import InputError
    from storage.repo.disposition import get_arm
    from study.disposition.runs import ArmSpec, add_arms
    from study.disposition.sim.responder import parse_arm_model

    arm = get_arm(STUDY, name, session=session)
    if arm is None:
        parsed = parse_arm_model(preset_name(model))
        if parsed is None:
            raise InputError(
                f"The disposition kit runs simulated arms (sim/disp-…), not {model!r}."
            )
        spec = ArmSpec(
            name, ModelSpec.parse(model), dose=parsed[1], reasoning="off", samples=SAMPLES
        )
        (arm,) = add_arms(STUDY, [spec], session=session)
    elif arm.model != model:
        raise InputError(f"Arm {name!r} of study {STUDY!r} runs {arm.model}, not {model}.")
    return arm


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
    from study.disposition.runs import run_study
    from study.disposition.sharded import run_study_sharded

    arm = _arm(name, model, session=session)
    batteries = _batteries()
    per_stem = len(batteries.probes()) // N_STEMS * SAMPLES
    total = N_STEMS * per_stem
    before = _stored(arm.id, session=session)
    if executor is not None:
        sharding = ShardedPass(session=session, settings=settings, executor=executor,
                               per_shard=per_shard or 2)  # fmt: skip
        run_study_sharded(STUDY, batteries, sharding=sharding, judge=ModelSpec.parse(JUDGE),
                          arms=[name], repeat_share=0.0)  # fmt: skip
    else:
        if limit is not None:  # the first stems only: an interruption between stems
            batteries = _batteries(max(1, min(N_STEMS - 1, math.ceil(limit / per_stem))))
        run_study(STUDY, batteries, session=session, judge=ModelSpec.parse(JUDGE), arms=[name],
                  repeat_share=0.0)  # fmt: skip
    session.commit()
    stored = _stored(arm.id, session=session)
    return RunOutcome(run=f"{STUDY}:{name}", stored=stored, added=stored - before, total=total)


def _report(runs: Sequence[str], out: Path, *, session: Session) -> Path:
    """The kit study's report (every arm, the named ones among them) and the Disposition
    page's answers download (its CSV, as the page's button builds it)."""
    from study.disposition.analysis import analyze_study
    from study.disposition.browse import answers_frame
    from study.disposition.report import write_disposition_report
    from study.downloads import frame_bytes

    studies = {run.partition(":")[0] for run in runs}
    assert studies == {STUDY}, f"the kit reports arms of study {STUDY!r}, not {sorted(studies)}"
    files = write_disposition_report(analyze_study(STUDY, session=session, n_boot=200), out)
    (out / "answers.csv").write_bytes(frame_bytes(answers_frame(STUDY, session=session), "csv"))
    return Path(files["report_html"])


def _study_of(run: str) -> str:
    """The study of an arm ``STUDY:ARM`` (the classifier's robustness is a study's)."""
    return run.partition(":")[0]


def _human_selection(run: str) -> Mapping[str, Any]:
    study, _, arm = run.partition(":")
    return {"disposition": study, "arms": (arm,), "judge": JUDGE, "limit": HUMAN_TASKS}


def _terminal(runs: Sequence[str], out: Path) -> list[str]:
    """``driftlens disposition show`` of the first arm: its answers and categories."""
    study, _, arm = runs[0].partition(":")
    return ["disposition", "show", "--study", study, "--arm", arm, "--limit", "4"]


def study_kit() -> StudyKit:
    """The 0 % and 100 % fine-tunes on four stems, reasoning off, and a hostile arm."""
    return StudyKit(
        models=("sim/disp-qwen-d000", "sim/disp-qwen-d100"),
        run=_run,
        report=_report,
        job="run",
        hostile_model="sim/disp-hostile-d050",
        human_kinds=("disposition_check",),
        judges=(JUDGE, "sim/judge-strict"),
        judged=_study_of,
        human_selection=_human_selection,
        terminal=_terminal,
        hostile_text=HOSTILE_VISIBLE,
    )
