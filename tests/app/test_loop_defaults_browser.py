"""Issue #20 F–K in chromium, on the loop's copy of the demo workspace (``loop`` fixture).

The demo workspace holds the reasoning run ``demo``, its labeling rounds and the thirteen
runs of the memory-conflicts demo. Each test is one defect the pages had: Validation's
defaults needing a configured endpoint or a run without steps, conflict runs padding the
reasoning pickers (F); Rewrite opening on a cross experiment's round (G); New analysis
ignoring the version a run was labelled with, an unquoted suggested command (H); Rewrite's
"current" column showing the proposal's base text (I); an unknown simulator preset stored
as a proposal (J); the round banner in one tab only, two tabs overwriting one draft
silently, the demo button promising "(seconds)" (K). Screenshots go to
``test-artifacts/loop/``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest
from sqlmodel import func, select

from llm.specs import ModelSpec
from ontology.rounds import round_history
from ontology.validation_runs import (
    ExperimentRequest,
    run_experiment,
    save_result,
    stored_results,
)
from ontology.versions import document, edit_leaf, get_version, version_label
from storage.models import RewriteProposal
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.trajectories import label_run
from tests.app.browser_support import (
    IDLE_JS,
    browser_page,
    main_text,
    pick_option,
    wait_for_streamlit,
)
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
    selectbox,
    settle,
    shot,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

pytestmark = pytest.mark.browser

#: Names of the memory-conflicts demo's runs (all thirteen start so).
CONFLICT_RUNS = "conflicts-demo"
#: How long a small background job (an experiment, a round) may take on a loaded machine.
JOB_MS = 180_000


def _options(page: Page, box: Locator) -> list[str]:
    """The option texts of a Streamlit selectbox or multiselect (opened, read, closed)."""
    page.wait_for_function(IDLE_JS, timeout=60_000)
    box.click()
    page.get_by_role("option").first.wait_for(timeout=10_000)
    texts = [str(t) for t in page.get_by_role("option").all_inner_texts()]
    page.keyboard.press("Escape")
    return texts


def _done_rounds(loop: Loop) -> list[int]:
    with loop.session() as session:
        return [h.round for h in round_history(session=session) if h.status == "done"]


# ------------------------------------------------------------------------------- F


def test_f_validation_defaults_run_offline_and_pickers_hold_reasoning_runs_only(
    loop: Loop, page: Page
) -> None:
    open_path(page, loop, "ontology_validation", "Start an experiment")
    page.get_by_text(re.compile("^robustness — ")).click()  # the radio (older pages had no link)
    settle(page, "Model that paraphrases the definitions")
    paraphraser = selectbox(page, "Model that paraphrases the definitions")
    # It used to open on openai-api/simulator/sim/default, which needs SIMULATOR_BASE_URL.
    assert paraphraser.input_value() == "sim/default (simulated)"
    shot(page, "f-robustness-defaults")

    open_path(page, loop, "ontology_validation?experiment=cross", "Start an experiment")
    run = selectbox(page, "Generation run")
    assert run.input_value() == RUN  # it used to default to a conflicts-demo run (no steps)
    offered = _options(page, run)
    assert RUN in offered and not [r for r in offered if r.startswith(CONFLICT_RUNS)], offered
    before = set(_done_rounds(loop))
    box = page.get_by_role("spinbutton", name="Responses")
    box.fill("20")
    box.press("Tab")
    settle(page, "Start experiment")
    page.get_by_role("button", name="Start experiment").click()
    done = page.get_by_text(re.compile(r"^Experiment cross: .* finished; its result is shown"))
    done.wait_for(timeout=JOB_MS)
    settle(page, "Start experiment")
    shot(page, "f-cross-done")
    assert f"run {RUN}, labelers sim, keywords, sample 20" in str(done.inner_text())
    assert len(set(_done_rounds(loop)) - before) == 2  # one round per ontology, offline

    open_path(page, loop, "ontology_rounds", "Labeling rounds")
    offered = _options(page, selectbox(page, "Generation run"))
    assert RUN in offered and not [r for r in offered if r.startswith(CONFLICT_RUNS)], offered
    open_path(page, loop, "analysis", "Analysis")
    page.get_by_text("New analysis", exact=True).first.click()
    settle(page, "Run analysis")
    offered = _options(page, selectbox(page, "Run"))
    assert RUN in offered and not [r for r in offered if r.startswith(CONFLICT_RUNS)], offered


# ------------------------------------------------------------------------------- G


def test_g_rewrite_opens_on_the_loops_round_after_a_cross_experiment(
    loop: Loop, page: Page
) -> None:
    results, _problems = stored_results(workspace=loop.workspace)
    made_before = {int(row["round"]) for r in results for row in r.report.rows}
    loop_round = max(set(_done_rounds(loop)) - made_before)  # test F's experiment made some

    def cross() -> set[int]:
        request = ExperimentRequest(
            experiment="cross", run=RUN, labelers=("sim", "keywords"), sample=20, seed=7
        )
        with loop.session() as session:
            report = run_experiment(request, session=session)
        save_result(request, report, workspace=loop.workspace)
        return {int(r["round"]) for r in report.rows}

    made = in_thread(cross)
    assert min(made) > loop_round  # the experiment's rounds are the newest
    open_path(page, loop, "ontology_rewrite", "Propose a rewrite")
    shot(page, "g-rewrite-after-cross")
    # It used to open on the experiment's newest round (0.0 % agreement on the old ontology).
    assert selectbox(page, "Round").input_value().startswith(f"round {loop_round} ")
    assert f"round={loop_round}" in page.url
    open_path(page, loop, f"ontology_rewrite?round={max(made)}", "Propose a rewrite")
    assert selectbox(page, "Round").input_value().startswith(f"round {max(made)} ")  # a link still


# ------------------------------------------------------------------------------- H

QUOTED_RUN = "a<b> c"


def _newer_version_and_runs(loop: Loop) -> str:
    """A version after driftlens@1 with run ``fresh`` labelled under it, and ``a<b> c``
    generated but not labelled; returns the version's label."""

    def work() -> str:
        with loop.session() as session:
            base = get_version("driftlens", session=session)
            leaf = document(base).leaf(document(base).leaf_names[-1])
            newer = edit_leaf(
                base,
                leaf.name,
                definition=f"{leaf.definition} Reworded for the H test.",
                triggers=list(leaf.triggers),
                exclusions=list(leaf.exclusions),
                session=session,
            )
            label = version_label(newer)
            session.commit()
            for name in ("fresh", QUOTED_RUN):
                run_generation(
                    GenerationOptions(
                        model=ModelSpec.parse("sim/default"),
                        run=name,
                        perturbations="filler",
                        samples=1,
                    ),
                    session=session,
                )
            label_run("fresh", "keywords", session=session, ontology_version=label)
            return label

    return in_thread(work)


def test_h_new_analysis_takes_the_runs_version_and_quotes_the_label_command(
    loop: Loop, page: Page
) -> None:
    version = _newer_version_and_runs(loop)
    assert version != "driftlens@1"  # the shown analysis (the demo's) is under @1
    open_path(page, loop, "analysis", "Analysis")
    page.get_by_text("New analysis", exact=True).first.click()
    settle(page, "Run analysis")
    pick_option(page, selectbox(page, "Run"), re.compile("^fresh$"))
    settle(page, "Run analysis")
    shot(page, "h-new-analysis-version")
    # It used to follow the shown analysis (driftlens@1), which has no labels of "fresh".
    assert selectbox(page, "Ontology version").input_value() == version

    pick_option(page, selectbox(page, "Run"), re.compile("^" + re.escape(QUOTED_RUN) + "$"))
    settle(page, "Run analysis")
    page.get_by_role("button", name="Run analysis").click()
    failed = page.get_by_text(re.compile(r"label it first: ")).first
    failed.wait_for(timeout=JOB_MS)
    settle(page, "label it first: ")  # the page reran when the job ended
    shot(page, "h-label-command")
    line = str(failed.inner_text())
    assert "\n" not in line.strip() and "Traceback" not in line
    words = shlex.split(line.split("label it first: ", 1)[1])
    # Unquoted, the shell read "a<b> c" as a redirect from b into c.
    assert words[:4] == ["driftlens", "label", "--run", QUOTED_RUN], words


# ---------------------------------------------------------------------------- I, J


def _proposals(loop: Loop) -> int:
    with loop.session() as session:
        return int(session.exec(select(func.count()).select_from(RewriteProposal)).one())


def test_i_j_current_is_the_newest_text_and_an_unknown_preset_is_refused(
    loop: Loop, page: Page
) -> None:
    number = first_round(loop)
    open_path(page, loop, "ontology_rewrite", "Propose a rewrite")
    choose(page, "Round", f"round {number} ")  # the demo's round, picked in the page
    settle(page, "Propose a rewrite")
    stored = _proposals(loop)
    model = page.get_by_label("Model", exact=True)
    model.fill("sim/no-such-preset")
    model.press("Tab")
    settle(page, "Propose a rewrite")
    page.get_by_role("button", name="Propose rewrite").click()
    refused = page.get_by_text("Unknown simulator preset 'sim/no-such-preset'").first
    refused.wait_for(timeout=60_000)
    settle(page, "Propose a rewrite")
    shot(page, "j-unknown-preset")
    assert "\n" not in str(refused.inner_text()).strip()
    assert _proposals(loop) == stored  # it used to store a pending proposal (J)

    pair = pairs(loop, number)[-1]
    pid = propose(loop, number, pair, seed=9)

    def newer_work() -> str:
        with loop.session() as session:
            base = get_version("driftlens", session=session)
            leaf = document(base).leaf(pair.leaf_a)
            newest = edit_leaf(
                base,
                leaf.name,
                definition="Zebra wording from the newest version.",
                triggers=list(leaf.triggers),
                exclusions=list(leaf.exclusions),
                session=session,
            )
            session.commit()
            return version_label(newest)

    newest = in_thread(newer_work)
    open_path(page, loop, f"ontology_rewrite?proposal={pid}", "Decide")
    shot(page, "i-current-column")
    text = main_text(page)
    assert f"current ({newest})" in text
    assert "Zebra wording from the newest version." in text  # not the proposal's base (I)


# ------------------------------------------------------------------------------- K


@contextmanager
def _two_tabs(browser: Browser) -> Iterator[tuple[Page, Page]]:
    """Two tabs of one browser (one context: the cookies of one researcher)."""
    with browser_page(browser) as first:
        yield first, first.context.new_page()


def test_k_the_round_banner_shows_in_every_tab(loop: Loop, browser: Browser) -> None:
    with _two_tabs(browser) as (starter, watcher):
        for tab in (starter, watcher):
            open_path(tab, loop, "ontology_rounds", "Labeling rounds")
        number = run_round_in_page(starter, loop, sample=30)
        # Any rerun of the second tab (another round picked): the banner used to show only
        # in the first tab that reran after the end (here the first, whose progress ticked).
        choose(watcher, "Round", str(first_round(loop)), exact=True)
        settle(watcher, "Labeling rounds")
        shot(watcher, "k-banner-second-tab")
        banner = re.compile(rf"^Round {number}: mean pairwise agreement")
        assert watcher.get_by_text(banner).count() == 1, main_text(watcher)[:3000]


def test_k_a_tab_whose_draft_another_tab_changed_is_told(loop: Loop, browser: Browser) -> None:
    first = first_round(loop)
    pid = propose(loop, first, pairs(loop, first)[-1], seed=13)
    with _two_tabs(browser) as (one, two):
        for tab in (one, two):
            open_path(tab, loop, f"ontology_rewrite?proposal={pid}", "Decide")
        box = one.get_by_role("textbox", name=re.compile(r"^Definition 1 \("))
        box.fill("Typed in the first tab.")
        box.press("Tab")
        settle(one, "Decide")
        assert "Another tab" not in main_text(one)
        box = two.get_by_role("textbox", name=re.compile(r"^Definition 2 \("))
        box.fill(box.input_value() + " Typed in the second tab.")
        box.press("Tab")  # the second tab reruns: its definition 1 is now stale
        settle(two, "Decide")
        shot(two, "k-draft-second-tab")
        notice = two.get_by_text("Another tab or browser session changed this draft")
        assert notice.count() == 1, main_text(two)  # the later commit replaced it silently
        assert "(23 characters there)" in str(notice.first.inner_text())


def test_k_the_demo_button_promises_no_seconds_and_shows_its_job(loop: Loop, page: Page) -> None:
    open_path(page, loop, "sources", "Source reliance")
    button = page.get_by_role("button", name=re.compile("^Run the simulated demo"))
    assert "(seconds)" not in str(button.inner_text())  # it took 32 s
    button.click()
    status = page.locator('[class*="st-key-job-progress"]').first
    status.wait_for(timeout=10_000)  # a working state at once, not a blank page
    shot(page, "k-demo-job")
    assert "It runs in the background" in str(status.inner_text())
    status.get_by_role("button", name="Cancel").click()
    page.get_by_text(re.compile(r"Source-reliance demo (cancelled|failed|interrupted)")).wait_for(
        timeout=60_000
    )
    wait_for_streamlit(page, "Source reliance")
