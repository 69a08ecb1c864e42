"""LLM labelers: the SPEC §5 labeling request, strict parsing, one repair retry.

A response's non-empty steps go to the model in one request; the reply must hold a JSON
array inside ``<answer>`` (see :func:`ontology.parsing.parse_label_answer`). A reply that
breaks the format gets exactly one repair request (the conversation plus the reason); if
that fails too, every step of the response is stored as ``unmapped`` with parse status
``unparseable`` and both raw replies are kept. A request that failed at the endpoint is
*not* stored, so the next run retries it. Requests go through :func:`llm.batch.run_chat_batch`
and are cached by the LLM layer (with a session), so reruns cost nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llm.limits import label_concurrency, labeler_max_tokens
from llm.types import ChatBackend, ChatMessage, ChatRequest, ChatResult, SamplingParams
from ontology.labelers.base import LabelItem, Progress, StepLabelResult
from ontology.parsing import AnswerParseError, parse_label_answer
from ontology.prompts import LABEL_PROMPT_VERSION, REPAIR_TEMPLATE, labeling_messages
from ontology.schema import UNMAPPED, OntologyDoc

MAX_TOKENS = 1536


@dataclass
class _Pending:
    item: int
    indices: list[int]
    messages: list[tuple[str, str]]
    raw: list[str]
    error: str = ""


def _request(
    messages: Sequence[tuple[str, str]], *, temperature: float, seed: int, repeat: int
) -> ChatRequest:
    return ChatRequest(
        messages=tuple(ChatMessage(role=r, content=c) for r, c in messages),
        sampling=SamplingParams(
            temperature=temperature,
            top_p=1.0,
            top_k=None,
            repetition_penalty=None,
            max_tokens=labeler_max_tokens(MAX_TOKENS),
            seed=seed,
        ),
        sample_index=repeat,
    )


class LLMLabeler:
    """Labels steps by asking a model (``provider/model`` spec or a backend object).

    Args:
        spec: The labeler spec string it was built from (stored with every label).
        model: ``provider/model`` spec or a :class:`llm.types.ChatBackend`.
        temperature: Sampling temperature (0 by default: labeling is a classification).
        seed: Sampling seed.
        concurrency: Requests in flight (default: ``llm.limits.label_concurrency``).
    """

    prompt_version = LABEL_PROMPT_VERSION

    def __init__(
        self,
        spec: str,
        model: str | ChatBackend,
        *,
        temperature: float = 0.0,
        seed: int = 0,
        concurrency: int | None = None,
    ) -> None:
        self.spec = spec
        self.model = model
        self.temperature = temperature
        self.seed = seed
        # None: the limits in force (``--concurrency`` of label/round, env, 16).
        self.concurrency = concurrency if concurrency is not None else label_concurrency(16)
        self.stats: dict[str, int] = {"requests": 0, "repaired": 0, "unparseable": 0, "failed": 0}

    def label_steps(self, steps: Sequence[str], *, ontology: OntologyDoc) -> list[StepLabelResult]:
        """Label one response (no request cache: pass a session to :meth:`label_batch`)."""
        return self.label_batch([LabelItem("", tuple(steps))], ontology=ontology)[0]

    def _send(
        self, requests: list[ChatRequest], session: Any, progress: Progress | None
    ) -> list[ChatResult]:
        from llm.batch import run_chat_batch

        if not requests:
            return []
        self.stats["requests"] += len(requests)
        return run_chat_batch(
            self.model, requests, session=session, concurrency=self.concurrency, progress=progress
        )

    def label_batch(
        self,
        items: Sequence[LabelItem],
        *,
        ontology: OntologyDoc,
        session: object | None = None,
        progress: Progress | None = None,
    ) -> list[list[StepLabelResult]]:
        """Label many responses: one request each, then one repair round for bad replies.

        Results of a response whose request failed at the endpoint are an empty list (the
        caller stores nothing for it, so a rerun retries).
        """
        out: list[list[StepLabelResult]] = [[] for _ in items]
        pending: list[_Pending] = []
        for i, item in enumerate(items):
            indices = [k + 1 for k, s in enumerate(item.steps) if s and s.strip()]
            if not indices:
                out[i] = [
                    StepLabelResult(k, UNMAPPED, UNMAPPED, "empty_step")
                    for k in range(len(item.steps))
                ]
                continue
            messages = labeling_messages(ontology, [(k, item.steps[k - 1]) for k in indices])
            pending.append(_Pending(i, indices, messages, []))

        def requests_for(batch: list[_Pending]) -> list[ChatRequest]:
            return [
                _request(
                    p.messages,
                    temperature=self.temperature,
                    seed=self.seed,
                    repeat=items[p.item].repeat,
                )
                for p in batch
            ]

        retry: list[_Pending] = []
        for attempt in (0, 1):
            batch = pending if attempt == 0 else retry
            results = self._send(requests_for(batch), session, progress if attempt == 0 else None)
            retry = []
            for p, res in zip(batch, results, strict=True):
                steps = items[p.item].steps
                if res.error is not None or res.text is None:
                    self.stats["failed"] += 1
                    continue  # not stored: retried on the next run
                p.raw.append(res.text)
                try:
                    parsed = parse_label_answer(res.text, doc=ontology, step_indices=p.indices)
                except AnswerParseError as exc:
                    if attempt == 0:
                        p.messages = [
                            *p.messages,
                            ("assistant", res.text),
                            ("user", REPAIR_TEMPLATE.format(error=exc, indices=p.indices)),
                        ]
                        p.error = str(exc)
                        retry.append(p)
                        continue
                    self.stats["unparseable"] += 1
                    raw = "\n----- repair -----\n".join(p.raw)
                    out[p.item] = [
                        StepLabelResult(
                            k,
                            UNMAPPED,
                            UNMAPPED,
                            "unparseable" if s and s.strip() else "empty_step",
                            raw if s and s.strip() else None,
                        )
                        for k, s in enumerate(steps)
                    ]
                    continue
                status = "ok" if attempt == 0 else "repaired"
                self.stats["repaired"] += attempt
                raw = "\n----- repair -----\n".join(p.raw)
                labels = []
                for k in range(len(steps)):
                    if k + 1 in parsed:
                        category, leaf = parsed[k + 1]
                        labels.append(StepLabelResult(k, category, leaf, status, raw))
                    else:
                        labels.append(StepLabelResult(k, UNMAPPED, UNMAPPED, "empty_step"))
                out[p.item] = labels
            if not retry:
                break
        return out
