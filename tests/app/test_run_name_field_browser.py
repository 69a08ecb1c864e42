"""The run name is checked beside its box on the Memory conflicts and Source reliance
start forms, with the start button disabled until it is valid (issue 37, item 6 / Deliver).

The Runs page already said an empty name or one with a comma under its box; these two
forms took any name and the started job then refused it (or, before the services checked
names, stored a run nobody could name again). In headless chromium: a comma, then an
empty name, then a good one, each committed in the box.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.app.browser_support import (
    Served,
    fill_text,
    main_text,
    no_exception,
    served_workspace,
    wait_for_streamlit,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page
    from sqlmodel import Session

pytestmark = pytest.mark.browser

FORMS = [
    ("conflicts", "Memory conflicts", "Run (answer, judge, report)"),
    ("sources", "Source reliance", "Run (probe, read letters, analyse)"),
]


def _banks(session: Session) -> None:
    from study.conflicts.items import import_bank_file

    import_bank_file(None, session=session)  # the conflicts form needs banks to start


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``driftlens app`` on a workspace with the sample banks and no run."""
    with served_workspace(tmp_path_factory, "run-name-field", fill=_banks) as s:
        yield s


def _enabled(page: Page, label: str) -> bool:
    return bool(page.get_by_role("button", name=label, exact=True).is_enabled())


def _type_name(page: Page, value: str) -> None:
    fill_text(page, "Run name", value)
    page.wait_for_function(  # the rerun the commit started has drawn the form again
        "() => !document.querySelector('[data-stale=\"true\"]')", timeout=60_000
    )
    page.wait_for_timeout(500)


@pytest.mark.parametrize(("path", "title", "button"), FORMS)
def test_a_bad_run_name_is_said_beside_the_box_and_blocks_the_start(
    served: Served, page: Page, path: str, title: str, button: str
) -> None:
    page.goto(f"{served.url}/{path}", wait_until="domcontentloaded")
    wait_for_streamlit(page, title)
    no_exception(page)
    assert _enabled(page, button), f"{button!r} is disabled before any name was typed"

    _type_name(page, "a,b")
    page.get_by_text("holds a comma", exact=False).first.wait_for(timeout=60_000)
    assert not _enabled(page, button)

    _type_name(page, "   ")
    page.get_by_text("must not be empty", exact=False).first.wait_for(timeout=60_000)
    assert not _enabled(page, button)

    _type_name(page, "good-name")
    page.get_by_role("button", name=button, exact=True).and_(page.locator(":enabled")).wait_for(
        timeout=60_000
    )
    text = main_text(page)
    assert "holds a comma" not in text and "must not be empty" not in text, text
    no_exception(page)
