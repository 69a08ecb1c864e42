"""Generation runs (SPEC §4): baseline + perturbed answers for every selected question.

A run is named and fixed: one model, one prompt version, one catalog version, one set of
sampling parameters (the run seed included). Its *plan* is the set of
``(question, condition, sample)`` keys; keys that already have a successful response are
skipped, failed ones are asked again, so re-running the same command resumes a run.
Every response is written as it arrives (upserted, committed every 1,000 rows or 2 s),
with the full request (messages and parameters; never keys; stored normalised, see
:mod:`storage.repo.requests`), so a killed run loses at most one batch and nothing already
stored is requested again.

``Response.parse_status`` is a code of :mod:`study.parsing`, or ``"error"`` when the request
itself failed (``error`` then holds the reason and ``text`` is empty).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlmodel import Session

from llm.logprobs import logprobs_to_json
from llm.seeds import stable_int
from llm.specs import parse_spec
from llm.types import ChatBackend, ChatRequest, ChatResult, SamplingParams
from storage.errors import InputError
from storage.models import BASELINE_CONDITION, GenerationRun, Perturbation, Question, Response
from storage.repo.leases import Lease, acquire_lease, release_lease
from storage.repo.requests import RequestInterner
from storage.repo.runs import (
    ResponseKey,
    existing_response_keys,
    get_or_create_model_spec,
    get_or_create_run,
    get_run,
    set_run_status,
    upsert_response_rows,
)
from storage.types import utcnow
from study.batched_writer import BatchedWriter
from study.catalog import CONDITION_CLASSES, catalog_perturbations, resolve_catalog
from study.parsing import parse_response
from study.prompts import PROMPT_VERSION, build_messages
from study.questions import list_questions
from study.request_failures import PERMANENT_KINDS

#: ``parse_status`` of a response whose request failed.
STATUS_ERROR = "error"
#: Class of the no-memory condition (``Response.condition_class``).
BASELINE_CLASS = "none"
QUESTION_SELECTIONS: tuple[str, ...] = ("all", "core", "relaxed")
_SEED_MODULUS = 2**31 - 1  # what every backend accepts as a seed

ProgressCallback = Callable[[int, int], None]


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


@dataclass(frozen=True)
class GenerationSummary:
    """What a ``generate`` call did."""

    run: str
    model: str
    simulated: bool
    planned: int
    already_done: int
    requested: int
    succeeded: int
    failed: int
    status: str
    parse_status: dict[str, int] = field(default_factory=dict)
    # Failed requests by kind (``llm.retry`` kinds: timeout, server, bad_request...), and
    # the longest wait a ``Retry-After`` header asked for among them.
    failed_kinds: dict[str, int] = field(default_factory=dict)
    retry_after_s: float | None = None

    @property
    def retry_can_help(self) -> bool:
        """Whether running the same command again may answer the failed requests.

        A request the endpoint rejected as malformed (400/413/422), a refused key, an
        unknown model or a wrong URL fails the same way again; timeouts, server errors,
        rate limits, unreachable endpoints and unreadable answers may not.
        """
        return any(kind not in PERMANENT_KINDS for kind in self.failed_kinds)


# ------------------------------------------------------------------------ pure parts


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
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "sampling": request.sampling.model_dump(),
        "sample_index": request.sample_index,
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


# ------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class GenerationOptions:
    """What ``driftlens generate`` was asked for; ``None`` sampling values mean "as stored
    for an existing run, else the SPEC §4 reference"."""

    model: str
    run: str
    questions: str = "all"
    perturbations: str = "all"
    samples: int = 2
    concurrency: int = 16
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    catalog: str | None = None
    top_logprobs: int | None = None


def resolve_sampling(options: GenerationOptions, existing: GenerationRun | None) -> SamplingParams:
    """Sampling of the run: stored values (resume) or reference defaults, then overrides."""
    base = (
        SamplingParams.model_validate(existing.sampling)
        if existing is not None and existing.sampling
        else SamplingParams(seed=default_run_seed(options.run))
    )
    overrides = {
        name: value
        for name, value in (
            ("temperature", options.temperature),
            ("top_p", options.top_p),
            ("max_tokens", options.max_tokens),
            ("seed", options.seed),
        )
        if value is not None
    }
    return SamplingParams.model_validate({**base.model_dump(), **overrides})


def _check_options(options: GenerationOptions) -> None:
    if options.questions not in QUESTION_SELECTIONS:
        raise InputError(
            f"Unknown question selection {options.questions!r}: use all, core or relaxed."
        )
    from study import limits

    limits.SAMPLES.check(options.samples)
    limits.CONCURRENCY.check(options.concurrency)
    limits.TEMPERATURE.check(options.temperature)
    limits.TOP_P.check(options.top_p)
    limits.MAX_TOKENS.check(options.max_tokens)
    if options.top_logprobs is not None and not 0 <= options.top_logprobs <= 20:
        raise InputError("--top-logprobs must be from 0 to 20.")


def _backend(spec: str, perturbations: Sequence[Perturbation]) -> ChatBackend:
    """The backend; the in-process simulator learns each stimulus's exact class."""
    info = parse_spec(spec)
    if info.provider == "sim":
        from llm.sim.backend import SimBackend
        from llm.sim.classify import classifier_from_catalog

        classify = classifier_from_catalog(
            (p.text, p.condition_class, p.category) for p in perturbations
        )
        return SimBackend(info.model, classify_memory=classify)
    from llm.batch import get_backend

    return get_backend(info.spec)


class _Writer(BatchedWriter[dict[str, Any]]):
    """Upserts response rows (prompts and parameters interned) in batched commits."""

    def __init__(self, session: Session, **kwargs: Any) -> None:
        super().__init__(session, **kwargs)
        self.interner = RequestInterner()

    def write(self, pending: list[dict[str, Any]]) -> None:
        upsert_response_rows(pending, session=self.session, interner=self.interner)


@dataclass(frozen=True)
class GenerationScope:
    """One shard of a run: a subset of its questions, under a lease of its own.

    A cluster executor (:mod:`study.cluster`) cuts a run into shards by question and runs
    each in its own process; the coordinator holds the run's lease and sets the run's
    status, so a shard neither takes the run lease nor writes the run status.
    """

    question_ids: frozenset[int]
    lease_key: str


@dataclass(frozen=True)
class ResolvedRun:
    """What a run resolves to before anything is written (see :func:`resolve_run`)."""

    info: Any
    existing: GenerationRun | None
    sampling: SamplingParams
    run_seed: int
    catalog_id: int
    all_perturbations: list[Perturbation]
    chosen: list[Perturbation]
    questions: list[Question]


def resolve_run(options: GenerationOptions, *, session: Session) -> ResolvedRun:
    """Check the options and resolve the run's sampling, catalog, perturbations, questions.

    Raises:
        InputError: Bad selection, or no questions to answer.
    """
    _check_options(options)
    info = parse_spec(options.model)
    existing = get_run(options.run, session=session)
    sampling = resolve_sampling(options, existing)
    run_seed = sampling.seed if sampling.seed is not None else default_run_seed(options.run)

    if options.catalog is None and existing is not None and existing.catalog_id is not None:
        catalog_id: int = existing.catalog_id  # resume on the run's own catalog version
    else:
        catalog = resolve_catalog(options.catalog, session=session)
        assert catalog.id is not None
        catalog_id = catalog.id
    all_perturbations = list(catalog_perturbations(catalog_id, session=session))
    chosen = select_perturbations(all_perturbations, options.perturbations)
    tier = None if options.questions == "all" else options.questions
    questions = list(list_questions(session=session, tier=tier))
    if not questions:
        if tier is not None:
            raise InputError(
                f"No {tier} questions yet (tiers come from human verification); "
                "use --questions all or verify questions first."
            )
        raise InputError(
            "No questions in this workspace; import some with "
            "`driftlens questions import FILE` (or --sample)."
        )
    # The plan's size is known before it is built: refuse one too large to hold in memory
    from study.limits import check_plan_size

    check_plan_size(
        len(questions) * (1 + len(chosen)) * options.samples,
        what=f"{len(questions)} questions x {1 + len(chosen)} conditions x "
        f"{options.samples} samples",
    )
    return ResolvedRun(
        info=info,
        existing=existing,
        sampling=sampling,
        run_seed=run_seed,
        catalog_id=catalog_id,
        all_perturbations=all_perturbations,
        chosen=chosen,
        questions=questions,
    )


def run_generation(
    options: GenerationOptions,
    *,
    session: Session,
    backend: ChatBackend | None = None,
    progress: ProgressCallback | None = None,
    commit_every: int = 1000,
    commit_interval_s: float = 2.0,
    scope: GenerationScope | None = None,
) -> GenerationSummary:
    """Generate (or resume) a run and store every response as it arrives.

    Args:
        options: What to generate.
        session: Open session; committed in small batches during the run.
        backend: A backend to use instead of building one from ``options.model``.
        progress: ``progress(done, total)`` over the whole plan (stored keys count as done).
        commit_every: Commit after this many new responses...
        commit_interval_s: ...or when this long has passed since the last commit.
        scope: Generate only these questions under this lease (one shard of a cluster
            run, whose coordinator created the run row and sets its status).

    Raises:
        InputError: Bad selection, or no questions to answer.
        ConfigError: The run exists with a different model, sampling, prompt or catalog.
        ServiceError: The endpoint refused every request (bad key, unknown model...).
    """
    resolved = resolve_run(options, session=session)
    if scope is not None:
        resolved = replace(
            resolved, questions=[q for q in resolved.questions if q.id in scope.question_ids]
        )
    # The backend is built before anything is written: one that cannot start (missing
    # variables, no engine) leaves no run row behind.
    chat_backend = backend or _backend(options.model, resolved.all_perturbations)
    lease = acquire_lease(
        scope.lease_key if scope is not None else f"generation_run:{options.run}",
        session=session,
        what=f"Run {options.run!r}",
    )
    try:
        return _generate(
            options,
            resolved=resolved,
            backend=chat_backend,
            lease=lease,
            session=session,
            progress=progress,
            commit_every=commit_every,
            commit_interval_s=commit_interval_s,
            set_status=scope is None,
        )
    finally:
        session.rollback()  # whatever failed mid-write must not block the release
        release_lease(lease, session=session)


def ensure_run(
    options: GenerationOptions, resolved: ResolvedRun, *, session: Session
) -> tuple[GenerationRun, int | None]:
    """The run row (created, or checked against ``options``) and its ``top_logprobs``.

    Raises:
        ConfigError: The run exists with a different model, sampling, prompt or catalog.
    """
    info, existing = resolved.info, resolved.existing
    model_row = get_or_create_model_spec(
        info.spec,
        provider=info.provider,
        model=info.model,
        service=info.service,
        simulated=info.simulated,
        session=session,
    )
    assert model_row.id is not None
    config = {
        "version": 1,
        "questions": options.questions,
        "perturbations": options.perturbations,
        "samples": options.samples,
        "run_seed": resolved.run_seed,
    }
    top_logprobs = options.top_logprobs
    if top_logprobs is None and existing is not None:
        top_logprobs = (existing.config or {}).get("top_logprobs")  # resume as started
    if top_logprobs is not None:
        config["top_logprobs"] = top_logprobs
    run = get_or_create_run(
        options.run,
        model_spec_id=model_row.id,
        prompt_version=PROMPT_VERSION,
        sampling=resolved.sampling.model_dump(),
        config=config,
        simulated=info.simulated,
        catalog_id=resolved.catalog_id,
        session=session,
    )
    return run, top_logprobs


def _generate(
    options: GenerationOptions,
    *,
    resolved: ResolvedRun,
    backend: ChatBackend,
    lease: Lease,
    session: Session,
    progress: ProgressCallback | None,
    commit_every: int,
    commit_interval_s: float,
    set_status: bool = True,
) -> GenerationSummary:
    info = resolved.info
    run, top_logprobs = ensure_run(options, resolved, session=session)
    assert run.id is not None
    run_id = run.id
    if set_status:
        set_run_status(run_id, "running", session=session)
    session.commit()

    plan = build_plan(
        resolved.questions, resolved.chosen, samples=options.samples, run_seed=resolved.run_seed
    )
    done_keys = existing_response_keys(run_id, session=session)
    todo = [item for item in plan if item.key not in done_keys]
    already = len(plan) - len(todo)
    requests = [make_request(item, resolved.sampling, top_logprobs=top_logprobs) for item in todo]
    counts: dict[str, int] = {}
    tally = {"ok": 0, "failed": 0}
    failed_kinds: dict[str, int] = {}
    waits: list[float] = []
    simulated = [bool(run.simulated)]
    writer = _Writer(session, every=commit_every, interval_s=commit_interval_s, lease=lease)

    def on_result(index: int, request: ChatRequest, result: ChatResult) -> None:
        row = response_values(run_id, todo[index], request, result, model=info.spec)
        counts[row["parse_status"]] = counts.get(row["parse_status"], 0) + 1
        tally["failed" if row["error"] is not None else "ok"] += 1
        if row["error"] is not None:
            kind = result.error_kind or "backend"
            failed_kinds[kind] = failed_kinds.get(kind, 0) + 1
            if result.retry_after_s is not None:
                waits.append(result.retry_after_s)
        simulated[0] = simulated[0] or result.simulated
        writer.add(row)

    def on_progress(done: int, _total: int) -> None:
        if progress is not None:
            progress(already + done, len(plan))

    if progress is not None:
        progress(already, len(plan))
    status = "running"
    try:
        if requests:
            from llm.batch import run_chat_batch

            run_chat_batch(
                backend,
                requests,
                session=session,
                concurrency=options.concurrency,
                progress=on_progress,
                on_result=on_result,
                on_tick=writer.flush_if_due,
                # Each answer's text is in its response row: the cache does not copy it.
                cache_text_in_responses=True,
            )
        status = "done" if tally["failed"] == 0 else "incomplete"
    except BaseException:
        status = "interrupted"
        raise
    finally:
        # Whatever happened, what arrived is kept (the session rolls back only the rest).
        writer.flush()
        stored = session.get(GenerationRun, run_id)
        if stored is not None and set_status:
            stored.simulated = simulated[0]
            stored.status = status
            session.add(stored)
        elif stored is not None and simulated[0] and not stored.simulated:
            stored.simulated = True  # a shard learns it as well as a whole run
            session.add(stored)
        session.commit()
    return GenerationSummary(
        run=options.run,
        model=info.spec,
        simulated=simulated[0],
        planned=len(plan),
        already_done=already,
        requested=len(todo),
        succeeded=tally["ok"],
        failed=tally["failed"],
        status=status,
        parse_status=dict(sorted(counts.items())),
        failed_kinds=dict(sorted(failed_kinds.items())),
        retry_after_s=max(waits) if waits else None,
    )
