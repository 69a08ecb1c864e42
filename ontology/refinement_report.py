"""A refinement loop's history as tables, CSV and a self-contained HTML report.

Everything here reads a :class:`~ontology.refinement.RefineResult` (what
:func:`ontology.refinement_loop.loop_result` returns); the Refinement page and the exports
share it. Leaf names and reasons come from ontologies and models: the HTML escapes them.
"""

from __future__ import annotations

import csv
import html
import io
from typing import Any

from sqlmodel import Session, col, select

from ontology.refinement import RefineResult
from ontology.refinement_validation import FinalTables
from storage.refinement_models import RefinementLoop


def list_loops(*, session: Session) -> list[tuple[int, str]]:
    """``(loop id, one-line label)`` of every stored loop, newest first."""
    rows = session.exec(select(RefinementLoop).order_by(col(RefinementLoop.id).desc())).all()
    out = []
    for r in rows:
        c = r.config
        state = r.stop_reason or r.status
        out.append((r.id or 0, f"loop {r.id}: {c.get('run')} · {c.get('rewriter')} · {state}"))
    return out


def curve_rows(result: RefineResult) -> list[dict[str, Any]]:
    """Long-form agreement by round: one row per (round, series) for a line chart."""
    out: list[dict[str, Any]] = []
    for r in result.rounds:
        series = {"mean pairwise": r.get("mean_pairwise"), "alpha": r.get("krippendorff_alpha")}
        series.update({f"pair {k}": v for k, v in (r.get("pairwise") or {}).items()})
        for name, value in series.items():
            if value is not None:
                out.append({"round": r["iteration"], "series": name, "agreement": value})
    return out


def decision_rows(result: RefineResult) -> list[dict[str, Any]]:
    """The rewrites tried: pair, attempt, gate gain with its interval, decision, why."""
    rows = []
    for d in result.decisions:
        g = d["gate"] or {}
        rows.append(
            {
                "round": d["iteration"],
                "pair": " vs ".join(d["pair"]),
                "attempt": d["attempt"] + 1,
                "proposal": d["proposal"],
                "gain": g.get("gain"),
                "low": g.get("low"),
                "high": g.get("high"),
                "held-out steps": g.get("n_heldout"),
                "decision": d["decision"],
                "why": "; ".join(d["reasons"]),
                "version": d["version"] or "",
            }
        )
    return rows


def round_rows(result: RefineResult) -> list[dict[str, Any]]:
    """One row per round: version, steps, mean pairwise agreement, alpha."""
    return [
        {
            "round": r["iteration"],
            "labeling round": r.get("round"),
            "version": r.get("version"),
            "steps": r.get("n_steps"),
            "mean pairwise": r.get("mean_pairwise"),
            "alpha": r.get("krippendorff_alpha"),
        }
        for r in result.rounds
    ]


def to_csv(rows: list[dict[str, Any]]) -> str:
    """Rows as CSV text (cells that a spreadsheet would run as formulas are quoted off)."""
    buf = io.StringIO()
    if not rows:
        return ""
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return buf.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value  # untrusted text never runs as a spreadsheet formula
    return value


def _svg_curve(result: RefineResult, *, target: float, trigger: float) -> str:
    """Agreement by round as an inline SVG (mean pairwise; target and trigger lines)."""
    w, h, pad = 640, 260, 36
    means: list[tuple[int, float]] = [
        (int(r["iteration"]), float(r["mean_pairwise"]))
        for r in result.rounds
        if r.get("mean_pairwise") is not None
    ]
    n = max((x for x, _ in means), default=1)

    def px(x: float) -> float:
        return pad + (w - 2 * pad) * (x - 1) / max(1, n - 1)

    def py(y: float) -> float:
        return h - pad - (h - 2 * pad) * y

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}">']
    for y, label in ((target, "target"), (trigger, "trigger")):
        parts.append(
            f'<line x1="{pad}" x2="{w - pad}" y1="{py(y):.1f}" y2="{py(y):.1f}" '
            f'stroke="#999" stroke-dasharray="4 3"/><text x="{w - pad + 2}" y="{py(y):.1f}" '
            f'font-size="10">{label} {y:.2f}</text>'
        )
    points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in means)
    parts.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{points}"/>')
    accepted_rounds = {d["iteration"] for d in result.decisions if d["version"]}
    for x, y in means:
        if x in accepted_rounds:
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="#d62728"/>')
    parts.append(
        f'<text x="{pad}" y="{h - 8}" font-size="11">round (red: a rewrite was accepted '
        "after it)</text></svg>"
    )
    return "".join(parts)


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in rows[0])
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(f'{v:.3f}' if isinstance(v, float) else str(v))}</td>"
            for v in r.values()
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _final_section(result: RefineResult, tables: FinalTables | None) -> str:
    """The seed's cross-model, within-model and robustness tables (or how to get them)."""
    if tables is None:
        return (
            f"<h2>Final version {html.escape(result.final_version)}</h2><p>The cross-model, "
            "within-model and robustness tables were not computed for this report (they "
            "label the final round again): use the Refinement page's button or "
            "<code>driftlens ontology refine-report</code>.</p>"
        )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in tables.notes)

    def pct(rows: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
        return [{k: f"{v:.1f}" if isinstance(v, float) else v for k, v in r.items()} for r in rows]

    return (
        f"<h2>Final version {html.escape(result.final_version)}</h2>"
        f"<p>Agreement is exact match per step, in %; the within-model and robustness "
        f"tables relabel the responses of labeling round {tables.final_round}.</p>"
        f"<h3>Cross-model agreement</h3>{_table(pct(tables.cross))}"
        "<h3>Within-model agreement (same labeler, labeled twice)</h3>"
        f"{_table(pct(tables.within))}"
        "<h3>Robustness (every definition paraphrased)</h3>"
        f"{_table(pct(tables.robustness))}" + (f"<ul>{notes}</ul>" if notes else "")
    )


def render_html(result: RefineResult, tables: FinalTables | None = None) -> str:
    """A self-contained HTML report: the curve, the rounds, the rewrites tried and, when
    ``tables`` is given, the final version's cross-model, within-model and robustness
    tables (:func:`ontology.refinement_validation.final_version_tables`)."""
    c = result.config
    target, trigger = float(c.get("target", 0.83)), float(c.get("trigger", 0.70))
    start, final = result.start_agreement, result.final_agreement
    summary = (
        f"Loop {result.loop_id} on run {c.get('run')}: {result.start_version} → "
        f"{result.final_version}; mean pairwise agreement "
        f"{'-' if start is None else f'{start:.3f}'} → {'-' if final is None else f'{final:.3f}'}"
        f"; stopped: {result.stop_reason or result.status}. Labelers: "
        f"{', '.join(c.get('labelers', []))}; rewriter: {c.get('rewriter')}."
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Refinement loop "
        f"{result.loop_id}</title><style>body{{font-family:sans-serif;max-width:60em;"
        "margin:2em auto}table{border-collapse:collapse;font-size:12px}td,th{border:1px "
        "solid #ccc;padding:2px 6px}</style></head><body>"
        f"<h1>Refinement loop {result.loop_id}</h1><p>{html.escape(summary)}</p>"
        f"<h2>Agreement by round</h2>{_svg_curve(result, target=target, trigger=trigger)}"
        f"<h2>Rounds</h2>{_table(round_rows(result))}"
        f"<h2>Rewrites tried</h2>{_table(decision_rows(result))}"
        f"{_final_section(result, tables)}</body></html>"
    )
