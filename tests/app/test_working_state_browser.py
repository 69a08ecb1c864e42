"""In chromium: the Source reliance, Runs and Perturbations pages never sit silent under
their heading (issue #20 E).

The status widget is hidden (``toolbarMode minimal``), so a page that computes for seconds
before its results looked blank. On a served copy of the demo workspace this opens the
Source reliance page on the demo's report folder (twice: the second visit is the one the
page's caches serve) and polls the main area from navigation until the results are all
there. After the heading appears, the page must keep showing something new, its results
or a working state (a spinner): a stretch of none of these longer than :data:`GRACE_S`
fails. The grace
covers Streamlit's own spinner delay (0.5 s) and a loaded machine's drawing; the check is
on what is visible, not on how fast the page is. The Runs page (the demo run's overview
and one question's responses) and the Perturbations page (the catalog's lines) are
checked the same way on the same served copy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.app.browser_support import browser_workspace, serve_app, wait_for_streamlit

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

#: The longest a page may show its heading with neither its results nor a working state.
GRACE_S = 2.5

#: A poll that comes back later than this found the browser busy drawing (not counted).
POLL_LATE_S = 0.3

#: What the main area shows, read in one go: the page's heading, its last section (the
#: ``[heading, content]`` argument), a spinner, and its text (a change means the page is
#: visibly going on).
STATE_JS = """([heading, content]) => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return {heading: false, content: false, working: false, text: ''};
  const text = main.innerText;
  const spinner = Array.from(main.querySelectorAll('[data-testid="stSpinner"]'))
    .some(el => el.offsetParent !== null && el.innerText.trim() !== '');
  return {
    heading: text.includes(heading),
    content: text.includes(content),
    working: spinner,
    text: text,
  };
}"""


#: How many times the demo's probes the served report folder holds (a larger run's folder).
SCALE = 6


def enlarge_probes(folder: Path, times: int) -> None:
    """Give ``folder``'s ``probes.jsonl`` ``times`` as many items (copies under new ids).

    The demo's 2,600 probes read in well under a second; a real run's folder holds many
    more, and that is where a page that waits silently shows it.
    """
    path = folder / "probes.jsonl"
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    with path.open("a", encoding="utf-8") as out:
        for copy in range(1, times):
            for line in lines:
                record = json.loads(line)
                record["item_id"] = f"{record['item_id']}-copy{copy}"
                out.write(json.dumps(record) + "\n")


@pytest.fixture(scope="module")
def app(
    demo_workspace: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    settings = browser_workspace(tmp_path_factory, "working-state", copy_of=demo_workspace[0])
    enlarge_probes(settings.workspace / "reports" / "sources-demo", SCALE)
    with serve_app(settings.workspace) as url:
        yield url


def _silent_stretches(
    page: Page, url: str, heading: str, content: str, *, limit: float = 120.0
) -> list[float]:
    """Navigate to ``url`` and poll until ``content`` (the page's last section) shows; the
    stretches (seconds) during which ``heading`` was shown, nothing new arrived, and neither
    the content nor a spinner were shown.

    Only the time the browser sat waiting counts: when one poll comes back late, the browser
    was busy drawing what had arrived (a loaded machine), which no working state can cover,
    so that interval is left out of the stretch.
    """
    page.goto(url, wait_until="domcontentloaded")
    start = time.monotonic()
    stretches: list[float] = []
    silent: float | None = None  # the open stretch's seconds so far
    previous, text = start, None
    while time.monotonic() - start < limit:
        state = page.evaluate(STATE_JS, [heading, content])
        now = time.monotonic()
        if state["content"]:
            break
        if state["heading"] and not state["working"] and state["text"] == text:
            waited = now - previous if now - previous <= POLL_LATE_S else 0.0
            silent = 0.0 if silent is None else silent + waited
        elif state["heading"] and not state["working"]:
            if silent is not None:  # something new arrived: the page is visibly going on
                stretches.append(silent)
            silent = 0.0
        elif silent is not None:
            stretches.append(silent)
            silent = None
        previous, text = now, state["text"]
        page.wait_for_timeout(50)
    else:
        raise AssertionError(f"{url}: the results did not show within {limit:.0f} s")
    if silent is not None:
        stretches.append(silent)
    return stretches


@pytest.mark.parametrize(
    ("path", "heading", "content"),
    [
        ("sources?results=folder:sources-demo", "Source reliance", "One item's probe variants"),
        ("runs", "Runs", "All responses ("),
        ("perturbations", "Perturbations", "Save edits as a new version"),
    ],
    ids=["source-reliance", "runs", "perturbations"],
)
def test_the_page_shows_its_content_or_says_it_is_working(
    app: str, page: Page, path: str, heading: str, content: str
) -> None:
    url = f"{app}/{path}"
    # a first page of the session: the server's background imports and session start are
    # not what is checked here
    page.goto(app, wait_until="domcontentloaded")
    wait_for_streamlit(page, "DriftLens Workbench")
    seen: dict[str, list[float]] = {}
    for visit in ("first visit", "cached visit"):
        seen[visit] = [round(s, 2) for s in _silent_stretches(page, url, heading, content)]
        wait_for_streamlit(page, content)
    longest = max(max(s, default=0.0) for s in seen.values())
    assert longest <= GRACE_S, (
        f"the {heading} heading stood {longest:.1f} s with neither its content nor a working "
        f"state (silent stretches per visit, seconds: {seen})"
    )
