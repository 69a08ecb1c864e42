"""A small, complete data set used by the round-trip tests on every backend."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session

from storage.models import Question
from storage.repo import labels, ontology, perturbations, questions, requests, runs
from storage.repo.ontology import LeafItem
from storage.repo.perturbations import PerturbationItem


@dataclass(frozen=True)
class World:
    """Ids of the seeded rows."""

    run_id: int
    question_ids: tuple[int, ...]
    perturbation_ids: tuple[int, ...]
    ontology_version_id: int
    labeler_id: int


def seed_world(session: Session) -> World:
    """Two questions, a catalog of two perturbations, a run, an ontology and a labeler."""
    questions.upsert_questions(
        [
            Question(external_id="q-1", text="Should I rent or buy?", domains=["finance"]),
            Question(external_id="q-2", text="Which job offer?", domains=["career"]),
        ],
        session=session,
    )
    qs = questions.list_questions(session=session)
    catalog = perturbations.create_catalog(
        "default",
        [
            PerturbationItem(
                key="noise/space/1", condition_class="noise", category="whitespace", text=" "
            ),
            PerturbationItem(
                key="attribute/age/1",
                condition_class="attribute",
                category="age",
                text="I am a teenager.",
            ),
        ],
        session=session,
    )
    assert catalog.id is not None
    perts = perturbations.list_perturbations(catalog.id, session=session)
    spec = runs.get_or_create_model_spec(
        "sim/default", provider="sim", model="default", simulated=True, session=session
    )
    assert spec.id is not None
    run = runs.get_or_create_run(
        "run-1",
        model_spec_id=spec.id,
        prompt_version="v1",
        sampling={"temperature": 0.7, "top_p": 0.98, "seed": 7},
        config={"questions": "all"},
        simulated=True,
        catalog_id=catalog.id,
        session=session,
    )
    version = ontology.create_version(
        "driftlens",
        {"roots": ["Social", "Practical"]},
        leaves=[
            LeafItem(root="Social", leaf="Cultural respect and tradition", symbol=1),
            LeafItem(root="Practical", leaf="Professional advancement", symbol=2),
        ],
        author="seed",
        session=session,
    )
    labeler = labels.get_or_create_labeler(
        kind="sim", prompt_version="v1", params={"p": 0.1}, session=session
    )
    assert run.id is not None and version.id is not None and labeler.id is not None
    return World(
        run_id=run.id,
        question_ids=tuple(q.id for q in qs if q.id is not None),
        perturbation_ids=tuple(p.id for p in perts if p.id is not None),
        ontology_version_id=version.id,
        labeler_id=labeler.id,
    )


def round_trip(session: Session) -> None:
    """Write and read back one of everything; asserts backend-independent behaviour."""
    from datetime import UTC, datetime

    from sqlalchemy import func
    from sqlmodel import select

    from storage.models import HumanAnnotation, Response, StepLabel
    from storage.repo import annotations as studies
    from storage.repo import cache

    world = seed_world(session)
    q1, q2 = world.question_ids
    noise_id = world.perturbation_ids[0]
    base = Response(
        run_id=world.run_id,
        question_id=q1,
        condition="baseline",
        condition_class="none",
        sample=0,
        request={"messages": [{"role": "user", "content": "Should I rent or buy?"}]},
        seed=11,
        text="<think><step_1>a</step_1></think><answer>b</answer>",
        steps=["a"],
        answer="b",
        parse_status="ok",
        latency_ms=12.5,
        attempts=1,
    )
    stored = runs.upsert_response(base, session=session)
    first_id = stored.id
    assert stored.steps == ["a"] and stored.prompt_id is not None
    whole = requests.stored_request(stored, session=session)
    assert whole == {"messages": [{"role": "user", "content": "Should I rent or buy?"}]}
    assert stored.created_at.tzinfo is not None

    again = runs.upsert_response(
        Response(
            run_id=world.run_id,
            question_id=q1,
            condition="baseline",
            condition_class="none",
            sample=0,
            steps=["a", "c"],
            parse_status="ok",
            attempts=2,
        ),
        session=session,
    )
    assert again.id == first_id and again.steps == ["a", "c"] and again.attempts == 2
    runs.upsert_responses(
        [
            Response(
                run_id=world.run_id,
                question_id=q2,
                perturbation_id=noise_id,
                condition="noise/space/1",
                condition_class="noise",
                sample=s,
                error="timeout" if s == 1 else None,
            )
            for s in (0, 1)
        ],
        session=session,
    )
    n = session.exec(
        select(func.count()).select_from(Response).where(Response.run_id == world.run_id)
    ).one()
    assert n == 3
    keys = runs.existing_response_keys(world.run_id, session=session)
    assert keys == {runs.ResponseKey(q1, "baseline", 0), runs.ResponseKey(q2, "noise/space/1", 0)}
    assert len(runs.existing_response_keys(world.run_id, session=session, include_failed=True)) == 3

    assert first_id is not None
    label_rows = [
        StepLabel(
            response_id=first_id,
            step_index=i,
            labeler_id=world.labeler_id,
            ontology_version_id=world.ontology_version_id,
            category="Social",
            symbol="Cultural respect and tradition",
        )
        for i in range(2)
    ]
    labels.upsert_step_labels(label_rows, session=session)
    labels.upsert_step_labels(
        [
            StepLabel(
                response_id=first_id,
                step_index=1,
                labeler_id=world.labeler_id,
                ontology_version_id=world.ontology_version_id,
                category="unmapped",
                symbol="unmapped",
                parse_status="unmapped",
            )
        ],
        session=session,
    )
    got = labels.step_labels_for(
        [first_id],
        labeler_id=world.labeler_id,
        ontology_version_id=world.ontology_version_id,
        session=session,
    )
    assert [lab.symbol for lab in got[first_id]] == ["Cultural respect and tradition", "unmapped"]

    cache.cache_put(
        "k" * 64,
        provider="sim",
        model="default",
        request={"m": 1},
        response={"text": "é ✓"},
        session=session,
    )
    hit = cache.cache_get("k" * 64, session=session)
    assert hit is not None and hit.hits == 1 and hit.response == {"text": "é ✓"}
    assert requests.cache_request(hit, session=session) == {"m": 1}

    study = studies.create_study("helpfulness", ls_project_id=5, session=session)
    assert study.id is not None
    task = studies.upsert_study_task(study.id, "resp-1", payload={"x": 1}, session=session)
    annotator = studies.get_or_create_annotator(3, email="a@example.org", session=session)
    assert task.id is not None and annotator.id is not None
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    task_id, annotator_id = task.id, annotator.id

    def store() -> studies.AnnotationUpsert:
        return studies.upsert_human_annotation(
            ls_annotation_id=99,
            study_task_id=task_id,
            annotator_id=annotator_id,
            result=[{"value": {"choices": ["4"]}}],
            lead_time=12.0,
            ls_updated_at=when,
            session=session,
        )

    r1 = store()
    session.commit()
    r2 = store()  # the same annotation pulled again
    assert (r1.status, r2.status) == ("inserted", "unchanged")
    stored_ann = session.exec(select(HumanAnnotation)).one()
    assert stored_ann.ls_updated_at == when
    session.commit()
