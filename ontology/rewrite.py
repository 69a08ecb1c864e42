"""Definition rewriting: ask a model to separate the two most-confused leaves (SPEC §5).

:func:`propose_rewrite` collects the steps labelers split between two leaves in a round,
builds the rewrite request, parses ``<def1>``/``<def2>`` strictly (one repair retry) and
stores a :class:`~storage.models.RewriteProposal` with everything it was built from,
including its base version (the round's). :func:`accept_proposal` turns a proposal
(optionally edited by the researcher) into a new ontology version whose parent is the
*newest* version of that ontology: when versions were made since the base, the proposal's
two definitions are re-applied on top of the newest one, unless one of those two
definitions itself changed since the base, which is refused as a conflict (never a silent
revert). :func:`reject_proposal` records the decision. Nothing ever changes a stored
version in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session

from llm.specs import ModelSpec
from llm.structured import with_format
from llm.types import ChatBackend, ChatMessage, ChatRequest, SamplingParams
from ontology.agreement_tracking import ConfusedPair, compute_agreement
from ontology.parsing import AnswerParseError, definitions_format, parse_definitions
from ontology.prompts import REWRITE_PROMPT_VERSION, definition_block, rewrite_messages
from ontology.rounds import require_round, round_records, step_texts
from ontology.schema import UNMAPPED, OntologyDoc
from ontology.versions import (
    document,
    get_version,
    new_version,
    replace_definitions,
    version_label,
)
from storage.errors import InputError, NotFoundError
from storage.models import OntologyVersion, RewriteProposal
from storage.repo import rounds as round_repo
from storage.yaml_input import load_yaml, read_text_file

REPAIR = (
    "Your reply could not be used: {error}. Answer again with the first definition inside "
    "<def1></def1> and the second inside <def2></def2>, and nothing else."
)


def chat_backend(spec: ModelSpec) -> ChatBackend | ModelSpec:
    """The backend for ``spec``: the simulated studio model for ``sim/…``, else the spec.

    Raises:
        ConfigError: ``sim/<preset>`` names no simulator preset (the studio model answers
            any prompt, so a typo would otherwise be stored as a real proposal).
    """
    if spec.simulated:
        from llm.sim.registry import get_preset
        from ontology.labelers.sim import SimStudioBackend
        from ontology.labelers.sim_rewriters import REWRITER_PRESETS

        if spec.spec in REWRITER_PRESETS:
            # sim/rewriter-operational answers like sim/default (same cache keys)
            return SimStudioBackend(rewriter=spec.model.removeprefix("rewriter-"))
        get_preset(spec.spec)
        return SimStudioBackend()
    return spec


def ask(
    model: ModelSpec,
    messages: list[tuple[str, str]],
    *,
    session: Session | None,
    seed: int = 0,
    count: int = 1,
) -> tuple[tuple[str, ...] | None, list[str], str]:
    """Send a ``<defN>`` request with one repair retry.

    Returns:
        ``(definitions or None, raw replies, last error)``.
    """
    from llm.batch import run_chat_batch

    raws: list[str] = []
    error = ""
    history = list(messages)
    for _attempt in (0, 1):
        request = with_format(
            ChatRequest(
                messages=tuple(ChatMessage(role=r, content=c) for r, c in history),
                sampling=SamplingParams(
                    temperature=0.0, top_p=1.0, top_k=None, repetition_penalty=None, seed=seed
                ),
            ),
            definitions_format(count),
        )
        [result] = run_chat_batch(chat_backend(model), [request], session=session)
        if result.error is not None or result.text is None:
            return None, raws, result.error or "empty reply"
        raws.append(result.text)
        try:
            return parse_definitions(result.text, count=count), raws, ""
        except AnswerParseError as exc:
            error = str(exc)
            history += [("assistant", result.text), ("user", REPAIR.format(error=error))]
    return None, raws, error


def _resolve_leaf(doc: OntologyDoc, ref: str) -> str:
    ref = ref.strip()
    if ref.isdigit():
        k = int(ref)
        if 1 <= k <= len(doc.leaf_names):
            return doc.leaf_names[k - 1]
    for name in doc.leaf_names:
        if name.lower() == ref.lower():
            return name
    raise InputError(f"no leaf {ref!r} in ontology {doc.name!r}")


def _pick_pair(
    confused: tuple[ConfusedPair, ...], doc: OntologyDoc, pair: tuple[str, str] | None, number: int
) -> ConfusedPair:
    if pair is None:
        usable = [p for p in confused if UNMAPPED not in (p.leaf_a, p.leaf_b)]
        if not usable:
            raise InputError(f"labelers never split a step between two leaves in round {number}")
        return usable[0]
    a, b = sorted((_resolve_leaf(doc, pair[0]), _resolve_leaf(doc, pair[1])))
    if a == b:
        raise InputError("--pair needs two different leaves")
    for p in confused:
        if (p.leaf_a, p.leaf_b) == (a, b):
            return p
    raise InputError(f"labelers never split a step between {a!r} and {b!r} in round {number}")


def propose_rewrite(
    number: int,
    *,
    model: ModelSpec,
    session: Session,
    pair: tuple[str, str] | None = None,
    max_examples: int = 12,
    seed: int = 0,
) -> RewriteProposal:
    """Ask ``model`` to rewrite the two most-confused definitions of a round.

    Args:
        number: The round.
        model: The rewriter's parsed spec (``sim/default`` answers offline).
        session: Open session.
        pair: Two leaves (names or symbols) instead of the most-confused pair.
        max_examples: Disagreeing steps shown to the model.
        seed: Sampling seed of the request.

    Returns:
        The stored proposal (status ``pending``, or ``unparseable`` when the model's reply
        could not be parsed even after the repair request).
    """
    row = require_round(number, session=session)
    chat_backend(model)  # an unknown simulator preset stops here: nothing is stored
    version = get_version(row.ontology_version_id, session=session)
    doc = document(version)
    records = round_records(number, session=session)
    texts = step_texts(sorted({r.response_id for r in records}), session=session)
    agreement = compute_agreement(
        records, labelers=list(row.labelers), texts=texts, top=10_000, examples=max_examples
    )
    chosen = _pick_pair(agreement.most_confused, doc, pair, number)
    leaf_a, leaf_b = chosen.leaf_a, chosen.leaf_b
    old_a, old_b = definition_block(doc.leaf(leaf_a)), definition_block(doc.leaf(leaf_b))
    evidence = [
        {
            "response_id": e.response_id,
            "step_index": e.step_index,
            "text": e.text,
            "labels": e.labels,
        }
        for e in chosen.examples
    ]
    messages = rewrite_messages(leaf_a, old_a, leaf_b, old_b, [e.text for e in chosen.examples])
    defs, raws, error = ask(model, messages, session=session, seed=seed, count=2)
    request: dict[str, Any] = {
        "prompt_version": REWRITE_PROMPT_VERSION,
        "round": number,
        "ontology_version_id": version.id,
        "ontology_version": f"{version.name}@{version.version}",
        "pair": [leaf_a, leaf_b],
        "confusion_count": chosen.count,
        "confusion_rate": chosen.rate,
        "seed": seed,
        "messages": [{"role": r, "content": c} for r, c in messages],
        "error": error,
    }
    proposal = RewriteProposal(
        round_id=row.id,
        base_version_id=version.id,
        leaf_a=leaf_a,
        leaf_b=leaf_b,
        model=str(model),
        request=request,
        raw_output="\n----- repair -----\n".join(raws) or None,
        def_a_old=old_a,
        def_b_old=old_b,
        def_a_new=defs[0] if defs else None,
        def_b_new=defs[1] if defs else None,
        evidence=evidence,
        status="pending" if defs else "unparseable",
    )
    session.add(proposal)
    session.flush()
    session.commit()
    return proposal


def require_proposal(proposal_id: int, *, session: Session) -> RewriteProposal:
    """The proposal with this id.

    Raises:
        NotFoundError: no such proposal.
    """
    row = session.get(RewriteProposal, proposal_id)
    if row is None:
        raise NotFoundError(f"no rewrite proposal {proposal_id} in this workspace")
    return row


def read_edit_file(path: Path, proposal: RewriteProposal) -> tuple[str, str]:
    """Read edited definitions: YAML with ``def1``/``def2`` or the two leaf names as keys.

    Raises:
        InputError: the file is unreadable or lacks a definition.
    """
    data, _ = load_yaml(read_text_file(path, what="edit file"), source=str(path))
    if not isinstance(data, dict):
        raise InputError(f"{path} must be a mapping with def1 and def2 (or the two leaf names)")
    a = data.get("def1", data.get(proposal.leaf_a))
    b = data.get("def2", data.get(proposal.leaf_b))
    if not isinstance(a, str) or not isinstance(b, str) or not a.strip() or not b.strip():
        raise InputError(f"{path} needs both definitions (def1 and def2) as text")
    return a.strip(), b.strip()


def base_version(proposal: RewriteProposal, *, session: Session) -> OntologyVersion:
    """The version a proposal rewrites (its round's version)."""
    ref = proposal.base_version_id or proposal.request.get("ontology_version_id")
    if ref is None:
        raise InputError(f"proposal {proposal.id} does not record the version it rewrites")
    return get_version(int(ref), session=session)


def newest_version(name: str, *, session: Session) -> OntologyVersion:
    """The highest-numbered version of the ontology ``name``."""
    return get_version(name, session=session)


def accept_conflict(proposal: RewriteProposal, *, session: Session) -> str | None:
    """Why accepting would clash with newer work, or ``None`` when it can be applied.

    A proposal rewrites two leaves of its base version. Versions made since then may have
    changed other leaves (kept: the proposal is re-applied on top of them) or one of these
    two leaves (a conflict: applying the proposal would silently undo that change).
    """
    base = base_version(proposal, session=session)
    newest = newest_version(base.name, session=session)
    if newest.id == base.id:
        return None
    old, new = document(base), document(newest)
    for leaf in (proposal.leaf_a, proposal.leaf_b):
        if leaf not in new.leaf_names:
            return (
                f"proposal {proposal.id} rewrites {leaf!r} of {version_label(base)}, but "
                f"{version_label(newest)} has no leaf {leaf!r}; propose again from a round "
                f"on {version_label(newest)}"
            )
        if definition_block(old.leaf(leaf)) != definition_block(new.leaf(leaf)):
            return (
                f"proposal {proposal.id} rewrites {leaf!r} of {version_label(base)}, but its "
                f"definition changed in {version_label(newest)}; propose again from a round "
                f"on {version_label(newest)}"
            )
    return None


def accept_proposal(
    proposal_id: int,
    *,
    session: Session,
    def_a: str | None = None,
    def_b: str | None = None,
    author: str | None = None,
) -> OntologyVersion:
    """Accept a proposal (with optional edits): store a new version and link it.

    The new version's parent is the newest version of the ontology. When that is not the
    proposal's base, its two definitions are re-applied on top of the newest one (every
    other change since the base is kept).

    Raises:
        InputError: the proposal is decided already, has no definitions, changes nothing,
            or one of its two definitions changed since its base version (the message
            names the leaf and both versions).
    """
    proposal = require_proposal(proposal_id, session=session)
    if proposal.status not in ("pending", "unparseable"):
        raise InputError(f"proposal {proposal_id} is already {proposal.status}")
    new_a = def_a if def_a is not None else proposal.def_a_new
    new_b = def_b if def_b is not None else proposal.def_b_new
    if not new_a or not new_b:
        raise InputError(f"proposal {proposal_id} has no parsed definitions; accept it with --edit")
    conflict = accept_conflict(proposal, session=session)
    if conflict is not None:
        raise InputError(conflict)
    base = base_version(proposal, session=session)
    parent = newest_version(base.name, session=session)
    doc = replace_definitions(document(parent), {proposal.leaf_a: new_a, proposal.leaf_b: new_b})
    if doc.content_hash() == parent.content_hash:
        raise InputError(f"accepting proposal {proposal_id} would not change the ontology")
    round_number = proposal.request.get("round")
    note = (
        f"rewrite proposal {proposal_id} (round {round_number}): "
        f"{proposal.leaf_a} vs {proposal.leaf_b}"
    )
    if parent.id != base.id:
        note += f" (written against {version_label(base)}, applied on {version_label(parent)})"
    version = new_version(parent, doc, session=session, author=author, note=note)
    assert proposal.id is not None
    round_repo.decide_proposal(
        proposal.id,
        status="accepted",
        def_a_new=new_a,
        def_b_new=new_b,
        resulting_version_id=version.id,
        session=session,
    )
    session.commit()
    return version


def reject_proposal(proposal_id: int, *, session: Session) -> RewriteProposal:
    """Record that a proposal was rejected (the ontology is unchanged)."""
    proposal = require_proposal(proposal_id, session=session)
    if proposal.status not in ("pending", "unparseable"):
        raise InputError(f"proposal {proposal_id} is already {proposal.status}")
    assert proposal.id is not None
    row = round_repo.decide_proposal(proposal.id, status="rejected", session=session)
    session.commit()
    return row


@dataclass(frozen=True)
class ProposalSummary:
    """One line of the proposal list.

    ``base_version`` is the version the proposal rewrites, ``resulting_version`` the one
    accepting it made (``name@N`` labels, never database ids).
    """

    id: int
    round: int | None
    leaf_a: str
    leaf_b: str
    model: str | None
    status: str
    edited: bool
    resulting_version_id: int | None
    base_version: str | None = None
    resulting_version: str | None = None
    created_at: str = ""


def list_proposals(*, session: Session, status: str | None = None) -> list[ProposalSummary]:
    """Proposals, newest first."""
    labels: dict[int, str] = {}

    def label(ref: object) -> str | None:
        if ref is None:
            return None
        key = int(str(ref))
        if key not in labels:
            labels[key] = version_label(get_version(key, session=session))
        return labels[key]

    return [
        ProposalSummary(
            id=p.id or 0,
            round=p.request.get("round"),
            leaf_a=p.leaf_a,
            leaf_b=p.leaf_b,
            model=p.model,
            status=p.status,
            edited=p.edited,
            resulting_version_id=p.resulting_version_id,
            base_version=label(p.base_version_id or p.request.get("ontology_version_id")),
            resulting_version=label(p.resulting_version_id),
            created_at=p.created_at.isoformat(timespec="seconds"),
        )
        for p in round_repo.list_proposals(session=session, status=status)
    ]
