"""Memory conflicts' human studies: the rubric check and bank observability.

* ``conflict_rubric``: the judge's D1-D5 scores against the annotators' per conflict type
  (within one, exact, MAE, quadratic-weighted kappa, ordinal alpha).
* ``bank_observability``: the annotators' FULL / PARTIAL / None label of an extracted bank
  against each other and against the extractor's own label (agreement and kappa).

Each kind registers itself with :mod:`annotation.kinds` when this module is imported.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sqlmodel import Session

from annotation.aggregate import AggregationConfig, StudyAggregate
from annotation.agreement import LabelAgreement, label_agreement
from annotation.judge_pairs import CalibrationPairs
from annotation.kinds import ApplyResult, ApplySummary, SummaryTable, num, register_kinds
from annotation.selection import Selection, TaskSpec
from annotation.studies import QuestionSpec, StudySpec
from annotation.tasks import (
    CONFLICT_CLASS,
    pair_response_scores,
    response_key,
    selected_responses,
)
from storage.errors import InputError
from storage.models import GenerationRun
from study.conflicts.actions import ACTIONS
from study.named import by_name

CONFIGS = Path(__file__).resolve().parent / "configs"

#: The rubric's ordinal scale.
SCORES: tuple[str, ...] = ("0", "1", "2", "3", "4")
#: D3's vote for an abstention (:mod:`study.conflicts.actions`): no point on the scale.
NOT_APPLICABLE = "n/a"

#: Labels of an extracted memory bank (study/conflicts/observability.py).
OBSERVABILITY: tuple[str, ...] = ("FULL", "PARTIAL", "None")


SPECS: dict[str, StudySpec] = by_name(
    StudySpec(
        name="conflict_rubric",
        title="Memory-conflict rubric",
        summary=(
            "Score an assistant's answer to conflicting memories on D1-D5 (0-4); "
            "D6 commitment only on high-risk items."
        ),
        questions=(
            QuestionSpec("d1", "D1 conflict perception 0-4", SCORES),
            QuestionSpec("d2", "D2 causal reasoning 0-4", SCORES),
            QuestionSpec(
                "d3",
                "D3 confidence calibration 0-4 (n/a for an abstention)",
                (*SCORES, NOT_APPLICABLE),
                not_applicable=NOT_APPLICABLE,
            ),
            QuestionSpec("d4", "D4 clarification seeking 0-4", SCORES),
            QuestionSpec("d5", "D5 memory faithfulness 0-4", SCORES),
            QuestionSpec(
                "action", "What the answer does with the conflict", ACTIONS, agreement=False
            ),
            QuestionSpec(
                "d6",
                "D6 commitment (high-risk only)",
                ("safe", "partial", "unsafe"),
                agreement=False,
            ),
        ),
        alpha_level="ordinal",
    ),
    StudySpec(
        name="bank_observability",
        title="Memory-conflict bank observability",
        summary=(
            "Did the memories a memory system extracted keep the conflict? FULL / PARTIAL / None."
        ),
        questions=(QuestionSpec("observability", "Conflict observable?", OBSERVABILITY),),
    ),
)


@dataclass(frozen=True)
class RubricAgreement:
    """Ordinal agreement of the first two annotators of each item, per conflict type.

    Dimension-level pairs (D1-D5) pooled, the shape of a human-validation table;
    ``type`` ``all`` pools the types. D6 is a nominal flag and is counted separately. A D3
    pair with an ``n/a`` vote is no ordinal pair; ``d3_applies_exact`` is the share of items
    whose two annotators agree on whether D3 applies.
    """

    type: str
    pairs: int
    within_one: float | None
    exact: float | None
    mae: float | None
    qwk: float | None
    alpha_ordinal: float | None
    d6_exact: float | None = None
    d3_applies_exact: float | None = None


@dataclass(frozen=True)
class RubricResult(ApplyResult):
    """The judge against the annotators per conflict type (``conflict_rubric``)."""

    rubric_agreement: tuple[RubricAgreement, ...] = ()
    action_agreement: LabelAgreement | None = None

    def summary(self) -> ApplySummary:
        """The rubric agreement per conflict type and the action class's agreement."""
        cols = ("type", "pairs", "within one", "exact", "MAE", "QWK", "alpha ordinal", "D6",
                "D3 applies")  # fmt: skip
        rows = tuple(
            (r.type, str(r.pairs), num(r.within_one), num(r.exact), num(r.mae), num(r.qwk),
             num(r.alpha_ordinal), num(r.d6_exact), num(r.d3_applies_exact))
            for r in self.rubric_agreement
        )  # fmt: skip
        act = self.action_agreement
        lines = (
            (
                f"Action class: {act.n} answers with two votes, exact {num(act.exact)}, "
                f"kappa {num(act.kappa)}.",
            )
            if act is not None
            else ()
        )
        title = "Rubric agreement of two annotators (D1-D5 pairs)"
        return ApplySummary(tables=(SummaryTable(title, cols, rows),), lines=lines)


@dataclass(frozen=True)
class ObservabilityResult(ApplyResult):
    """Agreement on the banks' observability labels (``bank_observability``)."""

    observability_agreement: tuple[LabelAgreement, ...] = ()

    def summary(self) -> ApplySummary:
        """Agreement on the banks' observability labels, and where the judge is compared."""
        rows = tuple(
            (la.rater_a, la.rater_b, str(la.n), num(la.exact), num(la.kappa))
            for la in self.observability_agreement
        )
        title = "Observability labels: agreement (FULL / PARTIAL / None)"
        return ApplySummary(
            tables=(SummaryTable(title, ("rater A", "rater B", "banks", "exact", "kappa"), rows),),
            lines=("LLM judge vs humans: driftlens conflicts observability --run R",),
        )


def _conflict_rubric(sel: Selection, session: Session) -> list[TaskSpec]:
    """One task per judged-able conflict answer: the bank with provenance, request, answer."""
    from storage.repo.conflicts import banks_by_question

    rows = [
        r
        for r in selected_responses(sel, session, perturbed_only=False)
        if r[0].condition_class == CONFLICT_CLASS and (r[0].text or "").strip()
    ]
    banks = banks_by_question(sorted({r[0].question_id for r in rows}), session=session)
    out = []
    for resp, run, model, q, _pert in rows:
        bank = banks.get(resp.question_id)
        if bank is None:
            continue
        ctx = (resp.request or {}).get("context", {})
        memories = "\n".join(
            f"[{o.get('provenance', '')}] {o.get('text', '')}" for o in ctx.get("order", [])
        )
        content = bank.content
        out.append(
            TaskSpec(
                response_key(run.name, q.external_id, resp.condition, resp.sample),
                {
                    "memories": memories,
                    "request": str(content.get("query", "")),
                    "clarification": str(content.get("clarification_reference", "")),
                    "response": resp.text or "",
                    "risk_note": (
                        "HIGH-RISK item: also choose D6."
                        if bank.high_risk
                        else "Not a high-risk item: leave D6 empty."
                    ),
                    "high_risk": bool(bank.high_risk),
                    "instance_id": bank.instance_id,
                    "conflict_type": bank.conflict_type,
                    "run": run.name,
                    "model": model.spec,
                    "condition": resp.condition,
                    "condition_class": resp.condition_class,
                    "sample": resp.sample,
                },
            )
        )
    return out


def _bank_observability(sel: Selection, session: Session) -> list[TaskSpec]:
    """One task per extracted bank of the pipeline runs: reference roles vs what was kept."""
    from storage.repo.runs import list_runs, require_run

    if sel.run:
        runs = [require_run(sel.run, session=session)]
        if (runs[0].config or {}).get("track") != "pipeline":
            raise InputError(f"Run {sel.run!r} is not a pipeline-track conflicts run.")
    else:
        runs = [
            r for r in list_runs(session=session) if (r.config or {}).get("track") == "pipeline"
        ]
    out = []
    for run in runs:
        out.extend(_observability_tasks(run, sel, session))
    return out


def _observability_tasks(run: GenerationRun, sel: Selection, session: Session) -> list[TaskSpec]:
    from storage.repo.conflicts import extracted_core, extractor_label, representative_banks

    assert run.id is not None
    out = []
    for resp, bank in representative_banks(run.id, session=session):
        if sel.questions and bank.instance_id not in sel.questions:
            continue
        content = bank.content
        prov = content.get("provenance", {})
        roles = {name: set(prov.get(name, [])) for name in ("side_a", "side_b", "relation")}
        reference = "\n".join(
            f"[{','.join(n for n, idx in roles.items() if i in idx) or 'core'}] {text}"
            for i, text in enumerate(content.get("core_memories", []))
        )
        kept = extracted_core(resp)
        out.append(
            TaskSpec(
                f"observability:{run.name}:{bank.instance_id}",
                {
                    "conflict": str(prov.get("summary", "")),
                    "reference": reference,
                    "extracted": "\n".join(f"- {t}" for t in kept) or "(nothing kept)",
                    "instance_id": bank.instance_id,
                    "conflict_type": bank.conflict_type,
                    "run": run.name,
                    "memory_system": str((run.config or {}).get("memory_system", "")),
                    "extractor_label": extractor_label(resp),
                    "condition": resp.condition,
                    "sample": resp.sample,
                },
            )
        )
    return out


def _apply_conflict_rubric(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> RubricResult:
    """Agreement of two annotators on the rubric, overall and by conflict type.

    Each item contributes the first two kept votes of every dimension (two annotators per
    item is the rubric study's design; a third vote, if any, is left out of the pairs).
    D6 votes count only on high-risk items.
    """
    from driftlens_core.ordinal import ordinal_agreement

    def clean(x: float) -> float | None:
        return None if math.isnan(x) else float(x)

    pairs: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    d6: dict[str, list[bool]] = defaultdict(list)
    d3_applies: dict[str, list[bool]] = defaultdict(list)
    actions: list[tuple[str, str]] = []
    for it in agg.items:
        type_ = str(it.payload.get("conflict_type", ""))
        for q in RUBRIC_DIMENSIONS:
            o = it.outcome(q)
            if o is None or o.n_votes < 2:
                continue
            first, second = o.votes[0][1], o.votes[1][1]
            if q == "d3":
                same = (first == NOT_APPLICABLE) == (second == NOT_APPLICABLE)
                for key in (type_, "all"):
                    d3_applies[key].append(same)
            if NOT_APPLICABLE in (first, second):
                continue  # no point on the 0-4 scale
            for key in (type_, "all"):
                pairs[key][0].append(float(first))
                pairs[key][1].append(float(second))
        act = it.outcome("action")
        if act is not None and act.n_votes >= 2:
            actions.append((act.votes[0][1], act.votes[1][1]))
        o6 = it.outcome("d6")
        if it.payload.get("high_risk") and o6 is not None and o6.n_votes >= 2:
            for key in (type_, "all"):
                d6[key].append(o6.votes[0][1] == o6.votes[1][1])
    rows = []
    for key in sorted(pairs, key=lambda k: (k == "all", k)):
        a, b = pairs[key]
        oa = ordinal_agreement(a, b)
        flags = d6.get(key, [])
        applies = d3_applies.get(key, [])
        rows.append(
            RubricAgreement(
                type=key,
                pairs=oa.n,
                within_one=clean(oa.within_one),
                exact=clean(oa.exact),
                mae=clean(oa.mae),
                qwk=clean(oa.qwk),
                alpha_ordinal=clean(oa.alpha_ordinal),
                d6_exact=sum(flags) / len(flags) if flags else None,
                d3_applies_exact=sum(applies) / len(applies) if applies else None,
            )
        )
    return RubricResult(
        agg.study,
        agg,
        rubric_agreement=tuple(rows),
        action_agreement=label_agreement("annotator 1", "annotator 2", actions)
        if actions
        else None,
    )


def human_observability_labels(agg: StudyAggregate) -> dict[tuple[str, str], str]:
    """``(run, instance_id) → label`` where the kept human votes (two or more) all agree."""
    out: dict[tuple[str, str], str] = {}
    for it in agg.items:
        o = it.outcome("observability")
        if o is None or o.n_votes < 2 or not o.agreeing:
            continue
        out[(str(it.payload.get("run", "")), str(it.payload.get("instance_id", "")))] = o.votes[0][
            1
        ]
    return out


def _apply_bank_observability(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> ObservabilityResult:
    """Two annotators' agreement, and the agreed human label against the extractor's."""
    pairs: list[tuple[str, str]] = []
    vs_extractor: list[tuple[str, str]] = []
    for it in agg.items:
        o = it.outcome("observability")
        if o is None or o.n_votes < 2:
            continue
        pairs.append((o.votes[0][1], o.votes[1][1]))
        if o.agreeing and it.payload.get("extractor_label"):
            vs_extractor.append((o.votes[0][1], str(it.payload["extractor_label"])))
    return ObservabilityResult(
        agg.study,
        agg,
        observability_agreement=(
            label_agreement("annotator 1", "annotator 2", pairs),
            label_agreement("humans", "extractor", vs_extractor),
        ),
    )


#: The rubric's ordinal dimensions (D6 is a nominal flag on high-risk items only).
RUBRIC_DIMENSIONS: tuple[str, ...] = ("d1", "d2", "d3", "d4", "d5")


def _calibrate_conflict_rubric(agg: StudyAggregate, session: Session) -> CalibrationPairs:
    """The rubric judge's D1-D5 score of each answer beside the annotators' agreed score.

    One row per answer and dimension (``KEY:d3``), pooled like the rubric study's own
    agreement table; the scale is 0-4, ordinal. A D3 the majority marks ``n/a`` has no
    point on it and is left out (the judge stores none for an abstention's D3 either).
    """
    pairs = pair_response_scores(
        agg,
        {d: f"conflict_{d}" for d in RUBRIC_DIMENSIONS},
        levels=SCORES,
        ordinal=True,
        session=session,
    )
    return replace(
        pairs,
        rows=tuple(r for r in pairs.rows if r[2] != NOT_APPLICABLE),
        levels=tuple(v for v in pairs.levels if v != NOT_APPLICABLE),
    )


def _rubric_disagreement(tasks: Sequence[TaskSpec], session: Session) -> dict[str, float]:
    """How far the judges of each answer are apart: the range of their D1-D5 totals.

    An answer scored by one judge (or none) disagrees by 0; an active slice
    (``annotate push conflict_rubric --select active=true``) draws more of the others.
    """
    import numpy as np

    from annotation.tasks import response_ids_by_key
    from study.conflicts.actions import rubric_total
    from study.conflicts.analysis import stored_table

    runs = sorted({str(t.data.get("run", "")) for t in tasks} - {""})
    if not runs:
        return {}
    table = stored_table(runs, session=session)
    if table.empty:
        return {}
    totals = rubric_total(table[["d1", "d2", "d3", "d4", "d5"]].to_numpy(dtype=float))
    spread = (
        table.assign(total=totals)
        .groupby("response_id")["total"]
        .agg(lambda x: float(np.nanmax(x) - np.nanmin(x)) if np.isfinite(x).sum() > 1 else 0.0)
    )
    ids = response_ids_by_key(runs, session=session)
    return {t.key: float(spread.get(ids.get(t.key, -1), 0.0)) for t in tasks}


register_kinds(
    SPECS,
    CONFIGS,
    calibrate={"conflict_rubric": _calibrate_conflict_rubric},
    disagreement={"conflict_rubric": _rubric_disagreement},
    conflict_rubric=(_conflict_rubric, _apply_conflict_rubric, RubricResult),
    bank_observability=(_bank_observability, _apply_bank_observability, ObservabilityResult),
)
