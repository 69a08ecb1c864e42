"""The refinement loop as one resumable loop (``driftlens ontology refine``, SPEC §5).

Each iteration labels a fresh stratified sample of a run under the loop's current version
(an ordinary labeling round), measures agreement, and stops when the mean pairwise
agreement held the target for two rounds, when no rewrite was accepted for ``patience``
rounds (a plateau), or at the round limit. Otherwise, for the most confused leaf pairs
whose agreement is under the trigger (at most ``max_pairs`` a round), it asks the rewriter
for new definitions and **gates** each proposal (:mod:`ontology.refinement_gate`): accepted
only if it beats the current text on held-out steps. A rejected proposal is stored with its
reasons, and the rewriter is asked once more with them before the loop moves to the next
pair. Every decision is a ``refinement_decision`` row.

Resuming is running the same command again: the loop is found by a digest of its options,
a round it had started is adopted (same run, version, seed, sample and labelers: the same
round) or finished with the round's own resume, a proposal it had stored is reused, and
labels and model requests come from the stores. A decision, the version it creates and the
loop's new current version are committed in one transaction, so a loop killed anywhere
(SIGKILL included) resumes with no duplicated round, proposal or version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlmodel import Session, select

from llm.seeds import stable_int
from llm.specs import SpecField
from ontology.labelers.base import LabelItem, Progress, label_items
from ontology.labelers.registry import make_labeler, parse_labeler_spec
from ontology.prompts import REWRITE_RETRY, definition_block, rewrite_messages
from ontology.refinement_gate import (
    GateResult,
    LabelMap,
    Split,
    gate_statistics,
    impact_share,
    pair_table,
)
from ontology.rewrite import ask, chat_backend
from ontology.rounds import round_detail, round_state, run_round
from ontology.versions import (
    document,
    get_version,
    replace_definitions,
    seed_ontologies,
    version_label,
)
from storage.errors import ConfigError, InputError
from storage.models import LabelingRound, Response, RewriteProposal
from storage.refinement_models import RefinementLoop
from storage.repo import ontology_rounds as q
from storage.repo import rounds as round_repo
from storage.repo.runs import require_run

#: Rewrite evidence shown to the model (the rest of the training split is kept on the row).
MAX_EXAMPLES = 20


class RefineConfig(BaseModel):
    """The options of one loop (``driftlens ontology refine``); their digest is its key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    run: str
    labelers: tuple[str, ...]
    rewriter: SpecField
    ontology_version: str | None = None
    target: float = 0.83
    trigger: float = 0.70
    max_rounds: int = 78
    sample: int = 100
    holdout: float = 0.3
    margin: float = 0.02
    review: Literal["auto", "pause"] = "auto"
    seed: int = 0
    #: rounds without an accepted rewrite before a plateau stop
    patience: int = 5
    max_pairs: int = 3
    control: int = 30
    gate: bool = True
    #: Let an LLM labeler be the model that generated the run (``--allow-self-judging``).
    #: A permission, not an option of the loop: left out of :meth:`key`, so the loops
    #: stored before it existed keep their keys, and every round checks it again.
    allow_self_judging: bool = False

    def key(self) -> str:
        """A digest of the options: the same command finds the same loop."""
        options = self.model_dump(mode="json", exclude={"allow_self_judging"})
        text = json.dumps(options, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def check_config(config: RefineConfig) -> None:
    """Refuse bad options in one sentence each, before anything is stored.

    Raises:
        ConfigError: the first problem found.
    """
    if not 0.0 < config.trigger < 1.0 or not 0.0 < config.target <= 1.0:
        raise ConfigError("--target and --trigger are agreement shares between 0 and 1")
    if config.target <= config.trigger:
        raise ConfigError(
            f"--target ({config.target:g}) must be above --trigger ({config.trigger:g})"
        )
    if not 0.0 < config.holdout < 1.0:
        raise ConfigError(f"--holdout must be above 0 and below 1, not {config.holdout:g}")
    if len(config.labelers) < 2:
        raise ConfigError("the loop needs at least two labelers (--labelers A,B[,C])")
    if len(set(config.labelers)) != len(config.labelers):
        raise ConfigError("each labeler may appear only once in --labelers")
    for spec in config.labelers:
        parse_labeler_spec(spec)
    for name, value in (("--max-rounds", config.max_rounds), ("--sample", config.sample)):
        if value < 1:
            raise ConfigError(f"{name} must be at least 1")
    if config.margin < 0.0 or config.patience < 1 or config.max_pairs < 1:
        raise ConfigError("--margin must be >= 0, --patience and --max-pairs >= 1")
    chat_backend(config.rewriter)  # an unknown simulator preset stops here


@dataclass(frozen=True)
class RefineResult:
    """A loop as stored: its rounds, its decisions and why it stopped."""

    loop_id: int
    status: str
    stop_reason: str | None
    start_version: str
    final_version: str
    rounds: tuple[dict[str, Any], ...]
    decisions: tuple[dict[str, Any], ...]
    config: dict[str, Any]

    @property
    def start_agreement(self) -> float | None:
        """Mean pairwise agreement (share) of the first round."""
        return self.rounds[0]["mean_pairwise"] if self.rounds else None

    @property
    def final_agreement(self) -> float | None:
        """Mean pairwise agreement (share) of the last round."""
        return self.rounds[-1]["mean_pairwise"] if self.rounds else None

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {
            "loop": self.loop_id,
            "status": self.status,
            "stop_reason": self.stop_reason,
            "start_version": self.start_version,
            "final_version": self.final_version,
            "start_agreement": self.start_agreement,
            "final_agreement": self.final_agreement,
            "n_rounds": len(self.rounds),
            "n_proposals": sum(1 for d in self.decisions if d["proposal"] is not None),
            "n_accepted": sum(1 for d in self.decisions if d["decision"].startswith("accepted")),
            "rounds": list(self.rounds),
            "decisions": list(self.decisions),
            "config": self.config,
        }


# ------------------------------------------------------------------------------ store


def find_or_create_loop(config: RefineConfig, *, session: Session) -> RefinementLoop:
    """The loop of these options, created (after the run is checked) when new.

    Raises:
        InputError: an unknown run, a run with no parsed steps, an unknown version.
    """
    row = session.exec(select(RefinementLoop).where(RefinementLoop.key == config.key())).first()
    if row is not None:
        return row
    run = require_run(config.run, session=session)
    eligible = [i for i in session.exec(select(Response.id).where(Response.run_id == run.id)) if i]
    if not any(r.steps for r in q.responses_by_id(eligible, session=session).values()):
        raise InputError(f"run {config.run!r} has no responses with parsed steps to label")
    seed_ontologies(session=session)  # only once the options and the run are known good
    version = get_version(config.ontology_version, session=session)
    assert version.id is not None
    row = RefinementLoop(
        key=config.key(),
        config=config.model_dump(mode="json"),
        start_version_id=version.id,
        current_version_id=version.id,
    )
    session.add(row)
    session.commit()
    return row


def _round_seed(config: RefineConfig, iteration: int) -> int:
    return stable_int("refine-round", config.seed, iteration) % 2**31


def labeling_round(
    loop: RefinementLoop, config: RefineConfig, iteration: int, *, session: Session,
    progress: Progress | None,
) -> LabelingRound:  # fmt: skip
    """This iteration's round: adopted when it exists (finished if interrupted), else run."""
    seed = _round_seed(config, iteration)
    run = require_run(config.run, session=session)
    for row in round_repo.list_rounds(session=session):
        same = (
            row.run_id == run.id
            and row.ontology_version_id == loop.current_version_id
            and row.seed == seed
            and row.sample_size == config.sample
            and list(row.labelers) == list(config.labelers)
        )
        if not same:
            continue
        if round_state(row, session=session) in ("interrupted", "pending"):
            run_round(
                "", [], session=session, resume=row.number, progress=progress,
                allow_self_judging=config.allow_self_judging,
            )  # fmt: skip
            session.refresh(row)
        return row
    result = run_round(
        config.run,
        list(config.labelers),
        session=session,
        sample=config.sample,
        seed=seed,
        ontology_version=loop.current_version_id,
        progress=progress,
        allow_self_judging=config.allow_self_judging,
    )
    made = round_repo.get_round(result.round, session=session)
    assert made is not None
    return made


def round_metrics(
    number: int, labels: LabelMap, config: RefineConfig, *, session: Session
) -> dict[str, Any]:
    """A round's agreement as the loop stores it (shares, not percent; top leaf pairs)."""
    a = round_detail(number, session=session).agreement
    pairs = pair_table(labels, config.labelers)
    return {
        "round": number,
        "n_steps": a.n_steps,
        "mean_pairwise": a.mean_pairwise / 100.0,
        "pairwise": {k: v / 100.0 for k, v in a.pairwise.items()},
        "krippendorff_alpha": a.krippendorff_alpha,
        "pairs": [
            {"leaf_a": p.leaf_a, "leaf_b": p.leaf_b, "split": p.split, "agreement": p.agreement}
            for p in pairs[:10]
        ],
    }


# ------------------------------------------------------------------------ proposals


def _proposal_for(
    round_row: LabelingRound, tag: dict[str, Any], *, session: Session
) -> RewriteProposal | None:
    for p in session.exec(
        select(RewriteProposal).where(RewriteProposal.round_id == round_row.id)
    ).all():
        if p.request.get("refine") == tag:
            return p
    return None


def propose(
    round_row: LabelingRound,
    pair: tuple[str, str],
    split: Split,
    texts: dict[tuple[int, int], str],
    *,
    config: RefineConfig,
    tag: dict[str, Any],
    reasons: list[str],
    previous: RewriteProposal | None,
    session: Session,
) -> RewriteProposal:
    """Ask the rewriter (again, with the gate's reasons, when ``previous`` is given)."""
    found = _proposal_for(round_row, tag, session=session)
    if found is not None:
        return found
    version = get_version(round_row.ontology_version_id, session=session)
    doc = document(version)
    a, b = pair
    old_a, old_b = definition_block(doc.leaf(a)), definition_block(doc.leaf(b))
    shown = split.evidence[:MAX_EXAMPLES]
    messages = rewrite_messages(a, old_a, b, old_b, [texts.get(k, "") for k in shown])
    if previous is not None and previous.raw_output:
        messages += [
            ("assistant", previous.raw_output.split("\n----- repair -----\n")[-1]),
            ("user", REWRITE_RETRY.format(reasons="; ".join(reasons))),
        ]
    seed = stable_int("refine-rewrite", config.seed, *tag.values()) % 2**31
    defs, raws, error = ask(config.rewriter, messages, session=session, seed=seed, count=2)
    proposal = RewriteProposal(
        round_id=round_row.id,
        base_version_id=version.id,
        leaf_a=a,
        leaf_b=b,
        model=str(config.rewriter),
        request={
            "round": round_row.number,
            "ontology_version_id": version.id,
            "ontology_version": version_label(version),
            "pair": [a, b],
            "seed": seed,
            "messages": [{"role": r, "content": c} for r, c in messages],
            "error": error,
            "refine": tag,
            "heldout_ids": [list(k) for k in split.heldout],
        },
        raw_output="\n----- repair -----\n".join(raws) or None,
        def_a_old=old_a,
        def_b_old=old_b,
        def_a_new=defs[0] if defs else None,
        def_b_new=defs[1] if defs else None,
        evidence=[
            {"response_id": k[0], "step_index": k[1], "text": texts.get(k, "")} for k in shown
        ],
        status="pending" if defs else "unparseable",
    )
    session.add(proposal)
    session.commit()
    return proposal


def relabel(
    keys: list[tuple[int, int]], labelers: tuple[str, ...], doc: Any, *, session: Session
) -> LabelMap:
    """Label the responses holding ``keys`` under ``doc`` (not stored; requests cached)."""
    rids = sorted({rid for rid, _ in keys})
    responses = q.responses_by_id(rids, session=session)
    items = [LabelItem(str(rid), tuple(responses[rid].steps), 0) for rid in rids]
    wanted = set(keys)
    out: LabelMap = {}
    for spec in labelers:
        results = label_items(make_labeler(spec), items, ontology=doc, session=session)
        for rid, labels in zip(rids, results, strict=True):
            for lab in labels:
                if (rid, lab.step_index) in wanted:
                    out.setdefault((rid, lab.step_index), {})[spec] = lab.symbol
    return out


def gate_proposal(
    proposal: RewriteProposal,
    labels: LabelMap,
    split: Split,
    *,
    config: RefineConfig,
    session: Session,
) -> GateResult | None:
    """Relabel the held-out and control steps under a proposal and run the gate.

    Returns:
        The gate's result (with the impact estimate), or ``None`` when the proposal has
        no usable definitions.
    """
    if not proposal.def_a_new or not proposal.def_b_new:
        return None
    base = document(get_version(proposal.base_version_id or 0, session=session))
    try:
        proposed = replace_definitions(
            base, {proposal.leaf_a: proposal.def_a_new, proposal.leaf_b: proposal.def_b_new}
        )
    except InputError:
        return None
    keys = [*split.heldout, *split.control]
    after = relabel(keys, config.labelers, proposed, session=session)
    before = {k: labels[k] for k in keys if k in labels}
    pair = (proposal.leaf_a, proposal.leaf_b)
    seed = stable_int("refine-gate", config.seed, proposal.id or 0) % 2**31
    result = gate_statistics(
        before, after, split, config.labelers, pair, margin=config.margin, seed=seed
    )
    touching = sum(1 for step in labels.values() if set(step.values()) & set(pair))
    impact = impact_share(
        before, after, split, config.labelers,
        pair_weight=touching / len(labels) if labels else 0.0, seed=seed,
    )  # fmt: skip
    return replace(result, impact=impact)
