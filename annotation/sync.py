"""Push tasks to and pull annotations from Label Studio, idempotently.

Push: the selection's tasks are built and checked first (:func:`tasks_to_push`), so a bad
or empty selection fails before anything exists in Label Studio; then the study's project is
created once and reused; each task carries its stable ``external_key`` in its data, and the
project's existing tasks are read first, so pushing again imports only what is missing (also
after an import that failed midway or a crash between import and commit: tasks found in Label
Studio are linked, not imported twice).

Pull: annotations are upserted keyed on Label Studio annotation ids with their raw
``result``, annotator, lead time and created/updated times; an unchanged annotation is not
rewritten, an edited one is updated. Label Studio user ids are mapped to e-mails.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from annotation.client import LabelStudioClient, LsTask
from annotation.kinds import get_spec, instructions_html, label_config
from annotation.selection import Selection, TaskSpec
from annotation.studies import config_hash
from annotation.tasks import build_tasks
from storage.errors import ConfigError, DriftLensError, InputError, NotFoundError
from storage.models import Study
from storage.repo import studies as repo
from storage.repo.annotations import (
    create_study,
    get_or_create_annotator,
    get_study_by_project,
    list_studies,
    upsert_human_annotation,
)

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ProjectResult:
    """The study's project and whether this call created it."""

    study: str
    study_id: int
    project_id: int
    url: str
    created: bool
    config_updated: bool


@dataclass(frozen=True)
class PushResult:
    """What a push did."""

    study: str
    project_id: int
    project_url: str
    selected: int
    imported: int
    already_present: int
    linked: int
    """Tasks found in Label Studio but not (yet) in our database, now linked."""


@dataclass(frozen=True)
class PullResult:
    """What a pull did for one study."""

    study: str
    project_id: int
    tasks: int
    annotations: int
    inserted: int
    updated: int
    unchanged: int
    adopted_tasks: int
    foreign_tasks: int
    """Tasks in the project without our external key (created by hand); ignored."""
    missing_in_label_studio: int
    """Stored annotations that Label Studio no longer has (kept: human work is not deleted)."""
    note: str | None = None
    """One sentence when the project was made with an earlier form of its study (its
    annotations are mirrored all the same, but ``status`` and ``apply`` will not read them)."""


def project_link(url: str, project_id: int) -> str:
    """The browser address of a project."""
    return f"{url}/projects/{project_id}/data"


def ensure_project(
    name: str, *, client: LabelStudioClient, session: Session, new: bool = False
) -> ProjectResult:
    """Create the study's Label Studio project, or reuse the one already recorded.

    Args:
        name: the study kind.
        client: the Label Studio client.
        session: the workspace session (the caller commits).
        new: create a fresh project even when one is recorded (after it was deleted).

    Raises:
        InputError: unknown study.
        ConfigError: the recorded project lives on another server.
        NotFoundError: the recorded project was deleted in Label Studio.
    """
    spec = get_spec(name)
    config = label_config(name)
    digest = config_hash(config)
    study = None if new else repo.latest_study(name, session=session)
    if study is not None and study.ls_project_id is not None:
        require_same_server(study, client)
        try:
            project = client.get_project(study.ls_project_id)
        except NotFoundError as exc:
            raise NotFoundError(
                f"{exc} Push with --new-project to create the study's project again."
            ) from exc
        updated = False
        if study.config_hash != digest:
            from annotation.apply import legacy_form_note

            # Label Studio refuses a form that cannot hold the project's answers; say why
            note = legacy_form_note(study, session=session)
            if note is not None:
                raise InputError(note)
            client.update_label_config(project.id, config)
            study.config_hash = digest
            session.add(study)
            session.flush()
            updated = True
        assert study.id is not None
        return ProjectResult(name, study.id, project.id, client.url, False, updated)
    project = client.create_project(
        title=f"DriftLens: {spec.title}",
        description=f"{spec.summary} (driftlens study: {name})",
        label_config=config,
        instructions=instructions_html(name),
    )
    _release_project_id(project.id, session=session)
    study = create_study(
        name,
        ls_project_id=project.id,
        ls_url=client.url,
        title=project.title,
        config_hash=digest,
        session=session,
    )
    assert study.id is not None
    return ProjectResult(name, study.id, project.id, client.url, True, False)


def require_same_server(study: Study, client: LabelStudioClient) -> None:
    """Refuse to use a study's project id on another server (ids are per server).

    Raises:
        ConfigError: the study's project lives on another Label Studio.
    """
    if study.ls_url and study.ls_url.rstrip("/") != client.url.rstrip("/"):
        raise ConfigError(
            f"Study {study.name} lives on the Label Studio at {study.ls_url}, not {client.url}; "
            "point LABEL_STUDIO_URL there or push with --new-project."
        )


def _release_project_id(project_id: int, *, session: Session) -> None:
    """Unlink an older study recorded under the same project id.

    Project ids are per server, and a reset server hands them out again, but the study table
    keeps ``ls_project_id`` unique: the older study keeps its rows and a note of where its
    project was, and stops being pulled.
    """
    old = get_study_by_project(project_id, session=session)
    if old is None:
        return
    old.title = f"{old.title or old.name} (was project {project_id} on {old.ls_url})"
    old.ls_project_id = None
    session.add(old)
    session.flush()


def _by_key(tasks: list[LsTask]) -> dict[str, LsTask]:
    out: dict[str, LsTask] = {}
    for t in tasks:
        key = t.data.get("external_key")
        # The first task of a key wins; duplicates (a hand-made copy) are left alone.
        if isinstance(key, str) and key not in out:
            out[key] = t
    return out


def tasks_to_push(name: str, selection: Selection, *, session: Session) -> list[TaskSpec]:
    """Build and check a selection's tasks before anything is created in Label Studio.

    Raises:
        InputError: unknown study, or a selection that makes no task.
        NotFoundError: the selection names rows that do not exist.
    """
    tasks = build_tasks(name, selection, session=session)
    if not tasks:
        raise InputError(
            f"The selection makes no {name} task; nothing was sent to Label Studio "
            "(check its filters, e.g. run=, tier=, labeler=)."
        )
    return tasks


def push(
    name: str,
    tasks: Sequence[TaskSpec],
    *,
    client: LabelStudioClient,
    session: Session,
    progress: Progress | None = None,
) -> PushResult:
    """Import the tasks (from :func:`tasks_to_push`) that the study's project does not have yet.

    The project must exist (:func:`ensure_project`, committed first so that a failed
    import never leaves an unrecorded project behind: pushing again reuses it).

    Raises:
        NotFoundError: the study has no project yet.
        ServiceError: Label Studio failed; the message says that the project is kept and
            that pushing again imports what it is missing.
    """
    study = repo.latest_study(name, session=session)
    if study is None or study.id is None or study.ls_project_id is None:
        raise NotFoundError(f"Study {name} has no Label Studio project yet.")
    if progress:
        progress(0, len(tasks))
    in_ls = _by_key(client.list_tasks(study.ls_project_id))
    stored = repo.tasks_by_key(study.id, session=session)
    missing = [t for t in tasks if t.key not in in_ls]
    missing_keys = {t.key for t in missing}
    try:
        imported = (
            client.import_tasks(study.ls_project_id, [t.data for t in missing]) if missing else 0
        )
    except DriftLensError as exc:
        # Earlier batches may be in Label Studio already; a second push links them by key.
        raise type(exc)(
            f"{exc} Project {study.ls_project_id} is kept with what was imported; push again "
            "to import the rest."
        ) from exc
    if missing:
        in_ls = _by_key(client.list_tasks(study.ls_project_id))
    linked = 0
    for done, t in enumerate(tasks, start=1):
        ls_task = in_ls.get(t.key)
        row = stored.get(t.key)
        ls_id = ls_task.id if ls_task is not None else None
        if row is None:
            repo.add_study_task(study.id, t.key, payload=t.data, ls_task_id=ls_id, session=session)
            if t.key not in missing_keys:
                linked += 1
        elif row.ls_task_id != ls_id and ls_id is not None:
            row.ls_task_id = ls_id
            session.add(row)
        if progress:
            progress(done, len(tasks))
    session.flush()
    return PushResult(
        study=name,
        project_id=study.ls_project_id,
        project_url=project_link(client.url, study.ls_project_id),
        selected=len(tasks),
        imported=imported,
        already_present=len(tasks) - len(missing),
        linked=linked,
    )


def pull(
    name: str | None,
    *,
    client: LabelStudioClient,
    session: Session,
    progress: Progress | None = None,
) -> list[PullResult]:
    """Mirror the annotations of one study (or of every study on this server).

    Raises:
        NotFoundError: the study was never pushed, or its project is gone.
    """
    if name is not None:
        get_spec(name)
        study = repo.latest_study(name, session=session)
        if study is None or study.ls_project_id is None:
            raise NotFoundError(
                f"Study {name} has not been pushed yet; run "
                f"`{shlex.join(['driftlens', 'annotate', 'push', name])}` first."
            )
        require_same_server(study, client)
        studies = [study]
    else:
        studies = [
            s
            for s in list_studies(session=session)
            if s.ls_project_id is not None
            and (s.ls_url or "").rstrip("/") == client.url.rstrip("/")
        ]
        # Only the newest study of each kind is live (list_studies is newest first).
        newest: dict[str, Study] = {}
        for s in studies:
            newest.setdefault(s.name, s)
        studies = list(newest.values())
    emails = {u.id: u.email or None for u in client.list_users()}
    return [
        _pull_one(s, client=client, session=session, emails=emails, progress=progress)
        for s in studies
    ]


def _pull_one(
    study: Study,
    *,
    client: LabelStudioClient,
    session: Session,
    emails: dict[int, str | None],
    progress: Progress | None,
) -> PullResult:
    assert study.id is not None and study.ls_project_id is not None
    tasks = client.list_tasks(study.ls_project_id)
    stored = repo.tasks_by_key(study.id, session=session)
    annotator_ids: dict[int, int] = {}
    counts = {"inserted": 0, "updated": 0, "unchanged": 0}
    adopted = foreign = n_ann = 0
    seen_ids: set[int] = set()
    for done, t in enumerate(tasks, start=1):
        key = t.data.get("external_key")
        if not isinstance(key, str):
            foreign += 1
            continue
        row = stored.get(key)
        if row is None:
            payload: dict[str, Any] = dict(t.data)
            row = repo.add_study_task(
                study.id, key, payload=payload, ls_task_id=t.id, session=session
            )
            stored[key] = row
            adopted += 1
        elif row.ls_task_id != t.id:
            row.ls_task_id = t.id
            session.add(row)
            session.flush()
        assert row.id is not None
        for ann in t.annotations:
            n_ann += 1
            seen_ids.add(ann.id)
            annotator_id = None
            if ann.completed_by is not None:
                if ann.completed_by not in annotator_ids:
                    a = get_or_create_annotator(
                        ann.completed_by, email=emails.get(ann.completed_by), session=session
                    )
                    assert a.id is not None
                    annotator_ids[ann.completed_by] = a.id
                annotator_id = annotator_ids[ann.completed_by]
            status = upsert_human_annotation(
                ls_annotation_id=ann.id,
                study_task_id=row.id,
                annotator_id=annotator_id,
                result=ann.result,
                lead_time=ann.lead_time,
                ls_created_at=ann.created_at,
                ls_updated_at=ann.updated_at,
                session=session,
            ).status
            counts[status] += 1
        if progress:
            progress(done, len(tasks))
    task_ids = [r.id for r in stored.values() if r.id is not None]
    missing = sum(
        1
        for a in repo.annotations_of_tasks(task_ids, session=session)
        if a.ls_annotation_id not in seen_ids
    )
    from annotation.apply import legacy_form_note

    session.flush()
    return PullResult(
        study=study.name,
        project_id=study.ls_project_id,
        tasks=len(tasks),
        annotations=n_ann,
        inserted=counts["inserted"],
        updated=counts["updated"],
        unchanged=counts["unchanged"],
        adopted_tasks=adopted,
        foreign_tasks=foreign,
        missing_in_label_studio=missing,
        note=legacy_form_note(study, session=session),
    )
