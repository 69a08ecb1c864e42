"""Defaults that work offline and run lists without other instruments' runs (issue #20 F, H).

A workspace holds one simulated reasoning run, a newer memory-conflict run (its own prompt
version, no steps, as the conflicts demo stores a dozen) and a stored model spec whose
endpoint is not configured; the Validation, Rounds and Analysis pages are opened through
``AppTest``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from llm.specs import ModelSpec
from ontology.versions import seed_ontologies
from storage.models import GenerationRun, ModelSpecRow
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.reasoning.analysis import analyze_run
from study.reasoning.generation import GenerationOptions, run_generation
from study.reasoning.trajectories import label_run
from tests.app.apptest_support import open_page
from tests.app.test_ontology_pages import _small_run
from tests.ontology.leaf_edits import reword_leaf

CONFLICT_RUN = "conflicts-demo-direct"


def _workspace() -> None:
    _small_run()  # run "demo": simulated, with parsed steps
    with open_workspace_session(resolve_settings()) as session:
        seed_ontologies(session=session)
        spec = ModelSpecRow(
            spec="openai-api/simulator/sim/default",
            provider="openai-api",
            model="sim/default",
            simulated=False,
        )
        session.add(spec)
        session.flush()
        assert spec.id is not None
        # Newer than "demo": the old pages offered it first.
        session.add(
            GenerationRun(
                name=CONFLICT_RUN, model_spec_id=spec.id, prompt_version="conflict-response-v1"
            )
        )
        session.commit()


def _page(page: str, **params: str) -> AppTest:
    return open_page(page, params=params)


def test_validation_and_rounds_default_to_what_runs_offline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SIMULATOR_BASE_URL", raising=False)
    _workspace()
    from ontology.rounds import run_round

    with open_workspace_session(resolve_settings()) as session:
        run_round("demo", ["sim", "keywords"], session=session, sample=20, seed=1)
    robust = _page("ontology_validation.py", experiment="robustness")
    assert robust.selectbox(key="v-model").value == "sim/default"
    (stored,) = [o for o in robust.selectbox(key="v-model").options if "openai-api" in o]
    assert "needs SIMULATOR_BASE_URL" in stored
    cross = _page("ontology_validation.py", experiment="cross")
    assert cross.selectbox(key="v-run").value == "demo"
    assert CONFLICT_RUN not in cross.selectbox(key="v-run").options
    rounds = _page("ontology_rounds.py")
    assert rounds.selectbox(key="run").options == ["demo"]


def test_new_analysis_defaults_to_the_version_the_run_was_labelled_with(workspace: Path) -> None:
    _workspace()
    with open_workspace_session(resolve_settings()) as session:
        # The shown analysis: run demo under driftlens@1, as in the demo workspace.
        label_run("demo", "keywords", session=session)
        analyze_run("demo", "keywords", session=session, out_dir=workspace / "r", bootstrap=200)
        for n in (0, 1):  # driftlens@2, @3
            reword_leaf(session, f"Sharper wording {n}.", index=n)
        session.commit()
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run="fresh", perturbations="filler", samples=1
            ),
            session=session,
        )
        label_run("fresh", "keywords", session=session, ontology_version="driftlens@3")
    at = _page("analysis.py")
    at.session_state["new-analysis"] = True  # closed while an analysis is shown
    at.run()
    assert CONFLICT_RUN not in at.selectbox(key="new_run").options
    at.selectbox(key="new_run").set_value("fresh").run()
    version = next(s for s in at.selectbox if s.label == "Ontology version")
    assert version.value == "driftlens@3"  # it used to follow the shown analysis: @1


def test_suggested_label_command_is_shell_quoted(workspace: Path) -> None:
    """Issue #20 H: ``driftlens label --run a<b>`` was a shell redirect."""
    import shlex

    from storage.errors import InputError

    _small_run()
    name = "a<b> c"
    with open_workspace_session(resolve_settings()) as session:
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run=name, perturbations="filler", samples=1
            ),
            session=session,
        )
        with pytest.raises(InputError) as caught:
            analyze_run(name, "keywords", session=session, out_dir=workspace / "q", bootstrap=200)
    command = str(caught.value).split("label it first: ", 1)[1]
    words = shlex.split(command)
    assert words[:4] == ["driftlens", "label", "--run", name]
    assert words[-2:] == ["--ontology-version", "driftlens@1"]


def test_the_conflict_prompt_versions_are_the_ones_left_out_of_reasoning_pickers() -> None:
    from study.conflicts.plan import PROMPT_VERSION
    from study.conflicts.policy import POLICY_PROMPT_VERSION
    from study.prompts import PROMPT_VERSION as STEPS
    from study.reasoning.run_choices import OTHER_INSTRUMENT_PROMPTS

    for version in (PROMPT_VERSION, f"{POLICY_PROMPT_VERSION}:direct"):
        assert version.startswith(OTHER_INSTRUMENT_PROMPTS)
    assert not STEPS.startswith(OTHER_INSTRUMENT_PROMPTS)


def test_the_human_check_push_command_is_shell_quoted() -> None:
    """The Validation page shows this command to copy; a quote in a run name broke it."""
    import shlex

    from ontology.rounds import run_round
    from ontology.validation import human_label_check

    _small_run()
    name = "it's <mine>"
    with open_workspace_session(resolve_settings()) as session:
        seed_ontologies(session=session)
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run=name, perturbations="filler", samples=1
            ),
            session=session,
        )
        number = run_round(name, ["sim", "keywords"], session=session, sample=10, seed=1).round
        report = human_label_check(number, "keywords", session=session, limit=5)
    words = shlex.split(str(report.rows[0]["command"]))
    assert words[:4] == ["driftlens", "annotate", "push", "label_check"]
    assert words[4:6] == ["--select", f"run={name}"]
