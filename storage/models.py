"""SQLModel tables: the whole DriftLens data model, one module per concern, gathered here.

Alembic owns the schema (``storage/migrations``); these classes are the contract the
other rooms code against. Conventions:

* every table has an integer autoincrement ``id`` primary key, except ``LLMCacheEntry``
  (keyed by the request hash) and ``WorkspaceMeta`` (keyed by name);
* timestamps are aware UTC datetimes (:class:`storage.types.UTCDateTime`);
* JSON columns hold plain lists/dicts; mutate by reassigning, not in place (SQLAlchemy
  does not track in-place changes to JSON values);
* enumerated strings are documented by the ``*_VALUES`` tuples of each module and are not
  enforced by the database, so later modules can add values without a migration.

The tables live in ``storage/<concern>_models.py`` (curation, generation, ontology, annotation,
analysis, conflict, workspace, disposition, source, and the generic instrument store);
importing this module imports every one, so ``SQLModel.metadata`` (what Alembic compares
against, ``storage/migrations/env.py``) holds the whole schema, and the rooms import any table
from here.
"""

from sqlmodel import SQLModel

from storage.analysis_models import JUDGE_KIND_VALUES, Analysis, JudgeScore
from storage.annotation_models import (
    STUDY_KIND_VALUES,
    Annotator,
    HumanAnnotation,
    Study,
    StudyTask,
)
from storage.conflict_models import ConflictBank
from storage.curation_models import (
    FILTER_LABEL_VALUES,
    TIER_VALUES,
    VOTE_SOURCE_VALUES,
    VOTE_VALUES,
    CurationVote,
    Question,
)
from storage.disposition_models import DispositionArm, DispositionResponse, DispositionScore
from storage.generation_models import (
    BASELINE_CONDITION,
    PERTURBATION_CLASS_VALUES,
    RESPONSE_CLASS_VALUES,
    GenerationRun,
    ModelSpecRow,
    Perturbation,
    PerturbationCatalog,
    Prompt,
    RequestParams,
    Response,
)
from storage.instrument_models import InstrumentRecord, InstrumentRun
from storage.job_models import Job
from storage.metadata import NAMING_CONVENTION
from storage.ontology_models import (
    LABELER_KIND_VALUES,
    PROPOSAL_STATUS_VALUES,
    ROUND_STATUS_VALUES,
    UNMAPPED,
    LabelerSpec,
    LabelingRound,
    OntologyLeaf,
    OntologyVersion,
    RewriteProposal,
    RoundResponse,
    StepLabel,
)
from storage.refinement_models import RefinementDecision, RefinementLoop, RefinementRound
from storage.role_models import ModelRole
from storage.source_models import SourceClaim, SourceProbe, SourceRun
from storage.workspace_models import Draft, LLMCacheEntry, WorkLease, WorkspaceMeta

#: The tables ``workspace_info`` counts rows of.
MAIN_TABLES: tuple[type[SQLModel], ...] = (
    Question,
    CurationVote,
    PerturbationCatalog,
    Perturbation,
    ModelSpecRow,
    GenerationRun,
    Response,
    OntologyVersion,
    OntologyLeaf,
    LabelerSpec,
    StepLabel,
    LabelingRound,
    RewriteProposal,
    Study,
    StudyTask,
    HumanAnnotation,
    JudgeScore,
    Analysis,
    LLMCacheEntry,
)

__all__ = [
    "BASELINE_CONDITION",
    "FILTER_LABEL_VALUES",
    "JUDGE_KIND_VALUES",
    "LABELER_KIND_VALUES",
    "MAIN_TABLES",
    "NAMING_CONVENTION",
    "PERTURBATION_CLASS_VALUES",
    "PROPOSAL_STATUS_VALUES",
    "RESPONSE_CLASS_VALUES",
    "ROUND_STATUS_VALUES",
    "STUDY_KIND_VALUES",
    "TIER_VALUES",
    "UNMAPPED",
    "VOTE_SOURCE_VALUES",
    "VOTE_VALUES",
    "Analysis",
    "Annotator",
    "ConflictBank",
    "CurationVote",
    "DispositionArm",
    "DispositionResponse",
    "DispositionScore",
    "Draft",
    "GenerationRun",
    "HumanAnnotation",
    "InstrumentRecord",
    "InstrumentRun",
    "Job",
    "JudgeScore",
    "LLMCacheEntry",
    "LabelerSpec",
    "LabelingRound",
    "ModelRole",
    "ModelSpecRow",
    "OntologyLeaf",
    "OntologyVersion",
    "Perturbation",
    "PerturbationCatalog",
    "Prompt",
    "Question",
    "RefinementDecision",
    "RefinementLoop",
    "RefinementRound",
    "RequestParams",
    "Response",
    "RewriteProposal",
    "RoundResponse",
    "SourceClaim",
    "SourceProbe",
    "SourceRun",
    "StepLabel",
    "Study",
    "StudyTask",
    "WorkLease",
    "WorkspaceMeta",
]
