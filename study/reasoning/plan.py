"""Reasoning drift's plan (SPEC §4): questions x conditions x samples -> requests and rows.

Pure parts of a generation run: which perturbations a selection names
(:func:`select_perturbations`), the plan of ``(question, condition, sample)`` keys
(:func:`build_plan`), each key's seeded request (:func:`request_seed`, :func:`make_request`)
and the response row an answer becomes (:func:`response_values`). The run itself (resume,
leases, batched writes) is :mod:`study.reasoning.generation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llm.logprobs import logprobs_to_json
from llm.seeds import stable_int
from llm.types import ChatRequest, ChatResult, SamplingParams
from storage.errors import InputError
from storage.models import BASELINE_CONDITION, Perturbation, Question, Response
from storage.repo.runs import (
    ResponseKey,
)
from storage.types import utcnow
from study.catalog import CONDITION_CLASSES
from study.prompts import PROMPT_VERSION, build_messages
from study.reasoning.parsing import parse_response

#: ``parse_status`` of a response whose request failed.
STATUS_ERROR = "error"


#: Class of the no-memory condition (``Response.condition_class``).
BASELINE_CLASS = "none"


_SEED_MODULUS = 2**31 - 1  # what every backend accepts as a seed


@dataclass(frozen=True)
class PlanItem:
    """One request of a run's plan."""

    question_id: int
    question_key: str
    question_text: str
    perturbation_id: int | None
    condition: str
    condition_class: str
    memory_line: str
    sample: int
    seed: int

    @property
    def key(self) -> ResponseKey:
        """The response key this item fills."""
        return ResponseKey(self.question_id, self.condition, self.sample)


def request_seed(run_seed: int, question_key: str, condition: str, sample: int) -> int:
    """The sampling seed of one request, derived only from what identifies it.

    Args:
        run_seed: The run's seed.
        question_key: The question's external id (stable across workspaces).
        condition: ``"baseline"`` or the perturbation key.
        sample: The sample index.
    """
    return (
        stable_int("driftlens-request", run_seed, question_key, condition, sample) % _SEED_MODULUS
    )


def default_run_seed(run_name: str) -> int:
    """The seed of a run started without ``--seed``: derived from its name.

    Two runs with different names then sample independently (and do not share cached
    answers), while re-running one name reproduces it.
    """
    return stable_int("driftlens-run", run_name) % _SEED_MODULUS


def select_perturbations(
    perturbations: Sequence[Perturbation], selection: str
) -> list[Perturbation]:
    """Pick perturbations by ``all``, ``none`` or a comma list of classes, categories or keys.

    Raises:
        InputError: A name matches no class, category or key of the catalog.
    """
    text = selection.strip()
    if text == "all":
        return list(perturbations)
    if text in ("none", ""):
        return []
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    categories = {p.category for p in perturbations}
    keys = {p.key for p in perturbations}
    unknown = [
        w for w in wanted if w not in CONDITION_CLASSES and w not in categories and w not in keys
    ]
    if unknown:
        raise InputError(
            f"Unknown perturbation selection {unknown[0]!r}: use all, none, a class "
            f"({', '.join(CONDITION_CLASSES[:3])}), a category such as 'age', or a key."
        )
    chosen = set(wanted)
    return [
        p
        for p in perturbations
        if p.condition_class in chosen or p.category in chosen or p.key in chosen
    ]


def build_plan(
    questions: Sequence[Question],
    perturbations: Sequence[Perturbation],
    *,
    samples: int,
    run_seed: int,
) -> list[PlanItem]:
    """Every (question, condition, sample) of a run: baseline first, then each perturbation."""
    plan: list[PlanItem] = []
    for q in questions:
        assert q.id is not None
        conditions: list[tuple[int | None, str, str, str]] = [
            (None, BASELINE_CONDITION, BASELINE_CLASS, "")
        ]
        conditions += [(p.id, p.key, p.condition_class, p.text) for p in perturbations]
        for pid, condition, cls, memory in conditions:
            for s in range(samples):
                plan.append(
                    PlanItem(
                        question_id=q.id,
                        question_key=q.external_id,
                        question_text=q.text,
                        perturbation_id=pid,
                        condition=condition,
                        condition_class=cls,
                        memory_line=memory,
                        sample=s,
                        seed=request_seed(run_seed, q.external_id, condition, s),
                    )
                )
    return plan


def make_request(
    item: PlanItem, sampling: SamplingParams, *, top_logprobs: int | None = None
) -> ChatRequest:
    """The chat request of one plan item (its own derived seed, its sample index).

    ``top_logprobs`` asks for token logprobs with that many alternatives (stored on the
    response); ``None`` sends exactly the request of runs made before logprobs existed.
    """
    return ChatRequest(
        messages=build_messages(item.question_text, item.memory_line),
        sampling=sampling.model_copy(update={"seed": item.seed}),
        sample_index=item.sample,
        tag=item.key,
        logprobs=True if top_logprobs is not None else None,
        top_logprobs=top_logprobs,
    )


def request_record(request: ChatRequest, *, model: str) -> dict[str, Any]:
    """What is stored as ``Response.request``: messages and parameters, never credentials."""
    return {
        "model": model,
        "prompt_version": PROMPT_VERSION,
        **request.record(),
        **({"extras": request.extras()} if request.extras() else {}),
    }


def response_values(
    run_id: int, item: PlanItem, request: ChatRequest, result: ChatResult, *, model: str
) -> dict[str, Any]:
    """One result as the column values of a ``Response`` row (parsed; failures flagged).

    ``request`` holds the full request record; :func:`storage.repo.runs.upsert_response_rows`
    stores it normalised. Building a plain dict instead of a ``Response`` object keeps the
    per-row cost of a 200,000-response run low (the ORM object cost more than the insert).
    """
    record = request_record(request, model=model)
    record["served_model"] = result.model
    if result.output_flags:
        # e.g. "nul_replaced": the stored text is not byte-for-byte what the model sent.
        record["output_flags"] = list(result.output_flags)
    if result.error is not None or result.text is None:
        steps: list[str] = []
        answer = None
        status = STATUS_ERROR
    else:
        parsed = parse_response(result.text)
        steps, answer, status = list(parsed.steps), parsed.answer, parsed.parse_status
        record["parse_notes"] = list(parsed.notes)
    now = utcnow()
    return {
        "run_id": run_id,
        "question_id": item.question_id,
        "perturbation_id": item.perturbation_id,
        "condition": item.condition,
        "condition_class": item.condition_class,
        "sample": item.sample,
        "prompt_id": None,
        "params_id": None,
        "request": record,
        "seed": result.seed if result.seed is not None else request.sampling.seed,
        "text": result.text,
        "steps": steps,
        "answer": answer,
        "parse_status": status,
        "finish_reason": result.finish_reason,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "latency_ms": result.latency_ms,
        "error": result.error,
        "attempts": result.attempts,
        "cache_key": result.cache_key or None,
        "logprobs": logprobs_to_json(result.logprobs),
        "created_at": now,
        "updated_at": now,
    }


def response_row(
    run_id: int, item: PlanItem, request: ChatRequest, result: ChatResult, *, model: str
) -> Response:
    """Turn one result into a ``Response`` row (see :func:`response_values`)."""
    return Response(**response_values(run_id, item, request, result, model=model))
