"""The drift report: tables, figures, ``report.md`` and a self-contained ``report.html``.

:func:`write_report` renders a :class:`~study.reasoning.report.data.ReportData` into a folder::

    DIR/report.html           self-contained (inline CSS, embedded figures, no script)
    DIR/report.md             Markdown, figures linked from figures/
    DIR/figures/NAME.svg|png  forest, tiers, agreement
    DIR/tables/NAME.csv|parquet|json

The numbers come only from the statistics JSON (see :mod:`study.reasoning.report.tables`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from study.reasoning.report.data import ExamplePair, Provenance, ReportData, StepView
from study.reasoning.report.figures import write_figures
from study.reasoning.report.html import render_html
from study.reasoning.report.markdown import render_markdown
from study.reasoning.report.tables import (
    ReportTables,
    build_tables,
    question_table,
    write_frames,
    write_tables,
)

FIGURE_NAMES: tuple[str, ...] = ("forest", "tiers", "agreement")


@dataclass(frozen=True)
class ReportFiles:
    """Paths written by :func:`write_report`."""

    html: Path
    markdown: Path
    figures: dict[str, list[Path]]
    tables: dict[str, list[Path]]


def write_report(data: ReportData, out_dir: Path) -> ReportFiles:
    """Write tables, figures, ``report.md`` and ``report.html`` into ``out_dir``.

    Args:
        data: the report content; ``data.figures`` is ignored and set to the written
            figures' stems (relative to ``out_dir``).
        out_dir: target folder (created if missing; existing report files are replaced).

    Returns:
        The written paths.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = write_tables(data.tables, out_dir / "tables")
    if data.questions is not None:
        tables.update(write_frames({"questions": data.questions}, out_dir / "tables"))
    figures = write_figures(data.tables, out_dir / "figures")
    stems = {name: f"figures/{name}" for name in figures}
    content = ReportData(
        title=data.title,
        stats=data.stats,
        tables=data.tables,
        provenance=data.provenance,
        examples=data.examples,
        roots=data.roots,
        figures=stems,
        questions=data.questions,
        not_assessable=data.not_assessable,
        robustness=data.robustness,
        calibrated=data.calibrated,
        calibrated_notes=data.calibrated_notes,
        judge_rates=data.judge_rates,
        judge_rates_notes=data.judge_rates_notes,
    )
    md = out_dir / "report.md"
    md.write_text(render_markdown(content), encoding="utf-8")
    page = out_dir / "report.html"
    page.write_text(render_html(content, figures), encoding="utf-8")
    return ReportFiles(html=page, markdown=md, figures=figures, tables=tables)


__all__ = [
    "FIGURE_NAMES",
    "ExamplePair",
    "Provenance",
    "ReportData",
    "ReportFiles",
    "ReportTables",
    "StepView",
    "build_tables",
    "question_table",
    "write_report",
]
