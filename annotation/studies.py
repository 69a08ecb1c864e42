"""The shape of a human study kind: its questions and their answer values.

A study is one Label Studio project of one kind (``storage.models.STUDY_KIND_VALUES``;
the kinds themselves live with their instruments and register in :mod:`annotation.kinds`).
Each study asks one or more *questions* per task; a question is a ``<Choices>`` tag whose
``name`` is the question name and whose choice ``alias`` values are what Label Studio
stores in the annotation result (so results carry canonical values, not display text).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

AlphaLevel = Literal["nominal", "ordinal", "interval"]
VOTE_CHOICES: tuple[str, ...] = ("yes", "no", "unsure")


@dataclass(frozen=True)
class QuestionSpec:
    """One question of a study.

    Attributes:
        name: the ``from_name`` of its ``<Choices>`` tag.
        prompt: the question as the annotator reads it (short).
        values: the stored values (choice aliases); empty when dynamic (leaf names).
        agreement: whether it takes part in the 2-of-3 label, unanimity and alpha; a
            question that qualifies another answer (confidence, the better leaf) does not.
        passing: for curation criteria, the value a good benchmark question gets.
        not_applicable: the value that says the question does not apply to the item (the
            rubric's D3 of an abstention): a label like any other for the majority and
            unanimity, but no point on an ordinal or interval scale, so α leaves it out.
    """

    name: str
    prompt: str
    values: tuple[str, ...]
    agreement: bool = True
    passing: str | None = None
    not_applicable: str | None = None


@dataclass(frozen=True)
class StudySpec:
    """One study kind."""

    name: str
    title: str
    summary: str
    questions: tuple[QuestionSpec, ...]
    alpha_level: AlphaLevel = "nominal"
    #: How the annotators' answers combine, as shown before labeling starts.
    panel_note: str = "Three annotators label every task; a label holds when two of three agree."
    #: A rating study's rating question: ``annotate status --min-ratings N`` counts the
    #: tasks with at least N kept ratings of it (``None``: not a rating study).
    rating_question: str | None = None
    #: Answer values of an earlier form of the study that the current form cannot read,
    #: per question (``annotate`` stops on them with one sentence instead of misreading).
    legacy_values: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: What the earlier form was, for that sentence.
    legacy_form: str = ""

    @property
    def agreement_questions(self) -> tuple[QuestionSpec, ...]:
        """The questions aggregated 2-of-3 and measured by alpha."""
        return tuple(q for q in self.questions if q.agreement)

    def question(self, name: str) -> QuestionSpec:
        """The question called ``name``."""
        for q in self.questions:
            if q.name == name:
                return q
        raise KeyError(name)


def config_hash(config: str) -> str:
    """A short hash of a labeling config, stored with the study to notice changes."""
    return hashlib.sha256(config.encode("utf-8")).hexdigest()[:16]
