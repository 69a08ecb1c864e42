"""Ontology studio pages perform their primary action through ``AppTest``."""

from __future__ import annotations

import time

import yaml

from llm.specs import ModelSpec
from tests.app.apptest_support import open_page, unescape


def _small_run() -> None:
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.questions import import_sample_questions
    from study.reasoning.generation import GenerationOptions, run_generation

    with open_workspace_session(resolve_settings()) as session:
        import_sample_questions(session=session)
        session.commit()
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run="demo", perturbations="filler", samples=1
            ),
            session=session,
        )


def _round(labelers: list[str], sample: int = 40) -> int:
    from ontology.rounds import run_round
    from ontology.versions import seed_ontologies
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    with open_workspace_session(resolve_settings()) as session:
        seed_ontologies(session=session)
        session.commit()
        return run_round("demo", labelers, session=session, sample=sample, seed=1).round


def test_ontology_page_shows_definitions_and_saves_an_edit_as_a_new_version() -> None:
    at = open_page("ontology_versions.py")
    assert len(at.dataframe[0].value) == 11
    # The YAML editor is built only once its expander is open (the page's first render).
    assert not [t for t in at.text_area if t.label == "YAML"]
    at.session_state["whole-yaml"] = True
    at.run()
    editor = next(t for t in at.text_area if t.label == "YAML")
    assert editor.value is not None
    data = yaml.safe_load(editor.value)
    data["roots"][0]["leaves"][0]["triggers"].append("pilgrimage")
    editor.set_value(yaml.safe_dump(data, sort_keys=False))
    next(b for b in at.button if b.label == "Save as new version").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "driftlens@2" in at.success[0].value
    # The new version is listed and the diff against its parent shows the new trigger.
    at.run()
    assert any("driftlens@2" in o for o in at.selectbox(key="version").options)


def test_rounds_page_runs_a_round_and_shows_the_injected_confusion() -> None:
    _small_run()
    at = open_page("ontology_rounds.py")
    at.multiselect(key="labelers").set_value(["sim", "sim:confuse=3~4@0.5;seed=1"])
    at.number_input(key="sample").set_value(60)
    next(b for b in at.button if b.label == "Run round").click().run()
    # The round is labeled in a background thread of the server; the page polls it.
    deadline = time.monotonic() + 300  # a background round; minutes on a loaded machine
    while not at.success and time.monotonic() < deadline:
        assert not at.exception, [e.value for e in at.exception]
        time.sleep(0.5)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Round 1" in at.success[0].value
    pairs = at.dataframe[3].value
    top = pairs.iloc[0]
    assert (top["leaf A"], top["leaf B"]) == (
        "Efficiency and resource optimization",
        "Professional advancement",
    )
    assert at.metric[2].value != "0"


def test_rewrite_page_proposes_and_accepts_a_new_version() -> None:
    _small_run()
    number = _round(["sim", "keywords"], sample=60)
    at = open_page("ontology_rewrite.py")
    assert at.selectbox(key="round").value == number
    next(b for b in at.button if b.label == "Propose rewrite").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Proposal 1 stored (pending)" in unescape(at.success[0].value)
    at.run()
    next(b for b in at.button if b.label.startswith("Accept")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("new version driftlens@2" in unescape(s.value) for s in at.success)


def test_ontology_page_edits_one_leaf_in_its_fields_and_records_the_author() -> None:
    from ontology.versions import document, get_version
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session

    at = open_page("ontology_versions.py")
    leaf = at.selectbox(key=next(k for k in _keys(at) if k.startswith("leaf-"))).value
    assert isinstance(leaf, str)
    definition = next(t for t in at.text_area if t.label == "Definition")
    definition.set_value("Edited in its own field.")
    triggers = next(m for m in at.multiselect if m.label == "Triggers")
    # A chip typed in (not among the options) is a new term.
    triggers.set_value([*triggers.value[1:], "pilgrimage"])
    exclusions = next(m for m in at.multiselect if m.label == "Exclusions")
    exclusions.set_value([])
    at.text_input(key="author").set_value("Ada")
    next(b for b in at.button if b.label == "Save leaf as new version").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Saved driftlens@2" in unescape(at.success[0].value)
    assert "by Ada" in unescape(at.success[0].value)
    # The new version is the one shown now.
    assert at.query_params["version"] in ("driftlens@2", ["driftlens@2"])
    with open_workspace_session(resolve_settings()) as session:
        new, old = (
            get_version("driftlens@2", session=session),
            get_version("driftlens@1", session=session),
        )
        assert new.author == "Ada" and new.parent_id == old.id
        edited, before = document(new).leaf(leaf), document(old).leaf(leaf)
    assert edited.definition == "Edited in its own field."
    assert edited.triggers == (*before.triggers[1:], "pilgrimage")
    assert edited.exclusions == ()


def test_ontology_page_refuses_an_empty_leaf_definition_in_one_line() -> None:
    at = open_page("ontology_versions.py")
    next(t for t in at.text_area if t.label == "Definition").set_value("   ")
    next(b for b in at.button if b.label == "Save leaf as new version").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "is empty" in unescape(at.error[0].value)
    assert not at.success


def _keys(at: object) -> list[str]:
    return [s.key for s in at.selectbox if s.key]  # type: ignore[attr-defined]


CONFUSER = "sim:confuse=3~4@0.5;seed=1"
PAIR = ("Efficiency and resource optimization", "Professional advancement")


def test_rounds_page_names_the_odd_labeler_and_filters_disagreements_by_pair() -> None:
    _small_run()
    labelers = ["sim", CONFUSER, "sim:confuse=5~6@0.3;seed=2"]
    number = _round(labelers, sample=60)
    at = open_page("ontology_rounds.py")
    assert at.selectbox(key="round").value == number
    pairs = next(d.value for d in at.dataframe if "odd one out" in d.value.columns)
    top = pairs.iloc[0]
    assert (top["leaf A"], top["leaf B"]) == PAIR
    assert top["odd one out"] == CONFUSER
    # Labeler against the others' majority: its confusion sits off the diagonal.
    at.selectbox(key=f"vs-majority-{number}").set_value(CONFUSER).run()
    matrix = next(d.value for d in at.dataframe if d.value.index.name == "others' majority")
    assert matrix.loc[PAIR[0], PAIR[1]] + matrix.loc[PAIR[1], PAIR[0]] > 0
    assert matrix.columns.name == CONFUSER
    # Disagreements: once per step, labeler columns first; the pair select filters them.
    examples = next(d.value for d in at.dataframe if "text" in d.value.columns)
    assert list(examples.columns[:3]) == labelers
    assert not examples.duplicated(["response", "step"]).any()
    at.selectbox(key=f"pair-filter-{number}").set_value(" | ".join(PAIR)).run()
    assert not at.exception, [e.value for e in at.exception]
    only = next(d.value for d in at.dataframe if "text" in d.value.columns)
    assert 0 < len(only) < len(examples)
    for _, row in only.iterrows():
        assert set(PAIR) <= {row[name] for name in labelers}


def test_rounds_page_opens_the_round_of_a_link_and_puts_the_selection_in_the_url() -> None:
    from streamlit.testing.v1 import AppTest

    from tests.app.apptest_support import APP

    _small_run()
    first = _round(["sim", "keywords"], sample=20)
    second = _round(["sim", CONFUSER], sample=20)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/ontology_rounds.py")
    at.query_params.update({"round": str(first), "run": "demo", "version": "original@1"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="round").value == first  # not the newest round
    assert at.selectbox(key="ontology").value == "original@1"
    assert at.selectbox(key="run").value == "demo"
    at.selectbox(key="round").set_value(second).run()
    assert at.query_params["round"] == str(second)
    assert at.query_params["version"] == "original@1"  # the other parameters are kept
    # A link to a round that does not exist says so and opens the newest.
    fresh = AppTest.from_file(APP, default_timeout=120)
    fresh.run()
    fresh.switch_page("pages/ontology_rounds.py")
    fresh.query_params["round"] = "99"
    fresh.run()
    assert fresh.selectbox(key="round").value == second
    assert any(unescape(c.value) == "unknown round '99'" for c in fresh.caption)


def _wait_for_outcome(at: object) -> None:
    """Rerun the page until its background job reported success or an error."""
    deadline = time.monotonic() + 300  # a background round; minutes on a loaded machine
    while not at.success and not at.error and time.monotonic() < deadline:  # type: ignore[attr-defined]
        assert not at.exception, [e.value for e in at.exception]  # type: ignore[attr-defined]
        time.sleep(0.5)
        at.run()  # type: ignore[attr-defined]
    assert not at.exception, [e.value for e in at.exception]  # type: ignore[attr-defined]
    assert not at.error, [e.value for e in at.error]  # type: ignore[attr-defined]


def test_validation_page_starts_experiments_in_the_background_and_shows_their_results(
    workspace: object,
) -> None:
    _small_run()
    number = _round(["sim", CONFUSER], sample=40)
    at = open_page("ontology_validation.py")
    assert at.radio(key="experiment").value == "stability"
    assert at.selectbox(key="v-round").value == number
    at.selectbox(key=f"v-labeler-{number}").set_value(CONFUSER).run()
    next(b for b in at.button if b.label == "Start experiment").click().run()
    _wait_for_outcome(at)
    assert "finished" in unescape(at.success[0].value)
    table = at.dataframe[0].value
    assert table.iloc[0]["experiment"] == f"stability: round {number}, labeler {CONFUSER}, T = 1"
    agreement = float(table.iloc[0]["result"].removeprefix("agreement ").removesuffix("%"))
    assert 50.0 < agreement < 100.0  # a sampled labeler does not agree with itself
    assert len(list((workspace / "validation").glob("*-stability.json"))) == 1  # type: ignore[operator]

    # The human check: the Label Studio hand-off for the round's labels.
    at.radio(key="experiment").set_value("human").run()
    at.selectbox(key=f"v-labeler-{number}").set_value("sim").run()
    next(b for b in at.button if b.label == "Start experiment").click().run()
    _wait_for_outcome(at)
    assert str(at.selectbox(key="v-shown").value).endswith("-human.json")
    assert at.code[0].value.startswith("driftlens annotate push label_check")
    assert len(at.dataframe[0].value) == 2

    # No CLI detour: the button opens Human studies with the study and selection filled in.
    select = ["run=demo", "labeler=sim"]
    next(b for b in at.button if b.key == "v-human-push").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="push_study").value == "label_check"
    selection = str(at.text_area(key="push_selection").value).splitlines()
    assert selection[:2] == select and selection[-1] == "limit=100"
    assert not at.warning or all("Session State" not in w.value for w in at.warning)


def test_leaf_chip_and_definition_edits_survive_a_new_browser_session_as_a_draft() -> None:
    at = open_page("ontology_versions.py")
    next(t for t in at.text_area if t.label == "Definition").set_value("Kept as a draft.").run()
    triggers = next(m for m in at.multiselect if m.label == "Triggers")
    chips = [*triggers.value, "pilgrimage"]
    triggers.set_value(chips).run()
    again = open_page("ontology_versions.py")  # a reload: a new session on the same workspace
    assert next(t for t in again.text_area if t.label == "Definition").value == "Kept as a draft."
    assert next(m for m in again.multiselect if m.label == "Triggers").value == chips
    assert any("kept as a draft" in c.value for c in again.caption)


def test_saving_from_an_old_version_asks_rebase_or_branch_and_rebase_keeps_newer_work() -> None:
    """Issue #20 B: an edit of driftlens@1 while @2 and @3 exist used to branch silently."""
    from ontology.versions import document, get_version, seed_ontologies
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from tests.ontology.leaf_edits import reword_leaf

    with open_workspace_session(resolve_settings()) as session:
        seed_ontologies(session=session)
        for n in (0, 1):  # @2 and @3: accepted work that @1 lacks
            reword_leaf(session, f"Accepted rewrite {n}.", index=n)
        session.commit()
    at = open_page("ontology_versions.py", params={"version": "driftlens@1"})
    assert any("driftlens@3 is" in unescape(w.value) for w in at.warning)
    save = next(b for b in at.button if b.label == "Save leaf as new version")
    assert save.disabled  # no silent default: the researcher must choose
    leaf_box = at.selectbox(key=next(k for k in _keys(at) if k.startswith("leaf-")))
    name = leaf_box.options[5].split(" · ", 1)[1]  # a leaf @2 and @3 left alone
    leaf_box.set_value(name).run()
    next(t for t in at.text_area if t.label == "Definition").set_value("Made on @1.")
    at.radio[0].set_value("rebase")
    at.run()
    next(b for b in at.button if b.label == "Save leaf as new version").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert "rebased on driftlens@3" in unescape(at.success[0].value)
    with open_workspace_session(resolve_settings()) as session:
        four = get_version("driftlens@4", session=session)
        assert four.parent_id == get_version("driftlens@3", session=session).id
        doc = document(four)
        assert doc.leaf(doc.leaf_names[0]).definition == "Accepted rewrite 0."  # kept
        assert doc.leaf(doc.leaf_names[1]).definition == "Accepted rewrite 1."
        assert doc.leaf(name).definition == "Made on @1."


def test_comparison_lists_the_changed_nodes_and_draws_words_and_text_on_demand() -> None:
    """Issue #20: the word-by-word boxes and the text diff are built only once opened."""
    from ontology.versions import document, get_version, seed_ontologies
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from tests.ontology.leaf_edits import reword_leaf

    with open_workspace_session(resolve_settings()) as session:
        seed_ontologies(session=session)
        reword_leaf(session, "Reworded <b>boldly</b> for the diff.", index=2)
        session.commit()
        leaf = document(get_version("driftlens@1", session=session)).leaf_names[2]
    at = open_page("ontology_versions.py", params={"old": "driftlens@1", "new": "driftlens@2"})
    changes = next(d.value for d in at.dataframe if "change" in d.value.columns)
    assert changes.to_dict("records") == [
        {"root": changes.iloc[0]["root"], "node": leaf, "change": "changed", "fields": "definition"}
    ]
    assert not [m for m in at.markdown if "boldly" in m.value]
    assert not at.code
    at.session_state["diff-words"] = True
    at.session_state["diff-text"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    words = [m.value for m in at.markdown if "boldly" in m.value]
    assert len(words) == 1 and "&lt;b&gt;boldly" in words[0]  # escaped: no live <b>
    assert "background:#ccffd8" in words[0]  # the new words are marked
    assert "boldly" in at.code[0].value
