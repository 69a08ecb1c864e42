"""In chromium: the Compare page on the simulated disposition arms, linked through the URL.

Opening ``/compare?instrument=disposition&run=cmp:d025-s1&run=cmp:d075-s1`` must show the
paired table of the two arms (marked simulated), the items sorted by how much they differ
with the first one opened side by side, keep the selection in the address bar, and download
the comparison report as a zip.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.browser_support import require_chromium, serve_app, wait_for_streamlit
from tests.app.conftest import browser, chromium_args  # noqa: F401 (the shared fixtures)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(disposition_workspace: Path) -> Iterator[str]:
    require_chromium()
    with serve_app(disposition_workspace) as url:
        yield url


def test_compare_page_shows_the_paired_table_items_and_downloads(
    served: str,
    browser: object,  # noqa: F811
    tmp_path: Path,
) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        link = f"{served}/compare?instrument=disposition&run=cmp:d025-s1&run=cmp:d075-s1"
        page.goto(link, wait_until="domcontentloaded")
        wait_for_streamlit(page, "Items that differ most")
        main = page.inner_text('[data-testid="stMain"]')
        assert "SIMULATED" in main
        assert "aligned rate per tendency" in main
        assert "80 shared item(s)" in main
        # the first item is opened: both arms' answers side by side
        assert "cmp:d025-s1" in main and "cmp:d075-s1" in main
        assert "sample" in main
        assert "run=cmp%3Ad025-s1" in page.url or "run=cmp:d025-s1" in page.url
        assert "item=" in page.url
        # the paired table and the forest plot are there
        assert page.locator('[data-testid="stDataFrame"]').count() >= 1
        assert (
            page.locator('[data-testid="stImage"] img, [data-testid="stPyplot"] img').count() >= 1
        )
        with page.expect_download(timeout=90_000) as info:
            page.get_by_role("button", name="Report (.zip)").click()
        saved = tmp_path / "report.zip"
        info.value.save_as(saved)
        names = zipfile.ZipFile(io.BytesIO(saved.read_bytes())).namelist()
        assert "comparison/report.html" in names and "comparison/tables/items.csv" in names
    finally:
        context.close()
