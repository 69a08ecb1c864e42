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

from llm.batch import FollowUp
from llm.limits import label_concurrency, labeler_max_tokens
from llm.request_settings import request_settings
from llm.specs import ModelSpec
from llm.structured import with_format
from llm.types import ChatBackend, ChatMessage, ChatRequest, ChatResult, SamplingParams
from ontology.labelers.base import BatchLabeler, LabelBatch, Progress, StepLabelResult
from ontology.parsing import AnswerParseError, label_format, parse_label_answer
from ontology.prompts import LABEL_PROMPT_VERSION, REPAIR_TEMPLATE, labeling_messages
from ontology.schema import UNMAPPED

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


class LLMLabeler(BatchLabeler):
    """Labels steps by asking a model (``provider/model`` spec or a backend object).

    Args:
        spec: The labeler spec string it was built from (stored with every label).
        model: The parsed ``provider/model`` spec or a :class:`llm.types.ChatBackend`.
        temperature: Sampling temperature (0 by default: labeling is a classification).
        seed: Sampling seed.
        concurrency: Requests in flight (default: ``llm.limits.label_concurrency``).
    """

    prompt_version = LABEL_PROMPT_VERSION

    def __init__(
        self,
        spec: str,
        model: ModelSpec | ChatBackend,
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

    def _send(
        self,
        requests: list[ChatRequest],
        follow_up: FollowUp,
        session: Any,
        progress: Progress | None,
    ) -> list[list[ChatResult]]:
        from llm.batch import run_chat_chains

        if not requests:
            return []
        chains = run_chat_chains(
            self.model,
            requests,
            follow_up=follow_up,
            session=session,
            concurrency=self.concurrency,
            progress=progress,
        )
        self.stats["requests"] += sum(len(chain) for chain in chains)
        return chains

    def label_all(self, batch: LabelBatch) -> list[list[StepLabelResult]]:
        """Label many responses: one request each, and a repair request for a bad reply.

        A repair goes out as soon as the reply it repairs has been parsed (while other
        first requests are still in flight; :func:`llm.batch.run_chat_chains`), so the
        server is never left waiting for a round of first replies to finish.

        Results of a response whose request failed at the endpoint are an empty list (the
        caller stores nothing for it, so a rerun retries).
        """
        items, ontology = batch.items, batch.ontology
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
            # each request carries its answer's schema (steps and leaves), sent where the
            # endpoint supports structured outputs (llm.structured)
            return [
                with_format(
                    _request(
                        p.messages,
                        temperature=self.temperature,
                        seed=self.seed,
                        repeat=items[p.item].repeat,
                    ),
                    label_format(ontology, p.indices),
                )
                for p in batch
            ]

        # Parse results, by (pending index, attempt): follow_up parses each reply once.
        parsed_replies: dict[tuple[int, int], dict[int, tuple[str, str]] | AnswerParseError] = {}

        def parse(k: int, attempt: int, text: str) -> dict[int, tuple[str, str]] | AnswerParseError:
            if (k, attempt) not in parsed_replies:
                try:
                    parsed_replies[k, attempt] = parse_label_answer(
                        text, doc=ontology, step_indices=pending[k].indices
                    )
                except AnswerParseError as exc:
                    parsed_replies[k, attempt] = exc
            return parsed_replies[k, attempt]

        def follow_up(k: int, _req: ChatRequest, res: ChatResult) -> ChatRequest | None:
            p = pending[k]
            attempt = len(p.raw)
            if res.error is not None or res.text is None or attempt > 0:
                return None  # failed (retried on the next run) or already the repair
            p.raw.append(res.text)
            outcome = parse(k, 0, res.text)
            if not isinstance(outcome, AnswerParseError):
                return None
            p.messages = [
                *p.messages,
                ("assistant", res.text),
                ("user", REPAIR_TEMPLATE.format(error=outcome, indices=p.indices)),
            ]
            p.error = str(outcome)
            return requests_for([p])[0]

        first = requests_for(pending)
        # one labeling pass, one setting (the prompt hash covers the ontology's system message)
        settings = (
            request_settings(
                self.spec, first[0].messages, first[0].sampling, prompt_version=self.prompt_version
            )
            if first
            else None
        )
        chains = self._send(first, follow_up, batch.session, batch.progress)
        for k, (p, chain) in enumerate(zip(pending, chains, strict=True)):
            steps = items[p.item].steps
            last = chain[-1]
            if last.error is not None or last.text is None:
                self.stats["failed"] += 1
                continue  # not stored: retried on the next run
            attempt = len(chain) - 1
            if attempt > 0:
                p.raw.append(last.text)
            outcome = parse(k, attempt, last.text)
            raw = "\n----- repair -----\n".join(p.raw)
            if isinstance(outcome, AnswerParseError):
                self.stats["unparseable"] += 1
                out[p.item] = [
                    StepLabelResult(
                        i,
                        UNMAPPED,
                        UNMAPPED,
                        "unparseable" if s and s.strip() else "empty_step",
                        raw if s and s.strip() else None,
                        settings,
                    )
                    for i, s in enumerate(steps)
                ]
                continue
            status = "ok" if attempt == 0 else "repaired"
            self.stats["repaired"] += attempt
            labels = []
            for i in range(len(steps)):
                if i + 1 in outcome:
                    category, leaf = outcome[i + 1]
                    labels.append(StepLabelResult(i, category, leaf, status, raw, settings))
                else:
                    labels.append(
                        StepLabelResult(i, UNMAPPED, UNMAPPED, "empty_step", None, settings)
                    )
            out[p.item] = labels
        return out
