"""SQLModel tables: the whole DriftLens data model.

Alembic owns the schema (``storage/migrations``); these classes are the contract the
other rooms code against. Conventions:

* every table has an integer autoincrement ``id`` primary key, except ``LLMCacheEntry``
  (keyed by the request hash) and ``WorkspaceMeta`` (keyed by name);
* timestamps are aware UTC datetimes (:class:`storage.types.UTCDateTime`);
* JSON columns hold plain lists/dicts; mutate by reassigning, not in place (SQLAlchemy
  does not track in-place changes to JSON values);
* enumerated strings are documented by the ``*_VALUES`` tuples below and are not
  enforced by the database, so later modules can add values without a migration.

No ``from __future__ import annotations`` here: SQLModel reads the annotations at class
creation time.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import Text, UniqueConstraint, event
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Field, SQLModel

from storage.step_spans import has_spans, unpack_steps
from storage.types import (
    JSONType,
    NullableJSONType,
    UTCDateTime,
    created_at_field,
    updated_at_field,
)

# Stable constraint names on every backend (needed by Alembic batch mode on SQLite and
# for predictable names on PostgreSQL). Set before any table is declared.
NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
SQLModel.metadata.naming_convention = NAMING_CONVENTION

# Documented values of the enumerated string columns.
TIER_VALUES = ("core", "relaxed")
FILTER_LABEL_VALUES = ("ACCEPT", "REJECT")
VOTE_VALUES = ("yes", "no", "unsure")
VOTE_SOURCE_VALUES = ("labelstudio", "import")
PERTURBATION_CLASS_VALUES = ("noise", "attribute", "life_event", "other")
RESPONSE_CLASS_VALUES = ("none", *PERTURBATION_CLASS_VALUES)
BASELINE_CONDITION = "baseline"
LABELER_KIND_VALUES = ("llm", "embed", "keywords", "sim")
UNMAPPED = "unmapped"
PROPOSAL_STATUS_VALUES = ("pending", "accepted", "rejected")
# Stored round states; "interrupted" is also derived when a "running" round's lease is dead.
ROUND_STATUS_VALUES = ("pending", "running", "interrupted", "incomplete", "done")
STUDY_KIND_VALUES = (
    "question_checks",
    "persona_pair",
    "orthogonality",
    "label_check",
    "helpfulness",
    "distraction",
    "conflict_rubric",
    "bank_observability",
    "disposition_check",
    "test_awareness",
    "claim_check",
)
JUDGE_KIND_VALUES = ("helpfulness", "distraction", "acknowledgement")


# the shared column definitions (storage/types.py), under the names the tables use
_created = created_at_field
_updated = updated_at_field


# --------------------------------------------------------------------------- curation


class Question(SQLModel, table=True):
    """A benchmark question (candidate until it has a tier)."""

    __tablename__ = "question"

    id: int | None = Field(default=None, primary_key=True)
    external_id: str = Field(unique=True)
    text: str = Field(sa_type=Text)
    source: str | None = None
    domains: list[str] = Field(default_factory=list, sa_type=JSONType)
    tier: str | None = Field(default=None, index=True)
    filter_label: str | None = Field(default=None, index=True)
    filter_reason: str | None = Field(default=None, sa_type=Text)
    filter_domains: list[str] | None = Field(default=None, sa_type=NullableJSONType)
    filter_model: str | None = None
    filter_error: str | None = Field(default=None, sa_type=Text)
    filter_raw: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class CurationVote(SQLModel, table=True):
    """One annotator's Yes/No/Unsure on one verification criterion of one question."""

    __tablename__ = "curation_vote"
    __table_args__ = (
        UniqueConstraint("question_id", "criterion", "annotator", name="uq_curation_vote_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    question_id: int = Field(foreign_key="question.id", index=True)
    criterion: str
    annotator: str
    vote: str
    source: str = "labelstudio"
    human_annotation_id: int | None = Field(
        default=None, foreign_key="human_annotation.id", index=True
    )
    created_at: datetime = _created()
    updated_at: datetime = _updated()


# ---------------------------------------------------------------------- perturbations


class PerturbationCatalog(SQLModel, table=True):
    """An immutable, versioned set of perturbations (memory lines)."""

    __tablename__ = "perturbation_catalog"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_perturbation_catalog_key"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    version: int = 1
    note: str | None = Field(default=None, sa_type=Text)
    content_hash: str | None = None
    created_at: datetime = _created()


class Perturbation(SQLModel, table=True):
    """One memory line of a catalog; ``key`` is stable across catalog versions."""

    __tablename__ = "perturbation"
    __table_args__ = (UniqueConstraint("catalog_id", "key", name="uq_perturbation_key"),)

    id: int | None = Field(default=None, primary_key=True)
    catalog_id: int = Field(foreign_key="perturbation_catalog.id", index=True, ondelete="CASCADE")
    key: str
    condition_class: str
    category: str
    text: str = Field(sa_type=Text)


# ------------------------------------------------------------------------- generation


class ModelSpec(SQLModel, table=True):
    """A model named ``provider/model`` (see docs/engines.md and the README)."""

    __tablename__ = "model_spec"

    id: int | None = Field(default=None, primary_key=True)
    spec: str = Field(unique=True)
    provider: str
    service: str | None = None
    model: str
    simulated: bool = False
    params: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()


class GenerationRun(SQLModel, table=True):
    """A named generation run: one model, one prompt version, fixed sampling."""

    __tablename__ = "generation_run"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    model_spec_id: int = Field(foreign_key="model_spec.id", index=True)
    catalog_id: int | None = Field(default=None, foreign_key="perturbation_catalog.id", index=True)
    prompt_version: str
    sampling: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    simulated: bool = False
    status: str = "pending"
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class Prompt(SQLModel, table=True):
    """Rendered chat messages, stored once and referenced by every request that sent them.

    ``hash`` is the sha256 of the canonical JSON of the whole message list (see
    :mod:`storage.repo.requests`), so equal prompts share one row across runs and the cache.

    The leading system messages (the instruction every prompt of a study repeats) are
    stored once, as a prompt row of their own that ``prefix_id`` points at; ``messages``
    then holds only the rest. :func:`storage.repo.requests.prompt_messages` returns the
    whole list. ``prefix_id`` NULL: ``messages`` is the whole list.
    """

    __tablename__ = "prompt"

    id: int | None = Field(default=None, primary_key=True)
    hash: str = Field(unique=True)
    prefix_id: int | None = None  # no FOREIGN KEY clause: see Response
    messages: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSONType)


class RequestParams(SQLModel, table=True):
    """The request fields shared by many requests (model, prompt version, sampling without
    the per-request seed...), stored once; ``hash`` as for :class:`Prompt`."""

    __tablename__ = "request_params"

    id: int | None = Field(default=None, primary_key=True)
    hash: str = Field(unique=True)
    body: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)


class Response(SQLModel, table=True):
    """One sampled answer to one (question, condition) in a run.

    ``UNIQUE(run_id, question_id, condition, sample)`` makes resumed runs duplicate-free
    (its leading ``run_id`` also serves every per-run query, so there is no separate index).
    ``perturbation_id`` is NULL and ``condition`` is ``"baseline"`` for the no-memory answer.

    The request is stored normalised: ``prompt_id`` (the messages), ``params_id`` (the shared
    parameters) and ``request`` (only what is this request's own: its seed, parse notes).
    :func:`storage.repo.requests.stored_request` puts the full request back together; a row
    with ``prompt_id`` NULL holds its whole request in ``request`` (rows written before the
    normalisation and not converted, or requests without messages).
    """

    __tablename__ = "response"
    __table_args__ = (
        UniqueConstraint("run_id", "question_id", "condition", "sample", name="uq_response_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="generation_run.id", ondelete="CASCADE")
    question_id: int = Field(foreign_key="question.id", index=True)
    perturbation_id: int | None = Field(default=None, foreign_key="perturbation.id", index=True)
    condition: str = BASELINE_CONDITION
    condition_class: str = "none"
    sample: int = 0
    # Ids without a FOREIGN KEY clause: adding one to a populated SQLite table means
    # rebuilding it, and dropping the old table cascades into its step labels. Prompts and
    # parameters are never deleted, and only storage.repo.requests writes these ids.
    prompt_id: int | None = None
    params_id: int | None = None
    request: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    seed: int | None = None
    text: str | None = Field(default=None, sa_type=Text)
    # Stored as spans of ``text`` where a step is a substring of it (storage.step_spans);
    # a loaded row always shows the strings (see _unpack_steps below).
    steps: list[str] = Field(default_factory=list, sa_type=JSONType)
    answer: str | None = Field(default=None, sa_type=Text)
    parse_status: str = "pending"
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    error: str | None = Field(default=None, sa_type=Text)
    attempts: int = 0
    # Indexed: a request-cache entry written by generation finds its answer text here
    # instead of holding a copy (see llm.cache, "text_in").
    cache_key: str | None = Field(default=None, index=True)
    # Token logprobs (llm.logprobs.logprobs_to_json) when the request asked for them.
    logprobs: list[dict[str, Any]] | None = Field(default=None, sa_type=NullableJSONType)
    created_at: datetime = _created()
    updated_at: datetime = _updated()


def _unpack_steps(target: Response, *_: Any) -> None:
    """Give a loaded or refreshed response its steps as strings, whatever their stored form.

    The unpacked list becomes the attribute's committed value (no change to flush): an
    object written back through the ORM stores plain strings, which is valid stored form.
    """
    loaded = target.__dict__
    stored = loaded.get("steps")
    if not has_spans(stored):
        return
    # Expired attributes are reloaded together, so the text is there; a refresh of the
    # steps alone reads it (one query, only in that case).
    try:
        text = loaded["text"]
    except KeyError:
        text = target.text  # not loaded: read it now (never evaluated when it is)
    set_committed_value(target, "steps", unpack_steps(text, stored))


# restore_load_context: the text read above (refresh of the steps alone) is a load of its own.
event.listen(Response, "load", _unpack_steps, restore_load_context=True)
event.listen(Response, "refresh", _unpack_steps, restore_load_context=True)


# --------------------------------------------------------------------------- ontology


class OntologyVersion(SQLModel, table=True):
    """An immutable ontology version; ``content`` is the full ontology document."""

    __tablename__ = "ontology_version"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_ontology_version_key"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    version: int = 1
    parent_id: int | None = Field(default=None, foreign_key="ontology_version.id", index=True)
    author: str | None = None
    note: str | None = Field(default=None, sa_type=Text)
    content: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    content_hash: str
    created_at: datetime = _created()


class OntologyLeaf(SQLModel, table=True):
    """One leaf symbol of an ontology version (denormalised from ``content`` for queries)."""

    __tablename__ = "ontology_leaf"
    __table_args__ = (
        UniqueConstraint("version_id", "leaf", name="uq_ontology_leaf_key"),
        UniqueConstraint("version_id", "symbol", name="uq_ontology_leaf_symbol"),
    )

    id: int | None = Field(default=None, primary_key=True)
    version_id: int = Field(foreign_key="ontology_version.id", index=True, ondelete="CASCADE")
    root: str
    leaf: str
    symbol: int
    definition: str = Field(default="", sa_type=Text)
    triggers: list[str] = Field(default_factory=list, sa_type=JSONType)
    exclusions: list[str] = Field(default_factory=list, sa_type=JSONType)
    examples: list[str] = Field(default_factory=list, sa_type=JSONType)


class LabelerSpec(SQLModel, table=True):
    """A labeler configuration; ``key`` is a hash of the spec so it is found again."""

    __tablename__ = "labeler_spec"

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(unique=True)
    name: str | None = None
    kind: str
    model: str | None = None
    temperature: float | None = None
    seed: int | None = None
    prompt_version: str = ""
    params: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()


class StepLabel(SQLModel, table=True):
    """The symbol one labeler assigned to one reasoning step under one ontology version."""

    __tablename__ = "step_label"
    __table_args__ = (
        UniqueConstraint(
            "response_id",
            "step_index",
            "labeler_id",
            "ontology_version_id",
            "repeat",
            name="uq_step_label_key",
        ),
    )

    # No single-column indexes on response_id, labeler_id or ontology_version_id: the unique
    # key leads with response_id and serves every lookup; the others were 3 of the 5
    # indexes written per step (a fifth of the database at scale) and never used alone.
    id: int | None = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", ondelete="CASCADE")
    step_index: int
    labeler_id: int = Field(foreign_key="labeler_spec.id")
    ontology_version_id: int = Field(foreign_key="ontology_version.id")
    repeat: int = 0
    round_id: int | None = Field(default=None, foreign_key="labeling_round.id", index=True)
    category: str
    symbol: str
    parse_status: str = "ok"
    raw_output: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = _created()


class LabelingRound(SQLModel, table=True):
    """One round of the ontology refinement loop."""

    __tablename__ = "labeling_round"

    id: int | None = Field(default=None, primary_key=True)
    number: int = Field(unique=True)
    ontology_version_id: int = Field(foreign_key="ontology_version.id", index=True)
    run_id: int = Field(foreign_key="generation_run.id", index=True)
    sample_size: int
    seed: int
    labelers: list[str] = Field(default_factory=list, sa_type=JSONType)
    status: str = "pending"
    metrics: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()
    updated_at: datetime = _updated()


class RoundResponse(SQLModel, table=True):
    """A response sampled into a labeling round."""

    __tablename__ = "round_response"
    __table_args__ = (UniqueConstraint("round_id", "response_id", name="uq_round_response_key"),)

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="labeling_round.id", index=True, ondelete="CASCADE")
    response_id: int = Field(foreign_key="response.id", index=True)


class RewriteProposal(SQLModel, table=True):
    """An LLM rewrite of the two most-confused definitions, awaiting a researcher's decision."""

    __tablename__ = "rewrite_proposal"

    id: int | None = Field(default=None, primary_key=True)
    round_id: int | None = Field(default=None, foreign_key="labeling_round.id", index=True)
    leaf_a: str
    leaf_b: str
    # The version the proposal rewrites (the round's version); accepting applies it on top
    # of the newest version of that ontology. (No foreign key: see migration 0006.)
    base_version_id: int | None = Field(default=None, index=True)
    model: str | None = None
    request: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    raw_output: str | None = Field(default=None, sa_type=Text)
    def_a_old: str = Field(default="", sa_type=Text)
    def_b_old: str = Field(default="", sa_type=Text)
    def_a_new: str | None = Field(default=None, sa_type=Text)
    def_b_new: str | None = Field(default=None, sa_type=Text)
    evidence: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSONType)
    status: str = Field(default="pending", index=True)
    edited: bool = False
    resulting_version_id: int | None = Field(
        default=None, foreign_key="ontology_version.id", index=True
    )
    created_at: datetime = _created()
    decided_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


# ------------------------------------------------------------------ human studies (LS)


class Study(SQLModel, table=True):
    """A Label Studio project of one study kind (``name``: see ``STUDY_KIND_VALUES``)."""

    __tablename__ = "study"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    ls_project_id: int | None = Field(default=None, unique=True)
    ls_url: str | None = None
    title: str | None = None
    config_hash: str | None = None
    created_at: datetime = _created()


class StudyTask(SQLModel, table=True):
    """One task pushed to a study; ``external_key`` is our stable id for idempotent pushes."""

    __tablename__ = "study_task"
    __table_args__ = (UniqueConstraint("study_id", "external_key", name="uq_study_task_key"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    external_key: str
    ls_task_id: int | None = Field(default=None, index=True)
    payload: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()


class Annotator(SQLModel, table=True):
    """A Label Studio user."""

    __tablename__ = "annotator"

    id: int | None = Field(default=None, primary_key=True)
    ls_user_id: int = Field(unique=True)
    email: str | None = Field(default=None, index=True)
    created_at: datetime = _created()


class HumanAnnotation(SQLModel, table=True):
    """One Label Studio annotation, raw ``result`` kept; keyed on ``ls_annotation_id``."""

    __tablename__ = "human_annotation"

    id: int | None = Field(default=None, primary_key=True)
    study_task_id: int = Field(foreign_key="study_task.id", index=True)
    ls_annotation_id: int = Field(unique=True)
    annotator_id: int | None = Field(default=None, foreign_key="annotator.id", index=True)
    result: Any = Field(default_factory=list, sa_type=JSONType)
    lead_time: float | None = None
    ls_created_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    ls_updated_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    pulled_at: datetime = _created()


# ------------------------------------------------------------------ judges & analyses


class JudgeScore(SQLModel, table=True):
    """An LLM judge's score of a response (helpfulness 0–4, distraction, acknowledgement)."""

    __tablename__ = "judge_score"
    __table_args__ = (
        UniqueConstraint("response_id", "judge_model", "kind", name="uq_judge_score_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", index=True, ondelete="CASCADE")
    judge_model: str
    kind: str
    value: float | None = None
    raw_output: str | None = Field(default=None, sa_type=Text)
    parse_status: str = "ok"
    created_at: datetime = _created()


class Analysis(SQLModel, table=True):
    """A drift analysis of one run under one labeler and ontology version."""

    __tablename__ = "analysis"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="generation_run.id", index=True)
    labeler_id: int = Field(foreign_key="labeler_spec.id", index=True)
    ontology_version_id: int = Field(foreign_key="ontology_version.id", index=True)
    out_dir: str | None = None
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    result: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    implementation: str = ""
    created_at: datetime = _created()


# --------------------------------------------------------------------- memory conflicts


class ConflictBank(SQLModel, table=True):
    """One memory-bank instance of the conflicts instrument (study/conflicts/items.py).

    ``content`` is the validated instance (memories, request, provenance) exactly as
    imported; ``question_id`` is the ``Question`` row holding its request, so generation
    runs and responses key on it like any question.
    """

    __tablename__ = "conflict_bank"

    id: int | None = Field(default=None, primary_key=True)
    instance_id: str = Field(unique=True)
    question_id: int = Field(foreign_key="question.id", index=True)
    conflict_type: str = Field(index=True)
    high_risk: bool = False
    source: str | None = None
    content: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    content_hash: str
    created_at: datetime = _created()
    updated_at: datetime = _updated()


# ---------------------------------------------------------------------- infrastructure


class LLMCacheEntry(SQLModel, table=True):
    """A cached LLM request/response, keyed by sha256 of (model, endpoint, messages, params).

    The request payload is stored normalised like :class:`Response`'s (``prompt_id``,
    ``params_id``, the rest in ``request``); :func:`storage.repo.requests.cache_request`
    returns it whole. An entry written by generation does not copy the answer text the
    response row holds: its ``response`` has ``"text_in": "response"`` instead of
    ``"text"``; :func:`storage.repo.cache.cache_response` returns it whole.
    """

    __tablename__ = "llm_cache_entry"

    key: str = Field(primary_key=True)
    provider: str
    endpoint: str | None = None
    model: str
    prompt_id: int | None = None  # no FOREIGN KEY clause: see Response
    params_id: int | None = None
    request: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    response: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    created_at: datetime = _created()
    hits: int = 0


class WorkLease(SQLModel, table=True):
    """Who is doing a piece of work now (e.g. generating a run), so a second process refuses.

    ``key`` names the work (``generation_run:<id>``). A lease is held while its holder
    lives: on the same host the holder's pid must exist, elsewhere its ``heartbeat_at``
    must be recent; a dead holder's lease is taken over (see ``storage.repo.leases``).
    """

    __tablename__ = "work_lease"

    key: str = Field(primary_key=True)
    host: str
    pid: int
    token: str
    acquired_at: datetime = _created()
    heartbeat_at: datetime = _created()


class Draft(SQLModel, table=True):
    """Unsaved edits of a page (edit boxes, the YAML editor), kept until saved or discarded.

    ``page`` and ``object_key`` say where the draft belongs (e.g. ``rewrite`` /
    ``proposal-3``); ``fields`` maps widget names to their text.
    """

    __tablename__ = "draft"
    __table_args__ = (UniqueConstraint("page", "object_key", name="uq_draft_key"),)

    id: int | None = Field(default=None, primary_key=True)
    page: str
    object_key: str
    fields: dict[str, Any] = Field(default_factory=dict, sa_type=JSONType)
    updated_at: datetime = _updated()


class WorkspaceMeta(SQLModel, table=True):
    """Free key/value metadata about the workspace (never secrets)."""

    __tablename__ = "workspace_meta"

    key: str = Field(primary_key=True)
    value: str = Field(default="", sa_type=Text)
    updated_at: datetime = _updated()


#: The tables ``workspace_info`` counts rows of.
MAIN_TABLES: tuple[type[SQLModel], ...] = (
    Question,
    CurationVote,
    PerturbationCatalog,
    Perturbation,
    ModelSpec,
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
    "MAIN_TABLES",
    "UNMAPPED",
    "Analysis",
    "Annotator",
    "ConflictBank",
    "CurationVote",
    "Draft",
    "GenerationRun",
    "HumanAnnotation",
    "JudgeScore",
    "LLMCacheEntry",
    "LabelerSpec",
    "LabelingRound",
    "ModelSpec",
    "OntologyLeaf",
    "OntologyVersion",
    "Perturbation",
    "PerturbationCatalog",
    "Prompt",
    "Question",
    "RequestParams",
    "Response",
    "RewriteProposal",
    "RoundResponse",
    "StepLabel",
    "Study",
    "StudyTask",
    "WorkLease",
    "WorkspaceMeta",
]

# The disposition instrument's tables live in their own module; importing it here puts
# them in the metadata Alembic compares against.
from storage.disposition_models import (  # noqa: E402
    DispositionArm,
    DispositionResponse,
    DispositionScore,
)

__all__ += ["DispositionArm", "DispositionResponse", "DispositionScore"]

# The source-reliance instrument's tables, likewise.
from storage.source_models import SourceClaim, SourceProbe, SourceRun  # noqa: E402

__all__ += ["SourceClaim", "SourceProbe", "SourceRun"]
