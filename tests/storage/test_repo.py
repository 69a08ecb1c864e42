"""Repository round trips and the uniqueness rules that make resumes duplicate-free."""

from __future__ import annotations

import pytest
from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from storage.errors import ConfigError, InputError, NotFoundError
from storage.models import (
    CurationVote,
    JudgeScore,
    Question,
    Response,
    RewriteProposal,
)
from storage.repo import (
    analyses,
    cache,
    judges,
    labels,
    meta,
    ontology,
    perturbations,
    questions,
    rounds,
    runs,
)
from storage.repo import annotations as studies
from storage.repo.ontology import LeafItem
from storage.repo.perturbations import PerturbationItem
from tests.storage._world import round_trip, seed_world


def test_round_trip_sqlite(session: Session) -> None:
    round_trip(session)


def test_duplicate_response_key_is_rejected(session: Session) -> None:
    world = seed_world(session)
    q = world.question_ids[0]
    session.add(Response(run_id=world.run_id, question_id=q, condition="baseline", sample=0))
    session.flush()
    session.add(Response(run_id=world.run_id, question_id=q, condition="baseline", sample=0))
    with pytest.raises(IntegrityError):
        session.flush()


def test_upsert_dedupes_responses_within_and_across_calls(session: Session) -> None:
    world = seed_world(session)
    q = world.question_ids[0]
    for attempt in range(3):
        runs.upsert_responses(
            [
                Response(run_id=world.run_id, question_id=q, sample=s, attempts=attempt)
                for s in (0, 1)
            ],
            session=session,
        )
    rows = runs.list_responses(world.run_id, session=session)
    assert [(r.sample, r.attempts) for r in rows] == [(0, 2), (1, 2)]
    assert runs.count_responses(world.run_id, session=session) == 2


def test_loaded_objects_see_upserted_values(session: Session) -> None:
    world = seed_world(session)
    q = world.question_ids[0]
    loaded = runs.upsert_response(
        Response(run_id=world.run_id, question_id=q, attempts=1), session=session
    )
    runs.upsert_responses(
        [Response(run_id=world.run_id, question_id=q, attempts=5)], session=session
    )
    assert loaded.attempts == 5


def test_questions_reimport_keeps_curation(session: Session) -> None:
    counts = questions.upsert_questions(
        [Question(external_id="a", text="t", domains=["x"]), Question(external_id="b", text="u")],
        session=session,
    )
    assert (counts.inserted, counts.updated, counts.unchanged) == (2, 0, 0)
    a = questions.get_question("a", session=session)
    assert a is not None and a.id is not None
    questions.set_filter_result(
        a.id,
        label="ACCEPT",
        reason="trade-off",
        domains=["finance"],
        model="sim/default",
        raw='{"label": "ACCEPT"}',
        session=session,
    )
    questions.set_tiers({a.id: "core"}, session=session)
    again = questions.upsert_questions(
        [
            Question(external_id="a", text="t (edited)", domains=["x"]),
            Question(external_id="b", text="u"),
        ],
        session=session,
    )
    assert (again.inserted, again.updated, again.unchanged) == (0, 1, 1)
    a = questions.get_question("a", session=session)
    assert a is not None
    assert (a.text, a.filter_label, a.tier, a.filter_raw) == (
        "t (edited)",
        "ACCEPT",
        "core",
        '{"label": "ACCEPT"}',
    )
    assert [q.external_id for q in questions.list_questions(session=session, tier="core")] == ["a"]
    assert [
        q.external_id for q in questions.list_questions(session=session, unfiltered_only=True)
    ] == ["b"]
    assert questions.count_questions(session=session) == 2
    with pytest.raises(NotFoundError):
        questions.set_filter_result(
            999, label=None, reason=None, domains=None, model=None, raw=None, session=session
        )


def test_nullable_json_is_sql_null(session: Session) -> None:
    questions.upsert_questions([Question(external_id="a", text="t")], session=session)
    from sqlmodel import col

    n = session.exec(
        select(func.count()).select_from(Question).where(col(Question.filter_domains).is_(None))
    ).one()
    assert n == 1


def test_catalog_versions(session: Session) -> None:
    items = [
        PerturbationItem(key="noise/dot/1", condition_class="noise", category="punct", text=". ")
    ]
    c1 = perturbations.create_catalog("cat", items, session=session)
    c1b = perturbations.create_catalog("cat", items, session=session)
    assert c1b.id == c1.id and c1.version == 1
    items2 = [*items, PerturbationItem(key="x/1", condition_class="other", category="x", text="X")]
    c2 = perturbations.create_catalog("cat", items2, session=session)
    assert c2.version == 2
    assert perturbations.latest_catalog("cat", session=session) == c2
    assert perturbations.get_catalog("cat", 1, session=session) == c1
    assert c2.id is not None
    assert perturbations.count_perturbations(c2.id, session=session) == 2
    assert [
        p.key
        for p in perturbations.list_perturbations(c2.id, condition_class="noise", session=session)
    ] == ["noise/dot/1"]
    with pytest.raises(InputError):
        perturbations.create_catalog("bad", [items[0], items[0]], session=session)


def test_run_settings_cannot_change_silently(session: Session) -> None:
    world = seed_world(session)
    run = session.get(runs.GenerationRun, world.run_id)
    assert run is not None
    same = runs.get_or_create_run(
        run.name,
        model_spec_id=run.model_spec_id,
        prompt_version=run.prompt_version,
        sampling=run.sampling,
        catalog_id=run.catalog_id,
        session=session,
    )
    assert same.id == run.id
    with pytest.raises(ConfigError, match="sampling"):
        runs.get_or_create_run(
            run.name,
            model_spec_id=run.model_spec_id,
            prompt_version=run.prompt_version,
            sampling={"temperature": 1.0},
            catalog_id=run.catalog_id,
            session=session,
        )
    assert runs.set_run_status(world.run_id, "done", session=session).status == "done"
    assert runs.require_run("run-1", session=session).id == world.run_id
    with pytest.raises(NotFoundError):
        runs.require_run("nope", session=session)


def test_ontology_versions(session: Session) -> None:
    world = seed_world(session)
    v1 = ontology.require_version(world.ontology_version_id, session=session)
    leaves = ontology.version_leaves(world.ontology_version_id, session=session)
    assert [leaf.symbol for leaf in leaves] == [1, 2]
    v2 = ontology.create_version(
        "driftlens",
        {"roots": ["Social", "Practical"], "edit": 1},
        leaves=[LeafItem(root=x.root, leaf=x.leaf, symbol=x.symbol) for x in leaves],
        parent_id=v1.id,
        session=session,
    )
    assert v2.version == 2 and v2.parent_id == v1.id
    assert ontology.latest_version("driftlens", session=session) == v2
    assert ontology.latest_version(session=session) == v2
    assert ontology.get_version("driftlens", 1, session=session) == v1
    same = ontology.create_version(
        "driftlens", dict(v2.content), leaves=[], reuse_identical=True, session=session
    )
    assert same.id == v2.id
    with pytest.raises(InputError):
        ontology.create_version(
            "driftlens",
            {},
            leaves=[
                LeafItem(root="a", leaf="x", symbol=1),
                LeafItem(root="a", leaf="x", symbol=2),
            ],
            session=session,
        )


def test_labeler_spec_is_found_again(session: Session) -> None:
    a = labels.get_or_create_labeler(kind="llm", model="m", temperature=0.0, session=session)
    b = labels.get_or_create_labeler(kind="llm", model="m", temperature=0.0, session=session)
    c = labels.get_or_create_labeler(kind="llm", model="m", temperature=1.0, session=session)
    assert a.id == b.id != c.id
    assert len(a.key) == 64


def test_labeled_response_ids_and_repeats(session: Session) -> None:
    world = seed_world(session)
    resp = runs.upsert_response(
        Response(run_id=world.run_id, question_id=world.question_ids[0]), session=session
    )
    assert resp.id is not None
    from storage.models import StepLabel

    labels.upsert_step_labels(
        [
            StepLabel(
                response_id=resp.id,
                step_index=0,
                labeler_id=world.labeler_id,
                ontology_version_id=world.ontology_version_id,
                category="Social",
                symbol="Cultural respect and tradition",
                repeat=repeat,
            )
            for repeat in (0, 1)
        ],
        session=session,
    )
    assert labels.labeled_response_ids(
        labeler_id=world.labeler_id, ontology_version_id=world.ontology_version_id, session=session
    ) == {resp.id}
    assert (
        labels.labeled_response_ids(
            labeler_id=world.labeler_id,
            ontology_version_id=world.ontology_version_id,
            repeat=2,
            session=session,
        )
        == set()
    )
    assert session.exec(select(func.count()).select_from(StepLabel)).one() == 2


def test_cache_first_write_wins_unless_overwrite(session: Session) -> None:
    key = "a" * 64
    cache.cache_put(key, provider="p", model="m", request={}, response={"v": 1}, session=session)
    cache.cache_put(key, provider="p", model="m", request={}, response={"v": 2}, session=session)
    got = cache.cache_get(key, session=session)
    assert got is not None and got.response == {"v": 1} and got.hits == 1
    cache.cache_put(
        key, provider="p", model="m", request={}, response={"v": 3}, overwrite=True, session=session
    )
    got = cache.cache_get(key, session=session, count_hit=False)
    assert got is not None and got.response == {"v": 3} and got.hits == 1
    assert cache.cache_get("missing", session=session) is None
    stats = cache.cache_stats(session=session)
    assert (stats.entries, stats.hits) == (1, 1)


def test_human_annotation_changes_are_updates_and_unchanged_rows_untouched(
    session: Session,
) -> None:
    study = studies.create_study("distraction", ls_project_id=1, session=session)
    assert study.id is not None
    task = studies.upsert_study_task(study.id, "k", payload={"a": 1}, session=session)
    task2 = studies.upsert_study_task(
        study.id, "k", payload={"a": 2}, ls_task_id=77, session=session
    )
    assert task.id == task2.id and task2.payload == {"a": 2} and task2.ls_task_id == 77
    assert studies.get_task_by_ls_id(77, session=session) == task2
    assert task.id is not None
    who = studies.get_or_create_annotator(1, email="x@example.org", session=session)
    assert studies.get_or_create_annotator(1, session=session).id == who.id
    first = studies.upsert_human_annotation(
        ls_annotation_id=5, study_task_id=task.id, annotator_id=who.id, result=[1], session=session
    )
    pulled = first.annotation.pulled_at
    same = studies.upsert_human_annotation(
        ls_annotation_id=5, study_task_id=task.id, annotator_id=who.id, result=[1], session=session
    )
    assert same.status == "unchanged" and same.annotation.pulled_at == pulled
    changed = studies.upsert_human_annotation(
        ls_annotation_id=5, study_task_id=task.id, annotator_id=who.id, result=[2], session=session
    )
    assert changed.status == "updated" and changed.annotation.result == [2]
    assert [a.ls_annotation_id for _, a in studies.list_annotations(study.id, session=session)] == [
        5
    ]
    assert studies.get_study_by_project(1, session=session) == study
    assert studies.list_studies(name="distraction", session=session) == [study]


def test_curation_votes_upsert(session: Session) -> None:
    questions.upsert_questions([Question(external_id="a", text="t")], session=session)
    q = questions.get_question("a", session=session)
    assert q is not None and q.id is not None
    for value in ("yes", "no"):
        vote = CurationVote(
            question_id=q.id, criterion="clear", annotator="x@example.org", vote=value
        )
        studies.upsert_curation_votes([vote], session=session)
    got = studies.votes_for_questions([q.id], session=session)
    assert [v.vote for v in got[q.id]] == ["no"]


def test_judge_scores_upsert(session: Session) -> None:
    world = seed_world(session)
    resp = runs.upsert_response(
        Response(run_id=world.run_id, question_id=world.question_ids[0]), session=session
    )
    assert resp.id is not None
    for value in (2.0, 4.0):
        judges.upsert_judge_scores(
            [JudgeScore(response_id=resp.id, judge_model="j", kind="helpfulness", value=value)],
            session=session,
        )
    scores = judges.judge_scores_for([resp.id], kind="helpfulness", session=session)
    assert [s.value for s in scores] == [4.0]


def test_rounds_and_proposals(session: Session) -> None:
    world = seed_world(session)
    r1 = rounds.create_round(
        ontology_version_id=world.ontology_version_id,
        run_id=world.run_id,
        sample_size=2,
        seed=1,
        labelers=["sim:a", "sim:b"],
        session=session,
    )
    assert r1.number == 1 and rounds.next_round_number(session=session) == 2
    resp = runs.upsert_response(
        Response(run_id=world.run_id, question_id=world.question_ids[0]), session=session
    )
    assert r1.id is not None and resp.id is not None
    rounds.add_round_responses(r1.id, [resp.id, resp.id], session=session)
    rounds.add_round_responses(r1.id, [resp.id], session=session)
    assert rounds.round_response_ids(r1.id, session=session) == [resp.id]
    rounds.update_round(r1.id, status="done", metrics={"agreement": 0.7}, session=session)
    assert rounds.latest_round(session=session) == r1
    assert rounds.get_round(1, session=session) == r1
    assert r1.metrics == {"agreement": 0.7}
    proposal = RewriteProposal(round_id=r1.id, leaf_a="a", leaf_b="b", def_a_new="A", def_b_new="B")
    session.add(proposal)
    session.flush()
    assert proposal.id is not None
    decided = rounds.decide_proposal(
        proposal.id, status="accepted", def_a_new="A edited", session=session
    )
    assert decided.edited and decided.decided_at is not None and decided.def_b_new == "B"
    assert rounds.list_proposals(status="accepted", session=session) == [decided]


def test_analysis_and_meta(session: Session) -> None:
    world = seed_world(session)
    a = analyses.record_analysis(
        run_id=world.run_id,
        labeler_id=world.labeler_id,
        ontology_version_id=world.ontology_version_id,
        config={"B": 100},
        result={"d_rel": 0.5},
        implementation="python",
        session=session,
    )
    assert analyses.list_analyses(run_id=world.run_id, session=session) == [a]
    meta.set_meta("demo", "1", session=session)
    meta.set_meta("demo", "2", session=session)
    assert meta.get_meta("demo", session=session) == "2"
    assert meta.get_meta("missing", session=session) is None
