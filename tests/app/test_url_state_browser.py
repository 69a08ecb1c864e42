"""In chromium: pages keep their state in the address bar and say so for unknown ids, and the
Ontology page does not branch silently from an old version (issue #20 B, K, item 4).

A small simulated workspace (one analysed run, a second run, driftlens@2 made after @1) is
served by ``driftlens app``; headless Debian chromium opens linked views and picks values.
Screenshots go to ``test-artifacts/url-state/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ontology.versions import document, edit_leaf, get_version, seed_ontologies
from storage.models import GenerationRun, ModelSpec
from storage.settings import default_db_url, resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.analysis import analyze_run
from tests.analysis._sim_workspace import LABELER, RUN, build_sim_workspace
from tests.app.browser_support import pick_option, require_chromium, serve_app, wait_for_streamlit

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "url-state"
OTHER = "other-run"


@dataclass(frozen=True)
class Served:
    url: str
    analysis: int


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    require_chromium()
    ws = tmp_path_factory.mktemp("url-state-ws")
    settings = resolve_settings(workspace=ws, db_url=default_db_url(ws))
    with open_workspace_session(settings) as session:
        build_sim_workspace(session, n_questions=4)
        seed_ontologies(session=session)
        spec = ModelSpec(spec="sim/other", provider="sim", model="other", simulated=True)
        session.add(spec)
        session.flush()
        assert spec.id is not None
        session.add(GenerationRun(name=OTHER, model_spec_id=spec.id, prompt_version="steps-v1"))
        session.commit()
    with open_workspace_session(settings) as session:
        analysis = analyze_run(
            RUN, LABELER, session=session, out_dir=ws / "reports" / "a", bootstrap=200
        ).analysis_id
        base = get_version("driftlens", session=session)
        leaf = document(base).leaf(document(base).leaf_names[0])
        edit_leaf(  # driftlens@2: accepted work that @1 lacks
            base,
            leaf.name,
            definition="Accepted rewrite of the first leaf.",
            triggers=list(leaf.triggers),
            exclusions=list(leaf.exclusions),
            session=session,
        )
        session.commit()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve_app(ws) as url:
        yield Served(url=url, analysis=analysis)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    p = context.new_page()
    yield p
    context.close()


def _main(page: Page) -> str:
    return str(page.inner_text('[data-testid="stMain"]'))


def test_runs_url_follows_the_picked_run_and_unknown_ids_say_so(served: Served, page: Page) -> None:
    page.goto(f"{served.url}/runs?run={RUN}", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Responses")
    assert f"run={RUN}" in page.url
    box = page.get_by_test_id("stSelectbox").filter(has_text="Run").first
    pick_option(page, box, re.compile(f"^{OTHER}$"))
    wait_for_streamlit(page, "Responses")
    page.wait_for_function(f"() => location.search.includes('run={OTHER}')", timeout=30_000)
    assert f"run={RUN}" not in page.url  # K: it used to keep ?run=<first run>
    page.goto(f"{served.url}/runs?run=no-such-run", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Responses")
    assert "unknown run 'no-such-run'" in _main(page)
    page.goto(f"{served.url}/analysis?analysis=999", wait_until="domcontentloaded")
    wait_for_streamlit(page, f"Analysis {served.analysis} ·")
    assert "unknown analysis '999'" in _main(page)  # K: it used to open the newest silently
    page.wait_for_function(
        f"() => location.search.includes('analysis={served.analysis}')", timeout=30_000
    )
    page.screenshot(path=str(ARTIFACTS / "unknown-analysis.png"), full_page=True)


def test_ontology_asks_before_saving_an_edit_of_an_old_version(served: Served, page: Page) -> None:
    page.goto(f"{served.url}/ontology_versions?version=driftlens@1", wait_until="domcontentloaded")
    wait_for_streamlit(page, "Edit as a new version")
    assert "driftlens@1 is not the newest version of driftlens: driftlens@2 is" in _main(page)
    save = page.get_by_role("button", name="Save leaf as new version")
    assert save.is_disabled()  # B: it used to save a branch of @1 without a word
    page.get_by_text("Rebase: apply my edit on top of driftlens@2").click()
    wait_for_streamlit(page, "Edit as a new version")
    assert page.get_by_role("button", name="Save leaf as new version").is_enabled()
    page.screenshot(path=str(ARTIFACTS / "ontology-old-version.png"), full_page=True)
