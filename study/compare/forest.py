"""The forest plot of a comparison: each paired difference with its 95 % interval and margin.

Drawn on an explicit Agg canvas (no pyplot state), saved as SVG and PNG like every report
figure; names are made inert for matplotlib with :func:`study.report.figures.plain_label`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from study.compare.types import Comparison
from study.report.figures import plain_label

#: At most this many rows are drawn (the largest differences first); the table has all.
MAX_ROWS = 60
_COLORS = {"different": "#b00020", "equivalent": "#0a7d32", "inconclusive": "#555555",
           "untestable": "#999999", "no information": "#999999"}  # fmt: skip
_RC: Any = {"svg.hashsalt": "driftlens", "svg.fonttype": "path", "font.size": 8}


def forest_figure(comparison: Comparison) -> Figure:
    """Paired differences ``B − A`` with intervals; ticks at ``±margin`` per row."""
    rows = [r for r in comparison.rows if math.isfinite(r.diff)]
    rows = sorted(rows, key=lambda r: -abs(r.diff))[:MAX_ROWS][::-1]
    height = max(2.0, 0.22 * len(rows) + 1.0)
    fig = Figure(figsize=(7.5, height), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for y, r in enumerate(rows):
        color = _COLORS.get(r.verdict, "#555555")
        if math.isfinite(r.ci_low) and math.isfinite(r.ci_high):
            ax.plot([r.ci_low, r.ci_high], [y, y], color=color, lw=1.4)
        ax.plot([r.diff], [y], "o", color=color, ms=4)
        if math.isfinite(r.margin):
            ax.plot([-r.margin, r.margin], [y, y], "|", color="#1f77b4", ms=7)
    ax.axvline(0.0, color="#888888", lw=0.8, ls="--")
    labels = [
        plain_label(
            f"{r.statistic} · {r.scope}"
            + (f" ({r.run_b} − {r.run_a})" if len(comparison.runs) > 2 else ""),
            64,
        )
        for r in rows
    ]
    ax.set_yticks(range(len(rows)), labels)
    ax.set_xlabel(plain_label(f"B − A ({comparison.runs[1]} − {comparison.runs[0]})"
                              if len(comparison.runs) == 2 else "B − A", 80))  # fmt: skip
    ax.set_title(
        "paired differences, 95 % interval (red: different after BH, green: equivalent; "
        "blue ticks: ±margin)",
        fontsize=8,
    )
    return fig


def write_forest(comparison: Comparison, folder: Path) -> list[Path]:
    """Write ``forest.svg`` and ``forest.png`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    fig = forest_figure(comparison)
    svg, png = folder / "forest.svg", folder / "forest.png"
    with matplotlib.rc_context(_RC):
        fig.savefig(svg, format="svg", metadata={"Date": None})
        fig.savefig(png, format="png", dpi=120, metadata={"Software": None})
    return [svg, png]
