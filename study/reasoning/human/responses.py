"""Reasoning drift's response studies: label check, helpfulness, distraction, acknowledgement.

* ``label_check``: accuracy of the LLM labels per labeler: the share of decided items
  (with a 2-of-3 label) whose label is Yes.
* ``helpfulness``: mean score per model and condition (item means, then their mean).
* ``distraction``: non-distraction rate per model and condition: the share of items with
  at least two kept votes that two of three judged No.
* ``acknowledgement``: acknowledgement rate per model and condition: the share of items
  with at least two kept votes that two of three judged Yes (the response says whether the
  memory bears on the question); stored values ``1`` / ``0``, the judge's own scale.

Each kind registers itself with :mod:`annotation.kinds` when this module is imported.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any
from xml.sax.saxutils import quoteattr

from sqlmodel import Session

from annotation.aggregate import AggregationConfig, ItemOutcome, StudyAggregate
from annotation.judge_pairs import CalibrationPairs, pair_with_majority
from annotation.kinds import (
    ApplyResult,
    ApplySummary,
    KeyedBuild,
    SummaryTable,
    num,
    register_kinds,
)
from annotation.selection import Selection, TaskSpec
from annotation.studies import VOTE_CHOICES, QuestionSpec, StudySpec
from annotation.tasks import (
    CONFLICT_CLASS,
    pair_response_scores,
    response_key,
    selected_responses,
    steps_text,
)
from storage.errors import NotFoundError
from storage.models import GenerationRun, ModelSpecRow, Question, Response
from storage.repo import studies as repo
from study.named import by_name

NO_MEMORY = "(no memory)"
#: The acknowledgement study's stored values: the judge's own 1 / 0 (Yes / No on screen).
ACK_CHOICES: tuple[str, ...] = ("1", "0")
CONFIGS = Path(__file__).resolve().parent / "configs"

SPECS: dict[str, StudySpec] = by_name(
    StudySpec(
        name="label_check",
        title="LLM label check",
        summary="Does the LLM's ontology label fit the step (Yes / No / Unsure + better leaf)?",
        questions=(
            QuestionSpec("agree", "Label fits?", VOTE_CHOICES),
            QuestionSpec("better_leaf", "Better leaf", (), agreement=False),
        ),
    ),
    StudySpec(
        name="helpfulness",
        title="Helpfulness",
        summary="Helpfulness of a response, 0-4 with the rubric.",
        questions=(QuestionSpec("score", "Helpfulness 0-4", ("0", "1", "2", "3", "4")),),
        alpha_level="ordinal",
        rating_question="score",
    ),
    StudySpec(
        name="distraction",
        title="Distraction",
        summary=("Earliest step whose reasoning would differ without the memory (No / Step 1-6)."),
        questions=(
            QuestionSpec("step", "Earliest influenced step", ("no", "1", "2", "3", "4", "5", "6")),
        ),
    ),
    StudySpec(
        name="acknowledgement",
        title="Acknowledgement",
        summary="Does the response say whether the memory bears on the question (Yes / No)?",
        questions=(QuestionSpec("acknowledged", "Acknowledges the memory", ACK_CHOICES),),
    ),
)


@dataclass(frozen=True)
class LabelerAccuracy:
    """Human verdicts on one labeler's labels."""

    labeler: str
    items: int
    decided: int
    yes: int
    no: int
    unsure: int
    accuracy: float | None


@dataclass(frozen=True)
class GroupRate:
    """A mean or rate for one (model, condition) group."""

    model: str
    condition_class: str
    condition: str
    items: int
    value: float | None


@dataclass(frozen=True)
class LabelCheckResult(ApplyResult):
    """The LLM labels' accuracy per labeler (``label_check``)."""

    labeler_accuracy: tuple[LabelerAccuracy, ...] = ()

    def summary(self) -> ApplySummary:
        """The accuracy of each labeler's labels by the human verdicts."""
        cols = ("labeler", "items", "decided", "yes", "no", "unsure", "accuracy")
        rows = tuple(
            (a.labeler, str(a.items), str(a.decided), str(a.yes), str(a.no), str(a.unsure),
             num(a.accuracy))
            for a in self.labeler_accuracy
        )  # fmt: skip
        return ApplySummary(tables=(SummaryTable("LLM-label accuracy", cols, rows),))


@dataclass(frozen=True)
class HelpfulnessResult(ApplyResult):
    """Mean helpfulness per model and condition (and condition class)."""

    helpfulness: tuple[GroupRate, ...] = ()
    helpfulness_by_class: tuple[GroupRate, ...] = ()

    def summary(self) -> ApplySummary:
        """Mean helpfulness per model and condition."""
        return ApplySummary(tables=(_rates_table("Helpfulness (mean 0-4)", self.helpfulness),))


@dataclass(frozen=True)
class AcknowledgementResult(ApplyResult):
    """Acknowledgement rate per model and condition (and condition class)."""

    acknowledgement: tuple[GroupRate, ...] = ()
    acknowledgement_by_class: tuple[GroupRate, ...] = ()

    def summary(self) -> ApplySummary:
        """Acknowledgement rate per model and condition."""
        return ApplySummary(tables=(_rates_table("Acknowledgement", self.acknowledgement),))


@dataclass(frozen=True)
class DistractionResult(ApplyResult):
    """Non-distraction rate per model and condition (and condition class)."""

    non_distraction: tuple[GroupRate, ...] = ()
    non_distraction_by_class: tuple[GroupRate, ...] = ()

    def summary(self) -> ApplySummary:
        """Non-distraction rate per model and condition."""
        return ApplySummary(tables=(_rates_table("Non-distraction", self.non_distraction),))


def _rates_table(title: str, rates: tuple[GroupRate, ...]) -> SummaryTable:
    rows = tuple(
        (g.model, g.condition_class, g.condition, str(g.items), num(g.value)) for g in rates
    )
    return SummaryTable(title, ("model", "class", "condition", "items", "value"), rows)


def leaf_names() -> tuple[str, ...]:
    """The leaves an annotator can offer as the better label (seeded DriftLens ontology)."""
    from ontology.schema import load_seed

    return (*load_seed("driftlens").leaf_names, "unmapped")


def _leaf_choices() -> str:
    # The leaf name is both shown and stored; quoteattr keeps names with '&' or quotes valid.
    return "\n".join(f"      <Choice value={quoteattr(leaf)}/>" for leaf in leaf_names())


def _label_config(text: str) -> str:
    """The label-check config with the seeded ontology's leaves as the better-label choices."""
    return text.replace("{{LEAF_CHOICES}}", _leaf_choices())


def _helpfulness(sel: Selection, session: Session) -> list[TaskSpec]:
    out = []
    for resp, run, model, q, pert in selected_responses(sel, session, perturbed_only=False):
        if resp.condition_class == CONFLICT_CLASS:
            continue  # memory-conflict answers have their own rubric study
        answer = resp.answer if resp.answer else resp.text
        if not answer:
            continue
        out.append(
            TaskSpec(
                response_key(run.name, q.external_id, resp.condition, resp.sample),
                {
                    "question": q.text,
                    "memory": pert.text if pert is not None else NO_MEMORY,
                    "response": answer,
                    **_provenance(resp, run, model, q),
                },
            )
        )
    return out


def _provenance(
    resp: Response, run: GenerationRun, model: ModelSpecRow, q: Question
) -> dict[str, Any]:
    """Where a response task's item comes from (the fields every response study shows)."""
    return {
        "question_id": q.external_id,
        "run": run.name,
        "model": model.spec,
        "condition": resp.condition,
        "condition_class": resp.condition_class,
        "sample": resp.sample,
    }


def _distraction(sel: Selection, session: Session) -> list[TaskSpec]:
    out = []
    for resp, run, model, q, pert in selected_responses(sel, session, perturbed_only=True):
        if not resp.steps or pert is None:
            continue
        out.append(
            TaskSpec(
                response_key(run.name, q.external_id, resp.condition, resp.sample),
                {
                    "question": q.text,
                    "memory": pert.text,
                    "steps_text": steps_text(resp.steps),
                    "n_steps": len(resp.steps),
                    **_provenance(resp, run, model, q),
                },
            )
        )
    return out


def _acknowledgement(sel: Selection, session: Session) -> list[TaskSpec]:
    out = []
    for resp, run, model, q, pert in selected_responses(sel, session, perturbed_only=True):
        if pert is None or resp.condition_class == CONFLICT_CLASS:
            continue  # memory-conflict answers have their own rubric study
        body = "\n".join(
            part
            for part in (steps_text(resp.steps) if resp.steps else "", resp.answer or "")
            if part
        )
        if not body:
            body = resp.text or ""
        if not body:
            continue
        out.append(
            TaskSpec(
                response_key(run.name, q.external_id, resp.condition, resp.sample),
                {
                    "question": q.text,
                    "memory": pert.text,
                    "response": body,
                    **_provenance(resp, run, model, q),
                },
            )
        )
    return out


def _label_check_version(sel: Selection, session: Session) -> int | None:
    """The ontology version id the selection names (None: every version).

    Raises:
        NotFoundError: no such version.
    """
    if not sel.ontology:
        return None
    name, _, number = sel.ontology.partition("@")
    version = repo.find_ontology_version(
        name, int(number) if number.isdigit() else None, session=session
    )
    if version is None:
        raise NotFoundError(f"No ontology version {sel.ontology!r}.")
    return version.id


def _step_label_key(
    run: str,
    question: str,
    condition: str,
    sample: int,
    step_index: int,
    labeler_key: str,
    ontology: str,
    version: int,
    repeat: int,
) -> str:
    """The stable key of one step label's task (the same whether built or only listed)."""
    response = response_key(run, question, condition, sample)
    return f"steplabel:{response}:{step_index}:{labeler_key}:{ontology}@{version}:{repeat}"


def _stored_key(k: repo.StepLabelKey) -> str:
    """:func:`_step_label_key` of a stored step label's key."""
    return _step_label_key(
        k.run,
        k.question,
        k.condition,
        k.sample,
        k.step_index,
        k.labeler_key,
        k.ontology,
        k.version,
        k.repeat,
    )


def _label_check_keys(sel: Selection, session: Session) -> Iterator[tuple[str, int]]:
    """Every label check task's key and step-label id, streamed (no text read)."""
    version_id = _label_check_version(sel, session)
    for k in repo.iter_step_label_keys(
        session=session, run=sel.run, labeler=sel.labeler, ontology_version_id=version_id
    ):
        key = _stored_key(k)
        yield key, k.id


def _label_check_count(sel: Selection, session: Session) -> int:
    """How many label check tasks the selection makes (one per selected label; COUNT)."""
    version_id = _label_check_version(sel, session)
    return repo.count_step_labels(
        session=session, run=sel.run, labeler=sel.labeler, ontology_version_id=version_id
    )


def _label_check(sel: Selection, session: Session) -> list[TaskSpec]:
    return _label_check_tasks(sel, session, None)


def _label_check_tasks(
    sel: Selection, session: Session, ids: Sequence[int] | None
) -> list[TaskSpec]:
    """The label check tasks of the selection, or of just these step-label ids."""
    version_id = _label_check_version(sel, session)
    rows = repo.select_step_labels(
        session=session,
        run=sel.run,
        labeler=sel.labeler,
        ontology_version_id=version_id,
        ids=ids,
    )
    leaves: dict[int, dict[str, Any]] = {}
    out = []
    for label, labeler, version, resp, run, q in rows:
        # the query keeps parsed steps only; the steps were unpacked on load
        assert version.id is not None
        if version.id not in leaves:
            leaves[version.id] = repo.leaf_definitions(version.id, session=session)
        leaf = leaves[version.id].get(label.symbol)
        definition = leaf.definition if leaf is not None else "No step fits any leaf."
        labeler_name = labeler.name or labeler.key
        key = _step_label_key(
            run.name,
            q.external_id,
            resp.condition,
            resp.sample,
            label.step_index,
            labeler.key,
            version.name,
            version.version,
            label.repeat,
        )
        out.append(
            TaskSpec(
                key,
                {
                    "question": q.text,
                    "step": resp.steps[label.step_index],
                    "step_index": label.step_index,
                    "assigned": f"{label.category} / {label.symbol}",
                    "assigned_leaf": label.symbol,
                    "definition": definition or "(no definition stored)",
                    "labeler": labeler_name,
                    "ontology": f"{version.name}@{version.version}",
                    "question_id": q.external_id,
                    "run": run.name,
                },
            )
        )
    return out


def _apply_label_check(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> LabelCheckResult:
    groups: dict[str, list[ItemOutcome]] = defaultdict(list)
    for it in agg.items:
        groups[str(it.payload.get("labeler", "unknown"))].append(it)
    out = []
    for labeler, items in sorted(groups.items()):
        labels = [o.label if (o := it.outcome("agree")) is not None else None for it in items]
        decided = [lab for lab in labels if lab is not None]
        yes = decided.count("yes")
        out.append(
            LabelerAccuracy(
                labeler=labeler,
                items=len(items),
                decided=len(decided),
                yes=yes,
                no=decided.count("no"),
                unsure=decided.count("unsure"),
                accuracy=yes / len(decided) if decided else None,
            )
        )
    return LabelCheckResult(agg.study, agg, labeler_accuracy=tuple(out))


def _grouped(
    agg: StudyAggregate, value: Callable[[ItemOutcome], float | None], by_class: bool
) -> tuple[GroupRate, ...]:
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for it in agg.items:
        v = value(it)
        if v is None:
            continue
        p = it.payload
        cond = "*" if by_class else str(p.get("condition", ""))
        groups[(str(p.get("model", "")), str(p.get("condition_class", "")), cond)].append(v)
    return tuple(
        GroupRate(model=m, condition_class=k, condition=c, items=len(vs), value=mean(vs))
        for (m, k, c), vs in sorted(groups.items())
    )


def _helpfulness_value(it: ItemOutcome) -> float | None:
    o = it.outcome("score")
    if o is None or not o.votes:
        return None
    return mean(float(v) for _, v in o.votes)


def _apply_helpfulness(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> HelpfulnessResult:
    return HelpfulnessResult(
        agg.study,
        agg,
        helpfulness=_grouped(agg, _helpfulness_value, by_class=False),
        helpfulness_by_class=_grouped(agg, _helpfulness_value, by_class=True),
    )


def _apply_distraction(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> DistractionResult:
    def not_distracted(it: ItemOutcome) -> float | None:
        o = it.outcome("step")
        if o is None or o.n_votes < config.majority:
            return None
        return 1.0 if o.label == "no" else 0.0

    return DistractionResult(
        agg.study,
        agg,
        non_distraction=_grouped(agg, not_distracted, by_class=False),
        non_distraction_by_class=_grouped(agg, not_distracted, by_class=True),
    )


def _apply_acknowledgement(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> AcknowledgementResult:
    def acknowledged(it: ItemOutcome) -> float | None:
        o = it.outcome("acknowledged")
        if o is None or o.n_votes < config.majority or o.label is None:
            return None
        return 1.0 if o.label == "1" else 0.0

    return AcknowledgementResult(
        agg.study,
        agg,
        acknowledgement=_grouped(agg, acknowledged, by_class=False),
        acknowledgement_by_class=_grouped(agg, acknowledged, by_class=True),
    )


def _calibrate_acknowledgement(agg: StudyAggregate, session: Session) -> CalibrationPairs:
    """The judge's acknowledgement (1 / 0) of each response beside the raters' majority."""
    return pair_response_scores(
        agg, {"acknowledged": "acknowledgement"}, levels=("0", "1"), ordinal=False,
        session=session,
    )  # fmt: skip


def _calibrate_helpfulness(agg: StudyAggregate, session: Session) -> CalibrationPairs:
    """The helpfulness judge's 0-4 score of each response beside the raters' majority."""
    return pair_response_scores(
        agg, {"score": "helpfulness"}, levels=("0", "1", "2", "3", "4"), ordinal=True,
        session=session,
    )  # fmt: skip


def _human_leaf(it: ItemOutcome, _question: str) -> str | None:
    """The leaf the annotators give the step: the assigned one when the majority says it
    fits, their agreed better leaf when it does not, none when unsure or undecided."""
    agree = it.outcome("agree")
    if agree is None or agree.label is None or agree.label == "unsure":
        return None
    if agree.label == "yes":
        return str(it.payload.get("assigned_leaf") or "") or None
    better = it.outcome("better_leaf")
    return better.label if better is not None and better.label else None


def _calibrate_label_check(agg: StudyAggregate, session: Session) -> CalibrationPairs:
    """The labeler's leaf of each step beside the annotators' leaf (nominal scale).

    The annotators vote on the assigned leaf and offer a better one; their leaf is the
    assigned one on a Yes majority and the better leaf two of them agree on after a No.
    One labeler per table, the first by name (as the other kinds take one judge); the
    other labelers' steps are left out, not counted as missing labels. Where another
    labeler's label of the same step (run, question, condition, sample, step, ontology
    version) is a task of the study too, the two leaves are a judge-judge pair (the
    triage's), matched through the stored step labels' keys; a labeler's lowest repeat
    stands for it.
    """
    from dataclasses import replace

    labelers = sorted({str(it.payload.get("labeler", "")) for it in agg.items})
    first = labelers[0] if labelers else ""
    mine = replace(
        agg, items=tuple(it for it in agg.items if str(it.payload.get("labeler", "")) == first)
    )
    step_of = _task_steps(agg, session) if len(labelers) > 1 else {}
    by_step: dict[tuple[tuple[Any, ...], str], tuple[int, str]] = {}
    for it in agg.items:
        leaf = str(it.payload.get("assigned_leaf") or "")
        if it.key not in step_of or not leaf:
            continue
        step, rep = step_of[it.key]
        labeler = str(it.payload.get("labeler", ""))
        held = by_step.get((step, labeler))
        if held is None or rep < held[0]:
            by_step[(step, labeler)] = (rep, leaf)

    def other_of(labeler: str) -> Callable[[ItemOutcome, str], str | None]:
        def label(it: ItemOutcome, _q: str) -> str | None:
            step = step_of.get(it.key)
            held = None if step is None else by_step.get((step[0], labeler))
            return None if held is None else held[1]

        return label

    return pair_with_majority(
        mine,
        ("agree",),
        lambda it, _q: str(it.payload.get("assigned_leaf") or "") or None,
        levels=leaf_names(),
        ordinal=False,
        judge=first,
        human_of=_human_leaf,
        others={lab: other_of(lab) for lab in labelers[1:]},
    )


def _task_steps(agg: StudyAggregate, session: Session) -> dict[str, tuple[tuple[Any, ...], int]]:
    """Each task key of the study's step labels: (the step it labels, its repeat)."""
    keys = {it.key for it in agg.items}
    out: dict[str, tuple[tuple[Any, ...], int]] = {}
    for run in sorted({str(it.payload.get("run", "")) for it in agg.items}):
        for k in repo.iter_step_label_keys(session=session, run=run):
            key = _stored_key(k)
            if key in keys:
                step = (
                    k.run,
                    k.question,
                    k.condition,
                    k.sample,
                    k.step_index,
                    k.ontology,
                    k.version,
                )
                out[key] = (step, k.repeat)
    return out


register_kinds(
    SPECS,
    CONFIGS,
    calibrate={
        "helpfulness": _calibrate_helpfulness,
        "label_check": _calibrate_label_check,
        "acknowledgement": _calibrate_acknowledgement,
    },
    fill={"label_check": _label_config},
    # a run holds one label per step and labeler: a limit is chosen over keys, then built
    keyed={"label_check": KeyedBuild(_label_check_keys, _label_check_tasks, _label_check_count)},
    label_check=(_label_check, _apply_label_check, LabelCheckResult),
    helpfulness=(_helpfulness, _apply_helpfulness, HelpfulnessResult),
    distraction=(_distraction, _apply_distraction, DistractionResult),
    acknowledgement=(_acknowledgement, _apply_acknowledgement, AcknowledgementResult),
)
