"""Typed inputs of the drift report: what the renderers receive, nothing they compute.

The renderers (:mod:`study.reasoning.report.figures`, ``.html``, ``.markdown``, drawn with
the shared kit of :mod:`study.report`) only format what is here. Every number comes from the
statistics JSON (the ``driftlens stats`` schema) through
:mod:`study.reasoning.report.tables`, so the report cannot disagree with ``driftlens
stats`` run on the exported drift table.

Strings in :class:`ExamplePair`, :class:`StepView` and in the tables (questions, model
output, memory lines, condition and model names) are untrusted: every renderer escapes
them for its output format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from study.reasoning.report.tables import ReportTables

#: Condition classes in tier order (the order the report lists and plots them).
CLASS_ORDER: tuple[str, ...] = ("none", "noise", "attribute", "life_event", "other")

#: Human-readable names of the classes.
CLASS_LABELS: dict[str, str] = {
    "none": "no perturbation (resampled baseline)",
    "noise": "pragmatic noise",
    "attribute": "user attributes",
    "life_event": "major life events",
    "other": "other",
}

#: One colour per class, shared by every figure and the HTML (colour-blind safe, Okabe–Ito).
CLASS_COLORS: dict[str, str] = {
    "none": "#999999",
    "noise": "#0072B2",
    "attribute": "#E69F00",
    "life_event": "#D55E00",
    "other": "#009E73",
}


@dataclass(frozen=True)
class StepView:
    """One reasoning step with the label the labeler gave it.

    Attributes:
        index: 0-based step position.
        text: the step text (untrusted model output).
        leaf: the assigned leaf symbol name (``unmapped`` when nothing fit).
        root: the leaf's root category (``unmapped`` when nothing fit).
    """

    index: int
    text: str
    leaf: str
    root: str


def step_views(
    steps: Sequence[str], labels: Mapping[int, str], root_of: Mapping[str, str]
) -> tuple[StepView, ...]:
    """Pair each step with its label (``unmapped`` when the labeler gave none) and root.

    Args:
        steps: the response's step texts.
        labels: step index → leaf name.
        root_of: leaf name → root name (``OntologyDoc.root_of``).
    """
    return tuple(
        StepView(
            index=i,
            text=text,
            leaf=labels.get(i, "unmapped"),
            root=root_of.get(labels.get(i, "unmapped"), "unmapped"),
        )
        for i, text in enumerate(steps)
    )


@dataclass(frozen=True)
class ExamplePair:
    """A baseline response and one perturbed response to the same question.

    Attributes:
        model: model spec.
        question_id: the question's external id.
        question: question text (untrusted).
        condition: perturbation key of the perturbed response (e.g. ``attribute/age/3``).
        category: the condition the statistics use (e.g. ``attribute/age``).
        condition_class: ``noise``, ``attribute``, ``life_event``…
        memory: the memory line prepended to the question (untrusted).
        sample: sample index of the perturbed response.
        dtw, sri: drift of the perturbed trajectory against the baseline.
        baseline, perturbed: the labeled steps of both responses.
        baseline_answer, perturbed_answer: final answers (untrusted).
    """

    model: str
    question_id: str
    question: str
    condition: str
    category: str
    condition_class: str
    memory: str
    sample: int
    dtw: float
    sri: float
    baseline: tuple[StepView, ...]
    perturbed: tuple[StepView, ...]
    baseline_answer: str = ""
    perturbed_answer: str = ""


class Provenance(BaseModel):
    """Everything needed to say where a report's numbers came from (serialised as JSON).

    Attributes:
        version: schema version of this record.
        run: generation run name(s), comma-separated.
        simulated: whether any run's responses came from the drift simulator.
        model: the (first) run's model spec row (spec, provider, model, params).
        sampling: the (first) run's sampling parameters.
        prompt_version: the (first) run's generation prompt version.
        run_config: the (first) run's stored configuration (questions, perturbations, seeds…).
        runs: one record per analysed run: run, simulated, model, sampling,
            prompt_version, run_config.
        ontology: name, version, id and content hash of the ontology version.
        labeler: the labeler spec (name, kind, prompt version, params).
        analysis: analysis parameters (bootstrap, seed, SRI alpha, metrics, unit).
        implementation: active core implementation (``compiled`` or ``python``).
        software: versions of python, numpy, scipy, pandas, matplotlib and the workbench.
        generated_at: ISO timestamp (UTC) of the analysis.
        drift_pairs: number of compared pairs in the drift table.
        skipped: responses not compared, by reason.
    """

    model_config = ConfigDict(frozen=True)

    version: int = 1
    run: str
    simulated: bool
    model: dict[str, Any] = Field(default_factory=dict)
    sampling: dict[str, Any] = Field(default_factory=dict)
    prompt_version: str = ""
    run_config: dict[str, Any] = Field(default_factory=dict)
    runs: list[dict[str, Any]] = Field(default_factory=list)
    ontology: dict[str, Any] = Field(default_factory=dict)
    labeler: dict[str, Any] = Field(default_factory=dict)
    analysis: dict[str, Any] = Field(default_factory=dict)
    implementation: str = ""
    software: dict[str, str] = Field(default_factory=dict)
    generated_at: str = ""
    drift_pairs: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)


#: The heading of a report's section of estimates calibrated to a pulled human slice.
CALIBRATED_HEADING = "Calibrated to people (PPI++ from the human slice)"
#: The heading of the response judge's rates calibrated to their human studies.
JUDGE_RATES_HEADING = (
    "Response judge calibrated to people (helpfulness, distraction, acknowledgement)"
)


@dataclass(frozen=True)
class ReportData:
    """Everything the renderers need for one report.

    Attributes:
        title: report title (untrusted: contains the run name).
        stats: the statistics JSON, exactly as ``driftlens stats --json`` writes it.
        tables: the report tables derived from ``stats``.
        provenance: where the numbers came from.
        examples: example response pairs with labeled steps.
        roots: ontology root names in document order (fixes the step-label colours).
        figures: figure name → file stem (``figures/forest``) of the SVG and PNG files.
        questions: per-question drift (:func:`study.reasoning.report.tables.question_table`), with
            the question texts; ``None`` when not available.
        not_assessable: The sentence of a study below the usable share
            (:mod:`study.assessable`), shown first; ``None`` when assessable.
        robustness: The "Judge robustness" section's lines
            (:func:`study.judge_robustness.report.robustness_lines`: the kept result of
            ``driftlens judges robustness --instrument reasoning``, or "not assessed").
        calibrated: The "Calibrated to people" table (one text cell per column: the
            model-only and the calibrated estimate of each headline, which one is the
            headline, the human labels behind it); ``None`` when no human slice was pulled.
        calibrated_notes: Sentences on that slice (what was left out and why).
        judge_rates: The response judge's helpfulness / distraction / acknowledgement
            beside their calibrated estimates (``stats.json``'s ``calibrated_judges``, one
            text cell per column); ``None`` when no such human study was pulled.
        judge_rates_notes: Sentences on those slices.
    """

    title: str
    stats: dict[str, Any]
    tables: ReportTables
    provenance: Provenance
    examples: tuple[ExamplePair, ...] = ()
    roots: tuple[str, ...] = ()
    figures: dict[str, str] = field(default_factory=dict)
    questions: pd.DataFrame | None = None
    not_assessable: str | None = None
    robustness: tuple[str, ...] = ()
    calibrated: pd.DataFrame | None = None
    calibrated_notes: tuple[str, ...] = ()
    judge_rates: pd.DataFrame | None = None
    judge_rates_notes: tuple[str, ...] = ()
