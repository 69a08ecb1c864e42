"""Driving the refinement loop: rounds, stop rules, gated decisions, history.

The pieces (options, the loop's rows, proposals, the gate's relabel) are in
:mod:`ontology.refinement`; this module runs them in order (:func:`refine`) and reads a
loop back (:func:`loop_result`). See :mod:`ontology.refinement` for how a loop resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlmodel import Session, col, select

from ontology.labeler_roles import check_labeler_roles
from ontology.labelers.base import Progress
from ontology.refinement import (
    RefineConfig,
    RefineResult,
    check_config,
    find_or_create_loop,
    gate_proposal,
    labeling_round,
    propose,
    round_metrics,
)
from ontology.refinement_gate import LabelMap, Split, label_map, pair_table, split_steps
from ontology.rewrite import accept_conflict, base_version, newest_version, reject_proposal
from ontology.rounds import round_records, step_texts
from ontology.versions import document, get_version, new_version, replace_definitions, version_label
from storage.errors import ConfigError, InputError
from storage.models import LabelingRound, RewriteProposal
from storage.refinement_models import RefinementDecision, RefinementLoop, RefinementRound
from storage.repo import rounds as round_repo
from storage.repo.leases import LeaseHeldError, acquire_lease, release_lease

#: ``notify(line)``: one line of what the loop just did (the CLI prints it).
Notify = Callable[[str], None]
#: A decision waiting for a researcher (``--review pause``).
REVIEW = "awaiting review"


def _decision_row(
    loop: RefinementLoop, iteration: int, pair: tuple[str, str], attempt: int, *, session: Session
) -> RefinementDecision | None:
    return session.exec(
        select(RefinementDecision).where(
            RefinementDecision.loop_id == loop.id,
            RefinementDecision.iteration == iteration,
            RefinementDecision.leaf_a == pair[0],
            RefinementDecision.leaf_b == pair[1],
            RefinementDecision.attempt == attempt,
        )
    ).first()


def _accept(
    proposal: RewriteProposal,
    decision: RefinementDecision,
    loop: RefinementLoop,
    *,
    author: str,
    session: Session,
) -> int | None:
    """Store the new version, the proposal's status, the decision and the loop's current
    version in one commit (a kill before it leaves none of them; after it, all)."""
    conflict = accept_conflict(proposal, session=session)
    if conflict is not None:
        decision.decision = "rejected"
        decision.reasons = [*decision.reasons, conflict]
        session.add(decision)
        session.commit()
        return None
    assert proposal.def_a_new and proposal.def_b_new and proposal.id is not None
    parent = newest_version(base_version(proposal, session=session).name, session=session)
    doc = replace_definitions(
        document(parent), {proposal.leaf_a: proposal.def_a_new, proposal.leaf_b: proposal.def_b_new}
    )
    if doc.content_hash() == parent.content_hash:
        decision.decision = "rejected"
        decision.reasons = [*decision.reasons, "the proposal does not change the ontology"]
        session.add(decision)
        session.commit()
        return None
    note = (
        f"refinement loop {loop.id}, round {proposal.request.get('round')}: "
        f"{proposal.leaf_a} vs {proposal.leaf_b} (proposal {proposal.id})"
    )
    version = new_version(parent, doc, session=session, author=author, note=note)
    round_repo.decide_proposal(
        proposal.id, status="accepted", resulting_version_id=version.id, session=session
    )
    decision.version_id = version.id
    assert version.id is not None
    loop.current_version_id = version.id
    session.add(decision)
    session.add(loop)
    session.commit()
    return version.id


def _decide(
    loop: RefinementLoop,
    config: RefineConfig,
    iteration: int,
    round_row: LabelingRound,
    pair: tuple[str, str],
    labels: LabelMap,
    texts: dict[tuple[int, int], str],
    *,
    session: Session,
    notify: Notify,
) -> str:
    """Up to two gated proposals for one pair (the second with the first's reasons).

    With ``review="pause"`` a gated proposal waits for a researcher (``ontology accept`` /
    ``reject`` or the Rewrite page) and the loop stops there; running it again reads the
    researcher's decision and goes on.

    Returns:
        ``accepted``, ``rejected`` (both attempts) or ``paused``.
    """
    split = split_steps(
        labels,
        config.labelers,
        pair,
        holdout=config.holdout,
        control=config.control,
        seed=config.seed + iteration,
    )
    previous: RewriteProposal | None = None
    reasons: list[str] = []
    for attempt in (0, 1):
        done = _decision_row(loop, iteration, pair, attempt, session=session)
        if (
            done is not None
            and done.decision == REVIEW
            and not _reviewed(done, loop, session=session)
        ):
            return "paused"
        if done is not None:
            if done.decision.startswith("accepted"):
                return "accepted"
            previous = session.get(RewriteProposal, done.proposal_id) if done.proposal_id else None
            reasons = [str(r) for r in done.reasons]
            continue
        tag = {"loop": loop.id, "iteration": iteration, "pair": list(pair), "attempt": attempt}
        proposal = propose(
            round_row, pair, split, texts, config=config, tag=tag, reasons=reasons,
            previous=previous, session=session,
        )  # fmt: skip
        gate = gate_proposal(proposal, labels, split, config=config, session=session)
        if gate is None:
            outcome = "unparseable"
            reasons = [f"the rewriter's reply could not be used: {proposal.request.get('error')}"]
        else:
            reasons = list(gate.reasons)
            passed = gate.passed if config.gate else True
            outcome = "accepted" if passed else "rejected"
        row = RefinementDecision(
            loop_id=loop.id or 0,
            iteration=iteration,
            leaf_a=pair[0],
            leaf_b=pair[1],
            attempt=attempt,
            proposal_id=proposal.id,
            evidence_ids=[list(k) for k in split.evidence],
            heldout_ids=[list(k) for k in split.heldout],
            control_ids=[list(k) for k in split.control],
            gate=gate.to_json() if gate is not None else {},
            decision=outcome,
            reasons=reasons,
        )
        gain = f"gain {gate.gain:+.3f} [{gate.low:+.3f}, {gate.high:+.3f}]" if gate else "no gate"
        if config.review == "pause" and proposal.status == "pending":
            row.gate = {**row.gate, "verdict": outcome}
            row.decision = REVIEW
            session.add(row)
            session.commit()
            notify(
                f"  {pair[0]} vs {pair[1]}: the gate says {outcome} ({gain}); waiting for a "
                f"researcher: driftlens ontology accept {proposal.id} (or reject {proposal.id}), "
                "then run this command again"
            )
            return "paused"
        if outcome == "accepted":
            made = _accept(proposal, row, loop, author=f"refine loop {loop.id}", session=session)
            if made is not None:
                notify(f"  {pair[0]} vs {pair[1]}: accepted ({gain}) -> version id {made}")
                return "accepted"
            reasons = list(row.reasons)
        else:
            session.add(row)
            if proposal.status == "pending":
                reject_proposal(proposal.id or 0, session=session)  # commits the row too
            session.commit()
        notify(f"  {pair[0]} vs {pair[1]}: {row.decision} ({gain}): {'; '.join(reasons)}")
        previous = proposal
    return "rejected"


def _reviewed(row: RefinementDecision, loop: RefinementLoop, *, session: Session) -> bool:
    """Take over a researcher's decision on a paused proposal (False: none yet)."""
    proposal = session.get(RewriteProposal, row.proposal_id) if row.proposal_id else None
    if proposal is None or proposal.status in ("pending", "unparseable"):
        return False
    if proposal.status == "accepted" and proposal.resulting_version_id is not None:
        row.decision = "accepted (researcher)"
        row.version_id = proposal.resulting_version_id
        loop.current_version_id = proposal.resulting_version_id
        session.add(loop)
    else:
        row.decision = "rejected (researcher)"
        row.reasons = [*row.reasons, "rejected by the researcher"]
    session.add(row)
    session.commit()
    return True


def note_human_accept(proposal_id: int, reason: str | None, *, session: Session) -> None:
    """Before a researcher accepts a paused proposal: one the gate rejected needs a reason.

    The reason is stored on the loop's decision (committed with the accept).

    Raises:
        InputError: the gate rejected the proposal and no reason was given.
    """
    row = session.exec(
        select(RefinementDecision).where(
            RefinementDecision.proposal_id == proposal_id, RefinementDecision.decision == REVIEW
        )
    ).first()
    if row is None or row.gate.get("verdict") != "rejected":
        return
    text = (reason or "").strip()
    if not text:
        why = "; ".join(str(r) for r in row.reasons) or "no reason recorded"
        raise InputError(
            f"the refinement gate rejected proposal {proposal_id} ({why}); accept it anyway "
            "with --reason WHY"
        )
    row.reasons = [*row.reasons, f"accepted against the gate: {text}"]
    session.add(row)


def _held_target(rounds: list[RefinementRound], target: float) -> bool:
    means = [r.metrics.get("mean_pairwise") for r in rounds[-2:]]
    return len(means) == 2 and all(m is not None and m >= target for m in means)


def _plateau(loop: RefinementLoop, iteration: int, patience: int, *, session: Session) -> bool:
    if iteration + 1 < patience:
        return False
    accepted = session.exec(
        select(RefinementDecision.iteration).where(
            RefinementDecision.loop_id == loop.id,
            col(RefinementDecision.decision).startswith("accepted"),
            col(RefinementDecision.iteration) > iteration - patience,
        )
    ).all()
    return not accepted


def _stop(loop: RefinementLoop, reason: str, *, session: Session) -> None:
    loop.status, loop.stop_reason = "done", reason
    session.add(loop)
    session.commit()


def refine(
    config: RefineConfig,
    *,
    session: Session,
    progress: Progress | None = None,
    notify: Notify | None = None,
) -> RefineResult:
    """Run (or resume, or read back) the loop these options describe.

    Args:
        config: The options.
        session: Open session (committed step by step).
        progress: ``progress(rounds done, max rounds)``.
        notify: Receives one line per round and per decision.

    Raises:
        ConfigError: bad options (nothing stored).
        InputError: an unknown run, a run with no parsed steps, an unknown version; an
            LLM labeler that is the run's model without ``config.allow_self_judging``
            (refused before the loop is stored).
        NotFoundError: no run of that name.
    """
    check_config(config)
    check_labeler_roles(
        config.run, config.labelers, session=session, allow_self=config.allow_self_judging
    )
    say = notify or (lambda _line: None)
    loop = find_or_create_loop(config, session=session)
    if loop.status != "running":
        return loop_result(loop.id or 0, session=session)
    try:
        # One process per loop: a second one (a double click, a shell and a page) is refused.
        lease = acquire_lease(f"refinement_loop:{loop.id}", session=session, what=f"loop {loop.id}")
    except LeaseHeldError:
        raise ConfigError(
            f"refinement loop {loop.id} is running in another process; wait for it"
        ) from None
    try:
        _run(loop, config, session=session, progress=progress, notify=say)
    finally:
        session.rollback()
        release_lease(lease, session=session)
    return loop_result(loop.id or 0, session=session)


def _run(
    loop: RefinementLoop,
    config: RefineConfig,
    *,
    session: Session,
    progress: Progress | None,
    notify: Notify,
) -> None:
    """Iterate until a stop rule ends the loop or it pauses for a researcher's review."""
    say = notify
    while loop.status == "running":
        rounds = list(
            session.exec(
                select(RefinementRound)
                .where(RefinementRound.loop_id == loop.id)
                .order_by(col(RefinementRound.iteration))
            )
        )
        if progress is not None:
            progress(len(rounds), config.max_rounds)
        last = rounds[-1] if rounds else None
        if last is not None and last.metrics.get("closed"):
            if _held_target(rounds, config.target):
                _stop(loop, "target", session=session)
            elif len(rounds) >= config.max_rounds:
                _stop(loop, "round_limit", session=session)
            elif _plateau(loop, last.iteration, config.patience, session=session):
                _stop(loop, "plateau", session=session)
            else:
                last = None  # next iteration
        if loop.status != "running":
            break
        if last is None:
            iteration = len(rounds)
            row = labeling_round(loop, config, iteration, session=session, progress=None)
            labels = label_map(round_records(row.number, session=session))
            metrics = round_metrics(row.number, labels, config, session=session)
            last = RefinementRound(
                loop_id=loop.id or 0,
                iteration=iteration,
                round_id=row.id or 0,
                version_id=loop.current_version_id,
                metrics=metrics,
            )
            session.add(last)
            session.commit()
            label = version_label(get_version(loop.current_version_id, session=session))
            say(f"round {row.number} (iteration {iteration + 1}) under {label}: "
                f"mean pairwise {metrics['mean_pairwise']:.3f}")  # fmt: skip
            rounds.append(last)
        if _iterate(loop, config, last, rounds, session=session, notify=say):
            break  # paused for review: the same command goes on after the decision
    if progress is not None and loop.status != "running":
        progress(config.max_rounds, config.max_rounds)


def _iterate(
    loop: RefinementLoop,
    config: RefineConfig,
    last: RefinementRound,
    rounds: list[RefinementRound],
    *,
    session: Session,
    notify: Notify,
) -> bool:
    """The rewrite part of an iteration, then mark it closed (a resume skips it).

    Returns:
        Whether the loop paused for a researcher's review (the iteration stays open).
    """
    mean = last.metrics["mean_pairwise"]
    final = _held_target(rounds, config.target) or len(rounds) >= config.max_rounds
    if not final and mean < config.target:
        round_row = session.get(LabelingRound, last.round_id)
        assert round_row is not None
        records = round_records(round_row.number, session=session)
        labels = label_map(records)
        texts = step_texts(sorted({r.response_id for r in records}), session=session)
        pairs = [p for p in pair_table(labels, config.labelers) if p.agreement < config.trigger]
        for p in pairs[: config.max_pairs]:
            pair = (p.leaf_a, p.leaf_b)
            outcome = _decide(loop, config, last.iteration, round_row, pair, labels, texts,
                              session=session, notify=notify)  # fmt: skip
            if outcome == "paused":
                return True
            if outcome == "accepted":
                break
    last.metrics = {**last.metrics, "closed": True}
    session.add(last)
    session.commit()
    return False


def loop_result(loop_id: int, *, session: Session) -> RefineResult:
    """A stored loop with its rounds and decisions."""
    loop = session.get(RefinementLoop, loop_id)
    assert loop is not None
    rounds = session.exec(
        select(RefinementRound)
        .where(RefinementRound.loop_id == loop_id)
        .order_by(col(RefinementRound.iteration))
    ).all()
    decisions = session.exec(
        select(RefinementDecision)
        .where(RefinementDecision.loop_id == loop_id)
        .order_by(col(RefinementDecision.id))
    ).all()
    labels: dict[int, str] = {}

    def label(vid: int | None) -> str | None:
        if vid is None:
            return None
        if vid not in labels:
            labels[vid] = version_label(get_version(vid, session=session))
        return labels[vid]

    round_rows: list[dict[str, Any]] = [
        {"iteration": r.iteration + 1, "version": label(r.version_id),
         **{k: v for k, v in r.metrics.items() if k != "closed"}}
        for r in rounds
    ]  # fmt: skip
    decision_rows = [
        {
            "iteration": d.iteration + 1,
            "pair": [d.leaf_a, d.leaf_b],
            "attempt": d.attempt,
            "proposal": d.proposal_id,
            "decision": d.decision,
            "reasons": list(d.reasons),
            "gate": dict(d.gate),
            "n_evidence": len(d.evidence_ids),
            "heldout_ids": list(d.heldout_ids),
            "n_control": len(d.control_ids),
            "version": label(d.version_id),
        }
        for d in decisions
    ]
    waiting = loop.status == "running" and any(d.decision == REVIEW for d in decisions)
    return RefineResult(
        loop_id=loop_id,
        status="paused" if waiting else loop.status,
        stop_reason=loop.stop_reason,
        start_version=label(loop.start_version_id) or "",
        final_version=label(loop.current_version_id) or "",
        rounds=tuple(round_rows),
        decisions=tuple(decision_rows),
        config=dict(loop.config),
    )


__all__ = ["RefineConfig", "RefineResult", "Split", "loop_result", "refine"]
