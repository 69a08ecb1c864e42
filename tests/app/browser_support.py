"""What the browser tests share: Debian chromium, a served ``driftlens app``, Streamlit waits.

The fixtures themselves (``browser``, ``page``) are in ``tests/app/conftest.py``; the helpers here
make a module's workspace, start the real server on a free 127.0.0.1 port, open a page in
a fresh browser context, wait for Streamlit to finish a run and read what the page shows.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from storage.settings import Settings, default_db_url, resolve_settings
from storage.workspace import open_workspace_session

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page
    from sqlmodel import Session

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Where the browser tests leave screenshots (CI keeps the folder).
ARTIFACTS_ROOT = Path(__file__).resolve().parents[2] / "test-artifacts"

#: Flags of the headless chromium: no sandbox (containers), no GPU, nothing in the background.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    """Skip (fail under CI) when Debian chromium is not installed."""
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI"):
        pytest.fail("Debian chromium is missing; scripts/test.sh installs it")
    pytest.skip("Debian chromium is not installed (scripts/test.sh installs it)")


def browser_workspace(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    *,
    copy_of: Path | None = None,
    fill: Callable[[Session], object] | None = None,
) -> Settings:
    """A browser module's workspace: new, or a copy of ``copy_of`` (less its lock files).

    Skips (fails under CI) first when chromium is missing, so nothing is built for nothing.

    Args:
        tmp_path_factory: pytest's, for the folder (named after ``name``).
        name: What the folder is called.
        copy_of: A workspace to copy instead of starting empty.
        fill: Called once with a session on the workspace, which is then committed.
    """
    require_chromium()
    ws = tmp_path_factory.mktemp(name)
    if copy_of is not None:
        ws = ws / "copy"
        shutil.copytree(copy_of, ws, ignore=shutil.ignore_patterns("*.lock"))
    settings = resolve_settings(workspace=ws, db_url=default_db_url(ws))
    if fill is not None:
        with open_workspace_session(settings) as session:
            fill(session)
    return settings


@dataclass(frozen=True)
class Served:
    """A browser module's workspace and the ``driftlens app`` serving it.

    Attributes:
        url: The server's base URL.
        settings: The workspace's settings (its SQLite file).
    """

    url: str
    settings: Settings


@contextmanager
def served_workspace(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    *,
    copy_of: Path | None = None,
    fill: Callable[[Session], object] | None = None,
) -> Iterator[Served]:
    """A module's workspace (see ``browser_workspace``, whose arguments these are), served."""
    settings = browser_workspace(tmp_path_factory, name, copy_of=copy_of, fill=fill)
    with serve_app(settings.workspace) as url:
        yield Served(url=url, settings=settings)


@dataclass(frozen=True)
class PageOptions:
    """How a test's browser page is opened.

    Attributes:
        height: The viewport's height in pixels (it is 1400 wide).
        downloads: Whether the page's context accepts downloads.
        page_errors: Whether a JavaScript error on the page fails the test (after it ran).
    """

    height: int = 1100
    downloads: bool = False
    page_errors: bool = True


@contextmanager
def browser_page(browser: Browser, options: PageOptions = PageOptions()) -> Iterator[Page]:
    """A page in a fresh browser context, closed afterwards (the ``page`` fixture's)."""
    context = browser.new_context(
        viewport={"width": 1400, "height": options.height},
        accept_downloads=options.downloads,
    )
    # Playwright's 30 s default is short for a first visit on a loaded 2-core CI machine
    # (a fresh server's imports, the simulators and the other servers share the cores).
    context.set_default_timeout(60_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    if options.page_errors:
        assert not errors, errors


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_app(workspace: Path, db_url: str | None = None) -> Iterator[str]:
    """Run ``driftlens app`` on ``workspace`` and yield its base URL.

    The database is the workspace's SQLite file, or ``db_url`` where given (e.g. a
    PostgreSQL study too large for a file, as ``bench/page_render.py --db-url`` serves).
    The server's output goes to ``test-artifacts/servers/<workspace>-<port>.log`` (CI keeps
    the folder): a file, never a pipe nobody reads, which a chatty server would fill and
    then block on.

    The free port is only free when it is picked: another process on the machine may take
    it before Streamlit binds it, so a server that exits while starting is started again on
    another port (three tries).
    """
    logs = ARTIFACTS_ROOT / "servers"
    logs.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        port = free_port()
        log = logs / f"{workspace.parent.name}-{workspace.name}-{port}.log"
        proc = start_driftlens("app", "--port", str(port), env=app_env(workspace, db_url), log=log)
        url = f"http://127.0.0.1:{port}"
        try:
            if healthy_within(proc, url, 90):
                yield url
                return
            alive = proc.poll() is None  # did not answer in time: no point in retrying
            stop_driftlens(proc)
            if alive or attempt == 2:
                out = log.read_text(errors="replace")
                pytest.fail(f"driftlens app did not start (its output is in {log}):\n{out[-3000:]}")
        finally:
            stop_driftlens(proc)


def app_env(workspace: Path, db_url: str | None = None) -> dict[str, str]:
    """This process's environment with ``workspace`` as the workspace.

    The database is the workspace's SQLite file unless ``db_url`` names another.
    """
    env = dict(os.environ, DRIFTLENS_WORKSPACE=str(workspace))
    env.pop("DRIFTLENS_DB_URL", None)
    if db_url:
        env["DRIFTLENS_DB_URL"] = db_url
    return env


def start_driftlens(
    *args: str, env: dict[str, str] | None = None, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start this environment's ``driftlens`` with ``args`` in its own process group.

    Args:
        *args: The command line after ``driftlens``.
        env: Its environment (default: this process's).
        log: A file for its output (stdout and stderr together); else it is discarded.
    """
    # The child keeps its own copy of the log's descriptor; ours is closed once it started.
    with log.open("ab") if log is not None else nullcontext(subprocess.DEVNULL) as out:
        return subprocess.Popen(
            [str(Path(sys.executable).with_name("driftlens")), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: nothing of it outlives the test
        )


def answers_within(
    proc: subprocess.Popen[bytes], probe: Callable[[], object], seconds: float
) -> bool:
    """Whether ``probe`` returns without an ``OSError`` before ``proc`` exits or time runs out."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            probe()
            return True
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def healthy_within(proc: subprocess.Popen[bytes], url: str, seconds: float) -> bool:
    """Whether the Streamlit server at ``url`` answers its health check in time."""

    def probe() -> None:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
            pass  # an answer other than 2xx raises HTTPError, an OSError

    return answers_within(proc, probe, seconds)


def stop_driftlens(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process ``start_driftlens`` started, and anything left in its group."""
    proc.terminate()  # driftlens app passes it on to its Streamlit child
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # anything left in the group


def wait_for_streamlit(page: object, title: str) -> None:
    """Wait until the page's title is shown and Streamlit has stopped running the script."""
    main = page.locator('[data-testid="stMain"]')  # type: ignore[attr-defined]
    main.wait_for(timeout=60_000)
    # In the main area: the sidebar's navigation names every page before the script has
    # drawn anything, and an empty main area also "stays the same" below.
    # A visible match: a data frame's column header of the same word is in the page twice,
    # once hidden (the grid's accessible table), and the hidden one may come first.
    main.get_by_text(title, exact=False).filter(visible=True).first.wait_for(timeout=90_000)
    # While the script runs, the status widget shows a running icon (after a short delay)
    # or offers a "Stop" button, the elements of the previous run are marked stale, and
    # widgets not loaded yet are skeletons. Wait until the page looks idle and its text
    # stays the same for about a second (a rerun may start right after a run).
    deadline = time.monotonic() + 90
    quiet, last = 0, None
    while quiet < 5:
        page.wait_for_function(IDLE_JS, timeout=60_000)  # type: ignore[attr-defined]
        text = page.evaluate(MAIN_TEXT_JS)  # type: ignore[attr-defined]
        quiet = quiet + 1 if text == last else 0
        last = text
        if time.monotonic() > deadline:
            raise TimeoutError("Streamlit did not settle within 90 s")
        page.wait_for_timeout(250)  # type: ignore[attr-defined]


def no_exception(page: Page) -> None:
    """Fail with its text when the page shows Streamlit's exception box."""
    boxes = page.locator('[data-testid="stException"]')
    assert boxes.count() == 0, boxes.first.inner_text()


def main_text(page: Page) -> str:
    """The text of the page's main area."""
    return str(page.locator('[data-testid="stMain"]').inner_text())


def page_state(page: Page, screenshot: Path) -> str:
    """The page's URL, whether Streamlit is idle and its main area's text, for a failure
    report; saves a full-page screenshot to ``screenshot``. Best effort: it never raises
    (the page may be gone, and the report must still be written)."""
    lines = [f"url: {page.url}"]
    screenshot.parent.mkdir(parents=True, exist_ok=True)

    def shoot() -> Path:
        page.screenshot(path=str(screenshot), full_page=True, timeout=15_000)
        return screenshot

    steps: list[tuple[str, Callable[[], object]]] = [
        ("screenshot", shoot),
        ("idle", lambda: page.evaluate(IDLE_JS)),
        ("main area", lambda: "\n" + str(page.evaluate(MAIN_TEXT_JS))[-4000:]),
    ]
    for name, step in steps:
        try:
            lines.append(f"{name}: {step()}")
        except Exception as exc:
            lines.append(f"{name}: (could not read it: {type(exc).__name__}: {exc})")
    return "\n".join(lines)


def fill_text(page: Page, label: str, value: str) -> None:
    """Type ``value`` into the text input labelled ``label`` and commit it."""
    box = page.get_by_label(label, exact=True).first
    box.fill(value)
    box.press("Enter")  # Streamlit commits a text input on Enter or blur
    page.wait_for_timeout(300)


#: The main area's text, less the progress of background work (it ticks every second).
MAIN_TEXT_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return '';
  let text = main.innerText;
  const ticking = '[class*="st-key-round-progress"], [class*="st-key-job-progress"]';
  for (const el of main.querySelectorAll(ticking)) {
    text = text.replace(el.innerText, '');
  }
  return text;
}"""

#: True when Streamlit is not running the script and shows no stale or unloaded element.
IDLE_JS = """() => {
  const widget = document.querySelector('[data-testid="stStatusWidget"]');
  const stop = widget && Array.from(widget.querySelectorAll('button'))
    .some(b => b.innerText.includes('Stop'));
  const busy = document.querySelector(
    '[data-testid="stStatusWidgetRunningIcon"], [data-stale="true"], '
    + '[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]');
  return !stop && !busy;
}"""


def pick_option(page: object, opener: object, pattern: re.Pattern[str], *, tries: int = 4) -> None:
    """Open a Streamlit dropdown with ``opener`` and click the option whose name matches.

    A rerun that starts while the dropdown is open (a text box committing its value on blur,
    a page still finishing under load) closes the dropdown before the option can be clicked.
    So each try waits for the page to be idle, opens the list and waits a short while for the
    option; when it does not appear the list is closed and the try repeated. An option that is
    really missing still fails, naming the options that were offered.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    seen: list[str] = []
    for _ in range(tries):
        page.wait_for_function(IDLE_JS, timeout=60_000)  # type: ignore[attr-defined]
        opener.click()  # type: ignore[attr-defined]
        option = page.get_by_role("option", name=pattern).first  # type: ignore[attr-defined]
        try:
            option.wait_for(state="visible", timeout=8_000)
            option.click(timeout=8_000)
            return
        except PlaywrightTimeoutError:
            seen = [str(t) for t in page.get_by_role("option").all_inner_texts()]  # type: ignore[attr-defined]
            page.keyboard.press("Escape")  # type: ignore[attr-defined]
            page.wait_for_timeout(500)  # type: ignore[attr-defined]
    raise AssertionError(f"no option matching {pattern.pattern!r}; offered: {seen}")


def download_bytes(page: object, button: str, *, tries: int = 3, timeout_s: float = 40.0) -> bytes:
    """Click the download button named ``button`` and return the file's bytes.

    A click that lands while Streamlit is still rerunning the page (or before the button is
    wired up) starts no download. So each try waits for the page to be idle, clicks, and
    waits up to ``timeout_s`` for the download. A deferred button whose answer never came
    stays disabled (spinning) for the browser's 180 s, so a try after a failed one reloads
    the page first (its state is in the URL) and says so in a warning. A button that never
    downloads still fails, after ``tries`` clicks.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    for attempt in range(tries):
        if attempt:
            warnings.warn(
                f"{button!r} started no download in {timeout_s:.0f} s; reloading the page "
                f"for try {attempt + 1} of {tries}",
                stacklevel=2,
            )
            page.reload(wait_until="domcontentloaded")  # type: ignore[attr-defined]
            page.locator('[data-testid="stMain"]').wait_for()  # type: ignore[attr-defined]
        page.wait_for_function(IDLE_JS, timeout=60_000)  # type: ignore[attr-defined]
        target = page.get_by_role("button", name=button, exact=True).first  # type: ignore[attr-defined]
        target.wait_for()
        try:
            with page.expect_download(timeout=timeout_s * 1000) as info:  # type: ignore[attr-defined]
                target.click()
        except PlaywrightTimeoutError:
            if attempt == tries - 1:
                raise AssertionError(
                    f"{button!r} started no download in {tries} clicks of {timeout_s:.0f} s"
                ) from None
            continue
        path = info.value.path()
        assert path is not None
        return Path(path).read_bytes()
    raise AssertionError("unreachable")  # pragma: no cover
