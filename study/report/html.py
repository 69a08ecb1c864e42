"""Self-contained HTML for every report: the policy, the style sheet, escaping, tables, figures.

Self-contained means: inline CSS, figures embedded as ``data:`` URIs, no script, no
external resource of any kind, so a report opens offline and can be mailed around. A
Content-Security-Policy ``<meta>`` (:data:`CSP`) forbids scripts and every non-inline
resource as a second line of defence.

Untrusted text stays text (ARCHITECTURE rule 9): every string a report did not write itself
— questions, model output, memory lines, run, model, judge and labeler names, stored
configuration — goes through :func:`esc` (control characters written out, then
``html.escape`` with quotes).
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from storage.safe_text import escape_control
from study.report.cells import Cell, fmt, pass_label

#: Content-Security-Policy of a report: nothing but inline styles and data: images.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

#: The style sheet every report page inlines.
CSS = """
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
    """Escape any value for HTML text or a quoted attribute.

    Control characters (a model's terminal escape, a bell, a right-to-left override) are
    written as ``\\xNN`` first: HTML would pass them to the page and to anyone who reads
    or greps the file in a terminal.
    """
    return html.escape(escape_control(value, keep_newlines=True), quote=True)


_PASS_CLASSES = {"pass": "pass", "FAIL": "fail", "open": "na"}


def passed_cell(value: Any) -> str:
    """A check result as a coloured ``pass`` / ``FAIL`` / ``open`` label."""
    label = pass_label(value)
    return f'<span class="{_PASS_CLASSES[label]}">{label}</span>'


def pre_json(value: Any) -> str:
    """A value as indented JSON in an escaped ``<pre>`` block."""
    return f"<pre>{esc(json.dumps(value, indent=2, sort_keys=True, default=str))}</pre>"


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


def embed_figure(files: Sequence[Path], caption: str) -> str:
    """A ``<figure>`` embedding the SVG (else the PNG) of ``files`` as a ``data:`` URI."""
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
