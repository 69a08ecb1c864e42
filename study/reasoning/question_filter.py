"""The LLM question filter (SPEC §2): one request per question, strict JSON, one repair.

Each question goes to the model with the screening rubric; the reply must be one JSON
object ``{"label": "ACCEPT"|"REJECT", "reason": "...", "domains": [...]}`` (see
:func:`parse_filter_answer`). A reply that breaks the format gets exactly one repair
request (the conversation plus what was wrong); if that fails too the question gets
``filter_error`` and no label, and both raw replies are kept in ``filter_raw``. Nothing
malformed is ever stored as a verdict. A request that failed at the endpoint stores
nothing, so the next run asks again.

Cached and resumable: a question whose stored verdict (or recorded error) came from the
same model is skipped unless ``redo`` is set; every answer is written as it arrives and
committed in small batches. Requests go through :func:`llm.batch.run_chat_batch` with the
session, so identical requests are served from the LLM cache (``redo`` after a prompt
change therefore asks again, while ``redo`` with the same prompt re-reads cached replies).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlmodel import Session

from llm.limits import judge_max_tokens
from llm.sim.tasks import task_marker
from llm.specs import ModelSpec
from llm.structured import ResponseFormat, object_schema
from llm.types import ChatBackend, ChatMessage
from storage.errors import InputError
from storage.models import Question
from storage.repo.questions import list_questions, set_filter_result
from study.questions import DOMAINS
from study.reasoning.sim.tasks import QUESTION_FILTER_TASK
from study.strict_json import (
    StrictParseError,
    extract_json_object,
    join_raw,
    run_with_repair,
    word_count,
)

#: Stored nowhere per question, but part of every request (so of every cache key).
FILTER_PROMPT_VERSION = "filter-v1"
#: The rubric asks for a reason of at most this many words.
MAX_REASON_WORDS = 15
LABELS: tuple[str, ...] = ("ACCEPT", "REJECT")

ProgressCallback = Callable[[int, int], None]

SYSTEM_PROMPT = (
    task_marker(QUESTION_FILTER_TASK)
    + "\n"
    + f"""You screen candidate questions for a benchmark that studies how a model's reasoning
shifts when it knows something about the person asking ({FILTER_PROMPT_VERSION}).

ACCEPT a question only when all four hold:
1. It makes the reader reason: weigh trade-offs, compare options, justify a position or
   reach a decision. Looking something up is not reasoning.
2. No single answer exists that an independent reviewer could check today.
3. Who asks should not matter: the right line of reasoning is the same whatever the
   asker's gender, age, income, job or background.
4. It stands on its own: no hidden context, no specialist knowledge needed to follow it.

REJECT, among others: facts, definitions and trivia; medical triage; legal or professional
advice that depends on a jurisdiction; questions about the asker's own situation ("should
I…", "my…"); questions that refer to something not shown; pure entertainment or polls
without a trade-off.

Also name the question's domains, one or more of: {", ".join(DOMAINS)}.

Reply with one JSON object and nothing else, shaped like this:
{{"label": "ACCEPT" or "REJECT", "reason": "<at most {MAX_REASON_WORDS} words>",
 "domains": ["..."]}}"""
)

REPAIR_TEMPLATE = (
    "Your reply could not be used: {error}. Reply again with only one JSON object with "
    'exactly the keys "label" (ACCEPT or REJECT), "reason" (at most '
    f"{MAX_REASON_WORDS} words) and "
    '"domains" (a list drawn from: ' + ", ".join(DOMAINS) + ")."
)


@dataclass(frozen=True)
class FilterVerdict:
    """A parsed filter reply.

    Attributes:
        label: ``ACCEPT`` or ``REJECT``.
        reason: The model's reason, verbatim (stripped).
        domains: Domains from :data:`study.questions.DOMAINS`, in the model's order.
        reason_words: Words in ``reason``; above :data:`MAX_REASON_WORDS` the verdict is
            kept but flagged (:attr:`reason_too_long`), since the label itself is valid.
    """

    label: str
    reason: str
    domains: tuple[str, ...]
    reason_words: int

    @property
    def reason_too_long(self) -> bool:
        """Whether the reason breaks the word limit of the rubric."""
        return self.reason_words > MAX_REASON_WORDS


@dataclass(frozen=True)
class FilterSummary:
    """What :func:`filter_questions` did.

    Attributes:
        model: The filter model spec.
        questions: Questions in the workspace.
        skipped: Already filtered by this model (not asked again).
        requested: Questions asked now.
        accepted: Of those, accepted.
        rejected: Of those, rejected.
        errors: Of those, unparseable after the repair request (``filter_error`` set).
        failed: Of those, the request failed at the endpoint (nothing stored; retried later).
        repaired: Verdicts that needed the repair request.
        long_reasons: Verdicts whose reason exceeds the word limit (kept, flagged here).
        domains: Accepted questions per domain (of this call's verdicts).
    """

    model: str
    questions: int
    skipped: int
    requested: int
    accepted: int
    rejected: int
    errors: int
    failed: int
    repaired: int
    long_reasons: int
    domains: dict[str, int] = field(default_factory=dict)


def build_filter_messages(question: str) -> tuple[ChatMessage, ...]:
    """The filter request of one question: rubric, then the question as a JSON line.

    The question is JSON-encoded on the last line so that its text, whatever it holds,
    stays one quoted value (and a simulator can read it back exactly).
    """
    user = "Screen this question (given as JSON):\n" + json.dumps(
        {"question": question}, ensure_ascii=False
    )
    return (
        ChatMessage(role="system", content=SYSTEM_PROMPT),
        ChatMessage(role="user", content=user),
    )


def filter_format() -> ResponseFormat:
    """The structured output format of a filter reply (what :func:`parse_filter_answer` reads).

    Two alternatives: ACCEPT with at least one domain (the parser requires one), REJECT with
    any. The reason (100 characters) and the domains (3) are bounded so that the object
    closes within the token budget even for a model that spends a token per character.
    """
    alternatives = []
    for label, least in (("ACCEPT", 1), ("REJECT", 0)):
        domains = {"type": "string", "enum": list(DOMAINS)}
        one = object_schema(
            "question_filter",
            {
                "label": {"type": "string", "enum": [label]},
                "reason": {"type": "string", "minLength": 1, "maxLength": 100},
                "domains": {"type": "array", "items": domains, "minItems": least, "maxItems": 3},
            },
        )
        alternatives.append(dict(one.schema or {}))
    return ResponseFormat("json_schema", "question_filter", schema={"anyOf": alternatives})


def parse_filter_answer(text: str | None) -> FilterVerdict:
    """Parse a filter reply strictly.

    Exactly the keys ``label``, ``reason`` and ``domains``; ``label`` ACCEPT or REJECT
    (case forgiven); ``reason`` a non-empty string; ``domains`` a list of known domain
    names (case and surrounding space forgiven, duplicates dropped), at least one for an
    accepted question.

    Raises:
        StrictParseError: The reply breaks the format (the message says how).
    """
    data = extract_json_object(text)
    keys = set(data)
    missing = [k for k in ("label", "reason", "domains") if k not in keys]
    if missing:
        raise StrictParseError(f"missing key {missing[0]!r}")
    extra = sorted(keys - {"label", "reason", "domains"})
    if extra:
        raise StrictParseError(f"unexpected key {extra[0]!r}")
    label = data["label"]
    if not isinstance(label, str) or label.strip().upper() not in LABELS:
        raise StrictParseError(f"label must be ACCEPT or REJECT, not {label!r}")
    reason = data["reason"]
    if not isinstance(reason, str) or not reason.strip():
        raise StrictParseError("reason must be a non-empty string")
    raw_domains = data["domains"]
    if not isinstance(raw_domains, list) or not all(isinstance(d, str) for d in raw_domains):
        raise StrictParseError("domains must be a list of strings")
    known = {d.lower(): d for d in DOMAINS}
    domains: list[str] = []
    for d in raw_domains:
        name = known.get(" ".join(d.lower().split()))
        if name is None:
            raise StrictParseError(f"unknown domain {d!r}")
        if name not in domains:
            domains.append(name)
    label = label.strip().upper()
    if label == "ACCEPT" and not domains:
        raise StrictParseError("an accepted question needs at least one domain")
    reason = reason.strip()
    return FilterVerdict(label, reason, tuple(domains), word_count(reason))


def already_filtered(question: Question, model: str) -> bool:
    """Whether this model already gave a verdict (or a recorded error) on the question."""
    return question.filter_model == model and (
        question.filter_label is not None or question.filter_error is not None
    )


def filter_questions(
    model: ModelSpec,
    *,
    session: Session,
    concurrency: int = 16,
    progress: ProgressCallback | None = None,
    redo: bool = False,
    backend: ChatBackend | None = None,
    commit_every: int = 16,
) -> FilterSummary:
    """Screen every stored question with an LLM and store label, reason and domains.

    Args:
        model: The filter model's parsed spec (``sim/default`` works offline).
        session: Open session; committed in small batches during the run.
        concurrency: Requests in flight.
        progress: ``progress(done, total)`` over all questions (skipped ones count as done).
        redo: Ask again about questions this model already screened.
        backend: A backend to use instead of building one from ``model``.
        commit_every: Commit after this many stored verdicts.

    Returns:
        Counts of what happened.

    Raises:
        InputError: No questions, or a concurrency below 1.
        ConfigError: Malformed model spec or missing endpoint variables.
        ServiceError: The endpoint refused every request (bad key, unknown model...).
    """
    if concurrency < 1:
        raise InputError("--concurrency must be at least 1.")
    spec = str(model)  # the name verdicts are stored under
    questions = list_questions(session=session)
    if not questions:
        raise InputError(
            "No questions in this workspace; import some with "
            "`driftlens questions import FILE` (or --sample)."
        )
    todo = [q for q in questions if redo or not already_filtered(q, spec)]
    skipped = len(questions) - len(todo)
    total = len(questions)
    counts = {"ACCEPT": 0, "REJECT": 0, "error": 0, "failed": 0, "repaired": 0, "long": 0}
    domains: dict[str, int] = {}
    pending = [0]
    last_commit = [time.monotonic()]

    def store(
        q: Question, verdict: FilterVerdict | None, raws: list[str], error: str | None
    ) -> None:
        assert q.id is not None
        if verdict is None:
            counts["error"] += 1
            set_filter_result(
                q.id,
                label=None,
                reason=None,
                domains=None,
                model=spec,
                raw=join_raw(raws),
                error=f"unparseable after a repair request: {error}",
                session=session,
            )
        else:
            counts[verdict.label] += 1
            counts["long"] += verdict.reason_too_long
            counts["repaired"] += len(raws) > 1
            if verdict.label == "ACCEPT":
                for d in verdict.domains:
                    domains[d] = domains.get(d, 0) + 1
            set_filter_result(
                q.id,
                label=verdict.label,
                reason=verdict.reason,
                domains=list(verdict.domains),
                model=spec,
                raw=join_raw(raws),
                error=None,
                session=session,
            )
        pending[0] += 1
        if pending[0] >= commit_every or time.monotonic() - last_commit[0] > 2.0:
            session.commit()
            pending[0] = 0
            last_commit[0] = time.monotonic()

    def on_answer(
        i: int, verdict: FilterVerdict | None, raws: list[str], error: StrictParseError | None
    ) -> None:
        store(todo[i], verdict, raws, None if error is None else str(error))

    def on_progress(done: int, _total: int) -> None:
        if progress is not None:
            progress(skipped + done, total)

    if progress is not None:
        progress(skipped, total)
    try:
        counts["failed"] += run_with_repair(
            backend or model,
            [build_filter_messages(q.text) for q in todo],
            max_tokens=judge_max_tokens(256),  # a label, a short reason and domains
            parse=lambda _i, text: parse_filter_answer(text),
            response_format=lambda _i: filter_format(),
            repair_message=lambda _i, exc: REPAIR_TEMPLATE.format(error=exc),
            on_answer=on_answer,
            session=session,
            concurrency=concurrency,
            progress=on_progress,
        )
    finally:
        # Whatever arrived is kept, even when the run is interrupted.
        session.commit()
    if progress is not None:
        progress(total, total)
    return FilterSummary(
        model=spec,
        questions=total,
        skipped=skipped,
        requested=len(todo),
        accepted=counts["ACCEPT"],
        rejected=counts["REJECT"],
        errors=counts["error"],
        failed=counts["failed"],
        repaired=counts["repaired"],
        long_reasons=counts["long"],
        domains=dict(sorted(domains.items())),
    )
