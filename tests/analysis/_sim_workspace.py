"""A labeled run with known drift doses, written straight into the workspace database.

Trajectories are drawn per question from the ontology's leaves; every response (baseline
samples included) gets sampling noise, and perturbed responses additionally get edits with
a per-class dose: noise 0, attributes moderate, life events strong. Question texts, step
texts, answers and one memory line carry XSS probes so the report tests can check escaping.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlmodel import Session, select

from ontology.labelers.registry import ensure_labeler_spec
from ontology.versions import document, seed_ontologies
from storage.models import (
    GenerationRun,
    ModelSpecRow,
    Perturbation,
    PerturbationCatalog,
    Question,
    Response,
    StepLabel,
)

SCRIPT_PROBE = "<script>alert(1)</script>"
IMG_PROBE = "<img src=x onerror=alert(1)>"
RUN = "sim-run"
LABELER = "keywords"

#: (key, class, category, memory line)
STIMULI: tuple[tuple[str, str, str, str], ...] = (
    ("noise/whitespace/1", "noise", "whitespace", " "),
    ("noise/whitespace/2", "noise", "whitespace", "\n"),
    ("noise/filler/1", "noise", "filler", "Hi. "),
    ("noise/filler/2", "noise", "filler", "Okay. "),
    ("attribute/age/1", "attribute", "age", "I am a teenager."),
    ("attribute/age/2", "attribute", "age", f"I am 70 {IMG_PROBE} years old."),
    ("attribute/occupation/1", "attribute", "occupation", "I am a teacher."),
    ("attribute/occupation/2", "attribute", "occupation", "I work as a nurse."),
    ("life_event/bereavement/1", "life_event", "bereavement", "Last year their father died."),
    ("life_event/bereavement/2", "life_event", "bereavement", "They lost their partner."),
    ("life_event/job_loss/1", "life_event", "job_loss", "They were laid off in March."),
    ("life_event/job_loss/2", "life_event", "job_loss", "Their company closed suddenly."),
)
DOSES = {"noise": 0.0, "attribute": 0.3, "life_event": 0.7}
MODEL_NOISE = 0.1


@dataclass(frozen=True)
class SimWorkspace:
    """What was written."""

    run: str
    labeler: str
    questions: int
    responses: int


def _edit(seq: list[int], p: float, n_leaves: int, rng: np.random.Generator) -> list[int]:
    out: list[int] = []
    for s in seq:
        u = rng.random()
        if u < p * 0.7:
            out.append(int((s + rng.integers(1, n_leaves)) % n_leaves))  # substitute
        elif u < p * 0.85:
            continue  # delete
        elif u < p:
            out.extend([s, int(rng.integers(n_leaves))])  # insert
        else:
            out.append(s)
    return out or [int(rng.integers(n_leaves))]


def build_sim_workspace(
    session: Session,
    *,
    n_questions: int = 16,
    samples: int = 2,
    seed: int = 7,
    run_name: str = RUN,
    model: str = "sim/test",
    dose_scale: float = 1.0,
) -> SimWorkspace:
    """Write questions, a catalog, a simulated run, responses and step labels.

    Calling it again with another ``run_name`` and ``model`` adds a second run over the same
    questions and catalog (``dose_scale`` multiplies the memory doses of that run).
    """
    rng = np.random.default_rng(seed)
    version = seed_ontologies(session=session)[0]
    doc = document(version)
    leaves = list(doc.leaf_names)
    labeler = ensure_labeler_spec(LABELER, session=session)
    catalog = session.exec(
        select(PerturbationCatalog).where(PerturbationCatalog.name == "test-catalog")
    ).first()
    if catalog is None:
        catalog = PerturbationCatalog(name="test-catalog", version=1)
        session.add(catalog)
        session.flush()
        for key, klass, category, text in STIMULI:
            session.add(
                Perturbation(
                    catalog_id=catalog.id or 0,
                    key=key,
                    condition_class=klass,
                    category=category,
                    text=text,
                )
            )
        session.flush()
    perts = {
        p.key: p
        for p in session.exec(select(Perturbation).where(Perturbation.catalog_id == catalog.id))
    }
    spec = ModelSpecRow(spec=model, provider="sim", model=model.split("/")[-1], simulated=True)
    session.add(spec)
    session.flush()
    run = GenerationRun(
        name=run_name,
        model_spec_id=spec.id or 0,
        catalog_id=catalog.id,
        prompt_version="stepped-v1",
        sampling={"temperature": 0.7, "top_p": 0.98, "top_k": 50, "max_tokens": 2048},
        config={"samples": samples, "seed": seed},
        simulated=True,
        status="done",
    )
    session.add(run)
    session.flush()
    n_responses = 0
    for i in range(n_questions):
        q = session.exec(select(Question).where(Question.external_id == f"q{i:03d}")).first()
        if q is None:
            q = Question(
                external_id=f"q{i:03d}",
                text=f"{SCRIPT_PROBE} Should I choose option {i} or wait a year?",
                domains=["personal decision"],
            )
            session.add(q)
            session.flush()
        base = [int(x) for x in rng.integers(len(leaves), size=int(rng.integers(4, 8)))]
        conditions = [("baseline", "none", None)] + [(k, c, perts[k]) for k, c, _, _ in STIMULI]
        for key, klass, pert in conditions:
            for s in range(samples):
                seq = _edit(base, DOSES.get(klass, 0.0) * dose_scale, len(leaves), rng)
                seq = _edit(seq, MODEL_NOISE, len(leaves), rng)
                steps = [f"Weigh {leaves[x].lower()} first {IMG_PROBE}" for x in seq]
                r = Response(
                    run_id=run.id or 0,
                    question_id=q.id or 0,
                    perturbation_id=pert.id if pert is not None else None,
                    condition=key,
                    condition_class=klass,
                    sample=s,
                    text="<think>…</think>",
                    steps=steps,
                    answer=f"Option {i} {IMG_PROBE}",
                    parse_status="ok",
                )
                session.add(r)
                session.flush()
                n_responses += 1
                for j, x in enumerate(seq):
                    session.add(
                        StepLabel(
                            response_id=r.id or 0,
                            step_index=j,
                            labeler_id=labeler.id or 0,
                            ontology_version_id=version.id or 0,
                            category=doc.root_of[leaves[x]],
                            symbol=leaves[x],
                        )
                    )
    session.flush()
    return SimWorkspace(run=run_name, labeler=LABELER, questions=n_questions, responses=n_responses)
