"""Render the drift report as one self-contained HTML file (with :mod:`study.report.html`).

Untrusted text stays text (ARCHITECTURE rule 9): every string that did not come from this
module — questions, model output, memory lines, condition, model, labeler and ontology
names, stored configuration — goes through :func:`~study.report.html.esc`. CSS classes
for the step-label colours are derived from the root's *position* in the ontology, never
from its name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from study.reasoning.report import columns as cols
from study.reasoning.report.columns import simulated_note
from study.reasoning.report.data import (
    CALIBRATED_HEADING,
    CLASS_COLORS,
    CLASS_LABELS,
    JUDGE_RATES_HEADING,
    ExamplePair,
    ReportData,
    StepView,
)
from study.report.cells import Cell, cells, fmt, fmt_p
from study.report.html import CSP, CSS, embed_figure, esc, passed_cell, pre_json, table

#: Colours of the ontology roots in document order; ``unmapped`` is grey.
ROOT_COLORS: tuple[str, ...] = ("#4477AA", "#228833", "#CC6677", "#AA7700", "#882255", "#44AA99")
_UNMAPPED_COLOR = "#888888"


def _klass(value: Any) -> str:
    k = str(value)
    colour = CLASS_COLORS.get(k, "#333333")
    return f'<span class="klass" style="background:{colour}">{esc(k)}</span>'


def _root_color(root: str, roots: Sequence[str]) -> str:
    return cols.root_style(root, roots, ROOT_COLORS, _UNMAPPED_COLOR)


def _steps(steps: Sequence[StepView], roots: Sequence[str]) -> str:
    if not steps:
        return '<p class="muted">No parsed steps.</p>'
    items = []
    for s in steps:
        colour = _root_color(s.root, roots)
        chip = (
            f'<span class="chip" style="background:{colour}" title="{esc(s.root)}">'
            f"{esc(s.root)} · {esc(s.leaf)}</span>"
        )
        items.append(f"<li>{chip}<b>{s.index + 1}.</b> {esc(s.text)}</li>")
    return f'<ol class="steps">{"".join(items)}</ol>'


def _memory(text: str) -> str:
    # Noise stimuli are whitespace; show them visibly instead of as an empty box.
    if not text.strip():
        return f'<span class="muted">(whitespace {esc(repr(text))})</span>'
    return esc(text)


def _example(ex: ExamplePair, roots: Sequence[str]) -> str:
    return f"""
<div class="pair">
  <div>{_klass(ex.condition_class)} <b>{esc(ex.condition)}</b>
  <span class="muted">· {esc(ex.model)} · question {esc(ex.question_id)} · sample
  {esc(ex.sample)} · DTW {esc(fmt(ex.dtw))} · SRI {esc(fmt(ex.sri))}</span></div>
  <p class="small muted">Question</p><blockquote>{esc(ex.question)}</blockquote>
  <p class="small muted">Memory line</p><blockquote>{_memory(ex.memory)}</blockquote>
  <div class="cols">
    <div><h4>Baseline (no memory)</h4>{_steps(ex.baseline, roots)}
      <p class="small"><b>Answer:</b> {esc(ex.baseline_answer)}</p></div>
    <div><h4>With memory</h4>{_steps(ex.perturbed, roots)}
      <p class="small"><b>Answer:</b> {esc(ex.perturbed_answer)}</p></div>
  </div>
</div>"""


def _root_legend(roots: Sequence[str]) -> str:
    chips = [
        f'<span class="chip" style="background:{_root_color(r, roots)}">{esc(r)}</span>'
        for r in roots
    ]
    chips.append(f'<span class="chip" style="background:{_UNMAPPED_COLOR}">unmapped</span>')
    return "<p>Step labels by root: " + " ".join(chips) + "</p>"


#: HTML cell per column kind (see :mod:`study.reasoning.report.columns`); each escapes its value.
_KINDS: dict[str, Cell] = {
    "passed": passed_cell,
    "class": _klass,
    "p": lambda v: esc(fmt_p(v)),
    "fine": lambda v: esc(fmt(v, 4)),
}


def _cols(columns: Sequence[cols.Column]) -> list[tuple[str, str, Cell | None]]:
    return cells(columns, _KINDS)


def render_html(data: ReportData, figure_files: dict[str, list[Path]]) -> str:
    """Return the report as one self-contained HTML document.

    Args:
        data: what to report.
        figure_files: figure name → its ``[svg, png]`` files (embedded, not linked).
    """
    t = data.tables
    prov = data.provenance
    simulated = prov.simulated
    banner = (
        f'<div class="banner">SIMULATED DATA — {esc(simulated_note(prov))}</div>'
        if simulated
        else ""
    )
    parts: list[str] = []
    parts.append(f"<h1>{esc(data.title)}</h1>{banner}")
    parts.append(
        f'<p class="muted">Run <b>{esc(prov.run)}</b> · model {esc(prov.model.get("spec", ""))}'
        f" · labeler {esc(prov.labeler.get('name', ''))} · ontology "
        f"{esc(prov.ontology.get('name', ''))}@{esc(prov.ontology.get('version', ''))}"
        f" · core {esc(prov.implementation)} · B = {esc(prov.analysis.get('bootstrap', ''))}"
        f" · seed {esc(prov.analysis.get('seed', ''))} · generated {esc(prov.generated_at)}</p>"
    )

    if data.not_assessable:
        parts.append(f"<p class='banner'><b>{esc(data.not_assessable)}.</b></p>")
    if data.robustness:
        parts.append("<h2>Judge robustness</h2>")
        parts.extend(f"<p>{esc(line)}</p>" for line in data.robustness)
    if data.calibrated is not None:
        parts.append(f"<h2>{esc(CALIBRATED_HEADING)}</h2>")
        parts.extend(f"<p>{esc(line)}</p>" for line in data.calibrated_notes)
        parts.append(
            table(
                data.calibrated,
                [(c, c, None) for c in data.calibrated.columns],
                text=tuple(data.calibrated.columns),
            )
        )
    if data.judge_rates is not None:
        parts.append(f"<h2>{esc(JUDGE_RATES_HEADING)}</h2>")
        parts.extend(f"<p>{esc(line)}</p>" for line in data.judge_rates_notes)
        parts.append(
            table(
                data.judge_rates,
                [(c, c, None) for c in data.judge_rates.columns],
                text=tuple(data.judge_rates.columns),
            )
        )
    # -- summary of the validity checks, first: it says whether to trust the rest
    parts.append("<h2>Validity checks</h2>")
    parts.append(
        "<p>Specificity: no pragmatic-noise condition above the floor (BH-adjusted p &gt; "
        "0.05). Sensitivity: every life event above the floor (adjusted p &lt; 0.001). "
        "Convergent validity: the metrics rank conditions alike (Spearman ρ ≥ 0.7).</p>"
    )
    parts.append(table(t.validity, _cols(cols.VALIDITY)))

    # -- forest plot and the full condition table
    parts.append("<h2>Drift effect per condition (d_rel with 95% CI)</h2>")
    parts.append(
        "<p>d_rel = (mean drift of the condition − mean drift under pragmatic noise) / sd of "
        "drift under noise; 95% percentile intervals from a cluster bootstrap over questions "
        "(the floor re-estimated in every replicate); p-values Benjamini–Hochberg adjusted "
        "across conditions. A condition is a perturbation <i>category</i>: its stimuli are "
        "variants of one condition and the question is the independent unit.</p>"
    )
    if "forest" in figure_files:
        parts.append(embed_figure(figure_files["forest"], "Forest plot of d_rel by condition"))
    for (model, metric), g in t.conditions.groupby(["model", "metric"], sort=False):
        parts.append(f"<h3>{esc(model)} · {esc(metric)}</h3>")
        parts.append(table(g, _cols(cols.CONDITIONS)))

    # -- tiers
    parts.append("<h2>Drift tiers (noise / attributes / life events)</h2>")
    parts.append(
        "<p>Mean drift per condition class (row-weighted); a valid instrument puts pragmatic "
        "noise at the floor, user attributes above it and major life events highest.</p>"
    )
    if "tiers" in figure_files:
        parts.append(embed_figure(figure_files["tiers"], "Drift by condition class"))
    parts.append(table(t.tiers, _cols(cols.TIERS)))
    parts.append(
        "<p class='small muted'>"
        + " · ".join(f"{_klass(k)} {esc(v)}" for k, v in CLASS_LABELS.items())
        + "</p>"
    )

    # -- letters
    parts.append("<h2>Separability (compact letter display)</h2>")
    parts.append(
        "<p>Pairwise Welch t-tests on question means, BH-adjusted; conditions sharing a "
        "letter do not differ at α = 0.05.</p>"
    )
    parts.append(table(t.letters, _cols(cols.LETTERS)))

    # -- calibration
    parts.append("<h2>Calibration</h2>")
    parts.append(
        "<p>Null test: the difference between two samples of the same condition is pure "
        "noise; its interval should exclude 0 in about 5% of conditions. MDD: minimum "
        "detectable d_rel (t-based, 80% power at the 5% level). Equivalence "
        "bound: when nothing is detected, the effect lies within ± this d_rel (90% CI).</p>"
    )
    parts.append(table(t.calibration_summary, _cols(cols.CALIBRATION_SUMMARY)))
    parts.append(table(t.calibration, _cols(cols.CALIBRATION)))

    # -- agreement
    parts.append("<h2>DTW–SRI agreement</h2>")
    if "agreement" in figure_files:
        parts.append(embed_figure(figure_files["agreement"], "DTW against SRI condition means"))
    parts.append(table(t.agreement, _cols(cols.AGREEMENT)))

    # -- mixed model
    parts.append("<h2>Mixed model</h2>")
    parts.append(
        "<p>drift ~ condition + (1 | question), REML; fixed effects are differences from the "
        "reference condition.</p>"
    )
    parts.append(table(t.mixed_model, _cols(cols.MIXED_MODEL)))

    # -- examples
    parts.append("<h2>Example response pairs</h2>")
    parts.append(_root_legend(data.roots))
    if data.examples:
        parts.extend(_example(ex, data.roots) for ex in data.examples)
    else:
        parts.append('<p class="muted">No example pairs available.</p>')

    # -- questions
    if data.questions is not None and not data.questions.empty:
        q = data.questions
        q_table = table(q, _cols(cols.question_columns(q)), text=("question_id", "question"))
        parts.append("<h2>Questions</h2>")
        parts.append(
            f"<details><summary>Mean drift per question and condition class "
            f"({len(q)} questions)</summary>{q_table}"
            "</details>"
        )

    # -- provenance
    parts.append("<h2>Provenance</h2>")
    soft = ", ".join(f"{k} {v}" for k, v in prov.software.items())
    skipped = ", ".join(f"{k}: {v}" for k, v in prov.skipped.items()) or "none"
    parts.append(
        "<dl>"
        f"<dt>Run</dt><dd>{esc(prov.run)}{' (simulated)' if simulated else ''}</dd>"
        f"<dt>Model</dt><dd>{esc(prov.model.get('spec', ''))}</dd>"
        f"<dt>Ontology version</dt><dd>{esc(prov.ontology.get('name', ''))}@"
        f"{esc(prov.ontology.get('version', ''))} (sha256 "
        f"{esc(str(prov.ontology.get('content_hash', ''))[:16])}…)</dd>"
        f"<dt>Labeler</dt><dd>{esc(prov.labeler.get('name', ''))} (kind "
        f"{esc(prov.labeler.get('kind', ''))}, prompt "
        f"{esc(prov.labeler.get('prompt_version', ''))})</dd>"
        + (
            f"<dt>Labeler settings</dt><dd>{esc(prov.labeler['settings'])}</dd>"
            if prov.labeler.get("settings")
            else ""
        )
        + f"<dt>Prompt version</dt><dd>{esc(prov.prompt_version)}</dd>"
        f"<dt>Core implementation</dt><dd>{esc(prov.implementation)}</dd>"
        f"<dt>Software</dt><dd>{esc(soft)}</dd>"
        f"<dt>Compared pairs</dt><dd>{esc(prov.drift_pairs)}</dd>"
        f"<dt>Not compared</dt><dd>{esc(skipped)}</dd>"
        "</dl>"
    )
    parts.extend(
        f"<h3>{esc(title)}</h3>" + pre_json(value) for title, value in cols.provenance_blocks(prov)
    )

    title = ("[SIMULATED] " if simulated else "") + data.title
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(parts)
        + "\n</body></html>\n"
    )
