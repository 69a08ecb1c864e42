"""Source-reliance runs stored in the database: written as they go, resumed, read back.

A run row (``source_run``) holds the model, the items (ids and a hash of their content),
every :class:`~study.sources.plan.SourcesConfig` (one per system instruction) and the hash
of the tier-2 claims; one ``source_probe`` row per answered probe holds the letter, the
letter distribution, how it was read, the raw top-k at the answer position, every token
logprob, the request's cache key and its messages (normalised like generation's).

Probes are upserted as they arrive and committed every ``commit_every`` rows or
``commit_interval_s`` seconds (also while a slow endpoint answers nothing), so a killed run
loses at most that much. Run again with the same name and settings, a run asks only what
is not stored: stored bare probes fix their items' wrong options exactly as new ones would,
so the two-phase plan resumes correctly; failed probes are asked again.

:func:`load_sources_runs` rebuilds the :class:`~study.sources.plan.SourcesRun` objects
from the rows, so the probe table, ``probes.jsonl`` and every statistic of a stored run
come from the same code as those of a run just made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlmodel import Session

from driftlens_core.source_reliance import VARIANTS, parse_variant
from llm.batch import ProgressCallback
from llm.specs import ModelSpec, spec_simulated
from llm.types import ChatBackend, ChatMessage
from storage.errors import ConfigError, InputError
from storage.hashing import content_hash
from storage.models import Prompt
from storage.repo.requests import RequestInterner, prompt_messages
from storage.repo.runs import check_run_name
from storage.repo.sources import (
    add_source_run,
    get_source_run,
    list_source_runs,
    require_source_run,
    set_source_run_status,
    source_probes,
    source_run_counts,
    upsert_source_probes,
)
from storage.source_models import NO_TIER, SourceProbe, SourceRun
from study.batched_writer import BatchedWriter
from study.cluster.shards import ShardScope
from study.run_setup import run_lease
from study.sources.analysis import analyze_sources_table
from study.sources.first_batch import LogprobsUnusable
from study.sources.items import MCQItem, items_to_jsonl
from study.sources.plan import ProbeKey, ProbeRecord, SourcesConfig, SourcesRun, run_sources
from study.sources.score import LetterReading

STORE_VERSION = 1


def run_config(
    model: str,
    items: Sequence[MCQItem],
    configs: Sequence[SourcesConfig],
    claims: dict[str, str],
) -> dict[str, Any]:
    """What identifies a run's plan (stored on the run row, compared on resume)."""
    used = {it.id: claims[it.id] for it in items if it.id in claims}
    return {
        "version": STORE_VERSION,
        "model": model,
        "items": {
            "n": len(items),
            "ids": [it.id for it in items],
            "sha256": content_hash(items_to_jsonl(items)),
        },
        "configs": [c.model_dump(mode="json") for c in configs],
        "claims_sha256": content_hash(used) if any(2 in c.tiers for c in configs) else None,
    }


def default_run_name(config: dict[str, Any]) -> str:
    """``MODEL@HASH``: the same model, items and settings give the same name (and resume)."""
    return f"{config['model']}@{content_hash(config)[:8]}"


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    names = {"model": "model", "items": "items", "configs": "settings", "claims_sha256": "claims"}
    return [label for key, label in names.items() if old.get(key) != new.get(key)]


def probe_row(
    run_id: int, instruction: str, rec: ProbeRecord, *, logprobs_asked: bool
) -> dict[str, Any]:
    """The ``source_probe`` values of one answered probe (messages go in ``prompt_id``)."""
    r = rec.reading
    flags = []
    if rec.error is None:
        if logprobs_asked and r.method != "logprobs":
            flags.append("no_logprobs")
        if r.generated is None:
            flags.append("not_a_letter")
        if r.missing:
            flags.append("letters_outside_topk")
    status = "failed" if rec.error is not None else "unknown" if r.unknown else "ok"
    return {
        "run_id": run_id,
        "instruction": instruction,
        "tier": NO_TIER if rec.tier is None else rec.tier,
        "item_id": rec.item_id,
        "dataset": rec.dataset,
        "variant": rec.variant,
        "ordering": parse_variant(rec.variant).ordering,
        "correct_letter": rec.correct_letter,
        "wrong_letter": rec.wrong_letter,
        "choice": r.letter,
        "method": r.method,
        "status": status,
        "flags": flags,
        "probs": r.probs,
        "captured_mass": r.captured_mass,
        "missing": list(r.missing),
        "generated": r.generated,
        "top": [list(t) for t in r.top],
        "text": rec.text,
        "error": rec.error,
        "reasoning": rec.reasoning,
        "cache_key": rec.cache_key,
        "cached": rec.cached,
        "logprobs": rec.logprobs,
    }


def record_from_row(row: SourceProbe, messages: Sequence[dict[str, Any]]) -> ProbeRecord:
    """The :class:`ProbeRecord` a stored probe was written from."""
    reading = LetterReading(
        letter=row.choice,
        probs=dict(row.probs) if row.probs is not None else None,
        method=row.method,
        unknown=row.status == "unknown",
        captured_mass=row.captured_mass,
        missing=tuple(row.missing or ()),
        generated=row.generated,
        top=tuple((str(t[0]), t[1]) for t in row.top or ()),
    )
    return ProbeRecord(
        item_id=row.item_id,
        dataset=row.dataset,
        tier=None if row.tier == NO_TIER else row.tier,
        variant=row.variant,
        correct_letter=row.correct_letter,
        wrong_letter=row.wrong_letter,
        reading=reading,
        text=row.text,
        error=row.error,
        messages=tuple(ChatMessage(str(m["role"]), str(m["content"])) for m in messages),
        logprobs=row.logprobs,
        reasoning=row.reasoning,
        cached=row.cached,
        cache_key=row.cache_key,
    )


class _ProbeWriter(BatchedWriter[tuple[dict[str, Any], list[dict[str, str]]]]):
    """Upserts probes (their messages interned as prompts) in batched commits."""

    def __init__(self, session: Session, **kwargs: Any) -> None:
        super().__init__(session, **kwargs)
        self.interner = RequestInterner()
        self.written = 0

    def write(self, pending: list[tuple[dict[str, Any], list[dict[str, str]]]]) -> None:
        ids = self.interner.intern([{"messages": m} for _, m in pending], session=self.session)
        rows = [
            {**row, "prompt_id": pid}
            for (row, _), (pid, _params, _rest) in zip(pending, ids, strict=True)
        ]
        upsert_source_probes(rows, session=self.session)
        self.written += len(rows)


def _stored_records(
    run_id: int, *, session: Session, include_failed: bool
) -> dict[str, dict[ProbeKey, ProbeRecord]]:
    """Stored probes by instruction and key (messages read back from their prompts)."""
    out: dict[str, dict[ProbeKey, ProbeRecord]] = {}
    prompts: dict[int, list[dict[str, Any]]] = {}
    for row in source_probes(run_id, session=session):
        if row.status == "failed" and not include_failed:
            continue
        msgs: list[dict[str, Any]] = []
        if row.prompt_id is not None:
            if row.prompt_id not in prompts:
                prompt = session.get(Prompt, row.prompt_id)
                prompts[row.prompt_id] = (
                    prompt_messages(prompt, session=session) if prompt is not None else []
                )
            msgs = prompts[row.prompt_id]
        rec = record_from_row(row, msgs)
        out.setdefault(row.instruction, {})[rec.key] = rec
    return out


@dataclass(frozen=True)
class StoredRunSummary:
    """What one call of :func:`run_stored_sources` did."""

    name: str
    run_id: int
    status: str
    already_stored: int
    answered: int
    failed: int
    #: One sentence when the endpoint ignored seed or temperature (llm/determinism.py).
    repeat_warning: str | None = None


ProgressFor = Callable[[str], AbstractContextManager[ProgressCallback | None]]


def _plan_size(n_items: int, configs: Sequence[SourcesConfig]) -> str:
    """The plan's line: per instruction one bare probe per item, the other variants per
    tier, two requests a probe with reasoning (refused when too large to build)."""
    from study.limits import check_plan_size

    total = sum(
        n_items * (1 + len(c.tiers) * sum(v != "bare" for v in c.variants)) * (1 + c.reasoning)
        for c in configs
    )
    c0 = configs[0]
    what = (
        f"{n_items} items x {len(c0.variants)} variants x {len(c0.tiers)} tiers x "
        f"{len(configs)} instructions (bare once per instruction"
        f"{'; reasoning: 2 requests a probe' if c0.reasoning else ''})"
    )
    return check_plan_size(total, what=what)


def run_stored_sources(
    name: str | None,
    items: Sequence[MCQItem],
    backend: ChatBackend | ModelSpec,
    configs: Sequence[SourcesConfig],
    *,
    session: Session,
    claims: dict[str, str] | None = None,
    concurrency: int = 16,
    progress_for: ProgressFor | None = None,
    commit_every: int = 500,
    commit_interval_s: float = 2.0,
    scope: ShardScope[str] | None = None,
    on_plan: Callable[[str], None] | None = None,
) -> StoredRunSummary:
    """Run (or resume) a stored source-reliance run, writing every probe as it arrives.

    Args:
        name: The run's name (``None``: :func:`default_run_name` of its settings).
        items: The items.
        backend: A backend or a ``provider/model`` spec.
        configs: One config per system instruction (distinct instructions).
        session: Open session; committed in batches during the run.
        claims: Tier-2 claims by item id.
        concurrency: Requests in flight.
        progress_for: ``progress_for(label)`` gives a context manager yielding a
            ``progress(done, total)`` callback (the CLI's progress bar).
        commit_every: Commit after this many new probes...
        commit_interval_s: ...or when this long has passed since the last commit.
        scope: Probe only these items (ids), under the shard's lease; the run's status and
            the endpoint's repeat check are left to the coordinator
            (:mod:`study.sources.sharded`), which calls with no items first to
            create the run row.
        on_plan: Called with the plan's size as one line before anything is stored.

    Raises:
        ConfigError: the run exists with another model, other items or other settings,
            or another live process is running it.
        InputError: no items, or tier 2 without a claim for some item.
    """
    if name is not None:
        check_run_name(name)
    claims = claims or {}
    spec = backend.spec
    if not items:
        raise InputError("No items to probe.")
    if not configs or len({c.instruction for c in configs}) != len(configs):
        raise ConfigError("Give each system instruction once.")
    plan = _plan_size(len(items), configs)
    if on_plan is not None:
        on_plan(plan)
    config = run_config(spec, items, configs, claims)
    name = name or default_run_name(config)
    existing = get_source_run(name, session=session)
    if existing is not None:
        differ = _differences(existing.config, config)
        if differ:
            raise ConfigError(
                f"Run {name!r} exists with other {', '.join(differ)}; run it as it was "
                "started or pick another --run name."
            )
    probed = items if scope is None else [it for it in items if it.id in scope.keys]
    with run_lease(
        f"source_run:{name}" if scope is None else scope.lease_key,
        session=session,
        what=f"Source run {name!r}",
    ) as lease:
        run = existing or add_source_run(
            name, model=spec, config=config, simulated=spec_simulated(spec), session=session
        )
        assert run.id is not None
        run_id = run.id
        if scope is None:
            set_source_run_status(run_id, "running", session=session)
        session.commit()
        stored = _stored_records(run_id, session=session, include_failed=False)
        already = sum(
            1 for v in stored.values() for key in v if scope is None or key[1] in scope.keys
        )
        writer = _ProbeWriter(
            session, every=commit_every, interval_s=commit_interval_s, lease=lease
        )
        failed = [0]
        fresh = [0]  # probes answered now (the writer counts only what it flushed)
        status = "interrupted"
        repeat_warning: str | None = None
        try:
            for cfg in configs if probed else ():

                def store(rec: ProbeRecord, cfg: SourcesConfig = cfg) -> None:
                    failed[0] += rec.error is not None
                    fresh[0] += 1
                    writer.add(
                        (
                            probe_row(run_id, cfg.instruction, rec, logprobs_asked=cfg.logprobs),
                            [{"role": m.role, "content": m.content} for m in rec.messages],
                        )
                    )

                label = f"probing {spec} ({cfg.instruction})"
                with progress_for(label) if progress_for else nullcontext(None) as update:
                    run_sources(
                        probed,
                        backend,
                        config=cfg,
                        claims=claims,
                        session=session,
                        progress=update,
                        concurrency=concurrency,
                        done=stored.get(cfg.instruction, {}),
                        on_record=store,
                        on_tick=writer.flush_if_due,
                    )
            status = "done" if failed[0] == 0 else "incomplete"
            if fresh[0] and scope is None:
                repeat_warning = repeat_warning_of(backend, items[0], configs[0], claims)
        except LogprobsUnusable:
            # the endpoint cannot serve this instrument: nothing was stored, say so
            status = "failed"
            raise
        finally:
            # whatever happened, what arrived is kept
            writer.flush()
            if scope is None:
                set_source_run_status(run_id, status, session=session)
            session.commit()
    return StoredRunSummary(
        name=name,
        run_id=run_id,
        status=status,
        already_stored=already,
        answered=writer.written,
        failed=failed[0],
        repeat_warning=repeat_warning,
    )


def repeat_warning_of(
    backend: ChatBackend | ModelSpec, item: MCQItem, cfg: SourcesConfig, claims: dict[str, str]
) -> str | None:
    """The warning of an endpoint whose two identical bare probes disagree."""
    from llm.determinism import check_repeat
    from study.sources.plan import answer_request, probe_messages

    msgs = probe_messages(
        item, "bare", cfg=cfg, tier=None, wrong_letter=None, claim=claims.get(item.id)
    )
    return check_repeat(backend, answer_request(msgs, cfg, tag=0)).warning


def _plan_order(config: dict[str, Any]) -> Callable[[ProbeRecord], tuple[int, int, int, int]]:
    """Sort key putting probes in plan order (bare first, then tier × item × variant)."""
    index = {k: i for i, k in enumerate(config.get("items", {}).get("ids", []))}

    def key(rec: ProbeRecord) -> tuple[int, int, int, int]:
        return (
            0 if rec.tier is None else 1,
            rec.tier or 0,
            index.get(rec.item_id, len(index)),
            VARIANTS.index(rec.variant) if rec.variant in VARIANTS else len(VARIANTS),
        )

    return key


def load_sources_runs(name: str, *, session: Session) -> list[SourcesRun]:
    """A stored run as one :class:`SourcesRun` per system instruction, in plan order.

    Raises:
        NotFoundError: no such run.
    """
    run = require_source_run(name, session=session)
    assert run.id is not None
    stored = _stored_records(run.id, session=session, include_failed=True)
    out = []
    for raw in run.config.get("configs", []):
        cfg = SourcesConfig.model_validate(raw)
        records = sorted(stored.get(cfg.instruction, {}).values(), key=_plan_order(run.config))
        out.append(SourcesRun(model=run.model, config=cfg, records=tuple(records)))
    return out


@dataclass(frozen=True)
class SourceRunLine:
    """One line of a list of stored runs (the Runs and Sources pages, the CLI)."""

    name: str
    model: str
    status: str
    simulated: bool
    items: int
    instructions: str
    probes: int
    unknown: int
    failed: int
    created: str


def source_run_lines(*, session: Session) -> list[SourceRunLine]:
    """Every stored source-reliance run, newest first, with its probe counts."""
    runs: list[SourceRun] = list_source_runs(session=session)
    counts = source_run_counts([r.id for r in runs if r.id is not None], session=session)
    lines = []
    for r in runs:
        assert r.id is not None
        c = counts[r.id]
        cfgs = r.config.get("configs", [])
        lines.append(
            SourceRunLine(
                name=r.name,
                model=r.model,
                status=r.status,
                simulated=r.simulated,
                items=int(r.config.get("items", {}).get("n", 0)),
                instructions=",".join(str(c.get("instruction", "n")) for c in cfgs),
                probes=c.probes,
                unknown=c.unknown,
                failed=c.failed,
                created=f"{r.created_at:%Y-%m-%d %H:%M}",
            )
        )
    return lines


def stored_run_table(name: str, *, session: Session) -> pd.DataFrame:
    """The probe table of a stored run: exactly what ``sources run`` writes as probes.csv.

    Raises:
        NotFoundError: no such run.
        InputError: the run has no answered probe yet.
    """
    runs = load_sources_runs(name, session=session)
    tables = [r.table() for r in runs if any(rec.error is None for rec in r.records)]
    if not tables:
        raise InputError(f"Run {name!r} has no answered probes yet; run it first.")
    return pd.concat(tables, ignore_index=True)


def stored_run_result(
    name: str, *, session: Session, bootstrap: int, seed: int | None
) -> tuple[dict[str, Any], pd.DataFrame]:
    """``(stats JSON, probe table)`` of a stored run, from the same code as a CSV's."""
    table = stored_run_table(name, session=session)
    result = analyze_sources_table(table, bootstrap=bootstrap, seed=seed, source=f"run {name!r}")
    return result.to_dict(), table
