"""A local Label Studio for one workspace: install, start, stop, status.

Label Studio runs from its own virtual environment (its pinned dependencies must not
constrain ours), installed once per machine under ``~/.cache/driftlens`` (or
``$DRIFTLENS_LABELSTUDIO_VENV``), bound to 127.0.0.1, with its data inside the workspace.
The generated admin password and API token live in ``<workspace>/labelstudio/server.json``
with mode 600; they are never printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from storage.errors import ConfigError, ServiceError

LS_VERSION = "1.23.2"
ENV_VENV = "DRIFTLENS_LABELSTUDIO_VENV"
ADMIN_EMAIL = "admin@driftlens.local"
STATE_FILE = "server.json"
DEFAULT_PORT = 8089
#: Seconds Label Studio may go without progress (its log or data folder growing) while it
#: starts; as long as it progresses it is waited for, up to :data:`START_CAP_S`. A fixed
#: 240 s failed under load: at load 10-45 the start took 679 s, migrating all along.
START_TIMEOUT_S = 240.0
#: The longest a start is waited for, progressing or not.
START_CAP_S = 1800.0


@dataclass(frozen=True)
class ServerState:
    """What ``start`` recorded (the file is readable by its owner only)."""

    url: str
    port: int
    pid: int
    data_dir: str
    log_file: str
    admin_email: str
    admin_password: str
    token: str
    version: str = LS_VERSION

    def __repr__(self) -> str:  # the secrets stay out of logs and tracebacks
        return f"ServerState(url={self.url!r}, pid={self.pid}, data_dir={self.data_dir!r})"


@dataclass(frozen=True)
class ServerStatus:
    """Whether the workspace's server is recorded, alive and answering."""

    url: str | None
    pid: int | None
    running: bool
    healthy: bool
    data_dir: str | None
    venv: str


def venv_dir() -> Path:
    """Where Label Studio's own virtual environment lives."""
    env = os.environ.get(ENV_VENV, "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "driftlens" / f"labelstudio-{LS_VERSION}" / "venv"


def server_dir(workspace: Path) -> Path:
    """The workspace folder holding the local server's data, log and state."""
    return workspace / "labelstudio"


def read_state(workspace: Path) -> ServerState | None:
    """The recorded local server, or ``None`` when none was started here."""
    path = server_dir(workspace) / STATE_FILE
    if not path.is_file():
        return None
    try:
        return ServerState(**json.loads(path.read_text("utf-8")))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"The Label Studio state file {path} is damaged; delete it.") from exc


def _write_state(workspace: Path, state: ServerState) -> None:
    path = server_dir(workspace) / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    # Created with mode 600 from the start, so the token is never readable by others.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(asdict(state), fh, indent=2)
    os.chmod(path, 0o600)


def installed_version(venv: Path | None = None) -> str | None:
    """The Label Studio version installed in its virtual environment, if any."""
    py = (venv or venv_dir()) / "bin" / "python"
    if not py.exists():
        return None
    proc = subprocess.run(
        [str(py), "-c", "import importlib.metadata as m; print(m.version('label-studio'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def install(venv: Path | None = None) -> Path:
    """Install Label Studio into its own virtual environment unless it is there already."""
    venv = venv or venv_dir()
    if installed_version(venv) == LS_VERSION:
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run(
        [
            str(venv / "bin" / "python"),
            *("-m", "pip", "install", "-q", "--disable-pip-version-check"),
            f"label-studio=={LS_VERSION}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-1:])
        raise ServiceError(f"pip could not install label-studio=={LS_VERSION} into {venv}: {tail}")
    return venv


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=3) as resp:
            return int(resp.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def answers(url: str) -> bool:
    """Whether a Label Studio server answers its health check at ``url``."""
    return _healthy(url)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _pick_port(preferred: int) -> int:
    if _port_free(preferred):
        return preferred
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def status(workspace: Path) -> ServerStatus:
    """Describe the workspace's local server."""
    state = read_state(workspace)
    if state is None:
        return ServerStatus(None, None, False, False, None, str(venv_dir()))
    running = _alive(state.pid)
    return ServerStatus(
        url=state.url,
        pid=state.pid,
        running=running,
        healthy=running and _healthy(state.url),
        data_dir=state.data_dir,
        venv=str(venv_dir()),
    )


def start(
    workspace: Path, *, port: int | None = None, timeout_s: float = START_TIMEOUT_S
) -> ServerState:
    """Start (installing first if needed) the workspace's Label Studio on 127.0.0.1.

    Starting again while it runs returns the running server. The admin and token are
    generated on the first start and kept: Label Studio creates the admin (and accepts the
    legacy token) only when its data folder is new.

    ``timeout_s`` is an idle budget, not a deadline: the start is waited for while its log
    or data folder keeps growing (a loaded machine migrates slowly), and given up after
    ``timeout_s`` without progress or :data:`START_CAP_S` in all.

    Raises:
        ServiceError: installation failed or the server did not come up.
    """
    previous = read_state(workspace)
    if previous is not None and _alive(previous.pid) and _healthy(previous.url):
        return previous
    venv = install()
    base = server_dir(workspace)
    data_dir = base / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)
    log_file = base / "server.log"
    chosen = _pick_port(port or (previous.port if previous else DEFAULT_PORT))
    url = f"http://127.0.0.1:{chosen}"
    password = previous.admin_password if previous else secrets.token_urlsafe(18)
    token = previous.token if previous else secrets.token_hex(20)
    env = {
        **os.environ,
        "LABEL_STUDIO_USERNAME": ADMIN_EMAIL,
        "LABEL_STUDIO_PASSWORD": password,
        "LABEL_STUDIO_USER_TOKEN": token,
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",
        "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
        "COLLECT_ANALYTICS": "false",
    }
    # Our own settings must not leak into Label Studio's process.
    for key in ("LABEL_STUDIO_URL", "LABEL_STUDIO_API_KEY"):
        env.pop(key, None)
    cmd = [
        str(venv / "bin" / "label-studio"),
        "start",
        "--data-dir",
        str(data_dir),
        "--port",
        str(chosen),
        "--internal-host",
        "127.0.0.1",
        "--host",
        url,
        "--no-browser",
    ]
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # its own group: stop() ends the server and its children
        )
    state = ServerState(
        url=url,
        port=chosen,
        pid=proc.pid,
        data_dir=str(data_dir),
        log_file=str(log_file),
        admin_email=ADMIN_EMAIL,
        admin_password=password,
        token=token,
    )
    _write_state(workspace, state)
    started = time.monotonic()
    idle_since, seen = started, _footprint(log_file, data_dir)
    while (now := time.monotonic()) - idle_since < timeout_s and now - started < START_CAP_S:
        if proc.poll() is not None:
            raise ServiceError(
                f"Label Studio exited while starting (code {proc.returncode}); see {log_file}."
            )
        if _healthy(url):
            return state
        time.sleep(1.0)
        if (grown := _footprint(log_file, data_dir)) != seen:  # still migrating: wait on
            idle_since, seen = time.monotonic(), grown
    _terminate(proc.pid)
    raise ServiceError(
        f"Label Studio did not answer on {url} and made no progress for {timeout_s:.0f} s "
        f"(after {time.monotonic() - started:.0f} s); see {log_file}."
    )


def _footprint(log_file: Path, data_dir: Path) -> tuple[int, int]:
    """Sizes of the start log and the data folder: a start that changes them progresses."""

    def size(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError:
            return 0

    data = sum(size(p) for p in data_dir.rglob("*")) if data_dir.is_dir() else 0
    return size(log_file), data


def _terminate(pid: int, grace_s: float = 20.0) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _alive(pid):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.25)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def stop(workspace: Path) -> bool:
    """Stop the workspace's server; returns whether one was running. Data and token stay."""
    state = read_state(workspace)
    if state is None or not _alive(state.pid):
        return False
    _terminate(state.pid)
    return True


def reset_password(workspace: Path, *, email: str, password: str) -> None:
    """Give a user of the local server a password (API-created users have none).

    Raises:
        ConfigError: no local server was started in this workspace.
        ServiceError: Label Studio's command failed.
    """
    state = read_state(workspace)
    if state is None:
        raise ConfigError(
            "Passwords can be set only on the local server (`driftlens labelstudio start`)."
        )
    env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": state.data_dir}
    proc = subprocess.run(
        [
            str(venv_dir() / "bin" / "label-studio"),
            "reset_password",
            "--username",
            email,
            "--password",
            password,
            "--data-dir",
            state.data_dir,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise ServiceError(f"Label Studio could not set the password of {email}.")
