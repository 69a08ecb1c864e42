"""Figures for every report: matplotlib on an explicit Agg canvas, saved as SVG and PNG.

Figures are built on :class:`matplotlib.figure.Figure` with an explicit Agg canvas rather
than through ``pyplot``: no global figure registry, no backend switch for the host process
(Streamlit, tests), and nothing left open after saving. Saved figures are byte-identical
for the same content (stable SVG ids, no timestamp).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from storage.safe_text import escape_control

_PNG_DPI = 120
# Stable SVG ids and no timestamp, so the same analysis writes byte-identical figures.
_RC: Any = {"svg.hashsalt": "driftlens", "svg.fonttype": "path", "font.size": 9}


def plain_label(text: str, limit: int = 48) -> str:
    """Make an untrusted name safe as matplotlib text: no mathtext, bounded length.

    ``$`` would switch matplotlib to mathtext (and raise on malformed input), so it is
    escaped; newlines would break the layout; other control characters (not allowed in
    the SVG's XML, invisible in the PNG) are written as visible escapes.
    """
    flat = escape_control(" ".join(str(text).split()))
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return flat.replace("$", r"\$")


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` × ``height`` inches with its own Agg canvas."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """Save ``fig`` as ``STEM.svg`` and ``STEM.png``; returns both paths."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    svg, png = stem.with_suffix(".svg"), stem.with_suffix(".png")
    with matplotlib.rc_context(_RC):
        fig.savefig(svg, format="svg", metadata={"Date": None})
        fig.savefig(png, format="png", dpi=_PNG_DPI, metadata={"Software": None})
    return [svg, png]
