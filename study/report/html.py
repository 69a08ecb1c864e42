"""Render the drift report as one self-contained HTML file.

Self-contained means: inline CSS, figures embedded as ``data:`` URIs, no script, no
external resource of any kind, so the file opens offline and can be mailed around. A
Content-Security-Policy ``<meta>`` forbids scripts and every non-inline resource as a
second line of defence.

Untrusted text stays text (ARCHITECTURE rule 9): every string that did not come from this
module — questions, model output, memory lines, condition, model, labeler and ontology
names, stored configuration — goes through :func:`esc` (``html.escape`` with quotes).
CSS classes for the step-label colours are derived from the root's *position* in the
ontology, never from its name.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from study.report import columns as cols
from study.report.columns import Cell, fmt, fmt_p, pass_label, simulated_note
from study.report.data import (
    CALIBRATED_HEADING,
    CLASS_COLORS,
    CLASS_LABELS,
    ExamplePair,
    ReportData,
    StepView,
)

#: Colours of the ontology roots in document order; ``unmapped`` is grey.
ROOT_COLORS: tuple[str, ...] = ("#4477AA", "#228833", "#CC6677", "#AA7700", "#882255", "#44AA99")
_UNMAPPED_COLOR = "#888888"

#: Content-Security-Policy of the report: nothing but inline styles and data: images.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1200px;padding:1.5rem;color:#222;line-height:1.45}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
.banner{background:#b00020;color:#fff;font-weight:700;font-size:1.3rem;padding:.8rem 1rem;
border-radius:6px;margin:1rem 0;letter-spacing:.05em}
.muted{color:#666}.small{font-size:.85rem}
table{border-collapse:collapse;margin:.6rem 0 1.2rem;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.t,th.t{text-align:left}
.pass{color:#0a7d32;font-weight:600}.fail{color:#b00020;font-weight:600}.na{color:#666}
.sig{font-weight:700}
.klass{display:inline-block;padding:0 .4rem;border-radius:3px;color:#fff;font-size:.8rem}
figure{margin:1rem 0}figure img{width:100%;max-width:960px;height:auto;border:1px solid #eee}
figcaption{font-size:.85rem;color:#555}
.pair{border:1px solid #ddd;border-radius:6px;padding:.8rem;margin:1rem 0}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.steps{list-style:none;padding:0;margin:0}.steps li{margin:.3rem 0;white-space:pre-wrap}
.chip{display:inline-block;color:#fff;border-radius:3px;padding:0 .35rem;margin-right:.4rem;
font-size:.78rem;white-space:nowrap}
blockquote{margin:.4rem 0;padding:.3rem .7rem;border-left:4px solid #ccc;background:#fafafa;
white-space:pre-wrap}
pre{background:#f7f7f7;padding:.6rem;overflow-x:auto;font-size:.8rem;white-space:pre-wrap}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}
dd{margin:0}
"""


def esc(value: object) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


_PASS_CLASSES = {"pass": "pass", "FAIL": "fail", "open": "na"}


def _passed(value: Any) -> str:
    label = pass_label(value)
    return f'<span class="{_PASS_CLASSES[label]}">{label}</span>'


def _klass(value: Any) -> str:
    k = str(value)
    colour = CLASS_COLORS.get(k, "#333333")
    return f'<span class="klass" style="background:{colour}">{esc(k)}</span>'


_T = ' class="t"'  # left-aligned text column


def table(
    df: pd.DataFrame,
    columns: Sequence[tuple[str, str, Cell | None]],
    *,
    text: Sequence[str] = (),
) -> str:
    """Render ``df`` as an HTML table.

    Args:
        df: the rows.
        columns: ``(column, header, render)``; ``render`` returns trusted HTML built from
            the value and must escape it itself; ``None`` means: escape the formatted value.
        text: extra left-aligned (text) columns.
    """
    if df.empty:
        return '<p class="muted">No rows.</p>'
    text_cols = {
        "model",
        "metric",
        "condition",
        "class",
        "check",
        "detail",
        "failing",
        "letters",
        "term",
        "reference",
        "note",
        "notes",
        "null_note",
        "metric_a",
        "metric_b",
        *text,
    }
    head = "".join(f"<th{_T if c in text_cols else ''}>{esc(h)}</th>" for c, h, _ in columns)
    body = []
    for rec in df.to_dict(orient="records"):
        cells = []
        for c, _, render in columns:
            value = rec.get(c)
            inner = render(value) if render is not None else esc(fmt(value))
            cells.append(f"<td{_T if c in text_cols else ''}>{inner}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure(files: Sequence[Path], caption: str) -> str:
    svg = next((p for p in files if p.suffix == ".svg"), None)
    png = next((p for p in files if p.suffix == ".png"), None)
    if svg is not None:
        uri = "data:image/svg+xml;base64," + base64.b64encode(svg.read_bytes()).decode("ascii")
    elif png is not None:
        uri = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")
    else:
        return ""
    # An SVG shown through <img> cannot run script even if it held some.
    return (
        f'<figure><img alt="{esc(caption)}" src="{uri}">'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


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


def _pre_json(value: Any) -> str:
    return f"<pre>{esc(json.dumps(value, indent=2, sort_keys=True, default=str))}</pre>"


#: HTML cell per column kind (see :mod:`study.report.columns`); each escapes its value.
_KINDS: dict[str, Cell] = {
    "passed": _passed,
    "class": _klass,
    "p": lambda v: esc(fmt_p(v)),
    "fine": lambda v: esc(fmt(v, 4)),
}


def _cols(columns: Sequence[cols.Column]) -> list[tuple[str, str, Cell | None]]:
    return cols.cells(columns, _KINDS)


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
        parts.append(_figure(figure_files["forest"], "Forest plot of d_rel by condition"))
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
        parts.append(_figure(figure_files["tiers"], "Drift by condition class"))
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
        parts.append(_figure(figure_files["agreement"], "DTW against SRI condition means"))
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
        f"<h3>{esc(title)}</h3>" + _pre_json(value) for title, value in cols.provenance_blocks(prov)
    )

    title = ("[SIMULATED] " if simulated else "") + data.title
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(parts)
        + "\n</body></html>\n"
    )
