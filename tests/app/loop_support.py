"""The loop's served workspace and the page helpers of its chromium tests.

A copy of the demo workspace (``driftlens demo``: the reasoning run ``demo`` with a
labeling round, and the memory-conflicts demo's runs) gets a second round and is served by
``driftlens app``. ``tests/app/conftest.py`` builds it once for the package (the ``loop``
fixture): test_loop_browser.py and test_loop_defaults_browser.py share one copy and one
server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest
from sqlmodel import Session

from llm.specs import ModelSpec
from ontology.agreement_tracking import ConfusedPair
from ontology.rewrite import propose_rewrite
from ontology.rounds import round_agreement, round_history, run_round
from ontology.schema import UNMAPPED
from storage.settings import Settings
from storage.workspace import open_workspace_session
from tests.app.browser_support import (
    ARTIFACTS_ROOT,
    no_exception,
    pick_option,
    served_workspace,
    wait_for_streamlit,
)

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

ARTIFACTS = ARTIFACTS_ROOT / "loop"
#: The demo's reasoning run.
RUN = "demo"
T = TypeVar("T")


@dataclass(frozen=True)
class Loop:
    """The served copy of the demo workspace.

    Attributes:
        url: The base URL of its ``driftlens app``.
        workspace: The copy's folder.
        original: The session's demo workspace it was copied from.
        settings: The copy's settings (its SQLite file).
    """

    url: str
    workspace: Path
    original: Path
    settings: Settings

    def session(self) -> Session:
        """A fresh session on the served workspace (use as a context manager)."""
        return open_workspace_session(self.settings)  # type: ignore[return-value]


@contextmanager
def served_loop(original: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    """Copy ``original``, add a second round and serve it."""
    # A second round with other labelers: the first round is then not the default.
    with served_workspace(
        tmp_path_factory,
        "loop",
        copy_of=original,
        fill=lambda session: run_round(
            RUN, ["sim", "keywords"], session=session, sample=60, seed=3
        ),
    ) as served:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        ws = served.settings.workspace
        yield Loop(url=served.url, workspace=ws, original=original, settings=served.settings)


# ------------------------------------------------------------------------ pages


def open_path(page: Page, loop: Loop, path: str, title: str) -> None:
    """Open ``path`` of the served app and wait until ``title`` shows and Streamlit is idle."""
    page.goto(f"{loop.url}/{path}", wait_until="domcontentloaded")
    wait_for_streamlit(page, title)
    no_exception(page)


def settle(page: Page, title: str) -> None:
    """Wait for the rerun an action started to end (``title`` shown, no exception box)."""
    page.wait_for_timeout(400)
    wait_for_streamlit(page, title)
    no_exception(page)


def choose(page: Page, label: str, option: str, *, exact: bool = False) -> None:
    """Pick the option starting with ``option`` in the selectbox labelled ``label…``."""
    pattern = "^" + re.escape(option) + ("$" if exact else "")
    pick_option(page, selectbox(page, label), re.compile(pattern))


def selectbox(page: Page, label: str) -> Locator:
    """The input of the selectbox labelled ``label…``."""
    box = page.locator('[data-testid="stSelectbox"]').filter(
        has=page.locator("label", has_text=re.compile("^" + re.escape(label)))
    )
    return box.first.locator('[role="combobox"], input').first


def shot(page: Page, name: str) -> None:
    """A full-page screenshot into ``test-artifacts/loop/``."""
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


# ------------------------------------------------------------------ workspace


def pairs(loop: Loop, number: int) -> list[ConfusedPair]:
    """Round ``number``'s most confused leaf pairs (most first), ``unmapped`` left out."""
    with loop.session() as session:
        return [
            p
            for p in round_agreement(number, session=session).most_confused
            if UNMAPPED not in (p.leaf_a, p.leaf_b)
        ]


def in_thread(work: Callable[[], T]) -> T:
    """Run ``work`` in a worker thread: Playwright's event loop runs in this one, and the
    labelers and rewrite requests refuse to block inside an event loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def propose(loop: Loop, number: int, pair: ConfusedPair, *, seed: int = 0) -> int:
    """Store a rewrite proposal for ``pair`` of round ``number``; returns its id."""

    def work() -> int:
        with loop.session() as session:
            p = propose_rewrite(
                number,
                model=ModelSpec.parse("sim/default"),
                session=session,
                pair=(pair.leaf_a, pair.leaf_b),
                seed=seed,
            )
            return p.id or 0

    return in_thread(work)


def first_round(loop: Loop) -> int:
    """The workspace's first round (the demo's)."""
    with loop.session() as session:
        return round_history(session=session)[0].round


def run_round_in_page(page: Page, loop: Loop, *, sample: int) -> int:
    """Run a sim + keywords round of the demo run from the Rounds page; wait for its result.

    Returns the round's number.
    """
    choose(page, "Generation run", RUN, exact=True)
    # The default embedding labeler loads a model first: sim labels at once.
    chips = page.locator('[data-testid="stMultiSelect"] button[aria-label^="Remove embed"]')
    if chips.count():
        chips.first.click()
        settle(page, "Labeling rounds")
    multi = page.locator('[data-testid="stMultiSelect"]').first
    pick_option(page, multi.locator("input").first, re.compile(r"^sim — "))
    page.keyboard.press("Escape")
    box = page.get_by_role("spinbutton", name="Responses")
    box.fill(str(sample))
    box.press("Tab")
    settle(page, "Labeling rounds")
    with loop.session() as session:
        number = max((h.round for h in round_history(session=session)), default=0) + 1
    page.get_by_role("button", name="Run round").click()
    shot(page, "walkthrough-round-started")
    # This round's own outcome: a page opened shortly after an earlier round ended also
    # shows that round's line, which is not this round finishing.
    page.get_by_text(re.compile(rf"^Round {number}: mean pairwise agreement")).first.wait_for(
        timeout=240_000
    )
    settle(page, "Labeling rounds")
    return number
