"""Preference pairs for DPO from judged responses (SPEC §10).

A response is

* **chosen** when helpfulness is maximal (4), distraction d = 0 and acknowledgement a = 1;
* **rejected** when helpfulness is below 4 and (d = 1 or a = 0).

Pairs join a chosen and a rejected response *to the same prompt*: the same question under
the same perturbation (memory line), i.e. different samples of one (question, condition)
of a run. Every chosen × rejected combination of a prompt is one pair (with two samples
per condition that is at most one pair). Only perturbed responses take part: the baseline
saw no memory, so it has no d or a. Responses missing any of the three scores (not
judged, or judged with a parse error) are left out rather than guessed.

Export format (one JSON object per line, the conversational layout TRL's ``DPOTrainer``
reads): ``prompt`` is the list of chat messages the model was sent (system instruction,
then the user message with the memory line before the question), ``chosen`` and
``rejected`` are one-message lists ``[{"role": "assistant", "content": <response text>}]``.
Metadata keys sit beside them: ``question_id``, ``condition``, ``condition_class``,
``memory``, ``run``, ``model``, ``judge_model``, ``judge_settings`` (the judge's request
settings, :mod:`study.judge_settings`), ``chosen_sample``, ``rejected_sample``,
``chosen_scores`` and ``rejected_scores`` (``{helpfulness, distraction, acknowledgement}``).
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from storage.errors import InputError
from storage.models import (
    BASELINE_CONDITION,
    JudgeScore,
    ModelSpecRow,
    Perturbation,
    Question,
    Response,
)
from storage.repo.chunks import id_chunks
from storage.repo.requests import stored_messages
from storage.repo.runs import require_run
from study.judge_settings import SettingsByJudge, collect_settings, refuse_mixed_settings
from study.prompts import build_messages
from study.reasoning.judges import ACKNOWLEDGEMENT, DISTRACTION, HELPFULNESS

MAX_HELPFULNESS = 4


@dataclass(frozen=True)
class ScoredResponse:
    """One judged response as the pairing rule sees it (``None`` = score missing)."""

    response_id: int
    question_id: str
    condition: str
    sample: int
    helpfulness: float | None
    distraction: float | None
    acknowledgement: float | None

    @property
    def complete(self) -> bool:
        """Whether all three scores are present."""
        return None not in (self.helpfulness, self.distraction, self.acknowledgement)

    @property
    def is_chosen(self) -> bool:
        """Helpfulness maximal, d = 0 and a = 1."""
        return (
            self.complete
            and self.helpfulness == MAX_HELPFULNESS
            and self.distraction == 0
            and self.acknowledgement == 1
        )

    @property
    def is_rejected(self) -> bool:
        """Helpfulness below maximal and (d = 1 or a = 0)."""
        return (
            self.complete
            and self.helpfulness is not None
            and self.helpfulness < MAX_HELPFULNESS
            and (self.distraction == 1 or self.acknowledgement == 0)
        )


@dataclass(frozen=True)
class PreferenceSummary:
    """What :func:`export_preferences` wrote."""

    run: str
    judge_model: str
    out: Path
    responses: int
    judged: int
    chosen: int
    rejected: int
    pairs: int


def select_pairs(rows: Sequence[ScoredResponse]) -> list[tuple[ScoredResponse, ScoredResponse]]:
    """Every (chosen, rejected) pair of responses to the same prompt.

    The prompt is (question, condition); pairs are ordered by question, condition, then
    chosen and rejected sample. The baseline condition never pairs.
    """
    groups: dict[tuple[str, str], list[ScoredResponse]] = {}
    for r in rows:
        if r.condition == BASELINE_CONDITION:
            continue
        groups.setdefault((r.question_id, r.condition), []).append(r)
    pairs: list[tuple[ScoredResponse, ScoredResponse]] = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: (r.sample, r.response_id))
        for good in (r for r in members if r.is_chosen):
            for bad in (r for r in members if r.is_rejected):
                pairs.append((good, bad))
    return pairs


def _scores(r: ScoredResponse) -> dict[str, float | None]:
    return {
        HELPFULNESS: r.helpfulness,
        DISTRACTION: r.distraction,
        ACKNOWLEDGEMENT: r.acknowledgement,
    }


def _prompt(
    resp: Response, question: str, memory: str, *, session: Session
) -> list[dict[str, str]]:
    stored = stored_messages(resp, session=session)
    if stored:
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in stored]
    # Older rows without the stored request: rebuild it with the generation prompt.
    return [{"role": m.role, "content": m.content} for m in build_messages(question, memory)]


def export_preferences(
    run_name: str, judge_model: str, out: Path, *, session: Session
) -> PreferenceSummary:
    """Write the DPO pairs of a run, judged by ``judge_model``, to ``out`` (JSONL, atomic).

    Each pair records the judge's settings (``judge_settings``; ``null`` for scores stored
    before they were recorded).

    Raises:
        InputError: ``out`` does not end in ``.jsonl``, the judge scored nothing in this
            run (run ``driftlens judge`` first), or its scores mix judge settings.
        NotFoundError: No run of that name.
    """
    from llm.specs import parse_spec

    if out.suffix.lower() not in (".jsonl", ".ndjson"):
        raise InputError(f"{out}: preference pairs are exported as .jsonl.")
    spec = parse_spec(judge_model).spec
    run = require_run(run_name, session=session)
    model_row = session.get(ModelSpecRow, run.model_spec_id)
    stmt = (
        select(Response, Question.external_id, Question.text, Perturbation.text)
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Perturbation, col(Perturbation.id) == col(Response.perturbation_id), isouter=True)
        .where(Response.run_id == run.id)
        .order_by(col(Response.id))
    )
    info: dict[int, tuple[Response, str, str, str]] = {}
    for resp, qkey, qtext, memory in session.exec(stmt):
        if resp.id is not None and resp.text:
            info[resp.id] = (resp, qkey, qtext, memory or "")
    scores: dict[int, dict[str, float | None]] = {rid: {} for rid in info}
    by_judge: SettingsByJudge = {}
    for chunk in id_chunks(info):
        for s in session.exec(
            select(JudgeScore).where(
                col(JudgeScore.response_id).in_(chunk),
                JudgeScore.judge_model == spec,
            )
        ):
            scores[s.response_id][s.kind] = s.value
            collect_settings([(spec, s.settings)], into=by_judge)
    judged = sum(1 for v in scores.values() if v)
    if judged == 0:
        raise InputError(
            f"Judge {spec} has scored no response of run {run_name}; "
            f"run `{shlex.join(['driftlens', 'judge', '--run', run_name, '--model', spec])}` "
            "first."
        )
    # one judge, one setting: a pair is never chosen from scores given under two
    refuse_mixed_settings(by_judge, what=f"run {run_name}")
    settings = by_judge[spec][0]
    rows = [
        ScoredResponse(
            response_id=rid,
            question_id=qkey,
            condition=resp.condition,
            sample=resp.sample,
            helpfulness=scores[rid].get(HELPFULNESS),
            distraction=scores[rid].get(DISTRACTION),
            acknowledgement=scores[rid].get(ACKNOWLEDGEMENT),
        )
        for rid, (resp, qkey, _t, _m) in info.items()
    ]
    pairs = select_pairs(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for good, bad in pairs:
                g_resp, qkey, qtext, memory = info[good.response_id]
                b_resp = info[bad.response_id][0]
                record: dict[str, Any] = {
                    "prompt": _prompt(g_resp, qtext, memory, session=session),
                    "chosen": [{"role": "assistant", "content": g_resp.text}],
                    "rejected": [{"role": "assistant", "content": b_resp.text}],
                    "question_id": qkey,
                    "condition": g_resp.condition,
                    "condition_class": g_resp.condition_class,
                    "memory": memory,
                    "run": run_name,
                    "model": model_row.spec if model_row is not None else None,
                    "judge_model": spec,
                    "judge_settings": settings,
                    "chosen_sample": good.sample,
                    "rejected_sample": bad.sample,
                    "chosen_scores": _scores(good),
                    "rejected_scores": _scores(bad),
                }
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return PreferenceSummary(
        run=run_name,
        judge_model=spec,
        out=out,
        responses=len(info),
        judged=judged,
        chosen=sum(r.is_chosen for r in rows if r.condition != BASELINE_CONDITION),
        rejected=sum(r.is_rejected for r in rows if r.condition != BASELINE_CONDITION),
        pairs=len(pairs),
    )
