"""Nothing a page loads comes from outside the machine (issue 37, item 12).

``driftlens app`` serves a copy of the demo workspace; every registered page is opened in
headless chromium with every request the browser makes recorded (documents, scripts, fonts,
the tab's icon, images, websockets). A request to any host other than 127.0.0.1 fails the
test, naming the page and the address: offline, such a request fails, and online it sends
what the researcher looks at to a third party.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from app.ui.navigation import DEFAULT_PAGE, SECTIONS
from tests.app.browser_support import (
    PageOptions,
    Served,
    browser_page,
    served_workspace,
    wait_for_streamlit,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser

PAGES = [(file, title) for pages in SECTIONS.values() for file, title, _ in pages]
#: Schemes that name no host: inline data and the page's own objects.
HOSTLESS = {"data", "blob", "about"}

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(
    demo_workspace: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """``driftlens app`` on a copy of the demo workspace."""
    with served_workspace(tmp_path_factory, "offline-requests", copy_of=demo_workspace[0]) as s:
        yield s


def foreign_requests(urls: list[str]) -> list[str]:
    """The URLs among ``urls`` whose host is not 127.0.0.1 (host-less schemes aside)."""
    out = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme in HOSTLESS:
            continue
        if parts.hostname != "127.0.0.1":
            out.append(url)
    return out


def test_foreign_requests_tells_hosts_apart() -> None:
    urls = [
        "http://127.0.0.1:8501/static/js/index.js",
        "ws://127.0.0.1:8501/_stcore/stream",
        "data:image/svg+xml,<svg/>",
        "https://fonts.gstatic.com/s/i/short-term/release/materialsymbolsrounded/home/default/24px.svg",
        "http://localhost:8501/",
        "http://127.0.0.1.example.com/x",
    ]
    assert foreign_requests(urls) == urls[3:]


@pytest.mark.parametrize(("file", "title"), PAGES)
def test_page_requests_only_this_machine(
    served: Served, browser: Browser, file: str, title: str
) -> None:
    urls: list[str] = []
    with browser_page(browser, PageOptions(height=1000)) as page:
        page.on("request", lambda request: urls.append(request.url))
        page.on("websocket", lambda ws: urls.append(ws.url))
        path = "" if file == DEFAULT_PAGE else Path(file).stem
        page.goto(f"{served.url}/{path}", wait_until="domcontentloaded")
        wait_for_streamlit(page, "DriftLens Workbench" if file == DEFAULT_PAGE else title)
        # the tab's icon is set after the page's first run: give late requests a moment
        page.wait_for_timeout(1500)
    assert urls, "no request was recorded: the recorder is not working"
    assert not foreign_requests(urls), f"{file} asked outside 127.0.0.1: {foreign_requests(urls)}"
