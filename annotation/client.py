"""The one wrapper around ``label_studio_sdk`` (imported lazily, only here).

Everything above this module sees typed, frozen results (:class:`LsProject`, :class:`LsTask`,
:class:`LsAnnotation`, :class:`LsUser`) and our error family: every failure of the server
becomes one sentence — not reachable, bad token, project gone, version unsupported, or the
server's own refusal. SDK exceptions are never shown as they are: their text includes
response headers (session cookies).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storage.errors import ConfigError, NotFoundError, ServiceError

if TYPE_CHECKING:
    from label_studio_sdk import LabelStudio

ENV_URL = "LABEL_STUDIO_URL"
ENV_API_KEY = "LABEL_STUDIO_API_KEY"
#: Oldest and first unsupported Label Studio release (major, minor) we talk to.
MIN_VERSION = (1, 20)
MAX_VERSION = (2, 0)
_IMPORT_BATCH = 500
_PAGE_SIZE = 100


@dataclass(frozen=True)
class LabelStudioConnection:
    """Where the server is and the token to use (the token never appears in ``repr``)."""

    url: str
    api_key: str = field(repr=False)
    source: str = "environment"


@dataclass(frozen=True)
class LsProject:
    """A Label Studio project and its progress counters."""

    id: int
    title: str
    task_number: int
    num_tasks_with_annotations: int
    total_annotations_number: int
    label_config: str


@dataclass(frozen=True)
class LsAnnotation:
    """One annotation as Label Studio stores it; ``raw`` is the JSON the API returned."""

    id: int
    task_id: int
    completed_by: int | None
    result: list[dict[str, Any]]
    lead_time: float | None
    created_at: datetime | None
    updated_at: datetime | None
    was_cancelled: bool
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class LsTask:
    """One task with its data and annotations."""

    id: int
    data: Mapping[str, Any]
    annotations: tuple[LsAnnotation, ...]


@dataclass(frozen=True)
class LsUser:
    """A Label Studio user."""

    id: int
    email: str
    username: str


def resolve_connection(workspace: Path | None = None) -> LabelStudioConnection:
    """Find the server: ``LABEL_STUDIO_URL``/``LABEL_STUDIO_API_KEY``, else the local server.

    Args:
        workspace: the workspace whose local server (``driftlens labelstudio start``) to use
            when the environment names none.

    Raises:
        ConfigError: no server is configured, or the URL comes without a token.
    """
    url = os.environ.get(ENV_URL, "").strip()
    key = os.environ.get(ENV_API_KEY, "").strip()
    if url:
        if not key:
            raise ConfigError(
                f"{ENV_URL} is set but {ENV_API_KEY} is not; set the API token of a "
                "Label Studio user (Account & Settings, legacy token)."
            )
        return LabelStudioConnection(url=url.rstrip("/"), api_key=key, source="environment")
    if workspace is not None:
        from annotation.server import read_state

        state = read_state(workspace)
        if state is not None:
            return LabelStudioConnection(url=state.url, api_key=state.token, source="local server")
    raise ConfigError(
        f"No Label Studio server configured: set {ENV_URL} and {ENV_API_KEY}, or run "
        "`driftlens labelstudio start`."
    )


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return int(status) if isinstance(status, int) else None


def _short_body(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        detail = body.get("validation_errors") or body.get("detail") or body
        text = json.dumps(detail, default=str) if not isinstance(detail, str) else detail
    else:
        text = str(body or "")
    text = " ".join(text.split())
    return text[:200] + ("..." if len(text) > 200 else "")


class LabelStudioClient:
    """A typed Label Studio client with one clear error message per failure.

    Args:
        connection: server URL and token.
        timeout: seconds per HTTP request.
    """

    def __init__(self, connection: LabelStudioConnection, *, timeout: float = 60.0) -> None:
        self.connection = connection
        self._timeout = timeout
        self._sdk: LabelStudio | None = None
        self._version: str | None = None

    @property
    def url(self) -> str:
        """The server's base URL."""
        return self.connection.url

    # ------------------------------------------------------------------ plumbing

    def _client(self) -> LabelStudio:
        if self._sdk is None:
            from label_studio_sdk import LabelStudio

            # api_key is passed explicitly: the SDK's default reads the environment at
            # import time, which would ignore the local server's token.
            # The SDK inspects JWT-shaped keys on construction and may refuse them already.
            with self._call("use the API token"):
                self._sdk = LabelStudio(
                    base_url=self.connection.url,
                    api_key=self.connection.api_key,
                    timeout=self._timeout,
                    max_retries=0,
                )
        return self._sdk

    @contextmanager
    def _call(self, what: str, *, project_id: int | None = None) -> Iterator[None]:
        """Map SDK and transport failures of one call to our error family."""
        import httpx

        url = self.connection.url
        try:
            yield
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
            raise ServiceError(
                f"Label Studio is not reachable at {url}; start it (`driftlens labelstudio "
                f"start`) or set {ENV_URL} to a running server."
            ) from exc
        except httpx.TimeoutException as exc:
            raise ServiceError(
                f"Label Studio at {url} did not answer in time while trying to {what}."
            ) from exc
        except httpx.HTTPError as exc:
            raise ServiceError(
                f"Label Studio at {url} failed while trying to {what}: {type(exc).__name__}."
            ) from exc
        except Exception as exc:
            status = _status_of(exc)
            if status is None:
                if type(exc).__module__.startswith("label_studio_sdk") or isinstance(
                    exc, ValueError
                ):
                    raise ServiceError(
                        f"Label Studio at {url} sent an answer we cannot read while trying "
                        f"to {what}; is {url} a Label Studio server?"
                    ) from exc
                raise
            if status in (401, 403):
                raise ServiceError(
                    f"Label Studio at {url} rejected the API token; set {ENV_API_KEY} to a "
                    "valid legacy token (Account & Settings) of an administrator."
                ) from exc
            if status == 404 and project_id is not None:
                raise NotFoundError(
                    f"Label Studio project {project_id} no longer exists at {url}; "
                    "it was deleted or the study belongs to another server."
                ) from exc
            if status == 404:
                raise ServiceError(
                    f"Label Studio at {url} has no such object or endpoint while trying to "
                    f"{what}; is the server version supported?"
                ) from exc
            raise ServiceError(
                f"Label Studio at {url} refused to {what} (HTTP {status}): {_short_body(exc)}"
            ) from exc

    # ------------------------------------------------------------------ server

    def check(self) -> str:
        """Check that the server answers, accepts the token and has a supported version.

        Returns:
            The Label Studio release, e.g. ``"1.23.2"``.

        Raises:
            ServiceError: not reachable, bad token, or unsupported version.
        """
        if self._version is not None:
            return self._version
        client = self._client()
        with self._call("read its version"):
            info = client.versions.get()
        release = str(getattr(info, "release", "") or "")
        if not _supported(release):
            raise ServiceError(
                f"Label Studio {release or '(unknown version)'} at {self.url} is not supported; "
                f"use a 1.x release from {MIN_VERSION[0]}.{MIN_VERSION[1]} on (tested: 1.23.2)."
            )
        # /api/version answers without a token, so prove the token separately.
        with self._call("check the API token"):
            client.users.whoami()
        self._version = release
        return release

    # ------------------------------------------------------------------ projects

    def create_project(
        self, *, title: str, description: str, label_config: str, instructions: str
    ) -> LsProject:
        """Create a project asking for three annotations per task."""
        self.check()
        with self._call("create a project"):
            created = self._client().projects.create(
                title=title,
                description=description,
                label_config=label_config,
                expert_instruction=instructions,
                show_instruction=True,
                maximum_annotations=3,
                overlap_cohort_percentage=100,
                show_skip_button=True,
            )
        return self.get_project(int(created.id))  # type: ignore[arg-type]

    def get_project(self, project_id: int) -> LsProject:
        """A project and its counters.

        Raises:
            NotFoundError: the project does not exist (any more).
        """
        self.check()
        with self._call("read a project", project_id=project_id):
            p = self._client().projects.get(project_id)
        return LsProject(
            id=int(p.id),  # type: ignore[arg-type]
            title=str(p.title or ""),
            task_number=int(p.task_number or 0),
            num_tasks_with_annotations=int(p.num_tasks_with_annotations or 0),
            total_annotations_number=int(p.total_annotations_number or 0),
            label_config=str(p.label_config or ""),
        )

    def update_label_config(self, project_id: int, label_config: str) -> None:
        """Replace a project's labeling config (Label Studio refuses incompatible ones)."""
        self.check()
        with self._call("update the labeling config", project_id=project_id):
            self._client().projects.update(project_id, label_config=label_config)

    # ------------------------------------------------------------------ tasks

    def list_tasks(self, project_id: int) -> list[LsTask]:
        """Every task of a project with its annotations."""
        self.check()
        out: list[LsTask] = []
        with self._call("list tasks", project_id=project_id):
            self._client().projects.get(project_id)  # a gone project is a 404 here, not []
            pager: Any = self._client().tasks.list(
                project=project_id, fields="all", page_size=_PAGE_SIZE
            )
            for t in pager:
                anns = tuple(_annotation(a, int(t.id)) for a in (t.annotations or []))
                out.append(LsTask(id=int(t.id), data=dict(t.data or {}), annotations=anns))
        return out

    def import_tasks(self, project_id: int, tasks: Sequence[Mapping[str, Any]]) -> int:
        """Import task data objects (batched); returns how many were created."""
        self.check()
        created = 0
        for start in range(0, len(tasks), _IMPORT_BATCH):
            batch = [dict(t) for t in tasks[start : start + _IMPORT_BATCH]]
            with self._call("import tasks", project_id=project_id):
                answer = self._client().projects.import_tasks(project_id, request=batch)  # type: ignore[arg-type]
            created += int(getattr(answer, "task_count", None) or len(batch))
        return created

    # ------------------------------------------------------------------ annotations

    def create_annotation(
        self,
        task_id: int,
        *,
        result: Sequence[Mapping[str, Any]],
        completed_by: int | None = None,
        lead_time: float | None = None,
    ) -> int:
        """Post an annotation (an administrator may attribute it to another user)."""
        self.check()
        kwargs: dict[str, Any] = {"result": [dict(r) for r in result]}
        if completed_by is not None:
            kwargs["completed_by"] = completed_by
        if lead_time is not None:
            kwargs["lead_time"] = lead_time
        with self._call("create an annotation"):
            ann = self._client().annotations.create(id=task_id, **kwargs)
        return int(ann.id)

    def update_annotation(
        self,
        annotation_id: int,
        *,
        result: Sequence[Mapping[str, Any]],
        lead_time: float | None = None,
    ) -> None:
        """Change an annotation's result (as an annotator editing it in the UI would)."""
        self.check()
        kwargs: dict[str, Any] = {"result": [dict(r) for r in result]}
        if lead_time is not None:
            kwargs["lead_time"] = lead_time
        with self._call("update an annotation"):
            self._client().annotations.update(annotation_id, **kwargs)

    # ------------------------------------------------------------------ users

    def list_users(self) -> list[LsUser]:
        """Every user of the organisation."""
        self.check()
        with self._call("list users"):
            users = self._client().users.list()
        return [
            LsUser(id=int(u.id), email=str(u.email or ""), username=str(u.username or ""))
            for u in users
        ]

    def create_user(self, *, email: str, username: str, first_name: str = "") -> LsUser:
        """Create a user account (it cannot log in until it gets a password)."""
        self.check()
        with self._call(f"create the user {email}"):
            u = self._client().users.create(username=username, email=email, first_name=first_name)
        return LsUser(id=int(u.id), email=str(u.email or email), username=str(u.username or ""))

    def invite_link(self) -> str:
        """The organisation's sign-up link (absolute URL)."""
        self.check()
        with self._call("read the invite link"):
            invite = self._client().organizations.invites.get_invite_link()
        link = str(getattr(invite, "invite_url", "") or "")
        return link if link.startswith("http") else f"{self.url}{link}"


def _supported(release: str) -> bool:
    parts = release.split(".")
    try:
        version = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return False
    return MIN_VERSION <= version < MAX_VERSION


def _parse_time(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    text = str(value)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _annotation(raw: Any, task_id: int) -> LsAnnotation:
    data: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else raw.model_dump(mode="json")
    completed_by = data.get("completed_by")
    if isinstance(completed_by, Mapping):  # older servers send the user object
        completed_by = completed_by.get("id")
    lead = data.get("lead_time")
    return LsAnnotation(
        id=int(data["id"]),
        task_id=int(data.get("task") or task_id),
        completed_by=int(completed_by) if completed_by is not None else None,
        result=list(data.get("result") or []),
        lead_time=float(lead) if lead is not None else None,
        created_at=_parse_time(data.get("created_at")),
        updated_at=_parse_time(data.get("updated_at")),
        was_cancelled=bool(data.get("was_cancelled")),
        raw=data,
    )
