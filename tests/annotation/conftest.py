"""Fixtures for the human-studies tests: the Label Studio server and a CLI runner.

Integration tests (``@pytest.mark.labelstudio``) talk to the real server that
``scripts/test.sh`` starts (``scripts/ci/labelstudio.sh``) and find through
``LABEL_STUDIO_URL``/``LABEL_STUDIO_API_KEY``. Without it they are skipped locally with a
reason, but fail in CI (``CI`` set), where skipping would hide a broken setup.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from annotation.client import LabelStudioClient, LabelStudioConnection
from tests.cli_runner import CliOutcome, cli_runner
from tests.pending_servers import ServerScriptFailed, await_pending

# The outcome type under the name this room's tests know.
CliResult = CliOutcome


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run ``driftlens ARGS`` exactly as the console script does (errors → one line, exit code)."""
    return cli_runner(capsys, monkeypatch, wide=False)


@pytest.fixture(scope="session")
def ls_connection() -> LabelStudioConnection:
    """The test server's connection (skip locally / fail in CI when there is none)."""
    try:  # scripts/test.sh starts Label Studio beside the suite: wait for it here
        await_pending("DRIFTLENS_LS_PENDING", script="scripts/ci/labelstudio.sh")
    except ServerScriptFailed as exc:
        pytest.fail(str(exc))
    url = os.environ.get("LABEL_STUDIO_URL", "").strip()
    key = os.environ.get("LABEL_STUDIO_API_KEY", "").strip()
    if not url or not key:
        message = (
            "no Label Studio server: run scripts/test.sh, or "
            'eval "$(scripts/ci/labelstudio.sh)" before pytest'
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Label Studio tests but found {message}")
        pytest.skip(message)
    conn = LabelStudioConnection(url=url.rstrip("/"), api_key=key)
    LabelStudioClient(conn).check()
    return conn


@pytest.fixture
def ls_client(ls_connection: LabelStudioConnection) -> LabelStudioClient:
    """A client on the test server."""
    return LabelStudioClient(ls_connection)


def make_users(client: LabelStudioClient, n: int = 3) -> list[tuple[int, str]]:
    """Create ``n`` fresh users (unique e-mails: the server outlives one test)."""
    tag = uuid.uuid4().hex[:8]
    out = []
    for i in range(n):
        email = f"annotator{i + 1}-{tag}@example.org"
        user = client.create_user(email=email, username=f"ann{i + 1}-{tag}")
        out.append((user.id, email))
    return out


def choices(values: dict[str, str], to_name: str) -> list[dict[str, Any]]:
    """A Label Studio result list answering each question (from_name) with one choice."""
    return [
        {"from_name": name, "to_name": to_name, "type": "choices", "value": {"choices": [v]}}
        for name, v in values.items()
    ]


def annotate_each(
    client: LabelStudioClient,
    users: Sequence[tuple[int, str]],
    tasks: Sequence[Any],
    question: str,
    labels: Sequence[Sequence[str | None]],
    to_name: str = "answer",
) -> None:
    """Each user answers ``question`` on every task with one choice (``None``: skips it).

    Args:
        client: The Label Studio client.
        users: ``make_users``'s users, one per row of ``labels``.
        tasks: The project's tasks, in the order of each row's labels.
        question: The choice control's name (``from_name``).
        labels: One row per user, one choice per task.
        to_name: The object the choice is about.
    """
    for (user, _), values in zip(users, labels, strict=True):
        for task, value in zip(tasks, values, strict=True):
            if value is None:
                continue
            client.create_annotation(
                task.id,
                result=choices({question: value}, to_name),
                completed_by=user,
                lead_time=30.0,
            )


def export_project(conn: LabelStudioConnection, project_id: int) -> list[dict[str, Any]]:
    """Label Studio's own JSON export of a project (plain HTTP, not our client)."""
    import httpx

    resp = httpx.get(
        f"{conn.url}/api/projects/{project_id}/export",
        params={"exportType": "JSON"},
        headers={"Authorization": f"Token {conn.api_key}"},
        timeout=60,
    )
    resp.raise_for_status()
    data = resp.json()
    assert isinstance(data, list)
    return data


def users_by_id(conn: LabelStudioConnection) -> dict[int, str]:
    """User id → e-mail from Label Studio's user list (plain HTTP)."""
    import httpx

    resp = httpx.get(
        f"{conn.url}/api/users",
        headers={"Authorization": f"Token {conn.api_key}"},
        timeout=60,
    )
    resp.raise_for_status()
    body = resp.json()
    rows: Sequence[dict[str, Any]] = body["results"] if isinstance(body, dict) else body
    return {int(u["id"]): str(u["email"]) for u in rows}


LOCAL_SERVER_TEST = "test_local_server_start_push_stop_and_the_stopped_server_message"


@dataclass
class _Prestart:
    """A local server started in the background while other tests run."""

    workspace: Any
    thread: Any
    error: BaseException | None = None


@pytest.fixture(scope="session", autouse=True)
def _prestarted_local_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """Start the local-server test's Label Studio early, in a thread.

    A fresh Label Studio spends most of a minute migrating its database; doing that while
    the other tests run keeps the folder quick. Only when that test is selected, a test
    server is configured (an integration run) and Label Studio is already installed — a
    background install is never started.
    """
    import threading

    from annotation import server

    selected = any(item.name == LOCAL_SERVER_TEST for item in request.session.items)
    configured = os.environ.get("LABEL_STUDIO_URL") or os.environ.get("DRIFTLENS_LS_PENDING")
    if not (selected and configured):
        yield None
        return
    if server.installed_version() != server.LS_VERSION:
        yield None
        return
    ws = tmp_path_factory.mktemp("local-labelstudio")
    box = _Prestart(workspace=ws, thread=None)

    def run() -> None:
        try:
            server.start(ws)
        except BaseException as exc:  # reported by the test that uses it
            box.error = exc

    box.thread = threading.Thread(target=run, name="labelstudio-prestart", daemon=True)
    box.thread.start()
    yield box
    box.thread.join(timeout=300)
    server.stop(ws)


@pytest.fixture
def local_server_workspace(
    _prestarted_local_server: Any, workspace: Any, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """The workspace whose local server was started early (else the test's own)."""
    box = _prestarted_local_server
    if box is None:
        return workspace
    box.thread.join(timeout=300)
    if box.error is not None:
        raise box.error
    monkeypatch.setenv("DRIFTLENS_WORKSPACE", str(box.workspace))
    return box.workspace
