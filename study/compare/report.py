"""The comparison report: ``report.html`` (self-contained), ``report.md``, ``comparison.json``.

Folder::

    DIR/report.html          inline CSS, the forest plot embedded as a data: URI, no script
    DIR/report.md            Markdown, the figure linked from figures/
    DIR/comparison.json      what ``driftlens compare --json`` writes
    DIR/figures/forest.svg|png
    DIR/tables/paired.csv    the paired table (formula-safe CSV)
    DIR/tables/items.csv     the most different items with both runs' texts

Every name and text that did not come from this module (run, model, statistic and scope
names, the runs' answers) is escaped: :func:`study.report.html.esc` in HTML,
:func:`study.report.markdown.md_escape` in Markdown (answers in Markdown are shown in
quoted blocks, every line escaped). Simulated runs are marked at
the top of both documents.
"""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path

from storage.safe_text import escape_control
from study.compare.forest import write_forest
from study.compare.service import matching_lines
from study.compare.types import Comparison, StatRow
from study.report.folder import final_paths, staged_report_folder
from study.report.html import CSP
from study.report.html import esc as html_esc
from study.report.markdown import md_escape
from study.safe_csv import write_frame_csv

SIMULATED_NOTE = (
    "SIMULATED: at least one compared run was answered by the DriftLens simulator with "
    "known doses, not by a real model."
)
_CSS = """
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1.5rem;color:#222}
.banner{background:#b00020;color:#fff;font-weight:700;padding:.8rem 1rem;border-radius:6px}
table{border-collapse:collapse;margin:.6rem 0 1.2rem;font-size:.82rem}
th,td{border:1px solid #ddd;padding:.2rem .45rem;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.t{text-align:left}.different{color:#b00020;font-weight:700}
.equivalent{color:#0a7d32;font-weight:700}figure img{max-width:100%}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1rem}.item{border:1px solid #ddd;
border-radius:6px;padding:.6rem;margin:.8rem 0}pre{white-space:pre-wrap;background:#f7f7f7;
padding:.5rem;font-size:.8rem}
"""
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_a", "A"), ("run_b", "B"), ("statistic", "statistic"), ("scope", "scope"),
    ("value_a", "A value"), ("value_b", "B value"), ("diff", "B − A"), ("ci", "95% CI"),
    ("p_adjusted", "p (BH)"), ("test", "paired test"), ("p_test", "test p"),
    ("test_detail", "detail"), ("mdd", "MDD"), ("margin", "margin"), ("tost_p", "TOST p"),
    ("n_items", "items"), ("verdict", "verdict"),
)  # fmt: skip
_TEXT_COLS = {"run_a", "run_b", "statistic", "scope", "test", "test_detail", "verdict"}


def _css(verdict: str) -> str:
    """The verdict as a class name (``no information`` holds a space)."""
    return verdict.replace(" ", "-")


def _num(x: float, digits: int = 3) -> str:
    return "–" if not math.isfinite(x) else f"{x:.{digits}f}"


def _p(x: float) -> str:
    return "–" if not math.isfinite(x) else ("<0.001" if x < 0.001 else f"{x:.3f}")


def _cell(r: StatRow, key: str) -> str:
    if key == "ci":
        return f"[{_num(r.ci_low)}, {_num(r.ci_high)}]"
    value = getattr(r, key)
    if key in ("p_adjusted", "p_test", "tost_p"):
        return _p(value)
    if isinstance(value, float):
        return _num(value)
    return str(value)


def esc(value: object) -> str:
    """HTML-escape with control characters made visible (a name is shown, never acts)."""
    return html_esc(escape_control("" if value is None else str(value)))


def _visible(text: str) -> str:
    """Control characters shown as escapes, newlines kept (the answer's line structure)."""
    return escape_control(text, keep_newlines=True)


def render_markdown(c: Comparison, figure: str = "figures/forest.svg") -> str:
    """The comparison as Markdown (every untrusted value escaped)."""
    out = [f"# Comparison: {md_escape(c.instrument)} — {md_escape(', '.join(c.runs))}", ""]
    if c.simulated:
        out += [f"**{SIMULATED_NOTE}**", ""]
    out += [f"Compared: {md_escape(c.headline)}. Intervals: paired item-cluster bootstrap "
            f"(B = {c.options.n_boot}, seed {c.options.seed}); "
            f"{md_escape(c.margin_note)}; BH over {len(c.rows)} comparisons at "
            f"α = {c.options.alpha:g}.", ""]  # fmt: skip
    out += ["## Runs", ""] + [f"- {md_escape(r)}: {md_escape(c.labels.get(r, r))}" for r in c.runs]
    out += ["", "## Matching", ""] + [f"- {md_escape(line)}" for line in matching_lines(c)]
    out += ["", "## Paired table", ""]
    out.append("| " + " | ".join(h for _, h in _COLUMNS) + " |")
    out.append("|" + "|".join("---" for _ in _COLUMNS) + "|")
    for r in c.rows:
        out.append("| " + " | ".join(md_escape(_cell(r, k)) for k, _ in _COLUMNS) + " |")
    out += ["", f"![forest plot of the paired differences]({figure})", ""]
    if c.ranking:
        out += [
            "## Ranking (runs sharing a letter cannot be separated)",
            "",
            "Letters read the table's BH-adjusted p (one family: every row).",
            "",
        ]
        out += ["| statistic | scope | run | value | letters |", "|---|---|---|---|---|"]
        out += [f"| {md_escape(x.statistic)} | {md_escape(x.scope)} | {md_escape(x.run)} | "
                f"{_num(x.value)} | {md_escape(x.letters)} |" for x in c.ranking]  # fmt: skip
        out.append("")
    out += ["## Items that differ most", ""]
    for it in c.items:
        out += [f"### {md_escape(it.item)} ({md_escape(it.run_a)} vs {md_escape(it.run_b)}, "
                f"score {it.score:.3f})", "", md_escape(it.detail), ""]  # fmt: skip
        for run, text in ((it.run_a, it.text_a), (it.run_b, it.text_b)):
            # a quoted block, each line escaped: no fence a backtick in the answer could close
            quoted = [f"> {md_escape(line)}" for line in text.splitlines() if line.strip()]
            out += [f"{md_escape(run)}:", "", *(quoted or ["> (no text)"]), ""]
    return "\n".join(out) + "\n"


def render_html(c: Comparison, figure: list[Path]) -> str:
    """The comparison as one self-contained HTML page (no script, figure embedded)."""
    svg = next((p for p in figure if p.suffix == ".svg"), None)
    img = ""
    if svg is not None:
        uri = "data:image/svg+xml;base64," + base64.b64encode(svg.read_bytes()).decode("ascii")
        img = f'<figure><img alt="forest plot" src="{uri}"></figure>'
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>{esc('Comparison: ' + ', '.join(c.runs))}</title><style>{_CSS}</style>",
        "</head><body>",
        f"<h1>Comparison: {esc(c.instrument)} — {esc(', '.join(c.runs))}</h1>",
    ]
    if c.simulated:
        parts.append(f'<div class="banner">{esc(SIMULATED_NOTE)}</div>')
    parts.append(
        f"<p>Compared: {esc(c.headline)}. Intervals: paired item-cluster bootstrap (B = "
        f"{c.options.n_boot}, seed {c.options.seed}); {esc(c.margin_note)}; BH over "
        f"{len(c.rows)} comparisons at α = {c.options.alpha:g}.</p>"
    )
    parts.append("<h2>Runs</h2><ul>" + "".join(
        f"<li>{esc(r)}: {esc(c.labels.get(r, r))}</li>" for r in c.runs) + "</ul>")  # fmt: skip
    parts.append("<h2>Matching</h2><ul>" + "".join(
        f"<li>{esc(line)}</li>" for line in matching_lines(c)) + "</ul>")  # fmt: skip
    head = "".join(f"<th>{esc(h)}</th>" for _, h in _COLUMNS)
    body = []
    for r in c.rows:
        cells = "".join(
            f'<td class="{"t" if k in _TEXT_COLS else ""}'
            f'{" " + _css(r.verdict) if k == "verdict" else ""}">{esc(_cell(r, k))}</td>'
            for k, _ in _COLUMNS
        )
        body.append(f"<tr>{cells}</tr>")
    parts.append(f"<h2>Paired table</h2><table><thead><tr>{head}</tr></thead>"
                 f"<tbody>{''.join(body)}</tbody></table>{img}")  # fmt: skip
    if c.ranking:
        rows = "".join(
            f'<tr><td class="t">{esc(x.statistic)}</td><td class="t">{esc(x.scope)}</td>'
            f'<td class="t">{esc(x.run)}</td><td>{_num(x.value)}</td>'
            f'<td class="t">{esc(x.letters)}</td></tr>'
            for x in c.ranking
        )
        parts.append("<h2>Ranking</h2><p>Runs sharing a letter cannot be separated; the "
                     "letters read the table's BH-adjusted p (one family: every row).</p>"
                     "<table><thead><tr><th>statistic</th><th>scope</th><th>run</th>"
                     f"<th>value</th><th>letters</th></tr></thead><tbody>{rows}</tbody>"
                     "</table>")  # fmt: skip
    parts.append("<h2>Items that differ most</h2>")
    for it in c.items:
        sides = "".join(
            f"<div><b>{esc(run)}</b><pre>{html_esc(_visible(text))}</pre></div>"
            for run, text in ((it.run_a, it.text_a), (it.run_b, it.text_b))
        )
        parts.append(
            f'<div class="item"><b>{esc(it.item)}</b> ({esc(it.run_a)} vs {esc(it.run_b)}, '
            f"score {it.score:.3f}): {esc(it.detail)}<div class='cols'>{sides}</div></div>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_comparison_report(comparison: Comparison, out_dir: Path) -> dict[str, Path]:
    """Write the whole report folder (replaced as a whole, see ``staged_report_folder``).

    Returns:
        ``report_html``, ``report_md``, ``json``, ``paired_csv``, ``items_csv``,
        ``forest_svg``, ``forest_png`` → final paths.
    """
    target = Path(out_dir)
    with staged_report_folder(target) as stage:
        figure = write_forest(comparison, stage / "figures")
        files = {
            "report_html": stage / "report.html",
            "report_md": stage / "report.md",
            "json": stage / "comparison.json",
            "paired_csv": stage / "tables" / "paired.csv",
            "items_csv": stage / "tables" / "items.csv",
            "forest_svg": figure[0],
            "forest_png": figure[1],
        }
        files["paired_csv"].parent.mkdir(parents=True, exist_ok=True)
        write_frame_csv(comparison.table(), files["paired_csv"])
        write_frame_csv(comparison.items_table(), files["items_csv"])
        files["json"].write_text(
            json.dumps(comparison.to_dict(), indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        files["report_md"].write_text(render_markdown(comparison), encoding="utf-8")
        files["report_html"].write_text(render_html(comparison, figure), encoding="utf-8")
    return final_paths(files, stage, target)
