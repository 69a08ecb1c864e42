"""The case viewer's data: one answer with its bank, provenance and both judges' verdicts.

Cases where two judges differ by two points or more on some dimension come first (the
"stress cases" worth a human look). Everything here is untrusted text for the page to
escape.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session

from storage.models import GenerationRun, JudgeScore
from storage.repo.conflicts import banks_by_question
from storage.repo.judges import judge_scores_for
from storage.repo.runs import list_responses, list_runs, require_run
from study.conflicts.actions import UNKNOWN, action_name
from study.conflicts.score import D6_FLAGS, DIMENSIONS, KINDS
from study.strict_json import REPAIR_SEPARATOR, StrictParseError, extract_json_object


@dataclass(frozen=True)
class JudgeView:
    """One judge's verdict on one answer."""

    judge: str
    status: str
    scores: dict[str, float | None]
    d6: str | None
    quotes: dict[str, str]
    #: the judge's action class (``unknown`` for a verdict stored without one)
    action: str = UNKNOWN


@dataclass(frozen=True)
class CaseView:
    """One judged answer with everything the viewer shows."""

    response_id: int
    instance_id: str
    type: str
    high_risk: bool
    n_distractors: int
    observability: str
    request: str
    memories: tuple[tuple[str, str], ...]  # (text, provenance), as shown to the model
    answer: str
    judges: tuple[JudgeView, ...]

    @property
    def max_gap(self) -> float:
        """Largest difference between two judges on one dimension (0 with one judge)."""
        gap = 0.0
        for d in DIMENSIONS:
            vals = [j.scores.get(d) for j in self.judges]
            nums = [v for v in vals if v is not None]
            if len(nums) >= 2:
                gap = max(gap, max(nums) - min(nums))
        return gap


def conflict_runs(*, session: Session) -> list[GenerationRun]:
    """Runs of the conflicts instrument, newest first."""
    runs = [
        r for r in list_runs(session=session) if (r.config or {}).get("instrument") == "conflicts"
    ]
    return sorted(runs, key=lambda r: r.id or 0, reverse=True)


def _quotes(raw: str | None) -> dict[str, str]:
    if not raw:
        return {}
    last = raw.split(REPAIR_SEPARATOR)[-1]
    try:
        obj = extract_json_object(last, require_answer_tag=True)
    except StrictParseError:
        return {}
    out: dict[str, str] = {}
    for d in (*DIMENSIONS, "d6"):
        entry = obj.get(d)
        if isinstance(entry, dict):
            out[d] = str(entry.get("quote") or "")
    return out


def _judge_views(scores: list[JudgeScore]) -> list[JudgeView]:
    by_judge: dict[str, list[JudgeScore]] = {}
    for s in scores:
        if s.kind in KINDS:
            by_judge.setdefault(s.judge_model, []).append(s)
    views = []
    for judge, rows in sorted(by_judge.items()):
        vals = {s.kind.removeprefix("conflict_"): s.value for s in rows}
        d6v = vals.pop("d6", None)
        act = vals.pop("action", None)
        views.append(
            JudgeView(
                judge=judge,
                status=rows[0].parse_status,
                scores={d: vals.get(d) for d in DIMENSIONS},
                d6=None if d6v is None else D6_FLAGS[int(d6v)],
                quotes=_quotes(rows[0].raw_output),
                action=action_name(act),
            )
        )
    return views


def case_views(run_name: str, *, session: Session, limit: int | None = None) -> list[CaseView]:
    """The judged answers of a run, judge disagreements of two points or more first."""
    run = require_run(run_name, session=session)
    assert run.id is not None
    responses = [r for r in list_responses(run.id, session=session) if r.parse_status == "ok"]
    banks = banks_by_question(sorted({r.question_id for r in responses}), session=session)
    scores: dict[int, list[JudgeScore]] = {}
    for s in judge_scores_for([r.id for r in responses if r.id is not None], session=session):
        scores.setdefault(s.response_id, []).append(s)
    out: list[CaseView] = []
    for r in responses:
        bank = banks.get(r.question_id)
        if bank is None or r.id is None:
            continue
        ctx = (r.request or {}).get("context", {})
        out.append(
            CaseView(
                response_id=r.id,
                instance_id=bank.instance_id,
                type=bank.conflict_type,
                high_risk=bank.high_risk,
                n_distractors=int(ctx.get("n_distractors", 0)),
                observability=str(ctx.get("observability", "FULL")),
                request=str(bank.content.get("query", "")),
                memories=tuple(
                    (str(o.get("text", "")), str(o.get("provenance", "")))
                    for o in ctx.get("order", [])
                ),
                answer=r.text or "",
                judges=tuple(_judge_views(scores.get(r.id, []))),
            )
        )
    out.sort(key=lambda c: (c.max_gap < 2, -c.max_gap, c.instance_id, c.n_distractors))
    return out[:limit] if limit is not None else out
