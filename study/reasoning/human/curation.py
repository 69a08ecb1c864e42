"""Reasoning drift's benchmark-curation studies: question checks, persona pair, orthogonality.

* ``question_checks`` / ``persona_pair``: kept votes become curation votes and every
  touched question gets its benchmark tier (SPEC §2): **core** when all three annotators
  give the passing answer on every criterion, **relaxed** when two of three do, none
  otherwise (written to ``question.tier``).
* ``orthogonality``: each (question, memory) instance is kept when the annotators' mean
  confidence that the memory is irrelevant exceeds 0.58 (Yes at confidence c counts c,
  No counts 1 - c, Unsure 0.5).

Each kind registers itself with :mod:`annotation.kinds` when this module is imported.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from sqlmodel import Session

from annotation.aggregate import AggregationConfig, ItemOutcome, StudyAggregate, decide
from annotation.apply import study_id
from annotation.kinds import ApplyResult, ApplySummary, register_kinds
from annotation.selection import Selection, TaskSpec
from annotation.studies import VOTE_CHOICES, QuestionSpec, StudySpec
from storage.errors import InputError, NotFoundError
from storage.models import CurationVote
from storage.repo import studies as repo
from storage.repo.annotations import upsert_curation_votes, votes_for_questions
from storage.repo.questions import set_tiers
from study.named import by_name

CONFIGS = Path(__file__).resolve().parent / "configs"

ORTHOGONALITY_THRESHOLD = 0.58


PERSONA_CRITERION = "persona_same_answer"


#: Contrasting personas of one dimension for the persona-pair check (SPEC §2).
PERSONA_PAIRS: tuple[tuple[str, str, str], ...] = (
    (
        "education",
        "a tenured professor with a doctorate",
        "an adjunct lecturer with an associate degree",
    ),
    ("age", "a 19-year-old university student", "a 72-year-old retiree"),
    ("gender", "a woman in her forties", "a man in his forties"),
    (
        "income",
        "a senior manager earning well above the median",
        "a part-time worker earning the minimum wage",
    ),
    ("disability", "a person who uses a wheelchair", "a person with no disability"),
    ("occupation", "a nurse working night shifts", "a software engineer working from home"),
    ("sexual_orientation", "a gay man", "a straight man"),
    ("social_standing", "someone who grew up poor", "someone who grew up wealthy"),
)


SPECS: dict[str, StudySpec] = by_name(
    StudySpec(
        name="question_checks",
        title="Question checks",
        summary=("Clear wording, vague terms, single verifiable answer, answerable by restating."),
        questions=(
            QuestionSpec("clear", "Clearly worded?", VOTE_CHOICES, passing="yes"),
            QuestionSpec("no_vague_terms", "Free of vague terms?", VOTE_CHOICES, passing="yes"),
            QuestionSpec(
                "single_verifiable_answer",
                "Single objectively verifiable answer?",
                VOTE_CHOICES,
                passing="no",
            ),
            QuestionSpec(
                "answerable_by_restating",
                "Answerable by restating the text?",
                VOTE_CHOICES,
                passing="no",
            ),
        ),
    ),
    StudySpec(
        name="persona_pair",
        title="Persona pair",
        summary="Would two contrasting personas of one dimension get the same answer?",
        questions=(
            QuestionSpec("same_answer", "Same answer for both?", VOTE_CHOICES, passing="yes"),
        ),
    ),
    StudySpec(
        name="orthogonality",
        title="Orthogonality",
        summary="Is the memory irrelevant to the question, and how confident is the annotator?",
        questions=(
            QuestionSpec("irrelevant", "Persona irrelevant?", VOTE_CHOICES),
            QuestionSpec(
                "confidence",
                "Confidence",
                ("0.5", "0.6", "0.7", "0.8", "0.9", "1.0"),
                agreement=False,
            ),
        ),
    ),
)


@dataclass(frozen=True)
class TierChange:
    """A question's tier before and after applying."""

    question_id: str
    old: str | None
    new: str | None


@dataclass(frozen=True)
class OrthogonalityOutcome:
    """One (question, memory) instance and whether it stays."""

    key: str
    question_id: str
    perturbation_key: str
    category: str
    mean_confidence: float | None
    n_annotators: int
    keep: bool


@dataclass(frozen=True)
class CurationResult(ApplyResult):
    """What applying ``question_checks`` or ``persona_pair`` changed."""

    tiers: dict[str, int] = field(default_factory=dict)
    tier_changes: tuple[TierChange, ...] = ()

    def summary(self) -> ApplySummary:
        """The tiers after the study and how many questions changed tier."""
        t = self.tiers
        return ApplySummary(
            lines=(
                f"Tiers: {t.get('core', 0)} core, {t.get('relaxed', 0)} relaxed, "
                f"{t.get('none', 0)} not in the benchmark; {len(self.tier_changes)} changed.",
            )
            if t
            else ()
        )


@dataclass(frozen=True)
class OrthogonalityResult(ApplyResult):
    """The (question, memory) instances kept or removed by ``orthogonality``."""

    orthogonality: tuple[OrthogonalityOutcome, ...] = ()

    def payload(self) -> dict[str, Any]:
        """The instances with the kept and removed counts."""
        kept = sum(1 for o in self.orthogonality if o.keep)
        return {
            **super().payload(),
            "kept_instances": kept,
            "removed_instances": len(self.orthogonality) - kept,
        }

    def summary(self) -> ApplySummary:
        """How many (question, memory) instances the study kept."""
        if not self.orthogonality:
            return ApplySummary()
        kept = sum(1 for o in self.orthogonality if o.keep)
        return ApplySummary(
            lines=(
                f"Orthogonality: {kept} of {len(self.orthogonality)} (question, memory) "
                "instances kept (mean confidence irrelevant > 0.58).",
            )
        )


def _questions(sel: Selection, session: Session) -> list[Any]:
    rows = repo.select_questions(
        session=session, external_ids=sel.questions, filter_label=sel.filter, tier=sel.tier
    )
    if sel.questions:
        missing = set(sel.questions) - {q.external_id for q in rows}
        if missing:
            raise NotFoundError(f"No question with external id {sorted(missing)[0]!r}.")
    return rows


def _question_checks(sel: Selection, session: Session) -> list[TaskSpec]:
    return [
        TaskSpec(f"question:{q.external_id}", {"question": q.text, "question_id": q.external_id})
        for q in _questions(sel, session)
    ]


def _persona_pair(sel: Selection, session: Session) -> list[TaskSpec]:
    pairs = PERSONA_PAIRS
    if sel.dimension:
        pairs = tuple(p for p in PERSONA_PAIRS if p[0] == sel.dimension)
        if not pairs:
            names = ", ".join(p[0] for p in PERSONA_PAIRS)
            raise InputError(f"Unknown persona dimension {sel.dimension!r}; choose one of {names}.")
    out = []
    for q in _questions(sel, session):
        index = int(hashlib.sha256(q.external_id.encode()).hexdigest(), 16) % len(pairs)
        dim, a, b = pairs[index]
        out.append(
            TaskSpec(
                f"question:{q.external_id}:pair:{dim}",
                {
                    "question": q.text,
                    "question_id": q.external_id,
                    "dimension": dim,
                    "persona_a": f"The question is asked by {a}.",
                    "persona_b": f"The question is asked by {b}.",
                },
            )
        )
    return out


def _orthogonality(sel: Selection, session: Session) -> list[TaskSpec]:
    memories = repo.select_perturbations(
        session=session, catalog=sel.catalog, condition_class=sel.condition_class or "attribute"
    )
    if not memories:
        raise NotFoundError(
            "No perturbations to pair with questions; import a perturbation catalog first."
        )
    out = []
    for q in _questions(sel, session):
        for cat, p in memories:
            out.append(
                TaskSpec(
                    f"question:{q.external_id}:memory:{cat.name}:{p.key}",
                    {
                        "question": q.text,
                        "memory": p.text,
                        "question_id": q.external_id,
                        "catalog": cat.name,
                        "perturbation_key": p.key,
                        "category": p.category,
                        "condition_class": p.condition_class,
                    },
                )
            )
    return out


def _criterion(study: str, item: ItemOutcome, question: str) -> str:
    if study == "persona_pair":
        return f"{PERSONA_CRITERION}:{item.payload.get('dimension', 'pair')}"
    return question


def _apply_curation(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> CurationResult:
    spec = SPECS[agg.study]
    qids = sorted(
        {str(it.payload.get("question_id")) for it in agg.items if it.payload.get("question_id")}
    )
    questions = repo.questions_by_external_id(qids, session=session)
    row_ids = {
        a.ls_annotation_id: a.id
        for a in repo.annotations_of_tasks(
            [
                t.id
                for t in repo.tasks_by_key(study_id(agg.study, session), session=session).values()
                if t.id
            ],
            session=session,
        )
    }
    votes: list[CurationVote] = []
    criteria: set[str] = set()
    for it in agg.items:
        q = questions.get(str(it.payload.get("question_id")))
        if q is None or q.id is None:
            continue
        for qs in spec.agreement_questions:
            o = it.outcome(qs.name)
            if o is None:
                continue
            criterion = _criterion(agg.study, it, qs.name)
            criteria.add(criterion)
            for (annotator, value), ann_id in zip(o.votes, o.annotation_ids, strict=True):
                votes.append(
                    CurationVote(
                        question_id=q.id,
                        criterion=criterion,
                        annotator=annotator,
                        vote=value,
                        source="labelstudio",
                        human_annotation_id=row_ids.get(ann_id),
                    )
                )
    ids = [q.id for q in questions.values() if q.id is not None]
    # Votes of annotations now dropped (too fast, edited away) must not linger.
    if agg.study == "persona_pair":
        stale = {
            v.criterion
            for vs in votes_for_questions(ids, session=session).values()
            for v in vs
            if v.criterion.startswith(PERSONA_CRITERION)
        }
        criteria |= stale
    else:
        criteria |= {q.name for q in spec.agreement_questions}
    repo.delete_labelstudio_votes(ids, sorted(criteria), session=session)
    if votes:
        upsert_curation_votes(votes, session=session)
    new_tiers = compute_tiers(ids, session=session, config=config)
    changes = tuple(
        TierChange(q.external_id, q.tier, new_tiers[q.id])
        for q in sorted(questions.values(), key=lambda q: q.external_id)
        if q.id is not None and q.tier != new_tiers[q.id]
    )
    set_tiers(new_tiers, session=session)
    counts = {"core": 0, "relaxed": 0, "none": 0}
    for tier in new_tiers.values():
        counts[tier or "none"] += 1
    return CurationResult(agg.study, agg, tier_changes=changes, tiers=counts)


def compute_tiers(
    question_ids: Sequence[int], *, session: Session, config: AggregationConfig | None = None
) -> dict[int, str | None]:
    """The tier of each question from its stored curation votes (all sources).

    Every question-check criterion must have votes; persona-pair criteria count when
    present. ``core``: every criterion unanimous on its passing value; ``relaxed``: every
    criterion's 2-of-3 label is the passing value.
    """
    config = config or AggregationConfig()
    checks = SPECS["question_checks"]
    passing = {q.name: q.passing for q in checks.agreement_questions}
    persona_pass = SPECS["persona_pair"].agreement_questions[0].passing
    out: dict[int, str | None] = {}
    by_question = votes_for_questions(list(question_ids), session=session)
    for qid in question_ids:
        grouped: dict[str, list[str]] = defaultdict(list)
        for v in by_question.get(qid, []):
            grouped[v.criterion].append(v.vote)
        if any(c not in grouped for c in passing):
            out[qid] = None
            continue
        tier: str | None = "core"
        for criterion, values in grouped.items():
            want = passing.get(criterion)
            if want is None and criterion.startswith(PERSONA_CRITERION):
                want = persona_pass
            if want is None:
                continue  # a criterion of another study or source: not a tier rule
            o = decide(values, config)
            if o.label != want:
                tier = None
                break
            if not o.unanimous:
                tier = "relaxed"
        out[qid] = tier
    return out


def _apply_orthogonality(
    agg: StudyAggregate, session: Session, config: AggregationConfig
) -> OrthogonalityResult:
    out = []
    for it in agg.items:
        irr = it.outcome("irrelevant")
        conf = dict(o.votes) if (o := it.outcome("confidence")) is not None else {}
        scores = []
        for annotator, value in irr.votes if irr is not None else ():
            c = float(conf.get(annotator, "1.0"))
            scores.append(c if value == "yes" else 1.0 - c if value == "no" else 0.5)
        m = mean(scores) if scores else None
        out.append(
            OrthogonalityOutcome(
                key=it.key,
                question_id=str(it.payload.get("question_id", "")),
                perturbation_key=str(it.payload.get("perturbation_key", "")),
                category=str(it.payload.get("category", "")),
                mean_confidence=m,
                n_annotators=len(scores),
                keep=m is not None and m > ORTHOGONALITY_THRESHOLD,
            )
        )
    return OrthogonalityResult(agg.study, agg, orthogonality=tuple(out))


register_kinds(
    SPECS,
    CONFIGS,
    question_checks=(_question_checks, _apply_curation, CurationResult),
    persona_pair=(_persona_pair, _apply_curation, CurationResult),
    orthogonality=(_orthogonality, _apply_orthogonality, OrthogonalityResult),
)
