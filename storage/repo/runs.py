"""Model specs, generation runs and their responses (resume-safe upserts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import func
from sqlmodel import Session, col, select

from storage.errors import ConfigError, InputError, NotFoundError
from storage.models import GenerationRun, ModelSpecRow, Response
from storage.repo._upsert import get_or_create, row_values, upsert
from storage.repo.lookup import require_row
from storage.repo.requests import RequestInterner
from storage.step_spans import pack_steps
from storage.types import utcnow

RESPONSE_KEY = ("run_id", "question_id", "condition", "sample")


class ResponseKey(NamedTuple):
    """What makes a response unique within a run."""

    question_id: int
    condition: str
    sample: int


# ------------------------------------------------------------------------ model specs


def get_or_create_model_spec(
    spec: str,
    *,
    provider: str,
    model: str,
    service: str | None = None,
    simulated: bool = False,
    params: Mapping[str, Any] | None = None,
    session: Session,
) -> ModelSpecRow:
    """The row for model ``spec`` (e.g. ``"openai-api/vllm/Qwen3-4B"``), created if new."""
    return get_or_create(
        session,
        ModelSpecRow,
        ModelSpecRow.spec == spec,
        lambda: ModelSpecRow(
            spec=spec,
            provider=provider,
            service=service,
            model=model,
            simulated=simulated,
            params=dict(params or {}),
        ),
    )


# ----------------------------------------------------------------------------- runs


def check_run_name(name: str) -> str:
    """Refuse a run name that could be stored but not used again; return it unchanged.

    Every instrument's service and every page form call this before anything starts, and
    :func:`get_or_create_run` calls it before a new run is stored, so a page or a script
    that skips the CLI is refused the same way.

    Raises:
        InputError: the name is empty (or only spaces: a run nobody can name again), or
            holds a comma (``analyze --run`` and ``compare`` read a comma list of runs).
    """
    if not name.strip():
        raise InputError("--run must not be empty: give the run a name.")
    if "," in name:
        raise InputError(
            f"--run {name!r} holds a comma; commands that take several runs split on commas, "
            "so choose a name without one."
        )
    return name


def get_run(name: str, *, session: Session) -> GenerationRun | None:
    """The run called ``name``, if any."""
    return session.exec(select(GenerationRun).where(GenerationRun.name == name)).first()


def require_run(name: str, *, session: Session) -> GenerationRun:
    """The run called ``name``.

    Raises:
        NotFoundError: no such run.
    """
    run = get_run(name, session=session)
    if run is None:
        raise NotFoundError(f"No generation run named {name!r} in this workspace.")
    return run


def list_runs(*, session: Session) -> list[GenerationRun]:
    """Every run, newest first."""
    return list(session.exec(select(GenerationRun).order_by(col(GenerationRun.id).desc())))


def get_or_create_run(
    name: str,
    *,
    model_spec_id: int,
    prompt_version: str,
    sampling: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    simulated: bool = False,
    catalog_id: int | None = None,
    session: Session,
) -> GenerationRun:
    """Return run ``name``, creating it on first use.

    Resuming must not silently change what a run means: an existing run with a different
    model, prompt version, sampling or catalog is an error. ``config`` (which questions and
    perturbations to cover) may grow between resumes and is replaced.

    Raises:
        ConfigError: the run exists with different generation settings.
    """
    run = get_run(name, session=session)
    if run is None:
        check_run_name(name)
        run = GenerationRun(
            name=name,
            model_spec_id=model_spec_id,
            catalog_id=catalog_id,
            prompt_version=prompt_version,
            sampling=dict(sampling),
            config=dict(config or {}),
            simulated=simulated,
            status="pending",
        )
        session.add(run)
        session.flush()
        return run
    mismatches = [
        field
        for field, old, new in (
            ("model", run.model_spec_id, model_spec_id),
            ("prompt_version", run.prompt_version, prompt_version),
            ("sampling", run.sampling, dict(sampling)),
            ("catalog", run.catalog_id, catalog_id),
        )
        if old != new
    ]
    if mismatches:
        raise ConfigError(
            f"Run {name!r} already exists with a different {', '.join(mismatches)}; "
            "choose a new run name."
        )
    if config is not None and run.config != dict(config):
        run.config = dict(config)
        run.updated_at = utcnow()
        session.add(run)
        session.flush()
    return run


def set_run_status(run_id: int, status: str, *, session: Session) -> GenerationRun:
    """Set a run's status (``pending``, ``running``, ``done``, ``failed``…)."""
    run = require_row(session, GenerationRun, run_id, what="Generation run")
    run.status = status
    run.updated_at = utcnow()
    session.add(run)
    session.flush()
    return run


# ------------------------------------------------------------------------ responses


def existing_response_keys(
    run_id: int, *, session: Session, include_failed: bool = False
) -> set[ResponseKey]:
    """Keys of the responses a run already has, for resuming.

    Args:
        run_id: the run.
        session: the open session.
        include_failed: also count rows whose request failed (``error`` set); by default
            those are left out so a resume retries them.
    """
    stmt = select(Response.question_id, Response.condition, Response.sample).where(
        Response.run_id == run_id
    )
    if not include_failed:
        stmt = stmt.where(col(Response.error).is_(None))
    return {ResponseKey(q, c, s) for q, c, s in session.exec(stmt)}


def _response_rows(responses: Sequence[Response]) -> list[dict[str, Any]]:
    return [row_values(r) for r in responses]


_RESPONSE_UPDATE = tuple(
    c.name
    for c in Response.__table__.columns  # type: ignore[attr-defined]
    if c.name not in ("id", "created_at", *RESPONSE_KEY)
)


def normalise_requests(
    rows: Sequence[dict[str, Any]], *, session: Session, interner: RequestInterner | None = None
) -> None:
    """Store each row's full ``request`` as prompt + shared parameters + its own rest.

    Rows that already carry a ``prompt_id`` or ``params_id`` are left as they are. Modifies
    ``rows`` in place.
    """
    todo = [r for r in rows if r.get("prompt_id") is None and r.get("params_id") is None]
    if not todo:
        return
    ids = (interner or RequestInterner()).intern(
        [r.get("request") or {} for r in todo], session=session
    )
    for row, (prompt_id, params_id, rest) in zip(todo, ids, strict=True):
        row["prompt_id"], row["params_id"], row["request"] = prompt_id, params_id, rest


def upsert_response_rows(
    rows: Sequence[dict[str, Any]],
    *,
    session: Session,
    interner: RequestInterner | None = None,
) -> int:
    """Upsert response rows given as column dicts (the bulk path of generation).

    Each row's ``request`` is the full request; it is normalised first (see
    :func:`normalise_requests`). Each row's ``steps`` (the parsed strings) are stored as
    spans of its ``text`` where they are substrings of it (:mod:`storage.step_spans`);
    loaded rows show them as strings again. Returns the number of rows written.
    """
    rows = [dict(r) for r in rows]
    normalise_requests(rows, session=session, interner=interner)
    for row in rows:
        if row.get("steps"):
            row["steps"] = pack_steps(row.get("text"), row["steps"])
    return upsert(session, Response, rows, key=RESPONSE_KEY, update=_RESPONSE_UPDATE)


def upsert_responses(responses: Sequence[Response], *, session: Session) -> int:
    """Insert responses, replacing any with the same (run, question, condition, sample).

    Atomic per row (``INSERT … ON CONFLICT DO UPDATE``), so concurrent writers and resumed
    runs never produce duplicates. ``request`` is given whole and stored normalised
    (:mod:`storage.repo.requests`). Returns the number of rows written.
    """
    return upsert_response_rows(_response_rows(responses), session=session)


def upsert_response(response: Response, *, session: Session) -> Response:
    """Upsert one response (see :func:`upsert_responses`) and return the stored row."""
    upsert_responses([response], session=session)
    stmt = (
        select(Response)
        .where(
            Response.run_id == response.run_id,
            Response.question_id == response.question_id,
            Response.condition == response.condition,
            Response.sample == response.sample,
        )
        .execution_options(populate_existing=True)
    )
    return session.exec(stmt).one()


def list_responses(
    run_id: int,
    *,
    session: Session,
    condition: str | Sequence[str] | None = None,
    question_ids: Sequence[int] | None = None,
    ok_only: bool = False,
    limit: int | None = None,
) -> list[Response]:
    """A run's responses ordered by question, condition, sample.

    Args:
        run_id: the run.
        session: the open session.
        condition: one condition or several (``"baseline"``, perturbation keys).
        question_ids: only these questions.
        ok_only: only responses without an error and with ``parse_status == "ok"``.
        limit: at most this many.
    """
    stmt = select(Response).where(Response.run_id == run_id)
    if condition is not None:
        conditions = [condition] if isinstance(condition, str) else list(condition)
        stmt = stmt.where(col(Response.condition).in_(conditions))
    if question_ids is not None:
        stmt = stmt.where(col(Response.question_id).in_(list(question_ids)))
    if ok_only:
        stmt = stmt.where(col(Response.error).is_(None), Response.parse_status == "ok")
    stmt = stmt.order_by(col(Response.question_id), col(Response.condition), col(Response.sample))
    if limit is not None:
        stmt = stmt.limit(limit)
    return list(session.exec(stmt))


def count_responses(run_id: int, *, session: Session, failed: bool | None = None) -> int:
    """Number of a run's responses (only failed / only successful when ``failed`` is set)."""
    stmt = select(func.count()).select_from(Response).where(Response.run_id == run_id)
    if failed is True:
        stmt = stmt.where(col(Response.error).is_not(None))
    elif failed is False:
        stmt = stmt.where(col(Response.error).is_(None))
    return int(session.exec(stmt).one())


def response_counts(run_ids: Sequence[int], *, session: Session) -> dict[int, int]:
    """Responses stored per run, for every id in ``run_ids`` (0 for a run with none).

    One ``GROUP BY`` over the responses' run index: a listing of many runs never loads one.
    """
    if not run_ids:
        return {}
    rows = session.exec(
        select(Response.run_id, func.count())
        .where(col(Response.run_id).in_(list(run_ids)))
        .group_by(col(Response.run_id))
    )
    counts = {int(run_id): int(n) for run_id, n in rows}
    return {i: counts.get(i, 0) for i in run_ids}
