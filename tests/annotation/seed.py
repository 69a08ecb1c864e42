"""A small workspace with every kind of row the six studies are built from."""

from __future__ import annotations

from sqlmodel import Session, select

from storage.models import (
    ConflictBank,
    GenerationRun,
    LabelerSpec,
    ModelSpecRow,
    OntologyLeaf,
    OntologyVersion,
    Perturbation,
    PerturbationCatalog,
    Question,
    Response,
    StepLabel,
)

QUESTIONS = (
    "Should I take a stable job or start a company? <b>bold?</b>",
    "Is it better to rent or buy a home in a city you may leave in five years?",
    "How should a team weigh speed against thoroughness when fixing a bug?",
    "Should I tell a friend an uncomfortable truth about their plan?",
)


def _id(value: int | None) -> int:
    assert value is not None, "flush before reading an id"
    return value


def seed(session: Session, *, conflicts: bool = False) -> None:
    """Four questions, two memories, one run with baseline and perturbed answers, labels.

    With ``conflicts`` also one memory-conflict bank and its answer (run ``conflicts-seed``).
    """
    questions = [Question(external_id=f"q{i}", text=t) for i, t in enumerate(QUESTIONS)]
    session.add_all(questions)
    catalog = PerturbationCatalog(name="test-catalog", version=1)
    session.add(catalog)
    session.flush()
    memories = [
        Perturbation(
            catalog_id=_id(catalog.id),
            key="teacher",
            condition_class="attribute",
            category="occupation",
            text="I am a teacher.",
        ),
        Perturbation(
            catalog_id=_id(catalog.id),
            key="limp",
            condition_class="attribute",
            category="disability",
            text="I have a noticeable limp.",
        ),
    ]
    session.add_all(memories)
    model = ModelSpecRow(spec="sim/test", provider="sim", model="test", simulated=True)
    session.add(model)
    session.flush()
    run = GenerationRun(name="demo", model_spec_id=_id(model.id), prompt_version="v1")
    session.add(run)
    session.flush()
    responses = []
    for q in questions[:2]:
        for cond, pert in (("baseline", None), ("teacher", memories[0])):
            responses.append(
                Response(
                    run_id=_id(run.id),
                    question_id=_id(q.id),
                    condition=cond,
                    condition_class="none" if pert is None else "attribute",
                    perturbation_id=pert.id if pert else None,
                    steps=["Weigh the risks.", "Consider <i>your</i> savings.", "Decide."],
                    answer="Keep the stable job for now.",
                    parse_status="ok",
                    text="<think>...</think><answer>Keep the stable job for now.</answer>",
                )
            )
    session.add_all(responses)
    version = OntologyVersion(name="driftlens", version=1, content={}, content_hash="x")
    labeler = LabelerSpec(key="keywords-test", name="keywords", kind="keywords")
    session.add_all([version, labeler])
    session.flush()
    session.add(
        OntologyLeaf(
            version_id=_id(version.id),
            root="Protective",
            leaf="Security and stability",
            symbol=5,
            definition="Prevents loss; keeps income and housing secure.",
        )
    )
    for i in range(2):
        session.add(
            StepLabel(
                response_id=_id(responses[0].id),
                step_index=i,
                labeler_id=_id(labeler.id),
                ontology_version_id=_id(version.id),
                category="Protective",
                symbol="Security and stability",
            )
        )
    session.flush()
    if conflicts:
        _seed_conflict(session, _id(model.id))


def _seed_conflict(session: Session, model_id: int) -> None:
    """One memory-conflict bank (the shipped sample's first) answered once."""
    from study.conflicts.items import load_sample_banks, store_banks

    inst = next(b for b in load_sample_banks() if b.high_risk)
    store_banks([inst], source="test", session=session)
    bank = session.exec(select(ConflictBank)).one()
    run = GenerationRun(
        name="conflicts-seed",
        model_spec_id=model_id,
        prompt_version="c1",
        config={"track": "pipeline", "memory_system": "sim-lossy"},
    )
    session.add(run)
    session.flush()
    order = [
        {"provenance": "core", "index": i, "text": t} for i, t in enumerate(inst.core_memories)
    ]
    session.add(
        Response(
            run_id=_id(run.id),
            question_id=bank.question_id,
            condition="N6",
            condition_class="bank",
            request={"context": {"order": order, "n_distractors": 0, "observability": "FULL"}},
            text="Check with the pharmacist first. <b>really</b>",
            answer="Check with the pharmacist first. <b>really</b>",
            parse_status="ok",
        )
    )
    session.flush()


#: The disposition study of :func:`seed_disposition` and its classifier.
DISPOSITION_STUDY = "dcheck"
DISPOSITION_JUDGE = "sim/classifier"


def seed_disposition(session: Session) -> None:
    """Two arms of a disposition study on four ``self_interest`` stems, classified.

    Each arm answers two paraphrases of every stem once; the classifier's category cycles
    through the battery's categories. One answer is hostile text, one probe was exhausted
    (no answer) and one answer was never classified: neither of the last two is sampled
    for the classifier check.
    """
    from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
    from study.disposition.items import load_sample_batteries

    battery = load_sample_batteries().battery("self_interest")
    cats = battery.category_names
    stems = battery.stems[:4]
    k = 0
    for arm_name in ("reference", "treated"):
        arm = DispositionArm(study=DISPOSITION_STUDY, name=arm_name, model="sim/disp")
        session.add(arm)
        session.flush()
        for stem in stems:
            for para in (0, 1):
                hostile = arm_name == "treated" and stem is stems[0] and para == 0
                exhausted = arm_name == "treated" and stem is stems[3] and para == 1
                resp = DispositionResponse(
                    arm_id=_id(arm.id),
                    battery=battery.name,
                    stem=stem.id,
                    paraphrase=para,
                    sample=1,
                    probe_text=stem.paraphrases[para],
                    answer=(
                        None
                        if exhausted
                        else '[bold]x[/bold] <script>alert(1)</script> =HYPERLINK("http://e")'
                        if hostile
                        else f"Answer {k} of {arm_name}."
                    ),
                    status="exhausted" if exhausted else "ok",
                )
                session.add(resp)
                session.flush()
                unclassified = arm_name == "reference" and stem is stems[3] and para == 1
                if not exhausted and not unclassified:
                    session.add(
                        DispositionScore(
                            response_id=_id(resp.id),
                            judge_model=DISPOSITION_JUDGE,
                            label=cats[k % len(cats)],
                            value=float(cats[k % len(cats)] == battery.aligned_category),
                        )
                    )
                k += 1
    session.flush()
