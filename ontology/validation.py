"""Validation experiments of the ontology studio (SPEC §5).

* :func:`within_model_stability` — the same labeler labels the same responses twice at
  T = 1 (repeats 0 and 1); agreement between the two passes (reference > 80%).
* :func:`definition_robustness` — every leaf definition is rewritten by a model into a
  semantically equivalent form, stored as a derived ontology (``<name>~paraphrase``, parent
  = the original), the responses are relabeled under it, and labels under the two wordings
  are compared step by step (reference > 83%).
* :func:`cross_model_table` — the same sample labeled by the same labelers under the
  refined and the original-style ontology: pairwise agreement and alpha side by side.
* :func:`human_label_check` — the Label Studio hand-off: the ``label_check`` study of the
  annotation room shows question, step, assigned label and its definition; this returns the
  exact command that pushes a round's labels there.

Each returns a :class:`ValidationReport` (rows plus the reference to compare with).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from llm.specs import ModelSpec
from ontology.agreement_tracking import LabelRecord, compute_agreement
from ontology.labeler_roles import round_labeler_roles
from ontology.labelers.base import Progress
from ontology.labelers.registry import ensure_labeler_spec, parse_labeler_spec, with_temperature
from ontology.prompts import definition_block, paraphrase_messages
from ontology.rewrite import ask
from ontology.round_labeling import label_responses
from ontology.rounds import require_round, run_round
from ontology.versions import document, ensure_version, get_version, replace_definitions
from storage.models import OntologyVersion, Response
from storage.repo import ontology_rounds as q
from storage.repo import rounds as round_repo


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of one validation experiment."""

    experiment: str
    description: str
    rows: tuple[dict[str, Any], ...]
    reference: str
    notes: tuple[str, ...] = field(default_factory=tuple)


def _round_responses(number: int, *, session: Session) -> tuple[list[Response], OntologyVersion]:
    row = require_round(number, session=session)
    ids = round_repo.round_response_ids(row.id or 0, session=session)
    responses = sorted(q.responses_by_id(ids, session=session).values(), key=lambda r: r.id or 0)
    return responses, get_version(row.ontology_version_id, session=session)


def _records(
    responses: list[Response],
    spec: str,
    *,
    version: OntologyVersion,
    repeat: int,
    name: str,
    session: Session,
) -> list[LabelRecord]:
    row = ensure_labeler_spec(spec, session=session)
    assert row.id is not None and version.id is not None
    labels = q.labels_of(
        [r.id for r in responses if r.id is not None],
        labeler_ids=[row.id],
        ontology_version_id=version.id,
        repeat=repeat,
        session=session,
    )
    return [LabelRecord(x.response_id, x.step_index, name, x.category, x.symbol) for x in labels]


def _agreement_row(records: list[LabelRecord], a: str, b: str) -> dict[str, Any]:
    agreement = compute_agreement(records, labelers=[a, b])
    key = f"{a}|{b}"
    alpha = agreement.krippendorff_alpha
    return {
        "agreement": agreement.pairwise.get(key, math.nan),
        "kappa": agreement.kappa.get(key, math.nan),
        "krippendorff_alpha": alpha,
        "n_steps": agreement.pairwise_n.get(key, 0),
    }


def within_model_stability(
    number: int,
    labeler: str,
    *,
    session: Session,
    temperature: float = 1.0,
    progress: Progress | None = None,
    allow_self_judging: bool = False,
) -> ValidationReport:
    """Label a round's responses twice with one labeler at ``temperature``; compare.

    An LLM labeler that is the model of the round's run is refused before any request
    unless ``allow_self_judging`` (:mod:`ontology.labeler_roles`; the role is stored).
    """
    responses, version = _round_responses(number, session=session)
    spec = with_temperature(labeler, temperature)
    round_labeler_roles(number, [spec], session=session, allow_self=allow_self_judging)
    session.commit()
    for repeat in (0, 1):
        label_responses(responses, [spec], version=version, session=session, repeat=repeat,
                        progress=progress)  # fmt: skip
    records = [
        *_records(responses, spec, version=version, repeat=0, name="pass 1", session=session),
        *_records(responses, spec, version=version, repeat=1, name="pass 2", session=session),
    ]
    row = {"labeler": spec, "round": number, **_agreement_row(records, "pass 1", "pass 2")}
    notes: tuple[str, ...] = ()
    if parse_labeler_spec(spec).kind in ("keywords", "embed"):
        notes = ("this labeler is deterministic, so two passes always agree",)
    return ValidationReport(
        "stability",
        "Same labeler, same responses, labeled twice at T = 1.",
        (row,),
        "reference: > 80% agreement",
        notes,
    )


def paraphrase_version(
    version: OntologyVersion, *, model: ModelSpec, session: Session, seed: int = 0
) -> tuple[OntologyVersion, list[str]]:
    """Store a meaning-preserving rewrite of every leaf definition as a derived ontology.

    Returns:
        The derived version (named ``<name>~paraphrase``, parent = ``version``) and the
        leaves whose paraphrase could not be parsed (they keep their wording).
    """
    doc = document(version)
    blocks: dict[str, str] = {}
    failed: list[str] = []
    for name in doc.leaf_names:
        messages = paraphrase_messages(name, definition_block(doc.leaf(name)))
        defs, _raw, _error = ask(model, messages, session=session, seed=seed, count=1)
        if defs is None:
            failed.append(name)
        else:
            blocks[name] = defs[0]
    paraphrased = replace_definitions(doc, blocks).model_copy(
        update={"name": f"{doc.name}~paraphrase"}
    )
    derived = ensure_version(
        paraphrased,
        session=session,
        author=str(model),
        note=f"paraphrase of every definition of {version.name}@{version.version}",
        parent_id=version.id,
    )
    session.commit()
    return derived, failed


def definition_robustness(
    number: int,
    labeler: str,
    *,
    model: ModelSpec,
    session: Session,
    progress: Progress | None = None,
    allow_self_judging: bool = False,
) -> ValidationReport:
    """Relabel a round's responses under paraphrased definitions; compare step by step.

    The labeler's role is checked (and stored) before the paraphrases are asked for, as
    in :func:`within_model_stability`. The paraphrasing ``model`` grades nothing.
    """
    responses, version = _round_responses(number, session=session)
    round_labeler_roles(number, [labeler], session=session, allow_self=allow_self_judging)
    session.commit()
    derived, failed = paraphrase_version(version, model=model, session=session)
    for v in (version, derived):
        label_responses(responses, [labeler], version=v, session=session, progress=progress)
    records = [
        *_records(responses, labeler, version=version, repeat=0, name="original", session=session),
        *_records(
            responses, labeler, version=derived, repeat=0, name="paraphrase", session=session
        ),
    ]
    row = {
        "labeler": labeler,
        "round": number,
        "paraphrase_version": f"{derived.name}@{derived.version}",
        **_agreement_row(records, "original", "paraphrase"),
    }
    notes = tuple(f"paraphrase of {name!r} could not be parsed; kept as is" for name in failed)
    return ValidationReport(
        "robustness",
        "Every definition rewritten into an equivalent form, same labeler, same responses.",
        (row,),
        "reference: > 83% agreement",
        notes,
    )


def cross_model_table(
    run: str,
    labelers: list[str],
    *,
    session: Session,
    sample: int = 100,
    seed: int = 0,
    ontologies: tuple[str, ...] = ("driftlens", "original"),
    progress: Progress | None = None,
    allow_self_judging: bool = False,
) -> ValidationReport:
    """One round per ontology over the same sample; agreement side by side.

    ``allow_self_judging`` lets an LLM labeler be the run's model (each round refuses it
    otherwise, before anything is stored).
    """
    rows = []
    for ref in ontologies:
        result = run_round(
            run, labelers, session=session, sample=sample, seed=seed, ontology_version=ref,
            progress=progress, allow_self_judging=allow_self_judging,
        )  # fmt: skip
        rows.append(
            {
                "ontology_version": result.ontology_version,
                "round": result.round,
                "n_steps": result.agreement.n_steps,
                "mean_pairwise": result.agreement.mean_pairwise,
                "krippendorff_alpha": result.agreement.krippendorff_alpha,
                **{f"pair {k}": v for k, v in result.agreement.pairwise.items()},
            }
        )
    return ValidationReport(
        "cross",
        "Same responses and labelers under the refined and the original-style ontology.",
        tuple(rows),
        "reference: below 40-50% (original) versus above 83% (refined) for LLM labelers",
    )


def human_label_check(
    number: int, labeler: str, *, session: Session, limit: int = 100
) -> ValidationReport:
    """The Label Studio hand-off for checking a labeler's labels in a round."""
    row = require_round(number, session=session)
    version = get_version(row.ontology_version_id, session=session)
    from storage.models import GenerationRun

    run = session.get(GenerationRun, row.run_id)
    spec = ensure_labeler_spec(labeler, session=session)
    select = [
        f"run={run.name if run else row.run_id}",
        f"labeler={spec.name}",
        f"ontology={version.name}@{version.version}",
        f"limit={limit}",
    ]
    # Shell-quoted: a run or labeler name may hold quotes, spaces, < or >.
    command = shlex.join(
        ["driftlens", "annotate", "push", "label_check"]
        + [word for item in select for word in ("--select", item)]
    )
    return ValidationReport(
        "human",
        "Annotators see question, step, assigned label and its definition: Yes / No / Unsure.",
        ({"round": number, "labeler": labeler, "command": command, "select": select},),
        "reference: 95/100 labels judged correct",
        (
            "push the study (`driftlens ontology validate human --push` or the command), "
            "let three annotators label, then run "
            "`driftlens annotate pull label_check` and `driftlens annotate apply label_check`",
        ),
    )
