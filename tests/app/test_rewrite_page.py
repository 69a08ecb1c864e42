"""The Rewrite page (issue #20 G, I, J): it opens on the loop's round, not a validation
experiment's; "current" is the newest version's text; an unknown simulator preset is refused.

Each test builds a small simulated run and rounds in its own workspace and drives the page
through ``AppTest``.
"""

from __future__ import annotations

from sqlmodel import select
from streamlit.testing.v1 import AppTest

from ontology.rounds import run_round
from ontology.validation_runs import ExperimentRequest, run_experiment, save_result
from ontology.versions import seed_ontologies
from storage.models import RewriteProposal
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.app.apptest_support import open_page, unescape
from tests.app.test_ontology_pages import _small_run
from tests.ontology.leaf_edits import reword_leaf


def _rewrite_page(**params: str) -> AppTest:
    return open_page("ontology_rewrite.py", params=params)


def _loop_round() -> int:
    _small_run()
    with open_workspace_session(resolve_settings()) as session:
        seed_ontologies(session=session)
        session.commit()
        return run_round("demo", ["sim", "keywords"], session=session, sample=40, seed=1).round


def test_rewrite_opens_on_the_loops_round_after_a_cross_experiment() -> None:
    loop = _loop_round()
    settings = resolve_settings()
    request = ExperimentRequest(
        experiment="cross", run="demo", labelers=("sim", "keywords"), sample=20, seed=0
    )
    with open_workspace_session(settings) as session:
        report = run_experiment(request, session=session)
    save_result(request, report, workspace=settings.workspace)
    made = {int(r["round"]) for r in report.rows}
    assert loop not in made and max(made) > loop  # the experiment's rounds are newer
    at = _rewrite_page()
    assert at.selectbox(key="round").value == loop
    assert at.query_params["round"] in (str(loop), [str(loop)])
    linked = _rewrite_page(round=str(max(made)))  # a link still opens the experiment's round
    assert linked.selectbox(key="round").value == max(made)


def test_current_column_shows_the_newest_versions_text_and_unknown_presets_are_refused() -> None:
    loop = _loop_round()
    at = _rewrite_page()
    at.text_input(key="model").set_value("sim/no-such-preset").run()
    next(b for b in at.button if b.label == "Propose rewrite").click().run()
    assert not at.exception, [e.value for e in at.exception]
    refused = "Unknown simulator preset 'sim/no-such-preset'"
    assert [e for e in at.error if refused in unescape(e.value)]
    with open_workspace_session(resolve_settings()) as session:
        assert not session.exec(select(RewriteProposal)).all()  # nothing stored (J)
    at.text_input(key="model").set_value("sim/default").run()
    next(b for b in at.button if b.label == "Propose rewrite").click().run()
    assert not at.exception, [e.value for e in at.exception]
    with open_workspace_session(resolve_settings()) as session:
        (proposal,) = session.exec(select(RewriteProposal)).all()
        # Newer work on the proposal's first leaf: @2 rewrites it after the round (on @1).
        reword_leaf(session, "Zebra wording from the newest version.", leaf=proposal.leaf_a)
        session.commit()
        pid = proposal.id
    at = _rewrite_page(proposal=str(pid), round=str(loop))
    shown = " ".join(m.value for m in at.markdown)
    assert "Zebra" in shown  # the newest version's text, not the proposal's base (I)
    assert any(c.value == "current (driftlens@2)" for c in at.caption)
