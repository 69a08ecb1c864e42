"""In chromium: the Human studies page's judge-human calibration panel, reached by the link
an instrument page gives (``?study=helpfulness``), shows the statistics and the judge's name
as text (a name with markup stays literal), with its *Push triage* button."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.annotation.test_calibration_panel_page import JUDGE, seed_judged_helpfulness
from tests.app.browser_support import served_workspace, wait_for_streamlit

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served_workspace(
        tmp_path_factory, "calibration-ws", fill=seed_judged_helpfulness
    ) as served:
        yield served.url


def test_the_calibration_panel_renders_in_chromium(served: str, page: Page) -> None:
    page.goto(f"{served}/human_studies?study=helpfulness", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Judge–human calibration")
    main = page.locator('[data-testid="stMain"]')
    text = main.inner_text()
    assert f"Judge {JUDGE} against the human majority on 3 items of helpfulness" in text
    for label in ("Cohen's kappa", "Weighted kappa", "Krippendorff's alpha"):
        assert label in text
    assert main.locator("i", has_text="a").count() == 0  # the judge's <i> is not markup
    # the button comes after the statistics (the job panel is read first)
    page.get_by_role("button", name="Push triage").wait_for(timeout=60_000)
