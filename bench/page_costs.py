"""Two per-visit costs of the pages, before and after their fix (a benchmark, not a test).

``python bench/page_costs.py --figures DIR [--repeat 5]`` times, in this process:

* a report figure as ``st.image`` got it (the PNG file: Streamlit resizes and re-encodes
  anything wider than its content width on every visit) against the bytes
  :mod:`app.ui.figure_image` scales once (Streamlit then passes them through);
* the bundled ontology as the pages seed it: parsing its YAML (every call before) against
  :func:`ontology.schema.load_seed`'s deep copy of the document parsed once per process.

Prints a Markdown table with the ratio of each pair, measured in the same run (CPU time).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu_ms(work: Callable[[], object], repeat: int) -> float:
    """Median CPU milliseconds of ``repeat`` calls of ``work``."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", type=Path, required=True, help="A report's figures/ folder.")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    pngs = sorted(args.figures.glob("*.png"))
    if not pngs:
        print(f"{args.figures} holds no PNG figure.", file=sys.stderr)
        return 2
    # Streamlit's own check is what is timed, so the bench calls it directly.
    from streamlit.elements.lib.image_utils import (  # noqa: TID251
        _ensure_image_size_and_format,
    )
    from streamlit.elements.lib.layout_utils import LayoutConfig  # noqa: TID251

    from app.ui.figure_image import scaled_png
    from ontology.schema import load_seed, parse_ontology

    layout = LayoutConfig(width="content")
    rows: list[tuple[str, float, float]] = []
    for png in pngs:
        data = png.read_bytes()
        scaled = scaled_png(data)
        before = _cpu_ms(partial(_ensure_image_size_and_format, data, layout, "PNG"), args.repeat)
        after = _cpu_ms(partial(_ensure_image_size_and_format, scaled, layout, "PNG"), args.repeat)
        rows.append((f"figure {png.name} (st.image's check)", before, after))
    text = resources.files("ontology.data").joinpath("driftlens.yaml").read_text(encoding="utf-8")
    load_seed()  # the once-per-process parse, not counted
    rows.append(
        (
            "bundled ontology driftlens",
            _cpu_ms(lambda: parse_ontology(text, source="bundled"), args.repeat),
            _cpu_ms(load_seed, args.repeat),
        )
    )
    print("| per visit | before (ms CPU) | after (ms CPU) | before / after |")
    print("|---|---:|---:|---:|")
    for name, before, after in rows:
        print(f"| {name} | {before:.2f} | {after:.3f} | {before / max(after, 1e-6):,.0f} × |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
