"""Issue #20 A in chromium: two analyses of one run and labeler keep their own report.

On the loop's copy of the demo workspace (``loop`` fixture; this module runs after the two
loop modules, whose tests expect the demo's analysis to be the newest), a researcher makes
two analyses of the run ``demo`` with the keywords labeler through the Analysis page's
*New analysis* form, with another B and another ontology version each. The second used to
be written into the first one's report folder (``reports/demo-keywords``): the first then
opened from its link with the second's figures, and its report.html said the second's B
and version. Each is opened by its URL here; the page and the downloaded report.html must
say that analysis's own B and version, and the two report folders must differ.
Screenshots go to ``test-artifacts/loop/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from tests.app.browser_support import PageOptions, download_bytes, main_text
from tests.app.loop_support import RUN, Loop, choose, open_path, settle, shot

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

#: How long one analysis of the demo run (labelling it first, for the second) may take.
ANALYSIS_MS = 300_000


@pytest.fixture(scope="module")
def page_options() -> PageOptions:
    return PageOptions(downloads=True)


@dataclass(frozen=True)
class Asked:
    """What the New analysis form was given.

    Attributes:
        version: The ontology version picked.
        bootstrap: B typed in.
        label_first: Whether *Label unlabeled responses first* was ticked (the run has no
            keywords labels under that version yet).
    """

    version: str
    bootstrap: int
    label_first: bool = False


def _new_analysis(page: Page, loop: Loop, asked: Asked) -> int:
    """Fill in and run *New analysis* on ``demo`` / keywords; the id the page says it stored."""
    open_path(page, loop, "analysis", "Analysis")
    button = page.get_by_role("button", name="Run analysis")
    for _ in range(3):  # the expander is closed on a page that has analyses
        if button.is_visible():
            break
        page.get_by_text("New analysis", exact=True).first.click()
        settle(page, "Analysis")
    choose(page, "Run", RUN, exact=True)
    settle(page, "Run analysis")
    choose(page, "Labeler", "keywords", exact=True)
    settle(page, "Run analysis")
    choose(page, "Ontology version", asked.version, exact=True)
    settle(page, "Run analysis")
    box = page.get_by_label("Bootstrap replicates B")
    box.fill(str(asked.bootstrap))
    box.press("Tab")  # commit it (blur)
    settle(page, "Run analysis")
    checkbox = page.get_by_role("checkbox", name="Label unlabeled responses first")
    if checkbox.is_checked() != asked.label_first:
        page.get_by_text("Label unlabeled responses first", exact=True).click()
        settle(page, "Run analysis")
    assert checkbox.is_checked() == asked.label_first
    assert box.input_value() == str(asked.bootstrap)
    button.click()
    stored = page.get_by_text(re.compile(r"^Analysis \d+ stored and shown below")).first
    stored.wait_for(timeout=ANALYSIS_MS)
    found = re.match(r"Analysis (\d+) stored", str(stored.inner_text()))
    assert found is not None
    settle(page, "Analysis")
    return int(found.group(1))


def _opened(page: Page, loop: Loop, analysis: int, asked: Asked) -> str:
    """Open ``?analysis=<analysis>``, check what it says; its report folder as shown."""
    open_path(page, loop, f"analysis?analysis={analysis}", "Report folder:")
    shot(page, f"a-analysis-{analysis}")
    text = main_text(page)
    line = re.search(rf"^Analysis {analysis} · .*$", text, re.MULTILINE)
    assert line is not None, text[:3000]
    assert f"· B = {asked.bootstrap} · " in line.group(0), line.group(0)
    assert f"· ontology {asked.version} · labeler keywords" in line.group(0), line.group(0)
    folder = re.search(r"^Report folder: (.+)$", text, re.MULTILINE)
    assert folder is not None, text[-3000:]
    report = download_bytes(page, "Download report.html").decode("utf-8")
    # the report's provenance line: "… labeler keywords · ontology V · core … · B = N · seed …"
    said = re.search(r"labeler keywords · ontology (\S+) · core \S+ · B = (\d+) ·", report)
    assert said is not None, report[:2000]
    assert (said.group(1), int(said.group(2))) == (asked.version, asked.bootstrap)
    return folder.group(1).strip()


def test_a_two_analyses_of_one_run_each_open_with_their_own_b_version_and_report(
    loop: Loop, page: Page
) -> None:
    first_asked = Asked(version="driftlens@1", bootstrap=2000)
    # another ontology (bundled with the workbench): the demo run is labelled under it first
    second_asked = Asked(version="original@1", bootstrap=200, label_first=True)
    first = _new_analysis(page, loop, first_asked)
    second = _new_analysis(page, loop, second_asked)
    assert first != second
    folders = {
        first: _opened(page, loop, first, first_asked),
        second: _opened(page, loop, second, second_asked),
    }
    assert folders[first] != folders[second], folders  # one folder per stored analysis
