"""Generation runs (SPEC §4): baseline + perturbed answers for every selected question.

A run is named and fixed: one model, one prompt version, one catalog version, one set of
sampling parameters (the run seed included). Its *plan* is the set of
``(question, condition, sample)`` keys; keys that already have a successful response are
skipped, failed ones are asked again, so re-running the same command resumes a run.
Every response is written as it arrives (upserted, committed every 1,000 rows or 2 s),
with the full request (messages and parameters; never keys; stored normalised, see
:mod:`storage.repo.requests`), so a killed run loses at most one batch and nothing already
stored is requested again.

The plan and the rows are :mod:`study.reasoning.plan`. ``Response.parse_status`` is a code of
:mod:`study.reasoning.parsing`, or ``"error"`` when the request
itself failed (``error`` then holds the reason and ``text`` is empty).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlmodel import Session

from llm.specs import ModelSpec
from llm.types import ChatBackend, ChatRequest, ChatResult, SamplingParams
from storage.errors import InputError
from storage.models import GenerationRun, Perturbation, Question
from storage.repo.leases import Lease
from storage.repo.requests import RequestInterner
from storage.repo.runs import (
    check_run_name,
    existing_response_keys,
    get_run,
    set_run_status,
    upsert_response_rows,
)
from study.batched_writer import BatchedWriter
from study.catalog import catalog_perturbations, resolve_catalog
from study.prompts import PROMPT_VERSION
from study.questions import list_questions
from study.reasoning.plan import (
    build_plan,
    default_run_seed,
    make_request,
    response_values,
    select_perturbations,
)
from study.request_failures import PERMANENT_KINDS
from study.run_setup import ensure_model_run, run_lease

QUESTION_SELECTIONS: tuple[str, ...] = ("all", "core", "relaxed")

ProgressCallback = Callable[[int, int], None]


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


# ------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class GenerationOptions:
    """What ``driftlens generate`` was asked for; ``None`` sampling values mean "as stored
    for an existing run, else the SPEC §4 reference"."""

    model: ModelSpec
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

    check_run_name(options.run)
    limits.SAMPLES.check(options.samples)
    limits.CONCURRENCY.check(options.concurrency)
    limits.TEMPERATURE.check(options.temperature)
    limits.TOP_P.check(options.top_p)
    limits.MAX_TOKENS.check(options.max_tokens)
    if options.top_logprobs is not None and not 0 <= options.top_logprobs <= 20:
        raise InputError("--top-logprobs must be from 0 to 20.")


def _backend(info: ModelSpec, perturbations: Sequence[Perturbation]) -> ChatBackend:
    """The backend; the in-process simulator learns each stimulus's exact class."""
    if info.simulated:
        from llm.sim.backend import SimBackend
        from study.reasoning.sim.classify import classifier_from_catalog

        classify = classifier_from_catalog(
            (p.text, p.condition_class, p.category) for p in perturbations
        )
        return SimBackend(info.model, classify_memory=classify)
    from llm.batch import get_backend

    return get_backend(info)


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
    #: The plan's size as one line (:func:`study.limits.plan_line`), known before it is built.
    plan: str = ""


def resolve_run(options: GenerationOptions, *, session: Session) -> ResolvedRun:
    """Check the options and resolve the run's sampling, catalog, perturbations, questions.

    Raises:
        InputError: Bad selection, or no questions to answer.
    """
    _check_options(options)
    info = options.model
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

    plan = check_plan_size(
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
        plan=plan,
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
    on_plan: Callable[[str], None] | None = None,
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
        on_plan: Called with the plan's size as one line before the plan is built.

    Raises:
        InputError: Bad selection, or no questions to answer.
        ConfigError: The run exists with a different model, sampling, prompt or catalog.
        ServiceError: The endpoint refused every request (bad key, unknown model...).
    """
    resolved = resolve_run(options, session=session)
    if on_plan is not None:
        on_plan(resolved.plan)
    if scope is not None:
        resolved = replace(
            resolved, questions=[q for q in resolved.questions if q.id in scope.question_ids]
        )
    # The backend is built before anything is written: one that cannot start (missing
    # variables, no engine) leaves no run row behind.
    chat_backend = backend or _backend(options.model, resolved.all_perturbations)
    with run_lease(
        scope.lease_key if scope is not None else f"generation_run:{options.run}",
        session=session,
        what=f"Run {options.run!r}",
    ) as lease:
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


def ensure_run(
    options: GenerationOptions, resolved: ResolvedRun, *, session: Session
) -> tuple[GenerationRun, int | None]:
    """The run row (created, or checked against ``options``) and its ``top_logprobs``.

    Raises:
        ConfigError: The run exists with a different model, sampling, prompt or catalog.
    """
    existing = resolved.existing
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
    run = ensure_model_run(
        options.run,
        model=options.model,
        prompt_version=PROMPT_VERSION,
        sampling=resolved.sampling,
        config=config,
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
