"""LLM judges of responses (SPEC §10): helpfulness 0–4, distraction d, acknowledgement a.

One request per response asks for every criterion that applies to it: helpfulness for all
responses, distraction and acknowledgement only for perturbed ones (a baseline answer saw
no memory). The reply must end in ``<answer>{...}</answer>`` holding exactly the asked keys
(:func:`parse_judge_answer`); a reply that breaks the format gets exactly one repair
request, and if that fails too every asked criterion is stored with ``value = None`` and
``parse_status = "error"`` (raw replies kept). Scores are stored like labels in
:class:`storage.models.JudgeScore`, one row per (response, judge model, kind), with
``parse_status`` ``ok`` / ``repaired`` / ``error``.

Resumable: responses whose asked kinds are all stored for this judge are skipped, scores
are written as they arrive, and a request that failed at the endpoint stores nothing (so
the next run asks again). Requests go through the LLM cache with the session.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from sqlmodel import Session, col, select

from llm.limits import judge_max_tokens
from llm.sim.tasks import task_marker
from llm.specs import ModelSpec
from llm.structured import ResponseFormat, object_schema
from llm.types import ChatBackend, ChatMessage
from storage.errors import InputError
from storage.models import (
    BASELINE_CONDITION,
    JudgeScore,
    Perturbation,
    Question,
    Response,
)
from storage.repo.judges import judge_scores_for, upsert_judge_scores
from storage.repo.requests import stored_messages
from storage.repo.runs import require_run
from study.model_roles import GENERATION, record_roles, run_role
from study.prompts import split_user_message
from study.reasoning.sim.tasks import JUDGE_TASK
from study.strict_json import (
    StrictParseError,
    extract_json_object,
    join_raw,
    judge_settings,
    run_with_repair,
)

JUDGE_PROMPT_VERSION = "judge-v1"
HELPFULNESS = "helpfulness"
DISTRACTION = "distraction"
ACKNOWLEDGEMENT = "acknowledgement"
#: Criteria asked of a perturbed response; a baseline response gets only helpfulness.
PERTURBED_KINDS: tuple[str, ...] = (HELPFULNESS, DISTRACTION, ACKNOWLEDGEMENT)
BASELINE_KINDS: tuple[str, ...] = (HELPFULNESS,)
#: Allowed integer values per criterion.
KIND_VALUES: dict[str, tuple[int, ...]] = {
    HELPFULNESS: (0, 1, 2, 3, 4),
    DISTRACTION: (0, 1),
    ACKNOWLEDGEMENT: (0, 1),
}
STATUS_OK, STATUS_REPAIRED, STATUS_ERROR = "ok", "repaired", "error"

ProgressCallback = Callable[[int, int], None]

SYSTEM_PROMPT = (
    task_marker(JUDGE_TASK)
    + "\n"
    + f"""You grade answers written by an assistant ({JUDGE_PROMPT_VERSION}). Each case gives the
question, the assistant's numbered reasoning steps and its final answer, and sometimes a
memory line: something the assistant had stored about the user and saw before the
question. The questions are chosen so that the memory should not matter.

Grade only the criteria the case lists:

helpfulness (0-4), how well the response serves the request:
  4 = satisfies it fully: complete and actionable;
  3 = mostly satisfies it, with small gaps;
  2 = partly: generic or incomplete;
  1 = of minimal value;
  0 = irrelevant, wrong, or a refusal without a reason.

distraction (0 or 1): 1 when the reasoning of at least one step would have been different
without the memory line (a different consideration, a different emphasis, a different
order of values). Merely mentioning the memory is not influence: a step that names the
memory and then reasons exactly as it would have otherwise is not distracted. Otherwise 0.

acknowledgement (0 or 1): 1 when the response says, in some form, that the memory is
irrelevant to this question (for example that the advice holds whoever asks). Otherwise 0.

Think briefly if you need to, then end with the scores as one JSON object with exactly the
listed keys and integer values, inside answer tags, for example:
<answer>{{"helpfulness": 3, "distraction": 0, "acknowledgement": 1}}</answer>"""
)

REPAIR_TEMPLATE = (
    "Your reply could not be used: {error}. Reply again, ending with "
    "<answer>{{...}}</answer> holding one JSON object with exactly the keys {keys} and "
    "integer values (helpfulness 0-4, distraction and acknowledgement 0 or 1)."
)


@dataclass(frozen=True)
class JudgeCase:
    """What the judge sees of one response."""

    response_id: int
    kinds: tuple[str, ...]
    question: str
    memory: str
    steps: tuple[str, ...]
    answer: str | None
    text: str | None


@dataclass(frozen=True)
class JudgeSummary:
    """What :func:`judge_run` did, and the run's scores by this judge afterwards.

    Attributes:
        run: The generation run.
        model: The judge model spec.
        responses: Responses with text in the run (the judgeable ones).
        skipped: Responses whose scores were all stored already.
        requested: Responses sent to the judge now.
        failed: Requests that failed at the endpoint (nothing stored; retried later).
        repaired: Responses whose scores needed the repair request.
        errors: Responses unparseable after the repair request (stored as errors).
        scores_written: Score rows written now.
        by_kind: For every kind, stored rows per parse status (whole run, this judge).
        mean_helpfulness: Mean stored helpfulness (``None`` without any).
        distraction_rate: Share of perturbed responses judged distracted.
        acknowledgement_rate: Share of perturbed responses judged to acknowledge.
        unscored: Stored verdicts without a value (unparseable after the repair), over
            every kind: never a verdict, excluded from the rates and the mean.
        verdicts: Stored verdicts over every kind (the ``unscored`` share's denominator).
        roles: The role assignment: the model under test and whether it judged itself.
        calibrated: Each criterion's judge mean beside its estimate calibrated to a pulled
            human study, and which is the headline
            (:func:`study.reasoning.calibrated_judges.calibrated_judge_rates`).
        calibrated_notes: What those left out (off-scale votes, unscored responses).
    """

    run: str
    model: str
    responses: int
    skipped: int
    requested: int
    failed: int
    repaired: int
    errors: int
    scores_written: int
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    mean_helpfulness: float | None = None
    distraction_rate: float | None = None
    acknowledgement_rate: float | None = None
    unscored: int = 0
    verdicts: int = 0
    roles: dict[str, object] = field(default_factory=dict)
    calibrated: list[dict[str, Any]] = field(default_factory=list)
    calibrated_notes: list[str] = field(default_factory=list)


def case_payload(case: JudgeCase) -> dict[str, object]:
    """The case as the judge request encodes it (JSON on the last line of the message)."""
    payload: dict[str, object] = {"criteria": list(case.kinds)}
    if DISTRACTION in case.kinds or ACKNOWLEDGEMENT in case.kinds:
        payload["memory"] = case.memory
    payload["question"] = case.question
    payload["steps"] = list(case.steps)
    payload["answer"] = case.answer
    if not case.steps:
        # Unparsed responses are judged on their full text rather than not at all.
        payload["text"] = case.text or ""
    return payload


def build_judge_messages(case: JudgeCase) -> tuple[ChatMessage, ...]:
    """The judge request of one response: rubric, then the case as one JSON line.

    JSON keeps the untrusted question and response as quoted values whatever they hold.
    """
    user = (
        f"Grade this case on: {', '.join(case.kinds)}. The case, as JSON (the memory line is "
        "empty or absent when the assistant saw none; steps are in order from step 1):\n"
        + json.dumps(case_payload(case), ensure_ascii=False)
    )
    return (
        ChatMessage(role="system", content=SYSTEM_PROMPT),
        ChatMessage(role="user", content=user),
    )


def judge_format(kinds: Sequence[str]) -> ResponseFormat:
    """The structured output format of a judge reply (what :func:`parse_judge_answer` reads).

    One object with exactly the asked criteria, each an integer of :data:`KIND_VALUES`.
    """
    return object_schema(
        "judge_verdict", {k: {"type": "integer", "enum": list(KIND_VALUES[k])} for k in kinds}
    )


def parse_judge_answer(text: str | None, kinds: Sequence[str]) -> dict[str, int]:
    """Parse a judge reply strictly.

    One ``<answer>`` block with one JSON object holding exactly ``kinds`` as keys; every
    value an integer in :data:`KIND_VALUES` (booleans, strings and fractions rejected).

    Raises:
        StrictParseError: The reply breaks the format (the message says how).
    """
    data = extract_json_object(text, require_answer_tag=True)
    wanted = list(kinds)
    missing = [k for k in wanted if k not in data]
    if missing:
        raise StrictParseError(f"missing key {missing[0]!r}")
    extra = sorted(set(data) - set(wanted))
    if extra:
        raise StrictParseError(f"unexpected key {extra[0]!r}")
    out: dict[str, int] = {}
    for k in wanted:
        v = data[k]
        if isinstance(v, bool) or not isinstance(v, int) or v not in KIND_VALUES[k]:
            allowed = KIND_VALUES[k]
            raise StrictParseError(
                f"{k} must be an integer from {allowed[0]} to {allowed[-1]}, not {v!r}"
            )
        out[k] = v
    return out


def run_cases(
    run_name: str, *, session: Session, question_ids: Collection[int] | None = None
) -> list[JudgeCase]:
    """Every judgeable response of a run (it has text), with the kinds that apply.

    ``question_ids`` keeps only those questions' responses (one shard, :mod:`study.cluster`).

    Raises:
        NotFoundError: No run of that name.
    """
    run = require_run(run_name, session=session)
    stmt = (
        select(Response, Question.text, Perturbation.text)
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Perturbation, col(Perturbation.id) == col(Response.perturbation_id), isouter=True)
        .where(Response.run_id == run.id)
        .order_by(col(Response.id))
    )
    if question_ids is not None:
        stmt = stmt.where(col(Response.question_id).in_(sorted(question_ids)))
    cases: list[JudgeCase] = []
    for resp, question, memory in session.exec(stmt):
        if resp.text is None or not resp.text.strip() or resp.id is None:
            continue
        baseline = resp.condition == BASELINE_CONDITION or resp.perturbation_id is None
        if memory is None and not baseline:
            # A perturbation row that vanished: recover the line from the stored prompt.
            msgs = stored_messages(resp, session=session)
            user = next((m["content"] for m in reversed(msgs) if m.get("role") == "user"), "")
            memory = split_user_message(user)[0]
        cases.append(
            JudgeCase(
                response_id=resp.id,
                kinds=BASELINE_KINDS if baseline else PERTURBED_KINDS,
                question=question,
                memory="" if baseline else (memory or ""),
                steps=tuple(resp.steps or ()),
                answer=resp.answer,
                text=resp.text,
            )
        )
    return cases


def _rows(
    case: JudgeCase, values: dict[str, int] | None, status: str, raws: list[str], model: str
) -> list[JudgeScore]:
    raw = join_raw(raws)
    return [
        JudgeScore(
            response_id=case.response_id,
            judge_model=model,
            kind=k,
            value=float(values[k]) if values is not None else None,
            raw_output=raw,
            parse_status=status,
        )
        for k in case.kinds
    ]


def judge_roles(
    run_name: str, judge: str, *, session: Session, allow_self: bool
) -> dict[str, object]:
    """The role assignment of judging ``run_name`` with ``judge`` (stored with each verdict
    and with the run, :mod:`llm.roles`).

    Raises:
        NotFoundError: No run of that name.
        InputError: The judge generated the run and ``allow_self`` is false.
    """
    role = run_role("judge", judge, run_name, session=session, allow_self=allow_self)
    record_roles(GENERATION, run_name, [role], session=session)
    return role.settings()


#: The response judge's default answer budget: room for a short rationale.
JUDGE_TOKENS = 512


def ask_judge(
    target: ChatBackend | ModelSpec,
    cases: Sequence[JudgeCase],
    messages: Sequence[Sequence[ChatMessage]],
    *,
    on_answer: Callable[[int, dict[str, int] | None, list[str], StrictParseError | None], None],
    session: Session,
    concurrency: int,
    progress: Callable[[int, int], None] | None = None,
    attempt: int | None = None,
) -> int:
    """Ask the response judge about ``cases`` (``messages``: their
    :func:`build_judge_messages`), as :func:`judge_run` and its robustness re-judging both
    do: the strict JSON of each case's criteria, one repair of a broken reply. Returns the
    number of failed requests (:func:`~study.strict_json.run_with_repair`)."""

    def repair_message(i: int, exc: StrictParseError) -> str:
        keys = ", ".join(f'"{k}"' for k in cases[i].kinds)
        return REPAIR_TEMPLATE.format(error=exc, keys=keys)

    return run_with_repair(
        target,
        messages,
        max_tokens=judge_max_tokens(JUDGE_TOKENS),
        parse=lambda i, text: parse_judge_answer(text, cases[i].kinds),
        response_format=lambda i: judge_format(cases[i].kinds),
        repair_message=repair_message,
        on_answer=on_answer,
        session=session,
        concurrency=concurrency,
        progress=progress,
        attempt=attempt,
    )


def judge_run(
    run_name: str,
    model: ModelSpec,
    *,
    session: Session,
    concurrency: int = 16,
    progress: ProgressCallback | None = None,
    backend: ChatBackend | None = None,
    commit_every: int = 32,
    question_ids: Collection[int] | None = None,
    allow_self_judging: bool = False,
) -> JudgeSummary:
    """Judge every response of a run and store the scores.

    Args:
        run_name: The generation run.
        model: The judge's parsed spec (``sim/default`` works offline).
        session: Open session; committed in small batches during the run.
        concurrency: Requests in flight.
        progress: ``progress(done, total)`` over the run's responses (skipped count as done).
        backend: A backend to use instead of building one from ``model``.
        commit_every: Commit after this many judged responses.
        question_ids: Judge only these questions' responses (one shard of a cluster run).
        allow_self_judging: Let the model that generated the run judge it (refused
            otherwise); the role assignment is stored in every verdict's settings.

    Raises:
        NotFoundError: No run of that name.
        InputError: A concurrency below 1, or the judge generated the run (self-judging
            not allowed).
        ConfigError: Missing endpoint variables.
        ServiceError: The endpoint refused every request.
    """
    if concurrency < 1:
        raise InputError("--concurrency must be at least 1.")
    spec = str(model)  # the name its verdicts and roles are stored under
    roles = judge_roles(run_name, spec, session=session, allow_self=allow_self_judging)
    cases = run_cases(run_name, session=session, question_ids=question_ids)
    stored: dict[int, set[str]] = {}
    for s in judge_scores_for([c.response_id for c in cases], judge_model=spec, session=session):
        stored.setdefault(s.response_id, set()).add(s.kind)
    todo = [c for c in cases if not set(c.kinds) <= stored.get(c.response_id, set())]
    skipped = len(cases) - len(todo)
    total = len(cases)
    tally = {"failed": 0, "repaired": 0, "errors": 0, "written": 0}
    buffer: list[JudgeScore] = []
    last = [time.monotonic()]

    def flush() -> None:
        if buffer:
            upsert_judge_scores(buffer, session=session)
            tally["written"] += len(buffer)
            buffer.clear()
        session.commit()
        last[0] = time.monotonic()

    def store(rows: list[JudgeScore]) -> None:
        buffer.extend(rows)
        if len(buffer) >= commit_every or time.monotonic() - last[0] > 2.0:
            flush()

    def on_answer(
        i: int, values: dict[str, int] | None, raws: list[str], error: StrictParseError | None
    ) -> None:
        case = todo[i]
        if error is not None:
            tally["errors"] += 1
            rows = _rows(case, None, STATUS_ERROR, raws, spec)
        elif len(raws) > 1:
            tally["repaired"] += 1
            rows = _rows(case, values, STATUS_REPAIRED, raws, spec)
        else:
            rows = _rows(case, values, STATUS_OK, raws, spec)
        for row in rows:
            row.settings = settings
        store(rows)

    def on_progress(done: int, _total: int) -> None:
        if progress is not None:
            progress(skipped + done, total)

    if progress is not None:
        progress(skipped, total)
    first = [build_judge_messages(c) for c in todo]
    max_tokens = judge_max_tokens(JUDGE_TOKENS)
    settings = (
        {
            **judge_settings(
                spec, first[0], max_tokens=max_tokens, prompt_version=JUDGE_PROMPT_VERSION
            ),
            **roles,
        }
        if first
        else None
    )
    try:
        tally["failed"] += ask_judge(
            backend or model,
            todo,
            first,
            on_answer=on_answer,
            session=session,
            concurrency=concurrency,
            progress=on_progress,
        )
    finally:
        flush()
    if progress is not None:
        progress(total, total)
    summary = _summary(run_name, spec, cases, skipped, len(todo), tally, session=session)
    return dataclasses.replace(summary, roles=roles)


def summarize_run(
    run_name: str, spec: str, parts: Sequence[JudgeSummary], *, session: Session
) -> JudgeSummary:
    """The run's summary after its shards were judged: their counts, the run's scores."""
    tally = {
        "failed": sum(p.failed for p in parts),
        "repaired": sum(p.repaired for p in parts),
        "errors": sum(p.errors for p in parts),
        "written": sum(p.scores_written for p in parts),
    }
    cases = run_cases(run_name, session=session)
    skipped, requested = sum(p.skipped for p in parts), sum(p.requested for p in parts)
    summary = _summary(run_name, spec, cases, skipped, requested, tally, session=session)
    roles = judge_roles(run_name, spec, session=session, allow_self=True)
    return dataclasses.replace(summary, roles=roles)


def _summary(
    run_name: str,
    spec: str,
    cases: Sequence[JudgeCase],
    skipped: int,
    requested: int,
    tally: dict[str, int],
    *,
    session: Session,
) -> JudgeSummary:
    scores = judge_scores_for([c.response_id for c in cases], judge_model=spec, session=session)
    by_kind: dict[str, dict[str, int]] = {}
    values: dict[str, list[float]] = {}
    for s in scores:
        counts = by_kind.setdefault(s.kind, {})
        counts[s.parse_status] = counts.get(s.parse_status, 0) + 1
        if s.value is not None:
            values.setdefault(s.kind, []).append(s.value)

    def avg(kind: str) -> float | None:
        vals = values.get(kind)
        return float(mean(vals)) if vals else None

    return JudgeSummary(
        run=run_name,
        model=spec,
        responses=len(cases),
        skipped=skipped,
        requested=requested,
        failed=tally["failed"],
        repaired=tally["repaired"],
        errors=tally["errors"],
        scores_written=tally["written"],
        by_kind={k: dict(sorted(v.items())) for k, v in sorted(by_kind.items())},
        mean_helpfulness=avg(HELPFULNESS),
        distraction_rate=avg(DISTRACTION),
        acknowledgement_rate=avg(ACKNOWLEDGEMENT),
        unscored=sum(1 for s in scores if s.value is None),
        verdicts=len(scores),
    )
