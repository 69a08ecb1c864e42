"""Report figures are scaled once to the width Streamlit serves unchanged (app/ui/figure_image)."""

from __future__ import annotations

import io

from PIL import Image
from streamlit.elements.lib import image_utils
from streamlit.elements.lib.layout_utils import LayoutConfig

from app.ui.figure_image import MAX_WIDTH, scaled_png


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def test_a_wide_figure_is_scaled_to_streamlits_widest_and_keeps_its_aspect() -> None:
    scaled = scaled_png(_png(3120, 1113))
    with Image.open(io.BytesIO(scaled)) as image:
        assert image.size == (MAX_WIDTH, round(1113 * MAX_WIDTH / 3120))
        assert image.format == "PNG"


def test_a_narrow_figure_is_passed_through_byte_for_byte() -> None:
    data = _png(800, 300)
    assert scaled_png(data) is data


def test_streamlit_serves_the_scaled_bytes_unchanged() -> None:
    # The point of scaling: Streamlit's own check then neither resizes nor re-encodes.
    assert image_utils.MAXIMUM_CONTENT_WIDTH == MAX_WIDTH
    scaled = scaled_png(_png(2304, 456))
    served = image_utils._ensure_image_size_and_format(scaled, LayoutConfig(width="content"), "PNG")
    assert served is scaled
