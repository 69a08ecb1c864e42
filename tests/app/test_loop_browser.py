"""The ontology refinement loop in a real browser: no lost work, no wrong number.

A copy of the demo workspace (``driftlens demo``) gets a second round and is served by
``driftlens app`` (the package's ``loop`` fixture, tests/app/loop_support.py, which
test_loop_defaults_browser.py shares: it runs after this module); headless Debian chromium
drives the Rewrite, Rounds, Ontology and
Analysis pages. Each test is one defect the loop used to have (the pair list not following
the round, accepting an older proposal reverting newer work, interrupted rounds shown as
running, edits lost on navigation, a copied workspace showing the original's report),
and the last one walks the whole loop. Screenshots go to ``test-artifacts/loop/``.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlmodel import select

from ontology.rewrite import accept_proposal
from ontology.rounds import round_detail, round_history, run_round
from ontology.versions import document, get_version, version_label
from storage.models import OntologyVersion, RewriteProposal
from tests.app.browser_support import main_text, wait_for_streamlit
from tests.app.loop_support import (
    RUN,
    Loop,
    choose,
    first_round,
    in_thread,
    open_path,
    pairs,
    propose,
    run_round_in_page,
    settle,
    shot,
)
from tests.ontology.conftest import hold_lease

if TYPE_CHECKING:
    from playwright.sync_api import Dialog, Page

pytestmark = pytest.mark.browser


# ------------------------------------------------------------------------ defects


def test_a_deep_link_into_a_fresh_server_shows_the_workbench_navigation(
    loop: Loop, page: Page
) -> None:
    # The first request this server gets (the module's tests run in file order).
    open_path(page, loop, "runs", "Runs")
    nav = page.locator('[data-testid="stSidebarNav"]')
    shot(page, "deep-link-runs")
    assert "Ontology studio" in nav.inner_text()
    assert page.get_by_role("link", name="streamlit app").count() == 0


def test_rewrite_pair_list_follows_the_chosen_round(loop: Loop, page: Page) -> None:
    first = first_round(loop)
    target = pairs(loop, first)[1]  # not the default (most confused) pair
    open_path(page, loop, "ontology_rewrite", "Definition rewrite")
    choose(page, "Round", f"round {first} ")
    settle(page, "Definition rewrite")
    choose(page, "Leaf pair", f"{target.leaf_a} | {target.leaf_b}")
    settle(page, "Definition rewrite")
    page.get_by_role("button", name="Propose rewrite").click()
    settle(page, "Definition rewrite")
    shot(page, "a-rewrite-pair")
    assert f"{target.leaf_a} vs {target.leaf_b}, round {first}" in main_text(page)
    with loop.session() as session:
        newest = session.exec(select(RewriteProposal).order_by(RewriteProposal.id.desc())).first()  # type: ignore[union-attr]
        assert newest is not None
        assert (newest.leaf_a, newest.leaf_b) == (target.leaf_a, target.leaf_b)
        assert newest.request["round"] == first


def test_accepting_an_older_proposal_builds_on_the_newest_version(loop: Loop, page: Page) -> None:
    first = first_round(loop)
    confused = pairs(loop, first)
    one = confused[0]
    two = next(p for p in confused[1:] if not {p.leaf_a, p.leaf_b} & {one.leaf_a, one.leaf_b})
    ids = (propose(loop, first, one), propose(loop, first, two), propose(loop, first, one))
    with loop.session() as session:
        middle = accept_proposal(ids[0], session=session)  # newer work: driftlens@N
        middle_label, middle_id = version_label(middle), middle.id
        p1_def = document(middle).leaf(one.leaf_a).definition

    open_path(page, loop, "ontology_rewrite", "Definition rewrite")
    choose(page, "Proposal", f"#{ids[1]} ")
    settle(page, "Definition rewrite")
    assert f"on top of {middle_label}" in main_text(page)
    page.get_by_role("button", name="Accept (with edits)").click()
    settle(page, "Definition rewrite")
    shot(page, "b-accept-on-newest")
    assert f"(parent {middle_label})" in main_text(page)
    with loop.session() as session:
        newest = get_version("driftlens", session=session)
        assert newest.parent_id == middle_id  # not the round's version
        assert document(newest).leaf(one.leaf_a).definition == p1_def  # newer work kept

    # The same pair proposed again from the old round: its leaf changed since, so refused.
    choose(page, "Proposal", f"#{ids[2]} ")
    settle(page, "Definition rewrite")
    shot(page, "b-conflict")
    text = main_text(page)
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

    in_thread(work)
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
        open_path(page, loop, "ontology_rounds", "Labeling rounds")
        run = page.get_by_role("button", name="Run round")
        assert run.is_disabled()
        assert f"Round {number} is being labeled" in main_text(page)
    finally:
        sleeper.kill()
        sleeper.wait()
    page.reload()
    wait_for_streamlit(page, "Labeling rounds")
    choose(page, "Round", str(number))
    settle(page, "Labeling rounds")
    shot(page, "c-interrupted")
    text = main_text(page)
    assert f"Round {number} was interrupted" in text
    assert "(incomplete)" in text and "running" not in text.split("Trend across rounds")[1][:2000]
    page.get_by_role("button", name=f"Resume round {number}").click()
    page.get_by_text(f"Round {number}: mean pairwise agreement").wait_for(timeout=90_000)
    settle(page, "Labeling rounds")
    shot(page, "c-resumed")
    with loop.session() as session:
        assert [h.status for h in round_history(session=session) if h.round == number] == ["done"]


def test_drafts_survive_navigation_and_reload_and_leaving_asks_first(
    loop: Loop, page: Page
) -> None:
    first = first_round(loop)
    pair = pairs(loop, first)[-1]  # the demo round has two pairs without unmapped
    pid = propose(loop, first, pair, seed=5)
    dialogs: list[str] = []

    def answer(dialog: Dialog) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.accept()

    page.on("dialog", answer)
    open_path(page, loop, "ontology_rewrite", "Definition rewrite")
    choose(page, "Proposal", f"#{pid} ")
    settle(page, "Definition rewrite")
    box = page.get_by_label(f"Definition 1 ({pair.leaf_a})")
    draft = "A draft definition typed in the browser, not yet accepted."
    box.fill(draft)
    page.get_by_role("link", name="Rounds").first.click()
    page.wait_for_timeout(1000)
    shot(page, "d-left-page")
    wait_for_streamlit(page, "Labeling rounds")
    assert any("unsaved edits" in d for d in dialogs), dialogs
    page.get_by_role("link", name="Rewrite").first.click()
    wait_for_streamlit(page, "Definition rewrite")
    choose(page, "Proposal", f"#{pid} ")
    settle(page, "Definition rewrite")
    assert page.get_by_label(f"Definition 1 ({pair.leaf_a})").input_value() == draft
    page.reload()
    wait_for_streamlit(page, "Definition rewrite")
    choose(page, "Proposal", f"#{pid} ")
    settle(page, "Definition rewrite")
    shot(page, "d-draft-after-reload")
    assert page.get_by_label(f"Definition 1 ({pair.leaf_a})").input_value() == draft

    # The YAML editor keeps its draft too (it is built once its expander is opened).
    open_path(page, loop, "ontology_versions", "Ontology")
    page.get_by_text("The whole document (YAML)", exact=True).first.click()
    yaml_box = page.get_by_label("YAML")
    yaml_box.wait_for(timeout=60_000)
    edited = yaml_box.input_value().replace("name: driftlens", "name: driftlens  # draft", 1)
    yaml_box.fill(edited)
    yaml_box.press("Tab")  # commit it (blur)
    settle(page, "Ontology")
    page.reload()
    wait_for_streamlit(page, "Ontology")
    # the draft opens the editor on its own: no click after the reload
    assert page.get_by_label("YAML").input_value() == edited


def test_a_copied_workspace_shows_its_own_analysis(loop: Loop, page: Page) -> None:
    open_path(page, loop, "analysis", "Analysis")
    page.get_by_text("Report folder:").first.wait_for(timeout=60_000)
    shot(page, "e-analysis")
    text = main_text(page)
    folder = re.search(r"Report folder: (\S+)", text)
    assert folder is not None, text[-2000:]
    assert Path(folder.group(1)).resolve().is_relative_to(loop.workspace.resolve())


# ------------------------------------------------------------------ agreement view


def test_a_round_link_and_a_heatmap_cell_filter_the_disagreements(loop: Loop, page: Page) -> None:
    first = first_round(loop)
    top = pairs(loop, first)[0]
    with loop.session() as session:
        rounds = [h.round for h in round_history(session=session)]
        detail = round_detail(first, session=session)
        steps = len(detail.disagreements(pair=(top.leaf_a, top.leaf_b)))
    assert first != rounds[-1]  # the link, not the default, opens it
    open_path(page, loop, f"ontology_rounds?round={first}", "Labeling rounds")
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
    settle(page, "Labeling rounds")
    shot(page, "f-heatmap-cell")
    pair = page.get_by_role("combobox", name="Pair")
    assert pair.input_value() == f"{top.leaf_a} | {top.leaf_b}"
    assert f"{steps} step(s), each once" in main_text(page)
    # Another round chosen in the page: the address bar links to it.
    choose(page, "Round", str(rounds[-1]), exact=True)
    settle(page, "Labeling rounds")
    assert f"round={rounds[-1]}" in page.url


# ---------------------------------------------------------------------- walkthrough


def test_walkthrough_round_rewrite_edit_accept_round_diff(loop: Loop, page: Page) -> None:
    open_path(page, loop, "ontology_rounds", "Labeling rounds")
    shot(page, "w1-rounds")
    with loop.session() as session:
        before = max(h.round for h in round_history(session=session))
        newest_before = version_label(get_version("driftlens", session=session))
    run_round_in_page(page, loop, sample=60)
    number = before + 1

    open_path(page, loop, "ontology_rewrite", "Definition rewrite")
    page.get_by_role("button", name="Propose rewrite").click()
    settle(page, "Definition rewrite")
    shot(page, "w2-proposed")
    assert f"round {number}." in main_text(page)
    box = page.get_by_role("textbox", name=re.compile(r"^Definition 1 \("))
    edited = box.input_value().split("\n")[0] + " Edited in the walkthrough."
    box.fill(edited)
    box.press("Tab")
    settle(page, "Definition rewrite")
    page.get_by_role("button", name="Accept (with edits)").click()
    settle(page, "Definition rewrite")
    shot(page, "w3-accepted")
    found = re.search(r"new version (driftlens@\d+) \(parent (driftlens@\d+)\)", main_text(page))
    assert found is not None and found.group(2) == newest_before
    new_label = found.group(1)

    open_path(page, loop, "ontology_rounds", "Labeling rounds")
    run_round_in_page(page, loop, sample=60)
    with loop.session() as session:
        latest = round_history(session=session)[-1]
        assert latest.ontology_version == new_label and latest.status == "done"
    shot(page, "w4-round-on-new-version")

    open_path(page, loop, "ontology_versions", "Ontology")
    choose(page, "Old", newest_before)
    settle(page, "Ontology")
    choose(page, "New", new_label)
    settle(page, "Ontology")
    page.get_by_text("Side by side, word by word", exact=True).first.click()
    # the definitions table's hidden grid cells hold the text too: wait for the word diff
    words = page.get_by_test_id("stMarkdownContainer").filter(has_text="Edited in the walkthrough")
    words.first.wait_for(timeout=60_000)
    settle(page, "Ontology")
    shot(page, "w5-diff")
    assert "Edited in the walkthrough" in main_text(page)
    with loop.session() as session:
        rows = session.exec(
            select(OntologyVersion).where(OntologyVersion.name == "driftlens")
        ).all()
        assert new_label in {f"{v.name}@{v.version}" for v in rows}
