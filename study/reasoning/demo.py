"""The demo job: the whole pipeline on the embedded default, offline, with no keys.

1. seed the workspace (ontologies, perturbation catalog, bundled questions);
2. serve the drift simulator over HTTP on 127.0.0.1, screen the questions with the LLM
   filter and generate baseline + every catalog perturbation × 2 samples, all through
   the real ``openai`` client;
3. label every step with the offline ``keywords`` labeler;
4. compute drift and the full statistics, and write the report;
5. run one ontology-studio round (three labelers, known injected confusion).

Everything is idempotent: running the demo again resumes the same run and re-uses the
labels already stored. Results are simulated and labelled so everywhere.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session

from llm.backends import get_backend
from llm.specs import ModelSpec
from ontology.rounds import run_round
from ontology.versions import seed_ontologies
from storage.repo.rounds import list_rounds
from storage.repo.runs import require_run
from study.catalog.document import catalog_to_yaml
from study.catalog.store import catalog_document, ensure_default_catalog
from study.questions import import_sample_questions
from study.reasoning.analysis import AnalysisResult, analyze_run, report_folder_owner
from study.reasoning.config import DEFAULT_SEED
from study.reasoning.generation import GenerationOptions, GenerationSummary, run_generation
from study.reasoning.question_filter import FilterSummary, filter_questions
from study.reasoning.trajectories import LabelSummary, label_run
from study.sim_endpoint import SimProcess

DEMO_RUN = "demo"
DEMO_SERVICE = "SIMULATOR"  # env prefix of the demo simulator endpoint
DEMO_MODEL = f"openai-api/{DEMO_SERVICE.lower().replace('_', '-')}/sim/default"
DEMO_LABELER = "keywords"
# A perfect simulated labeler, one that confuses leaves 3 and 4 at rate 0.3, and keywords.
DEMO_ROUND_LABELERS = ("sim", "sim:confuse=3~4@0.3;seed=7", "keywords")

Stage = Callable[[str], Callable[[int, int], None]]


@dataclass(frozen=True)
class DemoResult:
    """What the demo did, stage by stage."""

    questions_added: int
    filtering: FilterSummary
    generation: GenerationSummary
    labeling: LabelSummary
    analysis: AnalysisResult
    round: dict[str, object] | None
    seconds: dict[str, float]


def run_demo(
    *,
    session: Session,
    out_dir: Path,
    samples: int = 2,
    concurrency: int = 64,
    bootstrap: int = 10_000,
    seed: int = DEFAULT_SEED,
    stage: Stage | None = None,
) -> DemoResult:
    """Run the demo job end to end and return what each stage did.

    Args:
        session: open workspace session (committed along the way).
        out_dir: where the report goes.
        samples: samples per (question, condition); 2 enables the null test.
        concurrency: simultaneous requests to the simulator.
        bootstrap: cluster-bootstrap replicates.
        seed: bootstrap seed.
        stage: ``stage(name)`` returns a ``(done, total)`` progress callback for that stage.
    """
    from study import limits

    # before anything is seeded: a refused count leaves the workspace as it was
    limits.SAMPLES.check(samples)
    limits.BOOTSTRAP.check(bootstrap)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    seed_ontologies(session=session)
    catalog = ensure_default_catalog(session=session)
    added = import_sample_questions(session=session)
    session.commit()
    assert catalog.id is not None
    seconds["seed"] = time.perf_counter() - t0
    key = secrets.token_urlsafe(16)  # a fresh key per demo; never stored
    # The simulator runs in its own process (no shared interpreter lock with the client)
    # and knows each catalog line's class exactly, so its doses are known.
    demo_model = ModelSpec.parse(DEMO_MODEL)
    with tempfile.TemporaryDirectory() as tmp:
        catalog_file = Path(tmp) / "catalog.yaml"
        catalog_file.write_text(
            catalog_to_yaml(catalog_document(catalog, session=session)), encoding="utf-8"
        )
        with SimProcess(api_key=key, catalog=catalog_file) as url:
            # The endpoint is handed to the backend directly; the process environment
            # is left alone.
            backend = get_backend(
                demo_model,
                env={**os.environ, f"{DEMO_SERVICE}_BASE_URL": url, f"{DEMO_SERVICE}_API_KEY": key},
            )
            filtering = filter_questions(
                demo_model,
                session=session,
                backend=backend,
                concurrency=concurrency,
                progress=stage("LLM question filter (simulator)") if stage else None,
            )
            seconds["filter"] = time.perf_counter() - t0 - sum(seconds.values())
            generation = run_generation(
                GenerationOptions(
                    model=demo_model,
                    run=DEMO_RUN,
                    samples=samples,
                    concurrency=concurrency,
                ),
                session=session,
                backend=backend,
                progress=stage("generating (simulator over HTTP)") if stage else None,
                # Larger commit batches: an interrupted demo still resumes, and the run is
                # ~10k rows of which a kill would lose at most a couple of seconds.
                commit_every=256,
            )
    seconds["generate"] = time.perf_counter() - t0 - sum(seconds.values())
    labeling = label_run(
        DEMO_RUN,
        DEMO_LABELER,
        session=session,
        progress=stage("labeling steps (keywords)") if stage else None,
    )
    seconds["label"] = time.perf_counter() - t0 - sum(seconds.values())
    analysis = analyze_run(
        DEMO_RUN,
        DEMO_LABELER,
        session=session,
        # A rerun keeps the earlier analysis's report: the new one gets its own folder.
        out_dir=None if report_folder_owner(out_dir, session=session) else out_dir,
        bootstrap=bootstrap,
        seed=seed,
    )
    session.commit()
    seconds["analyze"] = time.perf_counter() - t0 - sum(seconds.values())
    studio_round = _studio_round(session=session, stage=stage)
    seconds["round"] = time.perf_counter() - t0 - sum(seconds.values())
    return DemoResult(
        questions_added=len(added.added),
        filtering=filtering,
        round=studio_round,
        generation=generation,
        labeling=labeling,
        analysis=analysis,
        seconds=seconds,
    )


def _studio_round(*, session: Session, stage: Stage | None) -> dict[str, object] | None:
    """One ontology-studio round with known ground truth, the first time the demo runs.

    The simulator's labeler knows each step's true leaf; one copy of it confuses two
    chosen leaves at a known rate, so the round's "most confused" pair is known too.
    """
    run = require_run(DEMO_RUN, session=session)
    if any(r.run_id == run.id for r in list_rounds(session=session)):
        return None  # the demo's round exists already; rounds are never repeated
    result = run_round(
        DEMO_RUN,
        list(DEMO_ROUND_LABELERS),
        session=session,
        sample=100,
        seed=7,
        progress=stage("ontology round (3 labelers)") if stage else None,
    )
    session.commit()
    return result.to_json()
