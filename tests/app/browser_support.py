"""What the browser tests share: Debian chromium, a served ``driftlens app``, Streamlit waits.

The fixtures themselves (``browser``) are in ``tests/app/conftest.py``; the helpers here
start the real server on a free 127.0.0.1 port and wait for Streamlit to finish a run.
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
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_app(workspace: Path) -> Iterator[str]:
    """Run ``driftlens app`` on ``workspace`` (its SQLite file) and yield its base URL.

    The free port is only free when it is picked: another process on the machine may take
    it before Streamlit binds it, so a server that exits while starting is started again on
    another port (three tries).
    """
    env = dict(os.environ, DRIFTLENS_WORKSPACE=str(workspace))
    env.pop("DRIFTLENS_DB_URL", None)
    driftlens = Path(sys.executable).with_name("driftlens")
    for attempt in range(3):
        port = free_port()
        proc = subprocess.Popen(
            [str(driftlens), "app", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: nothing of it outlives the test
        )
        url = f"http://127.0.0.1:{port}"
        try:
            if _healthy_within(proc, url, 90):
                yield url
                return
            alive = proc.poll() is None  # did not answer in time: no point in retrying
            _stop(proc)  # first, so reading its output cannot block
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            if alive or attempt == 2:
                pytest.fail(f"driftlens app did not start:\n{out[-3000:]}")
        finally:
            _stop(proc)


def _healthy_within(proc: subprocess.Popen[bytes], url: str, seconds: float) -> bool:
    """Whether the server answers its health check before it exits or time runs out."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> None:
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
    page.wait_for_selector('[data-testid="stMain"]', timeout=60_000)  # type: ignore[attr-defined]
    page.get_by_text(title, exact=False).first.wait_for(timeout=60_000)  # type: ignore[attr-defined]
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
