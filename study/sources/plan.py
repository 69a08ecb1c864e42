"""Items × tiers × 13 variants → requests, in two phases (bare first), and the probe table.

Why two phases: a ``-`` assertion asserts one fixed wrong option *per model and item*,
chosen from the model's own bare answer — its wrong answer when it erred (keeping its real
confusion), else its most probable wrong option. So the bare probes run first, their
readings fix the wrong options, and only then are the other twelve variants rendered.

Prompts: the system prompt asks for one letter (with one of the four instruction
variants), the user message holds the assertion sentences then the question block, and the
reply is read right after ``"Answer:"``: either as an assistant prefill the model continues
(``prefill=True``: ``continue_final_message``, the chat route to the paper's "logits after
Answer:"), or as the last line of the user message (``prefill=False``). With
``reasoning=True`` each probe is two requests: the model first reasons about the options
without concluding, then the answer is read after its reasoning and ``"Answer:"``.

Every request goes through the request cache (:func:`llm.batch.run_chat_batch`), so a rerun
answers from the cache and an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from driftlens_core.source_reliance import VARIANTS, parse_variant
from llm.batch import ProgressCallback, run_chat_batch
from llm.logprobs import logprobs_to_json
from llm.seeds import stable_int
from llm.specs import ModelSpec
from llm.structured import with_format
from llm.types import ChatBackend, ChatMessage, ChatRequest, ChatResult, SamplingParams
from storage.errors import InputError
from study.catalog.assertions import (
    INSTRUCTIONS,
    VOCABULARIES,
    AssertionContext,
    item_kind,
    question_block,
    system_prompt,
)
from study.sources.first_batch import FirstBatchGate
from study.sources.items import MCQItem
from study.sources.score import UNKNOWN, LetterReading, letter_format, read_letter, remap_three

ANSWER_CUE = "Answer:"
REASON_SYSTEM = (
    "Think through every option (A, B, C, ...) with care, but do not state a final answer "
    "or a conclusion: explore the problem without settling on any option."
)
PROMPT_VERSION = "mcq-letter-v1"


class SourcesConfig(BaseModel):
    """How a source-reliance run asks (serialisable, versioned; part of every request)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    tiers: tuple[int, ...] = (1,)
    vocabulary: str = "ours"
    instruction: str = "n"
    top_logprobs: int = Field(default=20, ge=0, le=20)
    logprobs: bool = True
    max_tokens: int = Field(default=2, ge=1)
    temperature: float = 0.0
    seed: int = 0
    prefill: bool = True
    reasoning: bool = False
    reasoning_max_tokens: int = 2048
    choose: str = "argmax"
    variants: tuple[str, ...] = VARIANTS

    @model_validator(mode="after")
    def _known_settings(self) -> SourcesConfig:
        """Refuse a setting no probe could use, before a run is stored or a probe asked.

        Raises:
            InputError: an unknown tier, instruction or vocabulary, or a token budget
                outside :data:`study.limits.MAX_TOKENS` (not pydantic's ValidationError:
                the CLI prints it as one sentence).
        """
        from study.limits import MAX_TOKENS

        if not self.tiers or any(t not in (1, 2) for t in self.tiers):
            bad = next((t for t in self.tiers if t not in (1, 2)), None)
            raise InputError(f"unknown tier {bad}; use 1 or 2 (--tier).")
        if self.instruction not in INSTRUCTIONS:
            raise InputError(
                f"unknown instruction {self.instruction!r}; use one of "
                f"{', '.join(INSTRUCTIONS)} (--instruction)."
            )
        if self.vocabulary not in VOCABULARIES:
            raise InputError(
                f"unknown vocabulary {self.vocabulary!r}; use {' or '.join(VOCABULARIES)}."
            )
        MAX_TOKENS.check(self.max_tokens)
        return self


_LOGPROB_KEYS = ("token", "logprob", "top")


def canonical_logprobs(logprobs: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Logprob objects in one key order (:func:`llm.logprobs.logprobs_to_json`'s).

    PostgreSQL's JSONB gives keys back in its own order (shortest first), SQLite's JSON in
    the order written: exports re-order them so a run folder is byte-identical on both.
    """
    if logprobs is None:
        return None
    rank = {k: i for i, k in enumerate(_LOGPROB_KEYS)}
    return [
        {k: d[k] for k in sorted(d, key=lambda k: (rank.get(k, len(rank)), k))} for d in logprobs
    ]


#: ``(tier, item id, variant)`` of one probe within one system instruction (tier ``None``
#: for the bare probes).
ProbeKey = tuple[int | None, str, str]
#: Called with every answered probe as it arrives (cache hits included).
RecordCallback = Callable[["ProbeRecord"], None]


@dataclass(frozen=True)
class ProbeRecord:
    """One answered probe (a row of the probe table, with the raw reply)."""

    item_id: str
    dataset: str
    tier: int | None
    variant: str
    correct_letter: str
    wrong_letter: str
    reading: LetterReading
    text: str | None
    error: str | None
    messages: tuple[ChatMessage, ...]
    logprobs: list[dict[str, Any]] | None
    reasoning: str | None = None
    cached: bool = False
    cache_key: str | None = None

    @property
    def key(self) -> ProbeKey:
        """``(tier, item id, variant)``: the probe's place in its run's plan."""
        return (self.tier, self.item_id, self.variant)

    def to_json(self) -> dict[str, Any]:
        """The JSONL record: every raw logprob kept."""
        r = self.reading
        return {
            "item_id": self.item_id,
            "dataset": self.dataset,
            "tier": self.tier,
            "variant": self.variant,
            "correct_choice": self.correct_letter,
            "wrong_choice": self.wrong_letter,
            "choice": r.letter,
            "method": r.method,
            "unknown": r.unknown,
            "probs": r.probs,
            "captured_mass": r.captured_mass,
            "missing": list(r.missing),
            "generated": r.generated,
            "top": [list(t) for t in r.top],
            "text": self.text,
            "error": self.error,
            "reasoning": self.reasoning,
            "cached": self.cached,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "logprobs": canonical_logprobs(self.logprobs),
        }


def _sampling(cfg: SourcesConfig, max_tokens: int) -> SamplingParams:
    return SamplingParams(
        temperature=cfg.temperature, top_p=1.0, top_k=None, max_tokens=max_tokens, seed=cfg.seed
    )


def _render_seed(item: MCQItem, tier: int | None) -> int:
    return stable_int("sources-render", item.id, tier) % (2**31)


def probe_messages(
    item: MCQItem,
    variant: str,
    *,
    cfg: SourcesConfig,
    tier: int | None,
    wrong_letter: str | None,
    claim: str | None = None,
    reasoning: str | None = None,
) -> tuple[ChatMessage, ...]:
    """The messages of one probe (the answer is read right after :data:`ANSWER_CUE`)."""
    ctx = AssertionContext(
        condition=variant,
        correct=item.choice_text(item.answer),
        wrong=item.choice_text(wrong_letter) if wrong_letter else "",
        tier=tier or 1,
        kind=item_kind(item.dataset),
        vocabulary=cfg.vocabulary,
        claim=claim,
    )
    rendered = ctx.render(
        system=system_prompt(cfg.instruction),
        user_text=question_block(item.question, item.choices),
        seed=_render_seed(item, tier),
    )
    msgs = list(rendered.messages)
    cue = f"{reasoning.strip()}\n\n{ANSWER_CUE}" if reasoning else ANSWER_CUE
    if cfg.prefill or reasoning:
        msgs.append(ChatMessage(role="assistant", content=cue))
    else:
        last = msgs[-1]
        msgs[-1] = ChatMessage(role=last.role, content=f"{last.content}\n{cue}")
    return tuple(msgs)


def answer_request(
    messages: tuple[ChatMessage, ...],
    cfg: SourcesConfig,
    tag: Any,
    letters: Sequence[str] | None = None,
) -> ChatRequest:
    """The letter-reading request (logprobs at the answer position, a couple of tokens).

    With ``letters`` and without logprobs (choice-only mode) the answer is constrained to
    one of them (a choice format); with logprobs it is not, since a constraint would mask
    the very distribution over the letters that is read.
    """
    prefilled = messages[-1].role == "assistant"
    request = ChatRequest(
        messages=messages,
        sampling=_sampling(cfg, cfg.max_tokens),
        tag=tag,
        logprobs=True if cfg.logprobs else None,
        top_logprobs=cfg.top_logprobs if cfg.logprobs else None,
        continue_final_message=True if prefilled else None,
        add_generation_prompt=False if prefilled else None,
    )
    if letters is None or cfg.logprobs:
        return request
    return with_format(request, letter_format(letters))


def reasoning_request(
    item: MCQItem,
    variant: str,
    *,
    cfg: SourcesConfig,
    tier: int | None,
    wrong_letter: str | None,
    claim: str | None,
    tag: Any,
) -> ChatRequest:
    """Stage 1 of the two-stage route: reasoning about the options, no conclusion."""
    msgs = probe_messages(
        item,
        variant,
        cfg=cfg.model_copy(update={"prefill": False}),
        tier=tier,
        wrong_letter=wrong_letter,
        claim=claim,
    )
    user = msgs[-1]
    body = user.content.removesuffix(f"\n{ANSWER_CUE}")
    return ChatRequest(
        messages=(ChatMessage("system", REASON_SYSTEM), ChatMessage("user", body)),
        sampling=SamplingParams(
            temperature=0.6,
            top_p=0.95,
            top_k=20,
            max_tokens=cfg.reasoning_max_tokens,
            seed=cfg.seed,
        ),
        tag=tag,
    )


def fixed_wrong_letter(item: MCQItem, reading: LetterReading) -> str:
    """The model's own wrong bare answer, else its most probable wrong option.

    With no distribution (choice-only mode, or nothing found) and a correct or unknown bare
    answer, a wrong option is drawn from a seed of the item id (recorded by the table).
    """
    if reading.letter not in (UNKNOWN, item.answer) and reading.letter in item.letters:
        return reading.letter
    wrong = [k for k in item.letters if k != item.answer]
    if reading.probs is not None and not reading.unknown:
        probs = reading.probs
        return max(wrong, key=lambda k: (probs.get(k, 0.0), -wrong.index(k)))
    return wrong[stable_int("sources-wrong", item.id) % len(wrong)]


@dataclass(frozen=True)
class SourcesRun:
    """What a run produced: one record per probe, in plan order."""

    model: str
    config: SourcesConfig
    records: tuple[ProbeRecord, ...]

    @property
    def n_unknown(self) -> int:
        """Probes where no letter was found."""
        return sum(r.reading.unknown for r in self.records)

    @property
    def n_errors(self) -> int:
        """Probes whose request failed."""
        return sum(r.error is not None for r in self.records)

    def table(self) -> pd.DataFrame:
        """The probe table (the ``driftlens sources stats`` format)."""
        rows = []
        # a probe whose bare answer failed has nothing to be compared with
        no_bare = {r.item_id for r in self.records if r.variant == "bare" and r.error}
        for r in self.records:
            if r.error is not None or r.item_id in no_bare:
                continue
            spec = parse_variant(r.variant)
            three = remap_three(r.reading.probs, r.correct_letter, r.wrong_letter)
            rows.append(
                {
                    "model": self.model,
                    "dataset": r.dataset,
                    "tier": "" if r.tier is None else str(r.tier),
                    "ordering": spec.ordering,
                    "question_id": r.item_id,
                    "variant": r.variant,
                    "choice": r.reading.letter,
                    "correct_choice": r.correct_letter,
                    "wrong_choice": r.wrong_letter,
                    "p_correct": "" if three is None else three[0],
                    "p_wrong": "" if three is None else three[1],
                    "p_other": "" if three is None else three[2],
                    "instruction": self.config.instruction,
                }
            )
        return pd.DataFrame(rows).astype(str)

    def jsonl(self) -> str:
        """Every probe with its raw reply and logprobs, one JSON object per line."""
        return "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in self.records)


def _answer_all(
    backend: ChatBackend | ModelSpec,
    jobs: Sequence[tuple[MCQItem, str, int | None, str | None]],
    cfg: SourcesConfig,
    claims: dict[str, str],
    *,
    session: Any,
    progress: ProgressCallback | None,
    concurrency: int,
    on_record: RecordCallback | None = None,
    on_tick: Callable[[], None] | None = None,
) -> list[ProbeRecord]:
    if not jobs:
        return []
    reasonings: list[str | None] = [None] * len(jobs)
    if cfg.reasoning:
        stage1 = [
            reasoning_request(
                it, v, cfg=cfg, tier=t, wrong_letter=w, claim=claims.get(it.id), tag=i
            )
            for i, (it, v, t, w) in enumerate(jobs)
        ]
        got = run_chat_batch(
            backend, stage1, session=session, progress=progress, concurrency=concurrency
        )
        reasonings = [r.text if r.error is None else None for r in got]
    requests = []
    for i, (it, v, t, w) in enumerate(jobs):
        msgs = probe_messages(
            it,
            v,
            cfg=cfg,
            tier=t,
            wrong_letter=w,
            claim=claims.get(it.id),
            reasoning=reasonings[i],
        )
        requests.append(answer_request(msgs, cfg, tag=i, letters=it.letters))
    out: list[ProbeRecord | None] = [None] * len(jobs)

    def on_result(index: int, request: ChatRequest, res: ChatResult) -> None:
        it, v, t, w = jobs[index]
        reading = read_letter(
            res.text if res.error is None else None,
            res.logprobs if res.error is None else None,
            it.letters,
            choose=cfg.choose,
        )
        # a bare probe fixes the item's wrong option from its own reading
        wrong = fixed_wrong_letter(it, reading) if v == "bare" else (w or "")
        rec = ProbeRecord(
            item_id=it.id,
            dataset=it.dataset,
            tier=t,
            variant=v,
            correct_letter=it.answer,
            wrong_letter=wrong,
            reading=reading,
            text=res.text,
            error=res.error,
            messages=request.messages,
            logprobs=logprobs_to_json(res.logprobs),
            reasoning=reasonings[index],
            cached=res.cached,
            cache_key=res.cache_key or None,
        )
        out[index] = rec
        if on_record is not None:
            on_record(rec)

    run_chat_batch(
        backend,
        requests,
        session=session,
        progress=progress,
        concurrency=concurrency,
        on_result=on_result,
        on_tick=on_tick,
    )
    assert all(r is not None for r in out)  # run_chat_batch answers every request
    return [r for r in out if r is not None]


def run_sources(
    items: Sequence[MCQItem],
    backend: ChatBackend | ModelSpec,
    *,
    config: SourcesConfig | None = None,
    claims: dict[str, str] | None = None,
    session: Any = None,
    progress: ProgressCallback | None = None,
    concurrency: int = 16,
    on_phase: Callable[[str], None] | None = None,
    done: Mapping[ProbeKey, ProbeRecord] | None = None,
    on_record: RecordCallback | None = None,
    on_tick: Callable[[], None] | None = None,
) -> SourcesRun:
    """Run the two-phase plan: every bare probe, then the other variants.

    Args:
        items: The items.
        backend: A backend or a ``provider/model`` spec.
        config: How to ask (defaults: tier 1, neutral instruction, top-20 logprobs).
        claims: Tier-2 claims by item id (needed when ``config.tiers`` holds 2).
        session: Database session for the request cache (``None``: no cache).
        progress: ``progress(done, total)`` per batch.
        concurrency: Requests in flight.
        on_phase: Called with ``"bare"`` / ``"probes"`` as each phase starts.
        done: Probes already answered (a stored run resuming): not asked again. A stored
            bare probe fixes its item's wrong option exactly as a new one would.
        on_record: Called with every newly answered probe as it arrives (to store it).
        on_tick: Called every few seconds while requests are in flight.

    Raises:
        InputError: no items, or tier 2 without a claim for some item.
    """
    cfg = config or SourcesConfig()
    claims = claims or {}
    done = done or {}
    if not items:
        raise InputError("No items to probe.")
    if 2 in cfg.tiers:
        lacking = [it.id for it in items if it.id not in claims]
        if lacking:
            raise InputError(
                f"Tier 2 needs a contextual claim for every item; {lacking[0]!r} has none "
                "(write them with `driftlens sources claims` or import a claims file)."
            )
    spec = backend.spec
    # Letters are read from logprobs unless text reading was asked for: the first answers
    # are checked before anything is passed on (see study/sources/first_batch.py).
    gate = (
        FirstBatchGate(spec, top_k=cfg.top_logprobs, max_tokens=cfg.max_tokens, on_record=on_record)
        if cfg.logprobs
        else None
    )
    record = gate.add if gate is not None else on_record

    def answer(
        jobs: Sequence[tuple[MCQItem, str, int | None, str | None]],
    ) -> dict[ProbeKey, ProbeRecord]:
        """Ask ``jobs`` (both phases, the same settings), keyed by probe."""
        records = _answer_all(
            backend,
            jobs,
            cfg,
            claims,
            session=session,
            progress=progress,
            concurrency=concurrency,
            on_record=record,
            on_tick=on_tick,
        )
        if gate is not None:
            gate.check()
        return {r.key: r for r in records}

    if on_phase:
        on_phase("bare")
    bare_jobs = [(it, "bare", None, None) for it in items if (None, it.id, "bare") not in done]
    fresh = answer(bare_jobs)
    bare = [done.get((None, it.id, "bare")) or fresh[(None, it.id, "bare")] for it in items]
    wrong = {rec.item_id: rec.wrong_letter for rec in bare}
    plan = [
        (it, v, tier, wrong[it.id])
        for tier in cfg.tiers
        for it in items
        for v in cfg.variants
        if v != "bare"
    ]
    if on_phase:
        on_phase("probes")
    # A stored probe is reused only when it asserted the item's wrong option as fixed now
    # (a bare probe that failed before and was answered on resume may fix another one).
    todo = [
        job
        for job in plan
        if (job[2], job[0].id, job[1]) not in done
        or done[(job[2], job[0].id, job[1])].wrong_letter != job[3]
    ]
    fresh = answer(todo)
    probes = [fresh.get((t, it.id, v)) or done[(t, it.id, v)] for it, v, t, _ in plan]
    return SourcesRun(model=spec, config=cfg, records=(*bare, *probes))
