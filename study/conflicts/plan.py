"""Bank instances × distractor doses × samples → generation requests (resumable).

A conflicts run is a :class:`~storage.models.GenerationRun` like any other: one model,
one prompt version (``conflict-response-v1``), one sampling, and a plan of
``(question, condition, sample)`` keys where the question is the bank's request and the
condition the distractor dose (``N0`` … ``N6``). Keys already answered are skipped, so
rerunning the same command sends nothing new; requests go through
:func:`llm.batch.run_chat_batch` with the session, so they are cached.

Rendering is the ``memory_bank`` context family (:mod:`study.catalog.memory_bank`): the
shuffle seed is derived from (run seed, instance, condition) and stored with every
response together with the rendered prompt's hash, so a rerun provably renders the same
prompts.

Tracks: ``oracle`` shows the curated core memories; ``pipeline`` shows what a
:class:`MemoryExtractor` kept of them, labelled FULL / PARTIAL / None (see
:mod:`study.conflicts.tracks`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session

from llm.memory_systems import import_mem0_memory
from llm.seeds import stable_int
from llm.sim.tasks import task_marker
from llm.specs import ModelSpec
from llm.types import ChatBackend, ChatRequest, ChatResult, SamplingParams
from storage.errors import InputError
from storage.hashing import content_hash
from storage.models import GenerationRun, Response
from storage.repo.leases import Lease
from storage.repo.runs import (
    ResponseKey,
    check_run_name,
    existing_response_keys,
    get_run,
    set_run_status,
    upsert_responses,
)
from study.batched_writer import BatchedWriter
from study.catalog.contexts import RenderedContext
from study.catalog.memory_bank import MemoryBankContext, bank_condition
from study.cluster.shards import ShardScope
from study.conflicts.dialogues import Dialogue, read_dialogues
from study.conflicts.items import ConflictInstance, stored_instances
from study.conflicts.real_systems import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_MEMORY_MODEL,
    REAL_SYSTEMS,
    open_real_extractor,
)
from study.conflicts.tracks import (
    DialogueExtractor,
    MemoryExtractor,
    extract_bank,
    get_extractor,
    reads_dialogues,
)
from study.request_failures import count_kind
from study.run_setup import ensure_model_run

PROMPT_VERSION = "conflict-response-v1"
RESPONSE_TASK = "conflict-response"
#: The personal-assistant instruction (ours). The first line routes simulated requests.
INSTRUCTION = (
    "You are a personal assistant with long-term memory of this user. The stored memories "
    "below were collected over many earlier conversations. Use them to answer the user's "
    "request helpfully and honestly."
)
CONDITION_CLASS = "bank"
#: ``no-memory``: the same requests with an empty bank (the baseline a rubric score is read
#: against: what the model does with no memory at all; one dose, 0).
TRACKS: tuple[str, ...] = ("oracle", "pipeline", "no-memory")
_SEED_MODULUS = 2**31 - 1

ProgressCallback = Callable[[int, int], None]


def system_text() -> str:
    """The system message of every response request."""
    return f"{task_marker(RESPONSE_TASK)}\n{INSTRUCTION}"


@dataclass(frozen=True)
class BankPlanItem:
    """One request of a conflicts run."""

    question_id: int
    instance: ConflictInstance
    n_distractors: int
    sample: int
    seed: int
    rendered: RenderedContext
    observability: str = "FULL"
    shown_core: tuple[str, ...] = ()
    #: Per shown core memory, the curated core memories it carries (a real memory
    #: system's own texts; empty when the shown texts are the curated ones).
    shown_facts: tuple[tuple[int, ...], ...] = ()

    @property
    def condition(self) -> str:
        """The dose's condition key."""
        return bank_condition(self.n_distractors)

    @property
    def key(self) -> ResponseKey:
        """The response key this item fills."""
        return ResponseKey(self.question_id, self.condition, self.sample)


def shuffle_seed(run_seed: int, instance_id: str, condition: str) -> int:
    """The recorded seed of a bank's shuffle (shared by the samples of one condition)."""
    return stable_int("conflict-bank", run_seed, instance_id, condition) % _SEED_MODULUS


def request_seed(run_seed: int, instance_id: str, sample: int) -> int:
    """The sampling seed of one request.

    Shared by every dose of an instance's sample (the rendered banks differ, so the
    requests and their cache keys still do): a seeded model then answers the doses with
    common random numbers, which is what makes the paired dose comparison efficient.
    """
    return stable_int("conflict-request", run_seed, instance_id, sample) % _SEED_MODULUS


def build_plan(
    instances: Sequence[tuple[int, ConflictInstance]],
    *,
    doses: Sequence[int],
    samples: int,
    run_seed: int,
    track: str = "oracle",
    extractor: str | MemoryExtractor | DialogueExtractor = "sim-lossy",
    dialogues: Mapping[str, Dialogue] | None = None,
) -> list[BankPlanItem]:
    """Every (instance, dose, sample) of a run, rendered.

    ``extractor`` is a registered simulated system's name or an opened one (a real memory
    system, :mod:`study.conflicts.real_systems`). A memory system that reads dialogues gets
    each instance's dialogue; instances without one are left out of the plan.
    """
    plan: list[BankPlanItem] = []
    ext = None
    if track == "pipeline":
        ext = get_extractor(extractor) if isinstance(extractor, str) else extractor
    for qid, inst in instances:
        core, label = inst.core_memories, "FULL"
        background: tuple[str, ...] = tuple(inst.background_memories)
        facts: tuple[tuple[int, ...], ...] = ()
        if track == "no-memory":
            # nothing remembered: no conflict to perceive (D1/D2 not applicable)
            core, label, background = (), "None", ()
        if ext is not None:
            dialogue = (dialogues or {}).get(inst.instance_id)
            if reads_dialogues(ext) and dialogue is None:
                continue
            extracted = extract_bank(ext, inst, seed=run_seed, dialogue=dialogue)
            core, label = tuple(extracted.memories), extracted.observability
            facts = extracted.facts
        for n in (0,) if track == "no-memory" else doses:
            cond = bank_condition(n)
            ctx = MemoryBankContext(
                cond,
                core=core,
                background=background,
                distractors=inst.distractors[:n],
            )
            rendered = ctx.render(
                system=system_text(),
                user_text=inst.query,
                seed=shuffle_seed(run_seed, inst.instance_id, cond),
            )
            for s in range(samples):
                plan.append(
                    BankPlanItem(
                        question_id=qid,
                        instance=inst,
                        n_distractors=n,
                        sample=s,
                        seed=request_seed(run_seed, inst.instance_id, s),
                        rendered=rendered,
                        observability=label,
                        shown_core=tuple(core),
                        shown_facts=facts,
                    )
                )
    return plan


def prompt_hash(rendered: RenderedContext) -> str:
    """Hash of the rendered messages (what a rerun must reproduce)."""
    return content_hash([[m.role, m.content] for m in rendered.messages])


def request_record(
    item: BankPlanItem, request: ChatRequest, *, model: str, track: str
) -> dict[str, Any]:
    """What is stored as ``Response.request``: messages, parameters and the bank context."""
    order = [
        {**o, "text": _shown_text(item, o["provenance"], o["index"])}
        for o in item.rendered.provenance["order"]
    ]
    return {
        "model": model,
        "prompt_version": PROMPT_VERSION,
        **request.record(),
        "context": {
            "family": item.rendered.family,
            "condition": item.rendered.condition,
            "shuffle_seed": item.rendered.seed,
            "prompt_hash": prompt_hash(item.rendered),
            "instance_id": item.instance.instance_id,
            "n_distractors": item.n_distractors,
            "track": track,
            "observability": item.observability,
            "order": order,
        },
    }


def _shown_text(item: BankPlanItem, provenance: str, index: int) -> str:
    if provenance == "core":
        return item.shown_core[index]
    if provenance == "background":
        return item.instance.background_memories[index]
    return item.instance.distractors[index]


@dataclass(frozen=True)
class ConflictGenerationOptions:
    """What ``driftlens conflicts generate`` was asked for."""

    model: ModelSpec
    run: str
    doses: tuple[int, ...] = (6,)
    samples: int = 1
    track: str = "oracle"
    extractor: str = "sim-lossy"
    dialogues: Path | None = None
    memory_model: ModelSpec = DEFAULT_MEMORY_MODEL
    memory_embedding_model: str = DEFAULT_EMBEDDING_MODEL
    concurrency: int = 16
    seed: int | None = None
    max_tokens: int = 600


@dataclass(frozen=True)
class ConflictGenerationSummary:
    """What a ``conflicts generate`` call did."""

    run: str
    model: str
    planned: int
    already_done: int
    requested: int
    failed: int
    status: str
    observability: dict[str, int] = field(default_factory=dict)
    failed_kinds: dict[str, int] = field(default_factory=dict)


def parse_doses(text: str) -> tuple[int, ...]:
    """``"6"``, ``"0,6"`` or ``"0..6"`` → the distractor doses.

    Raises:
        InputError: not a dose list, or a dose outside 0–6.
    """
    t = text.strip()
    try:
        if ".." in t:
            lo, hi = (int(x) for x in t.split("..", 1))
            bounds: tuple[int, ...] = (lo, hi)
        else:
            bounds = tuple(int(x) for x in t.split(",") if x.strip())
    except ValueError:
        raise InputError(
            f"--distractors {text!r}: use a number, a list (0,6) or a range (0..6)."
        ) from None
    if ".." in t and bounds[0] > bounds[1]:
        raise InputError(
            f"--distractors {text!r}: the range runs backwards; write it low..high (0..6)."
        )
    # the ends are checked before a range is expanded: 0..1000000000 would otherwise
    # build a billion-element tuple (gigabytes) only to be refused afterwards
    if not bounds or any(not 0 <= d <= 6 for d in bounds):
        raise InputError(f"--distractors {text!r}: doses must lie in 0-6.")
    doses = tuple(range(bounds[0], bounds[1] + 1)) if ".." in t else bounds
    return tuple(sorted(set(doses)))


def _backend(
    spec: ModelSpec,
    instances: Sequence[tuple[int, ConflictInstance]],
    plan: Sequence[BankPlanItem],
) -> ChatBackend | ModelSpec:
    """The backend; a simulated one first learns which memory is on which side."""
    if spec.simulated:
        from study.conflicts.simulation import register_instances, register_shown_banks

        register_instances(inst for _, inst in instances)
        # a real memory system shows its own texts: tell the simulator their sides too
        register_shown_banks(
            (item.instance, item.shown_core, item.shown_facts) for item in plan if item.shown_facts
        )
    return spec


class _Writer(BatchedWriter[Response]):
    """Upserts responses in batched commits (every 128 rows or 2 s)."""

    def __init__(
        self, session: Session, *, every: int = 128, interval_s: float = 2.0, lease: Any = None
    ) -> None:
        super().__init__(session, every=every, interval_s=interval_s, lease=lease)

    def write(self, pending: list[Response]) -> None:
        upsert_responses(pending, session=self.session)


def bank_response(
    run_id: int,
    item: BankPlanItem,
    record: dict[str, Any],
    text: str | None,
    *,
    status: str,
    seed: int | None,
    **result: Any,
) -> Response:
    """The response row of one answer to a bank (``result``: what the call returned)."""
    return Response(
        run_id=run_id,
        question_id=item.question_id,
        perturbation_id=None,
        condition=item.condition,
        condition_class=CONDITION_CLASS,
        sample=item.sample,
        request=record,
        seed=seed,
        text=text,
        steps=[],
        answer=text,
        parse_status=status,
        **result,
    )


def generate_conflicts(
    options: ConflictGenerationOptions,
    *,
    session: Session,
    backend: ChatBackend | None = None,
    progress: ProgressCallback | None = None,
    scope: ShardScope[int] | None = None,
    on_plan: Callable[[str], None] | None = None,
) -> ConflictGenerationSummary:
    """Generate (or resume) a conflicts run; every response is stored as it arrives.

    ``scope``: only these banks (question ids), under the shard's lease, leaving the run's
    status to the coordinator that created the run (:mod:`study.conflicts.sharded`).
    ``on_plan`` is called with the plan's size as one line before the plan is built.

    Raises:
        InputError: no banks imported, bad doses, samples or track.
        ConfigError: the run exists with a different model, sampling or prompt.
    """
    from study import limits
    from study.run_setup import run_lease

    if options.track not in TRACKS:
        raise InputError(f"Unknown track {options.track!r}: use oracle, pipeline or no-memory.")
    check_run_name(options.run)
    limits.SAMPLES.check(options.samples)
    limits.CONCURRENCY.check(options.concurrency)
    limits.MAX_TOKENS.check(options.max_tokens)
    instances = stored_instances(session=session)
    if not instances:
        raise InputError(
            "No memory banks in this workspace; import some with "
            "`driftlens conflicts import FILE` (or --sample)."
        )
    # the plan's size is known before it is built (or the run row is stored)
    plan = limits.check_plan_size(
        len(instances) * len(options.doses) * options.samples,
        what=f"{len(instances)} banks x {len(options.doses)} doses x {options.samples} samples",
    )
    if on_plan is not None:
        on_plan(plan)
    key = f"conflicts_run:{options.run}" if scope is None else scope.lease_key
    with run_lease(key, session=session, what=f"Conflicts run {options.run!r}") as lease:
        return _generate(
            options,
            instances,
            session=session,
            backend=backend,
            progress=progress,
            lease=lease,
            scope=scope,
        )


def _generate(
    options: ConflictGenerationOptions,
    instances: Sequence[tuple[int, ConflictInstance]],
    *,
    session: Session,
    backend: ChatBackend | None,
    progress: ProgressCallback | None,
    lease: Lease,
    scope: ShardScope[int] | None = None,
) -> ConflictGenerationSummary:
    info = options.model
    existing = get_run(options.run, session=session)
    if existing is not None and existing.sampling:
        sampling = SamplingParams.model_validate(existing.sampling)
    else:
        seed = options.seed if options.seed is not None else stable_int("run", options.run)
        sampling = SamplingParams(seed=seed % _SEED_MODULUS, max_tokens=options.max_tokens)
    assert sampling.seed is not None
    run_seed = sampling.seed
    config: dict[str, Any] = {
        "version": 1,
        "instrument": "conflicts",
        "track": options.track,
        "doses": list(options.doses),
        "samples": options.samples,
        "run_seed": run_seed,
    }
    dialogues: Mapping[str, Dialogue] | None = None
    real = options.track == "pipeline" and options.extractor in REAL_SYSTEMS
    if options.track == "pipeline":
        config["memory_system"] = options.extractor
        if real:
            # before the run exists: a missing package is one sentence, nothing stored
            import_mem0_memory()
            config["memory_model"] = str(options.memory_model)
        if real or reads_dialogues(get_extractor(options.extractor)):
            dset = read_dialogues(options.dialogues, (inst for _, inst in instances))
            dialogues = dset.by_instance
            config["dialogues"] = dset.source
            if not any(inst.instance_id in dialogues for _, inst in instances):
                raise InputError(
                    f"No imported bank has a dialogue in {dset.source}; the pipeline track "
                    f"with {options.extractor} needs the banks its dialogues belong to."
                )
    run = ensure_model_run(
        options.run,
        model=options.model,
        prompt_version=PROMPT_VERSION,
        sampling=sampling,
        config=config,
        session=session,
    )
    assert run.id is not None
    run_id = run.id
    if scope is None:
        set_run_status(run_id, "running", session=session)
    else:  # one shard's banks; the checks above saw them all
        instances = [(q, inst) for q, inst in instances if q in scope.keys]
    session.commit()

    plan_args: dict[str, Any] = {
        "doses": options.doses,
        "samples": options.samples,
        "run_seed": run_seed,
        "track": options.track,
        "dialogues": dialogues,
    }
    if real:
        with open_real_extractor(
            options.extractor,
            memory_model=options.memory_model,
            embedding_model=options.memory_embedding_model,
        ) as ext:
            plan = build_plan(instances, extractor=ext, **plan_args)
    else:
        plan = build_plan(instances, extractor=options.extractor, **plan_args)
    done = existing_response_keys(run_id, session=session)
    todo = [item for item in plan if item.key not in done]
    obs: dict[str, int] = {}
    for item in plan:
        if item.sample == 0 and item.n_distractors == options.doses[0]:
            obs[item.observability] = obs.get(item.observability, 0) + 1
    requests = [
        ChatRequest(
            messages=item.rendered.messages,
            sampling=sampling.model_copy(update={"seed": item.seed}),
            sample_index=item.sample,
            tag=item.key,
        )
        for item in todo
    ]
    failed = [0]
    kinds: dict[str, int] = {}
    writer = _Writer(session, lease=lease)

    def on_result(i: int, request: ChatRequest, result: ChatResult) -> None:
        item = todo[i]
        record = request_record(item, request, model=info.spec, track=options.track)
        record["served_model"] = result.model
        bad = result.error is not None or result.text is None
        failed[0] += int(bad)
        if bad:
            count_kind(kinds, result.error_kind or ("empty" if result.error is None else None))
        status = "error" if bad else ("ok" if (result.text or "").strip() else "empty")
        writer.add(
            bank_response(
                run_id,
                item,
                record,
                result.text,
                status=status,
                seed=result.seed if result.seed is not None else request.sampling.seed,
                finish_reason=result.finish_reason,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                latency_ms=result.latency_ms,
                error=result.error,
                attempts=result.attempts,
                cache_key=result.cache_key or None,
            )
        )

    def on_progress(n: int, _total: int) -> None:
        if progress is not None:
            progress(len(plan) - len(todo) + n, len(plan))

    status = "running"
    try:
        if requests:
            from llm.batch import run_chat_batch

            run_chat_batch(
                backend or _backend(options.model, instances, plan),
                requests,
                session=session,
                concurrency=options.concurrency,
                progress=on_progress,
                on_result=on_result,
            )
        status = "done" if failed[0] == 0 else "incomplete"
    except BaseException:
        status = "interrupted"
        raise
    finally:
        writer.flush()
        stored = session.get(GenerationRun, run_id) if scope is None else None
        if stored is not None:
            stored.status = status
            session.add(stored)
        session.commit()
    return ConflictGenerationSummary(
        run=options.run,
        model=info.spec,
        planned=len(plan),
        already_done=len(plan) - len(todo),
        requested=len(todo),
        failed=failed[0],
        status=status,
        observability=dict(sorted(obs.items())),
        failed_kinds=dict(sorted(kinds.items())),
    )
