"""Render the drift report as Markdown (``report.md``) next to its SVG figures.

Untrusted text stays text: every string that did not come from this module is passed
through :func:`~study.report.markdown.md_escape`. Step labels are "coloured" with a
coloured square per ontology root, since Markdown has no colour without HTML.
"""

from __future__ import annotations

from collections.abc import Sequence

from study.reasoning.report import columns as cols
from study.reasoning.report.columns import simulated_note
from study.reasoning.report.data import (
    CALIBRATED_HEADING,
    CLASS_LABELS,
    JUDGE_RATES_HEADING,
    ExamplePair,
    ReportData,
    StepView,
)
from study.report.cells import Cell, cells, fmt, fmt_p, pass_label
from study.report.markdown import code_json, md_escape, md_table

ROOT_MARKS: tuple[str, ...] = ("🟦", "🟩", "🟥", "🟧", "🟪", "🟫")
_UNMAPPED_MARK = "⬜"


#: Markdown cell per column kind (see :mod:`study.reasoning.report.columns`); results are escaped.
_KINDS: dict[str, Cell] = {"passed": pass_label, "p": fmt_p, "fine": lambda v: fmt(v, 4)}


def _cols(columns: Sequence[cols.Column]) -> list[tuple[str, str, Cell | None]]:
    return cells(columns, _KINDS, markdown=True)


def _mark(root: str, roots: Sequence[str]) -> str:
    return cols.root_style(root, roots, ROOT_MARKS, _UNMAPPED_MARK)


def _steps(steps: Sequence[StepView], roots: Sequence[str]) -> str:
    if not steps:
        return "_No parsed steps._\n"
    return (
        "\n".join(
            f"{s.index + 1}\\. {_mark(s.root, roots)} "
            f"**{md_escape(s.root)} · {md_escape(s.leaf)}** — {md_escape(s.text)}"
            for s in steps
        )
        + "\n"
    )


def _example(ex: ExamplePair, roots: Sequence[str]) -> str:
    memory = ex.memory if ex.memory.strip() else f"(whitespace {ex.memory!r})"
    return (
        f"#### {md_escape(ex.condition_class)} · {md_escape(ex.condition)}\n\n"
        f"{md_escape(ex.model)} · question {md_escape(ex.question_id)} · sample "
        f"{md_escape(ex.sample)} · DTW {md_escape(fmt(ex.dtw))} · SRI {md_escape(fmt(ex.sri))}\n\n"
        f"> **Question:** {md_escape(ex.question)}\n>\n> **Memory line:** {md_escape(memory)}\n\n"
        f"**Baseline (no memory)**\n\n{_steps(ex.baseline, roots)}\n"
        f"Answer: {md_escape(ex.baseline_answer)}\n\n"
        f"**With memory**\n\n{_steps(ex.perturbed, roots)}\n"
        f"Answer: {md_escape(ex.perturbed_answer)}\n"
    )


def render_markdown(data: ReportData) -> str:
    """Return the report as Markdown; figures are linked as ``figures/NAME.svg``."""
    t = data.tables
    prov = data.provenance
    out: list[str] = [f"# {md_escape(data.title)}\n"]
    if prov.simulated:
        out.append(f"> **⚠ SIMULATED DATA** — {md_escape(simulated_note(prov))}\n")
    out.append(
        f"Run **{md_escape(prov.run)}** · model {md_escape(prov.model.get('spec', ''))} · "
        f"labeler {md_escape(prov.labeler.get('name', ''))} · ontology "
        f"{md_escape(prov.ontology.get('name', ''))}@{md_escape(prov.ontology.get('version', ''))}"
        f" · core {md_escape(prov.implementation)} · B = "
        f"{md_escape(prov.analysis.get('bootstrap', ''))} · seed "
        f"{md_escape(prov.analysis.get('seed', ''))}\n"
    )
    if data.not_assessable:
        out.append(f"**{md_escape(data.not_assessable)}.**\n")
    if data.robustness:
        out.append("## Judge robustness\n")
        out.extend(md_escape(line) + "\n" for line in data.robustness)
    if data.calibrated is not None:
        out.append(f"## {CALIBRATED_HEADING}\n")
        out.extend(md_escape(line) + "\n" for line in data.calibrated_notes)
        out.append(md_table(data.calibrated, [(c, c, str) for c in data.calibrated.columns]))
    if data.judge_rates is not None:
        out.append(f"## {JUDGE_RATES_HEADING}\n")
        out.extend(md_escape(line) + "\n" for line in data.judge_rates_notes)
        out.append(md_table(data.judge_rates, [(c, c, str) for c in data.judge_rates.columns]))
    out.append("## Validity checks\n")
    out.append(md_table(t.validity, _cols(cols.VALIDITY)))
    out.append("## Drift effect per condition (d_rel with 95% CI)\n")
    if "forest" in data.figures:
        out.append(f"![Forest plot of d_rel]({data.figures['forest']}.svg)\n")
    for (model, metric), g in t.conditions.groupby(["model", "metric"], sort=False):
        out.append(f"### {md_escape(model)} · {md_escape(metric)}\n")
        out.append(md_table(g, _cols(cols.CONDITIONS)))
    out.append("## Drift tiers (noise / attributes / life events)\n")
    if "tiers" in data.figures:
        out.append(f"![Drift by condition class]({data.figures['tiers']}.svg)\n")
    out.append(md_table(t.tiers, _cols(cols.TIERS)))
    out.append(
        "Classes: "
        + "; ".join(f"{md_escape(k)} = {md_escape(v)}" for k, v in CLASS_LABELS.items())
        + "\n"
    )
    out.append("## Separability (compact letter display)\n")
    out.append(md_table(t.letters, _cols(cols.LETTERS)))
    out.append("## Calibration\n")
    out.append(md_table(t.calibration_summary, _cols(cols.CALIBRATION_SUMMARY)))
    out.append(md_table(t.calibration, _cols(cols.CALIBRATION)))
    out.append("## DTW–SRI agreement\n")
    if "agreement" in data.figures:
        out.append(f"![DTW against SRI condition means]({data.figures['agreement']}.svg)\n")
    out.append(md_table(t.agreement, _cols(cols.AGREEMENT)))
    out.append("## Example response pairs\n")
    legend = " ".join(f"{_mark(r, data.roots)} {md_escape(r)}" for r in data.roots)
    out.append(f"Step labels by root: {legend} {_UNMAPPED_MARK} unmapped\n")
    out.extend(_example(ex, data.roots) for ex in data.examples)
    if not data.examples:
        out.append("_No example pairs available._\n")
    if data.questions is not None and not data.questions.empty:
        q = data.questions
        out.append("## Questions\n")
        out.append(md_table(q, _cols(cols.question_columns(q))))
    out.append("## Provenance\n")
    soft = ", ".join(f"{k} {v}" for k, v in prov.software.items())
    out.append(
        f"- Run: {md_escape(prov.run)}{' (simulated)' if prov.simulated else ''}\n"
        f"- Model: {md_escape(prov.model.get('spec', ''))}\n"
        f"- Ontology version: {md_escape(prov.ontology.get('name', ''))}@"
        f"{md_escape(prov.ontology.get('version', ''))}\n"
        f"- Labeler: {md_escape(prov.labeler.get('name', ''))}\n"
        + (
            f"- Labeler settings: {md_escape(prov.labeler['settings'])}\n"
            if prov.labeler.get("settings")
            else ""
        )
        + f"- Prompt version: {md_escape(prov.prompt_version)}\n"
        f"- Core implementation: {md_escape(prov.implementation)}\n"
        f"- Software: {md_escape(soft)}\n"
        f"- Compared pairs: {prov.drift_pairs}; not compared: "
        f"{md_escape(', '.join(f'{k}: {v}' for k, v in prov.skipped.items()) or 'none')}\n"
    )
    out.extend(
        f"### {md_escape(title)}\n\n" + code_json(value)
        for title, value in cols.provenance_blocks(prov)
    )
    return "\n".join(out)
