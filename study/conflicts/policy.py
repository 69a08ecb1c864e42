"""Response policies: heuristic baselines and the two-stage conflict-aware action policy.

Baselines (pure functions of the shown bank; no model):

* ``recency`` — commits to the side whose memory comes last in the instance's record;
* ``majority`` — commits to the side with more memories (ties: the first side);
* ``source-priority`` — commits to the side whose memories name an institutional source
  (a doctor, bank, council...), else falls back to ``majority``;
* ``ask-only`` — asks a question and nothing else (no explanation, no advice);
* ``conditionalize-only`` — one option per side, no explanation and no question;
* ``lexical-detector`` — looks for contrast words in the memories; when it finds one it
  conditionalizes, otherwise it commits (``majority``). Its detection rate is reported.

``caap`` (conflict-aware action policy): stage 1 asks the backbone for one action of
``commit, conditionalize, clarify, verify, defer, reversible_trial`` as strict JSON (the
least cautious justified action, more caution when mistakes are costly; an action outside
the set gets one repair), stage 2 asks the same backbone to write the answer carrying that
action out. Both stages go through the request cache; the action, its reason and the raw
stage-1 replies are stored with the response (``request["policy"]``).

A policy run is an ordinary conflicts run (same plan keys, same judges, same report); its
``config["policy"]`` names the policy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from llm.sim.tasks import task_marker
from llm.specs import ModelSpec
from llm.types import ChatBackend, ChatMessage, ChatRequest, ChatResult, SamplingParams
from storage.errors import InputError
from storage.models import Response
from storage.repo.runs import (
    existing_response_keys,
    get_or_create_model_spec,
    get_or_create_run,
    upsert_responses,
)
from study.conflicts.actions import ACTION_LINE, ACTIONS, SELECT_TASK
from study.conflicts.items import ConflictInstance, stored_instances
from study.conflicts.plan import (
    INSTRUCTION,
    RESPONSE_TASK,
    BankPlanItem,
    bank_response,
    build_plan,
    request_record,
)
from study.run_setup import model_row
from study.strict_json import StrictParseError, extract_json_object, join_raw, run_with_repair

HEURISTICS: tuple[str, ...] = (
    "recency",
    "majority",
    "source-priority",
    "ask-only",
    "conditionalize-only",
    "lexical-detector",
)
POLICIES: tuple[str, ...] = (*HEURISTICS, "caap")
POLICY_PROMPT_VERSION = "conflict-policy-v1"
_SOURCE_WORDS = re.compile(
    r"\b(doctor|gp|consultant|pharmac\w*|hospital|clinic|bank|council|officer|inspector|"
    r"solicitor|accountant|handbook|finance|school|dietitian|nurse|adviser|advisor)\b",
    re.I,
)
_CONTRAST_WORDS = re.compile(
    r"\b(but|however|although|whereas|instead|stopped|quit|again|later|warned|contradict\w*)\b",
    re.I,
)


def _side_texts(inst: ConflictInstance, shown: Sequence[str]) -> tuple[list[str], list[str]]:
    keep = set(shown)
    a = [inst.core_memories[i] for i in inst.provenance.side_a if inst.core_memories[i] in keep]
    b = [inst.core_memories[i] for i in inst.provenance.side_b if inst.core_memories[i] in keep]
    return a, b


def _pick_majority(a: list[str], b: list[str]) -> list[str]:
    return a if len(a) >= len(b) else b


def heuristic_answer(
    policy: str, inst: ConflictInstance, shown: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    """The answer of a heuristic policy and what it decided (pure; no model).

    Raises:
        InputError: unknown policy.
    """
    a, b = _side_texts(inst, shown)
    meta: dict[str, Any] = {"name": policy}
    if policy == "ask-only":
        # a pure clarification: it recommends nothing (an abstention, D3 not applicable)
        return (
            "I will hold off on a recommendation for now: could you tell me a bit more "
            "about your situation?",
            meta,
        )
    if policy == "conditionalize-only":
        one = a[0] if a else "the first thing I remember holds"
        two = b[0] if b else "the other thing I remember holds"
        return (
            f"If this is true: {one.rstrip('.')}, then plan around it. "
            f"If instead this is true: {two.rstrip('.')}, then plan around that. Those are two "
            "options, one for each case, rather than one firm answer.",
            meta,
        )
    if policy == "lexical-detector":
        detected = any(_CONTRAST_WORDS.search(t) for t in shown)
        meta["detected"] = detected
        if detected:
            return heuristic_answer("conditionalize-only", inst, shown)[0], meta
        side = _pick_majority(a, b)
    elif policy == "recency":
        order = {t: i for i, t in enumerate(inst.core_memories)}
        last_a = max((order[t] for t in a), default=-1)
        last_b = max((order[t] for t in b), default=-1)
        side = a if last_a > last_b else b
    elif policy == "majority":
        side = _pick_majority(a, b)
    elif policy == "source-priority":
        src_a = sum(bool(_SOURCE_WORDS.search(t)) for t in a)
        src_b = sum(bool(_SOURCE_WORDS.search(t)) for t in b)
        side = a if src_a > src_b else b if src_b > src_a else _pick_majority(a, b)
    else:
        raise InputError(f"Unknown policy {policy!r}; use one of {', '.join(POLICIES)}.")
    pick = side[-1] if side else (shown[0] if shown else "what I know about you")
    meta["committed_to"] = pick
    return f"Based on what I remember ({pick.rstrip('.')}), I would simply go with that.", meta


def select_messages(item: BankPlanItem) -> tuple[ChatMessage, ...]:
    """Stage 1: the bank and request, and the action set (JSON reply)."""
    system = (
        f"{task_marker(SELECT_TASK)}\nYou are a personal assistant deciding how to respond "
        "before writing. From the stored memories and the request only, choose the least "
        "cautious action the evidence justifies, and be more cautious when a mistake would be "
        "costly. Actions: " + ", ".join(ACTIONS) + '. Reply with JSON only: {"action": "...", '
        '"reason": "..."}.'
    )
    return (ChatMessage(role="system", content=system), item.rendered.messages[-1])


def write_messages(item: BankPlanItem, action: str) -> tuple[ChatMessage, ...]:
    """Stage 2: the usual answer request, told which action to carry out."""
    system = (
        f"{task_marker(RESPONSE_TASK)}\n{INSTRUCTION}\n{ACTION_LINE} {action}\n"
        "Write the response so that it carries out this action."
    )
    return (ChatMessage(role="system", content=system), item.rendered.messages[-1])


def parse_action(text: str) -> tuple[str, str]:
    """``(action, reason)`` of a stage-1 reply.

    Raises:
        StrictParseError: no single JSON object, or an action outside the set.
    """
    obj = extract_json_object(text)
    action = obj.get("action")
    if action not in ACTIONS:
        raise StrictParseError(f'"action" must be one of {", ".join(ACTIONS)}, got {action!r}')
    return str(action), str(obj.get("reason") or "")


@dataclass(frozen=True)
class PolicySummary:
    """What a policy run did."""

    run: str
    policy: str
    planned: int
    already_done: int
    written: int
    select_errors: int
    actions: dict[str, int] = field(default_factory=dict)
    detected: int = 0


def _response(
    run_id: int,
    item: BankPlanItem,
    record: dict[str, Any],
    text: str | None,
    *,
    status: str,
    result: ChatResult | None = None,
) -> Response:
    return bank_response(
        run_id,
        item,
        record,
        text,
        status=status,
        seed=item.seed,
        finish_reason=None if result is None else result.finish_reason,
        error=None if result is None else result.error,
        attempts=0 if result is None else result.attempts,
        cache_key=None if result is None else (result.cache_key or None),
    )


def run_policy(
    policy: str,
    run: str,
    *,
    session: Session,
    backbone: ModelSpec | None = None,
    doses: Sequence[int] = (6,),
    seed: int = 0,
    concurrency: int = 16,
    backend: ChatBackend | None = None,
) -> PolicySummary:
    """Answer every imported bank with a policy and store the answers as a conflicts run.

    Raises:
        InputError: unknown policy, ``caap`` without a backbone, no banks imported.
    """
    if policy not in POLICIES:
        raise InputError(f"Unknown policy {policy!r}; use one of {', '.join(POLICIES)}.")
    if policy == "caap" and backbone is None:
        raise InputError("The caap policy needs --backbone MODEL (it writes the answers).")
    instances = stored_instances(session=session)
    if not instances:
        raise InputError("No memory banks in this workspace; run `driftlens conflicts import`.")
    if policy == "caap":
        assert backbone is not None
        spec = model_row(backbone, session=session)
        model_label = spec.spec
    else:
        spec = get_or_create_model_spec(
            f"policy/{policy}", provider="policy", model=policy, session=session
        )
        model_label = f"policy/{policy}"
    assert spec.id is not None
    sampling = SamplingParams(temperature=0.0, top_p=1.0, top_k=None, seed=seed, max_tokens=600)
    stored_run = get_or_create_run(
        run,
        model_spec_id=spec.id,
        prompt_version=f"{POLICY_PROMPT_VERSION}:{policy}",
        sampling=sampling.model_dump(),
        config={
            "version": 1,
            "instrument": "conflicts",
            "policy": policy,
            "track": "oracle",
            "doses": list(doses),
            "samples": 1,
            "run_seed": seed,
        },
        simulated=policy == "caap" and backbone is not None and backbone.simulated,
        session=session,
    )
    assert stored_run.id is not None
    run_id = stored_run.id
    plan = build_plan(instances, doses=doses, samples=1, run_seed=seed)
    done = existing_response_keys(run_id, session=session)
    todo = [p for p in plan if p.key not in done]
    rows: list[Response] = []
    actions: dict[str, int] = {}
    detected = 0
    select_errors = 0

    if policy != "caap":
        for item in todo:
            shown = [o["text"] for o in request_record_order(item)]
            text, meta = heuristic_answer(policy, item.instance, shown)
            detected += int(bool(meta.get("detected")))
            req = ChatRequest(messages=item.rendered.messages, sampling=sampling)
            record = request_record(item, req, model=model_label, track="oracle")
            record["policy"] = meta
            rows.append(_response(run_id, item, record, text, status="ok"))
    else:
        assert backbone is not None
        if backbone.simulated:
            from study.conflicts.simulation import register_instances

            register_instances(inst for _, inst in instances)
        target: ChatBackend | ModelSpec = backend or backbone
        chosen: dict[int, tuple[str, str, list[str]]] = {}

        def on_answer(i: int, value: tuple[str, str] | None, raws: list[str], _e: Any) -> None:
            nonlocal select_errors
            if value is None:
                select_errors += 1
                item = todo[i]
                req = ChatRequest(messages=select_messages(item), sampling=sampling)
                record = request_record(item, req, model=model_label, track="oracle")
                record["policy"] = {"name": "caap", "action": None, "select_raw": join_raw(raws)}
                rows.append(_response(run_id, item, record, None, status="policy_error"))
                return
            chosen[i] = (value[0], value[1], raws)

        run_with_repair(
            target,
            [select_messages(item) for item in todo],
            max_tokens=200,
            parse=lambda _i, text: parse_action(text),
            repair_message=lambda _i, exc: (
                f"That could not be used: {exc}. Reply with JSON only, one of the six actions."
            ),
            on_answer=on_answer,
            session=session,
            concurrency=concurrency,
        )
        order = sorted(chosen)
        reqs = [
            ChatRequest(
                messages=write_messages(todo[i], chosen[i][0]),
                sampling=sampling.model_copy(update={"seed": todo[i].seed}),
                tag=todo[i].key,
            )
            for i in order
        ]

        def on_result(j: int, req: ChatRequest, res: ChatResult) -> None:
            i = order[j]
            item = todo[i]
            action, reason, raws = chosen[i]
            actions[action] = actions.get(action, 0) + 1
            record = request_record(item, req, model=model_label, track="oracle")
            record["policy"] = {
                "name": "caap",
                "action": action,
                "reason": reason,
                "select_raw": join_raw(raws),
            }
            bad = res.error is not None or not (res.text or "").strip()
            rows.append(
                _response(
                    run_id, item, record, res.text, status="error" if bad else "ok", result=res
                )
            )

        if reqs:
            from llm.batch import run_chat_batch

            run_chat_batch(
                target, reqs, session=session, concurrency=concurrency, on_result=on_result
            )
    if rows:
        upsert_responses(rows, session=session)
    session.commit()
    return PolicySummary(
        run=run,
        policy=policy,
        planned=len(plan),
        already_done=len(plan) - len(todo),
        written=sum(r.parse_status == "ok" for r in rows),
        select_errors=select_errors,
        actions=dict(sorted(actions.items())),
        detected=detected,
    )


def request_record_order(item: BankPlanItem) -> list[dict[str, Any]]:
    """The shown memories of a plan item in rendered order, with provenance."""
    req = ChatRequest(messages=item.rendered.messages, sampling=SamplingParams())
    return list(request_record(item, req, model="", track="oracle")["context"]["order"])


def action_mixture(run_names: Sequence[str], *, session: Session) -> list[dict[str, Any]]:
    """CAAP action shares within conflict type (Wilson intervals), per run."""
    from driftlens_core.proportions import proportion_interval
    from storage.repo.conflicts import banks_by_question
    from storage.repo.runs import list_responses, require_run

    out: list[dict[str, Any]] = []
    for name in run_names:
        run = require_run(name, session=session)
        assert run.id is not None
        rs = [
            r
            for r in list_responses(run.id, session=session)
            if (r.request or {}).get("policy", {}).get("action")
        ]
        banks = banks_by_question(sorted({r.question_id for r in rs}), session=session)
        by_type: dict[str, list[str]] = {}
        for r in rs:
            b = banks.get(r.question_id)
            if b is not None:
                by_type.setdefault(b.conflict_type, []).append(r.request["policy"]["action"])
        for type_, acts in sorted(by_type.items()):
            for action in ACTIONS:
                k = acts.count(action)
                if k == 0:
                    continue
                p = proportion_interval(k, len(acts))
                out.append(
                    {
                        "run": name,
                        "type": type_,
                        "action": action,
                        "share": p.share,
                        "ci_low": p.ci_low,
                        "ci_high": p.ci_high,
                        "k": k,
                        "n": len(acts),
                    }
                )
    return out
