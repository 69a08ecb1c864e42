"""Report figures on a page: scaled once to the width Streamlit shows, then served as is.

A report's PNG figures are drawn for print (2,000–3,100 px wide). ``st.image`` given such a
file resizes and re-encodes it on every visit (about 0.37 s of CPU for the Analysis page's
three, measured on the 7.9 M-response database, docs/performance.md); scaled here once per
file version, the bytes are already narrow enough and Streamlit passes them through.
"""

from __future__ import annotations

import io
from pathlib import Path

import streamlit as st
from PIL import Image

#: The widest image Streamlit serves unchanged (its ``MAXIMUM_CONTENT_WIDTH``: twice its
#: 730 px content column, for high-density screens).
MAX_WIDTH = 2 * 730


def scaled_png(data: bytes, max_width: int = MAX_WIDTH) -> bytes:
    """``data`` (a PNG) no wider than ``max_width``, aspect kept; narrower input is returned
    unchanged.

    Args:
        data: The PNG file's bytes.
        max_width: The widest result, in pixels.
    """
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
        if width <= max_width:
            return data
        small = image.resize(
            (max_width, max(1, round(height * max_width / width))), Image.Resampling.BILINEAR
        )
        out = io.BytesIO()
        small.save(out, format="PNG")
        return out.getvalue()


@st.cache_data(max_entries=64, show_spinner=False)
def _scaled_file(path: str, mtime_ns: int, size: int) -> bytes:
    # mtime and size are in the key so that a rewritten report shows its new figure.
    del mtime_ns, size
    return scaled_png(Path(path).read_bytes())


def show_figure(path: Path, caption: str | None = None) -> None:
    """Show the PNG at ``path`` (a report's figure), scaled once per file version."""
    stat = path.stat()
    st.image(_scaled_file(str(path), stat.st_mtime_ns, stat.st_size), caption=caption)
