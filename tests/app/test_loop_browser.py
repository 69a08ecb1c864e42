"""The ontology refinement loop in a real browser: no lost work, no wrong number.

A copy of the demo workspace (``driftlens demo``) gets a second round and is served by
``driftlens app``; headless Debian chromium drives the Rewrite, Rounds, Ontology and
Analysis pages. Each test is one defect the loop used to have (the pair list not following
the round, accepting an older proposal reverting newer work, interrupted rounds shown as
running, edits lost on navigation, a copied workspace showing the original's report),
and the last one walks the whole loop. Screenshots go to ``test-artifacts/loop/``.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest
from sqlmodel import Session, select

from ontology.agreement_tracking import ConfusedPair
from ontology.rewrite import accept_proposal, propose_rewrite
from ontology.rounds import round_agreement, round_detail, round_history, run_round
from ontology.schema import UNMAPPED
from ontology.versions import document, get_version, version_label
from storage.models import OntologyVersion, RewriteProposal
from storage.settings import Settings
from storage.workspace import open_workspace_session
from tests.app.browser_support import (
    browser_workspace,
    pick_option,
    serve_app,
    wait_for_streamlit,
)
from tests.ontology.conftest import hold_lease

if TYPE_CHECKING:
    from playwright.sync_api import Dialog, Page

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "loop"
RUN = "demo"
T = TypeVar("T")


@dataclass(frozen=True)
class Loop:
    url: str
    workspace: Path
    original: Path
    settings: Settings

    def session(self) -> Session:
        """A fresh session on the served workspace (use as a context manager)."""
        return open_workspace_session(self.settings)  # type: ignore[return-value]


@pytest.fixture(scope="module")
def loop(
    demo_workspace: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Loop]:
    original = demo_workspace[0]
    # A second round with other labelers: the first round is then not the default.
    settings = browser_workspace(
        tmp_path_factory,
        "loop",
        copy_of=original,
        fill=lambda session: run_round(
            RUN, ["sim", "keywords"], session=session, sample=60, seed=3
        ),
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve_app(settings.workspace) as url:
        yield Loop(url=url, workspace=settings.workspace, original=original, settings=settings)


# ------------------------------------------------------------------------ helpers


def _open(page: Page, loop: Loop, path: str, title: str) -> None:
    page.goto(f"{loop.url}/{path}", wait_until="domcontentloaded")
    wait_for_streamlit(page, title)
    _no_exception(page)


def _no_exception(page: Page) -> None:
    boxes = page.locator('[data-testid="stException"]')
    assert boxes.count() == 0, boxes.first.inner_text()


def _settle(page: Page, title: str) -> None:
    page.wait_for_timeout(400)
    wait_for_streamlit(page, title)
    _no_exception(page)


def _choose(page: Page, label: str, option: str, *, exact: bool = False) -> None:
    """Pick the option starting with ``option`` in the selectbox labelled ``label…``."""
    box = page.locator('[data-testid="stSelectbox"]').filter(
        has=page.locator("label", has_text=re.compile("^" + re.escape(label)))
    )
    pattern = "^" + re.escape(option) + ("$" if exact else "")
    pick_option(page, box.first.locator('[role="combobox"], input').first, re.compile(pattern))


def _text(page: Page) -> str:
    return str(page.locator('[data-testid="stMain"]').inner_text())


def _shot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _pairs(loop: Loop, number: int) -> list[ConfusedPair]:
    with loop.session() as session:
        return [
            p
            for p in round_agreement(number, session=session).most_confused
            if UNMAPPED not in (p.leaf_a, p.leaf_b)
        ]


def _in_thread(work: Callable[[], T]) -> T:
    """Run ``work`` in a worker thread: Playwright's event loop runs in this one, and the
    labelers and rewrite requests refuse to block inside an event loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def _propose(loop: Loop, number: int, pair: ConfusedPair, *, seed: int = 0) -> int:
    """Store a rewrite proposal for ``pair`` of round ``number``; returns its id."""

    def work() -> int:
        with loop.session() as session:
            p = propose_rewrite(
                number,
                model="sim/default",
                session=session,
                pair=(pair.leaf_a, pair.leaf_b),
                seed=seed,
            )
            return p.id or 0

    return _in_thread(work)


def _first_round(loop: Loop) -> int:
    with loop.session() as session:
        return round_history(session=session)[0].round


# ------------------------------------------------------------------------ defects


def test_a_deep_link_into_a_fresh_server_shows_the_workbench_navigation(
    loop: Loop, page: Page
) -> None:
    # The first request this server gets (the module's tests run in file order).
    _open(page, loop, "runs", "Runs")
    nav = page.locator('[data-testid="stSidebarNav"]')
    _shot(page, "deep-link-runs")
    assert "Ontology studio" in nav.inner_text()
    assert page.get_by_role("link", name="streamlit app").count() == 0


def test_rewrite_pair_list_follows_the_chosen_round(loop: Loop, page: Page) -> None:
    first = _first_round(loop)
    target = _pairs(loop, first)[1]  # not the default (most confused) pair
    _open(page, loop, "ontology_rewrite", "Definition rewrite")
    _choose(page, "Round", f"round {first} ")
    _settle(page, "Definition rewrite")
    _choose(page, "Leaf pair", f"{target.leaf_a} | {target.leaf_b}")
    _settle(page, "Definition rewrite")
    page.get_by_role("button", name="Propose rewrite").click()
    _settle(page, "Definition rewrite")
    _shot(page, "a-rewrite-pair")
    assert f"{target.leaf_a} vs {target.leaf_b}, round {first}" in _text(page)
    with loop.session() as session:
        newest = session.exec(select(RewriteProposal).order_by(RewriteProposal.id.desc())).first()  # type: ignore[union-attr]
        assert newest is not None
        assert (newest.leaf_a, newest.leaf_b) == (target.leaf_a, target.leaf_b)
        assert newest.request["round"] == first


def test_accepting_an_older_proposal_builds_on_the_newest_version(loop: Loop, page: Page) -> None:
    first = _first_round(loop)
    pairs = _pairs(loop, first)
    one = pairs[0]
    two = next(p for p in pairs[1:] if not {p.leaf_a, p.leaf_b} & {one.leaf_a, one.leaf_b})
    ids = (_propose(loop, first, one), _propose(loop, first, two), _propose(loop, first, one))
    with loop.session() as session:
        middle = accept_proposal(ids[0], session=session)  # newer work: driftlens@N
        middle_label, middle_id = version_label(middle), middle.id
        p1_def = document(middle).leaf(one.leaf_a).definition

    _open(page, loop, "ontology_rewrite", "Definition rewrite")
    _choose(page, "Proposal", f"#{ids[1]} ")
    _settle(page, "Definition rewrite")
    assert f"on top of {middle_label}" in _text(page)
    page.get_by_role("button", name="Accept (with edits)").click()
    _settle(page, "Definition rewrite")
    _shot(page, "b-accept-on-newest")
    assert f"(parent {middle_label})" in _text(page)
    with loop.session() as session:
        newest = get_version("driftlens", session=session)
        assert newest.parent_id == middle_id  # not the round's version
        assert document(newest).leaf(one.leaf_a).definition == p1_def  # newer work kept

    # The same pair proposed again from the old round: its leaf changed since, so refused.
    _choose(page, "Proposal", f"#{ids[2]} ")
    _settle(page, "Definition rewrite")
    _shot(page, "b-conflict")
    text = _text(page)
    assert f"rewrites '{one.leaf_a}'" in text and "definition changed in" in text
    assert page.get_by_role("button", name="Accept (with edits)").is_disabled()


def _interrupted_round(loop: Loop) -> int:
    """A real round stopped after its first chunk of labels (as a page left mid-run)."""

    def stop(done: int, total: int) -> None:
        if done:
            raise KeyboardInterrupt

    def work() -> None:
        with loop.session() as session, contextlib.suppress(KeyboardInterrupt):
            run_round(RUN, ["sim", "keywords"], session=session, sample=120, seed=11, progress=stop)

    _in_thread(work)
    with loop.session() as session:
        return max(h.round for h in round_history(session=session))


def _set_lease(loop: Loop, number: int, pid: int) -> None:
    with loop.session() as session:
        hold_lease(session, number, pid)


def test_a_round_whose_process_is_gone_is_interrupted_and_resumes(loop: Loop, page: Page) -> None:
    number = _interrupted_round(loop)
    sleeper = subprocess.Popen(["sleep", "120"])  # a live process holding the lease
    try:
        _set_lease(loop, number, sleeper.pid)
        _open(page, loop, "ontology_rounds", "Labeling rounds")
        run = page.get_by_role("button", name="Run round")
        assert run.is_disabled()
        assert f"Round {number} is being labeled" in _text(page)
    finally:
        sleeper.kill()
        sleeper.wait()
    page.reload()
    wait_for_streamlit(page, "Labeling rounds")
    _choose(page, "Round", str(number))
    _settle(page, "Labeling rounds")
    _shot(page, "c-interrupted")
    text = _text(page)
    assert f"Round {number} was interrupted" in text
    assert "(incomplete)" in text and "running" not in text.split("Trend across rounds")[1][:2000]
    page.get_by_role("button", name=f"Resume round {number}").click()
    page.get_by_text(f"Round {number}: mean pairwise agreement").wait_for(timeout=90_000)
    _settle(page, "Labeling rounds")
    _shot(page, "c-resumed")
    with loop.session() as session:
        assert [h.status for h in round_history(session=session) if h.round == number] == ["done"]


def test_drafts_survive_navigation_and_reload_and_leaving_asks_first(
    loop: Loop, page: Page
) -> None:
    first = _first_round(loop)
    pair = _pairs(loop, first)[2]
    pid = _propose(loop, first, pair, seed=5)
    dialogs: list[str] = []

    def answer(dialog: Dialog) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.accept()

    page.on("dialog", answer)
    _open(page, loop, "ontology_rewrite", "Definition rewrite")
    _choose(page, "Proposal", f"#{pid} ")
    _settle(page, "Definition rewrite")
    box = page.get_by_label(f"Definition 1 ({pair.leaf_a})")
    draft = "A draft definition typed in the browser, not yet accepted."
    box.fill(draft)
    page.get_by_role("link", name="Rounds").first.click()
    page.wait_for_timeout(1000)
    _shot(page, "d-left-page")
    wait_for_streamlit(page, "Labeling rounds")
    assert any("unsaved edits" in d for d in dialogs), dialogs
    page.get_by_role("link", name="Rewrite").first.click()
    wait_for_streamlit(page, "Definition rewrite")
    _choose(page, "Proposal", f"#{pid} ")
    _settle(page, "Definition rewrite")
    assert page.get_by_label(f"Definition 1 ({pair.leaf_a})").input_value() == draft
    page.reload()
    wait_for_streamlit(page, "Definition rewrite")
    _choose(page, "Proposal", f"#{pid} ")
    _settle(page, "Definition rewrite")
    _shot(page, "d-draft-after-reload")
    assert page.get_by_label(f"Definition 1 ({pair.leaf_a})").input_value() == draft

    # The YAML editor keeps its draft too.
    _open(page, loop, "ontology_versions", "Ontology")
    yaml_box = page.get_by_label("YAML")
    edited = yaml_box.input_value().replace("name: driftlens", "name: driftlens  # draft", 1)
    yaml_box.fill(edited)
    yaml_box.press("Tab")  # commit it (blur)
    _settle(page, "Ontology")
    page.reload()
    wait_for_streamlit(page, "Ontology")
    assert page.get_by_label("YAML").input_value() == edited


def test_a_copied_workspace_shows_its_own_analysis(loop: Loop, page: Page) -> None:
    _open(page, loop, "analysis", "Analysis")
    page.get_by_text("Report folder:").first.wait_for(timeout=60_000)
    _shot(page, "e-analysis")
    text = _text(page)
    folder = re.search(r"Report folder: (\S+)", text)
    assert folder is not None, text[-2000:]
    assert Path(folder.group(1)).resolve().is_relative_to(loop.workspace.resolve())


# ------------------------------------------------------------------ agreement view


def test_a_round_link_and_a_heatmap_cell_filter_the_disagreements(loop: Loop, page: Page) -> None:
    first = _first_round(loop)
    top = _pairs(loop, first)[0]
    with loop.session() as session:
        rounds = [h.round for h in round_history(session=session)]
        detail = round_detail(first, session=session)
        steps = len(detail.disagreements(pair=(top.leaf_a, top.leaf_b)))
    assert first != rounds[-1]  # the link, not the default, opens it
    _open(page, loop, f"ontology_rounds?round={first}", "Labeling rounds")
    assert page.get_by_role("combobox", name="Round").input_value() == str(first)
    # Charts draw their marks once on screen; the trend line chart comes before the heatmap.
    charts = page.locator('[data-testid="stVegaLiteChart"]')
    for i in range(charts.count()):
        charts.nth(i).scroll_into_view_if_needed()
    cell = charts.locator(
        f'[role="graphics-symbol"][aria-label*="leaf A: {top.leaf_a};"]'
        f'[aria-label*="leaf B: {top.leaf_b};"]'
    )
    cell.first.click()
    _settle(page, "Labeling rounds")
    _shot(page, "f-heatmap-cell")
    pair = page.get_by_role("combobox", name="Pair")
    assert pair.input_value() == f"{top.leaf_a} | {top.leaf_b}"
    assert f"{steps} step(s), each once" in _text(page)
    # Another round chosen in the page: the address bar links to it.
    _choose(page, "Round", str(rounds[-1]), exact=True)
    _settle(page, "Labeling rounds")
    assert f"round={rounds[-1]}" in page.url


# ---------------------------------------------------------------------- walkthrough


def test_walkthrough_round_rewrite_edit_accept_round_diff(loop: Loop, page: Page) -> None:
    _open(page, loop, "ontology_rounds", "Labeling rounds")
    _shot(page, "w1-rounds")
    with loop.session() as session:
        before = max(h.round for h in round_history(session=session))
        newest_before = version_label(get_version("driftlens", session=session))
    _run_round_in_page(page, loop, sample=60)
    number = before + 1

    _open(page, loop, "ontology_rewrite", "Definition rewrite")
    page.get_by_role("button", name="Propose rewrite").click()
    _settle(page, "Definition rewrite")
    _shot(page, "w2-proposed")
    assert f"round {number}." in _text(page)
    box = page.get_by_role("textbox", name=re.compile(r"^Definition 1 \("))
    edited = box.input_value().split("\n")[0] + " Edited in the walkthrough."
    box.fill(edited)
    box.press("Tab")
    _settle(page, "Definition rewrite")
    page.get_by_role("button", name="Accept (with edits)").click()
    _settle(page, "Definition rewrite")
    _shot(page, "w3-accepted")
    found = re.search(r"new version (driftlens@\d+) \(parent (driftlens@\d+)\)", _text(page))
    assert found is not None and found.group(2) == newest_before
    new_label = found.group(1)

    _open(page, loop, "ontology_rounds", "Labeling rounds")
    _run_round_in_page(page, loop, sample=60)
    with loop.session() as session:
        latest = round_history(session=session)[-1]
        assert latest.ontology_version == new_label and latest.status == "done"
    _shot(page, "w4-round-on-new-version")

    _open(page, loop, "ontology_versions", "Ontology")
    _choose(page, "Old", newest_before)
    _settle(page, "Ontology")
    _choose(page, "New", new_label)
    _settle(page, "Ontology")
    _shot(page, "w5-diff")
    assert "Edited in the walkthrough" in _text(page)
    with loop.session() as session:
        rows = session.exec(
            select(OntologyVersion).where(OntologyVersion.name == "driftlens")
        ).all()
        assert new_label in {f"{v.name}@{v.version}" for v in rows}


def _run_round_in_page(page: Page, loop: Loop, *, sample: int) -> None:
    """Run a sim + keywords round of the demo run from the Rounds page; wait for its result."""
    _choose(page, "Generation run", RUN, exact=True)
    chips = page.locator(
        '[data-testid="stMultiSelect"] [role="button"][aria-label^="Remove embed"]'
    )
    if chips.count():
        chips.first.click()
    multi = page.locator('[data-testid="stMultiSelect"]').first
    pick_option(page, multi.locator("input").first, re.compile(r"^sim — "))
    page.keyboard.press("Escape")
    box = page.get_by_label("Responses")
    box.fill(str(sample))
    with loop.session() as session:
        number = max((h.round for h in round_history(session=session)), default=0) + 1
    page.get_by_role("button", name="Run round").click()
    _shot(page, "walkthrough-round-started")
    # This round's own outcome: a page opened shortly after an earlier round ended also
    # shows that round's line, which is not this round finishing.
    page.get_by_text(re.compile(rf"^Round {number}: mean pairwise agreement")).first.wait_for(
        timeout=240_000
    )
    _settle(page, "Labeling rounds")
