"""Which columns each drift-report table shows, shared by the HTML and Markdown renderers.

Each table is a tuple of :class:`~study.report.cells.Column` (kinds: ``passed``, ``class``
— a condition class —, ``p``, ``fine``). ``report.md`` shows only the columns marked
``markdown=True``. Also here: the note on simulated runs, the stored-configuration blocks of
the provenance section and the colour (or mark) of a step's root.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from study.reasoning.report.data import Provenance
from study.report.cells import Column, Kind


def _c(column: str, header: str | None = None, kind: Kind = None, **kw: Any) -> Column:
    return Column(column, column if header is None else header, kind, **kw)


VALIDITY: tuple[Column, ...] = (
    _c("model"),
    _c("metric"),
    _c("check"),
    _c("passed", "result", "passed"),
    _c("detail"),
    _c("failing"),
)

CONDITIONS: tuple[Column, ...] = (
    _c("class", kind="class"),
    _c("condition"),
    _c("n"),
    _c("n_questions", "questions", markdown=False),
    _c("mean", "mean drift"),
    _c("d_rel"),
    _c("ci_low", "CI low"),
    _c("ci_high", "CI high"),
    _c("p_adjusted", "p (BH)", "p"),
    _c("significant", "above floor?"),
    _c("cohens_d", "Cohen's d"),
    _c("letters"),
    _c("flags"),
)

TIERS: tuple[Column, ...] = (
    _c("model"),
    _c("metric"),
    _c("class", kind="class"),
    _c("conditions"),
    _c("n", "rows"),
    _c("mean_drift", "mean drift"),
    _c("mean_d_rel", "mean d_rel"),
    _c("min_d_rel", "min d_rel", markdown=False),
    _c("max_d_rel", "max d_rel", markdown=False),
    _c("above_floor", "above floor"),
)

LETTERS: tuple[Column, ...] = (
    _c("model"),
    _c("metric"),
    _c("condition"),
    _c("class", kind="class"),
    _c("mean", "mean drift"),
    _c("letters"),
)

CALIBRATION_SUMMARY: tuple[Column, ...] = (
    _c("model"),
    _c("metric"),
    _c("noise_mean", "noise mean"),
    _c("noise_sd", "noise sd"),
    _c("null_available", "null test?"),
    _c("null_mean_difference", "null mean diff.", "fine"),
    _c("null_fraction_excluding_zero", "share CI ∌ 0", md_header="share CI excl. 0"),
    _c("share_between_question", "var: question", markdown=False),
    _c("share_question_condition", "var: q×cond.", markdown=False),
    _c("share_model", "var: sampling", markdown=False),
    _c("null_note", "note"),
    _c("notes", markdown=False),
)

CALIBRATION: tuple[Column, ...] = (
    _c("model"),
    _c("metric"),
    _c("condition"),
    _c("class", kind="class", markdown=False),
    _c("detected", "detected?"),
    _c("mdd", "MDD (d_rel)"),
    _c("mdd_raw", "MDD (raw)", "fine", markdown=False),
    _c("equivalence_bound", "equiv. bound"),
    _c("null_mean", "null mean", "fine"),
    _c("null_ci_low", "null CI low", "fine", markdown=False),
    _c("null_ci_high", "null CI high", "fine", markdown=False),
    _c("null_excludes_zero", "excludes 0?", md_header="null CI excl. 0?"),
)

AGREEMENT: tuple[Column, ...] = (
    _c("model"),
    _c("metric_a", "metric"),
    _c("metric_b", "metric"),
    _c("spearman", "Spearman ρ", md_header="Spearman rho"),
    _c("pearson", "Pearson r"),
    _c("passed", "result", "passed"),
    _c("detail", markdown=False),
)

MIXED_MODEL: tuple[Column, ...] = (
    _c("model"),
    _c("metric"),
    _c("reference"),
    _c("term"),
    _c("estimate", kind="fine"),
    _c("se", "SE", "fine"),
    _c("icc", "ICC"),
    _c("note"),
)


def question_columns(questions: pd.DataFrame) -> tuple[Column, ...]:
    """Columns of the per-question table: id, text, pairs, then one per condition class."""
    fixed = (_c("question_id", "question id"), _c("question"), _c("pairs"))
    return fixed + tuple(_c(c, c.replace("_", " ")) for c in questions.columns[3:])


def simulated_note(prov: Provenance) -> str:
    """Say which responses are simulated (all of them, or the named runs)."""
    sims = [str(r.get("run", "")) for r in prov.runs if r.get("simulated")]
    if prov.runs and len(sims) < len(prov.runs):
        return (
            f"the responses of run(s) {', '.join(sims)} come from the DriftLens drift "
            "simulator with known doses, not from a real model."
        )
    return (
        "these responses come from the DriftLens drift simulator with known doses, "
        "not from a real model."
    )


def provenance_blocks(prov: Provenance) -> list[tuple[str, Any]]:
    """The stored configuration shown as JSON at the end of the report: ``(title, value)``."""
    blocks: list[tuple[str, Any]] = [
        ("Sampling parameters", prov.sampling),
        ("Analysis parameters and seeds", prov.analysis),
        ("Model spec", prov.model),
        ("Labeler spec", prov.labeler),
        ("Run configuration", prov.run_config),
    ]
    if len(prov.runs) > 1:
        blocks.append(("Every analysed run", prov.runs))
    return blocks


def root_style(root: str, roots: Sequence[str], palette: Sequence[str], unmapped: str) -> str:
    """A root's entry of ``palette`` by its position in the ontology (never by its name)."""
    if root in roots:
        return palette[list(roots).index(root) % len(palette)]
    return unmapped
