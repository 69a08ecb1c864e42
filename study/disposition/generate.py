"""Generate an arm's answers to every probe through the shared request path, with re-asks.

Requests go through :func:`llm.batch.run_chat_batch` with the session, so every request
(each re-ask and each phase of a budget-forced answer included) is cached, and a killed
run resumes: stored responses are final and skipped, missing ones are planned again and
answered from the cache where they were already asked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from llm.specs import ModelSpec, parse_spec
from llm.types import ChatBackend, ChatRequest, ChatResult, SamplingParams
from storage.disposition_models import DispositionArm
from storage.repo.disposition import response_keys, upsert_responses
from study.disposition.items import BatteryDocument
from study.disposition.plan import (
    PROMPT_VERSION,
    PlanItem,
    Reasoning,
    answer_request,
    build_plan,
    first_request,
    parse_answer,
    reasoning_of,
    server_budget_request,
)
from study.request_failures import count_kind

ProgressCallback = Callable[[int, int], None]
BackendFactory = Callable[[DispositionArm], ChatBackend | ModelSpec]


@dataclass(frozen=True)
class ArmRunSummary:
    """What one arm's generation did (exhaustion is counted per arm, never in the rate)."""

    arm: str
    planned: int
    already_done: int
    answered: int
    exhausted: int
    errors: int
    reasks: int
    flagged_reasoning: int
    attempts_histogram: dict[int, int] = field(default_factory=dict)
    # budget arms: "server" (vLLM's thinking_token_budget) or "client" (two phases), and
    # why the server route was not taken when it was tried
    budget_route: str | None = None
    budget_note: str | None = None
    #: failed requests by kind (``server``, ``timeout``, ``empty``...), see ``errors``
    failed_kinds: dict[str, int] = field(default_factory=dict)
    #: requests asked by this call (the plan minus what was settled before)
    requested: int = 0


def arm_reasoning(arm: DispositionArm) -> Reasoning:
    """The arm's reasoning setting."""
    return Reasoning(arm.reasoning, arm.budget, arm.filler or "dots")


BUDGET_ROUTES = ("auto", "client", "server")


def wants_server_budget(arm: DispositionArm) -> bool:
    """Whether a budget arm first tries vLLM's server-side ``thinking_token_budget``.

    ``budget_route`` in the arm's config: ``client`` never, ``server`` always, ``auto``
    (default) for vLLM-served models (``vllm/...`` in-process, ``openai-api/...`` servers)
    but not the simulator's presets, which implement the client-side route only.
    """
    route = str(arm.config.get("budget_route") or "auto")
    if route == "client":
        return False
    if route == "server":
        return True
    info = parse_spec(arm.model)
    if info.provider not in ("openai-api", "vllm"):
        return False
    from study.disposition.sim.responder import parse_arm_model

    return parse_arm_model(info.model) is None


def _probe_server_budget(
    target: ChatBackend | ModelSpec, request: ChatRequest, *, session: Session
) -> str | None:
    """Send one server-budget request; ``None`` when the server took it, else its refusal."""
    from llm.batch import run_chat_batch
    from storage.errors import ServiceError

    try:
        (res,) = run_chat_batch(target, [request], session=session, concurrency=1)
    except ServiceError as exc:
        return str(exc)
    return res.error


def arm_sampling(arm: DispositionArm) -> SamplingParams:
    """The arm's sampling (temperature 0.7 as in the seed unless configured)."""
    cfg = dict(arm.config.get("sampling") or {})
    return SamplingParams.model_validate(
        {"temperature": 0.7, "top_p": 0.95, "top_k": None, "max_tokens": 1024, **cfg}
    )


def _record(requests: Sequence[ChatRequest], *, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "prompt_version": PROMPT_VERSION,
        "requests": [{**r.record(), **r.extras()} for r in requests],
    }


def generate_arm(
    arm: DispositionArm,
    batteries: BatteryDocument,
    *,
    session: Session,
    backend: ChatBackend | ModelSpec | None = None,
    concurrency: int = 16,
    progress: ProgressCallback | None = None,
    stems: frozenset[tuple[str, str]] | None = None,
) -> ArmRunSummary:
    """Answer every probe x sample of ``arm`` not yet stored (see module docstring).

    Each response stores its index in the arm's whole plan (``position``), so a study
    reads in plan order however its answers were stored.

    Args:
        arm: The arm (stored).
        batteries: The probes.
        session: Open session; committed after each attempt round.
        backend: A backend to use instead of one built from ``arm.model``.
        concurrency: Requests in flight.
        progress: ``progress(done, total)`` over the plan.
        stems: Only the probes of these ``(battery, stem)`` (a shard task's part).

    Raises:
        ServiceError: the endpoint refused every request (bad key, unknown model...).
    """
    from llm.batch import run_chat_batch

    assert arm.id is not None
    # the stored row holds the spec as text: a malformed one fails before anything is sent
    spec = ModelSpec.parse(arm.model)
    target: ChatBackend | ModelSpec = backend if backend is not None else spec
    reasoning = arm_reasoning(arm)
    sampling = arm_sampling(arm)
    plan = build_plan(batteries.probes(), samples=arm.samples)
    positions = {it.key: i for i, it in enumerate(plan)}
    if stems is not None:
        plan = [it for it in plan if (it.probe.battery, it.probe.stem) in stems]
    done = response_keys(arm.id, session=session)
    todo = [it for it in plan if it.key not in done]
    total = len(plan)
    finished = len(plan) - len(todo)
    if progress is not None:
        progress(finished, total)
    history: dict[tuple[str, str, int, int], list[ChatRequest]] = {}
    exhausted_count: dict[tuple[str, str, int, int], int] = {}
    rows: list[dict[str, Any]] = []
    tally = {"answered": 0, "exhausted": 0, "errors": 0, "reasks": 0, "flagged": 0}
    hist: dict[int, int] = {}
    kinds: dict[str, int] = {}
    pending: list[PlanItem] = todo
    budget_route: str | None = None
    budget_note: str | None = None
    if reasoning.effective_mode == "budget":
        budget_route = "client"
        if todo and wants_server_budget(arm):
            # one request decides: a vLLM server without a reasoning configuration refuses
            # thinking_token_budget (400), and the arm then takes the client-side route
            refusal = _probe_server_budget(
                target, server_budget_request(todo[0], reasoning, sampling, 0), session=session
            )
            if refusal is None:
                budget_route = "server"
            else:
                budget_note = f"server-side budget not used: {refusal}"
    server = budget_route == "server"
    for attempt in range(arm.max_reasks + 1):
        if not pending:
            break
        if attempt:
            tally["reasks"] += len(pending)
        firsts = [
            server_budget_request(it, reasoning, sampling, attempt)
            if server
            else first_request(it, reasoning, sampling, attempt)
            for it in pending
        ]
        results = run_chat_batch(target, firsts, session=session, concurrency=concurrency)
        finals: list[tuple[PlanItem, list[ChatRequest], ChatResult, dict[str, Any]]] = []
        phase2: list[tuple[PlanItem, ChatRequest, ChatResult]] = []
        for it, req, res in zip(pending, firsts, results, strict=True):
            history.setdefault(it.key, []).append(req)
            if (
                reasoning.effective_mode == "budget"
                and not server
                and res.error is None
                and res.text is not None
            ):
                phase2.append((it, req, res))
            else:
                finals.append((it, [req], res, {"route": "server-budget"} if server else {}))
        if phase2:
            seconds = [
                answer_request(it, reasoning_of(res.text or ""), sampling, attempt)
                for it, _, res in phase2
            ]
            answers = run_chat_batch(target, seconds, session=session, concurrency=concurrency)
            for (it, req1, res1), req2, res2 in zip(phase2, seconds, answers, strict=True):
                history[it.key].append(req2)
                extra = {
                    "reasoning_words": len(reasoning_of(res1.text or "").split()),
                    "truncated": res1.finish_reason == "length",
                }
                finals.append((it, [req1, req2], res2, extra))
        still: list[PlanItem] = []
        for it, _reqs, res, extra in finals:
            key = it.key
            if res.error is not None or res.text is None:
                if attempt < arm.max_reasks and res.error_kind in ("timeout", "server"):
                    still.append(it)
                    continue
                rows.append(
                    _row(arm, it, history[key], res, None, exhausted_count, extra, positions)
                )
                tally["errors"] += 1
                count_kind(kinds, res.error_kind or ("empty" if res.error is None else None))
                continue
            parsed = parse_answer(res.text, res.finish_reason)
            if parsed.exhausted:
                exhausted_count[key] = exhausted_count.get(key, 0) + 1
                if attempt < arm.max_reasks:
                    still.append(it)
                    continue
                tally["exhausted"] += 1
            else:
                tally["answered"] += 1
            flag = reasoning.effective_mode == "off" and parsed.reasoning_block
            tally["flagged"] += int(flag)
            hist[attempt + 1] = hist.get(attempt + 1, 0) + 1
            rows.append(_row(arm, it, history[key], res, parsed, exhausted_count, extra, positions))
        finished += len(pending) - len(still)
        upsert_responses(rows, session=session)
        rows = []
        session.commit()
        if progress is not None:
            progress(finished, total)
        pending = still
    return ArmRunSummary(
        arm=arm.name,
        planned=total,
        already_done=total - len(todo),
        answered=tally["answered"],
        exhausted=tally["exhausted"],
        errors=tally["errors"],
        reasks=tally["reasks"],
        flagged_reasoning=tally["flagged"],
        budget_route=budget_route,
        budget_note=budget_note,
        attempts_histogram=dict(sorted(hist.items())),
        failed_kinds=dict(sorted(kinds.items())),
        requested=len(todo),
    )


def _row(
    arm: DispositionArm,
    item: PlanItem,
    requests: list[ChatRequest],
    res: ChatResult,
    parsed: Any,
    exhausted_count: Mapping[tuple[str, str, int, int], int],
    extra: Mapping[str, Any],
    positions: Mapping[tuple[str, str, int, int], int],
) -> dict[str, Any]:
    reasoning = arm_reasoning(arm)
    route = {
        "on": "single",
        "off": "template",
        "budget": "two-phase",
        "filler": "filler",
    }[reasoning.effective_mode]
    route = str(extra.get("route", route))
    status = "error" if parsed is None else ("exhausted" if parsed.exhausted else "ok")
    return {
        "arm_id": arm.id,
        "battery": item.probe.battery,
        "stem": item.probe.stem,
        "paraphrase": item.probe.paraphrase,
        "sample": item.sample,
        "position": positions[item.key],
        "probe_text": item.probe.text,
        "text": res.text,
        "answer": None if parsed is None or parsed.exhausted else parsed.answer,
        "finish_reason": res.finish_reason,
        "status": status,
        "attempts": len({r.attempt for r in requests}),
        "exhausted_attempts": int(exhausted_count.get(item.key, 0)),
        "reasoning_block": bool(parsed is not None and parsed.reasoning_block),
        "reasoning_words": extra.get(
            "reasoning_words", parsed.reasoning_words if parsed is not None else None
        ),
        "truncated": bool(extra.get("truncated", False)),
        "route": route,
        "request": _record(requests, model=arm.model),
        "cache_key": res.cache_key or None,
        "error": res.error,
    }
