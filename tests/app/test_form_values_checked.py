"""A value typed out of range in a launch form is refused beside its box, and the button
that starts the work stays disabled (issue 37, item 2), through ``AppTest``.

In the browser, Streamlit's bounded number box kept an out-of-range value in a red box
while the page went on with the previous value: a job then ran with a number nobody had
asked for. Each case types 10⁹ into one box of a page's launch form.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from tests.app.apptest_support import open_page, unescape

HUGE = 1_000_000_000


def _banks() -> None:
    from study.conflicts.items import import_bank_file

    with open_workspace_session(resolve_settings()) as session:
        import_bank_file(None, session=session)


def _nothing() -> None:
    return None


CASES: list[tuple[str, str, str, Callable[[], None]]] = [
    ("runs.py", "Samples", "Generate and label", _nothing),
    ("conflicts.py", "Samples per bank and dose", "Run (answer, judge, report)", _banks),
    ("conflicts.py", "Bootstrap replicates", "Run (answer, judge, report)", _banks),
    ("sources.py", "Bootstrap replicates", "Run (probe, read letters, analyse)", _nothing),
    ("disposition.py", "Samples per probe", "Add arms to the study", _nothing),
]


@pytest.mark.parametrize(("page_file", "box", "button", "fill"), CASES)
def test_an_out_of_range_value_is_said_and_the_button_disabled(
    page_file: str, box: str, button: str, fill: Callable[[], None]
) -> None:
    fill()
    at = open_page(page_file)
    start = next(b for b in at.button if b.label == button)
    assert not start.disabled, f"{button!r} is disabled before any value was typed"
    next(n for n in at.number_input if n.label == box).set_value(HUGE).run()
    assert not at.exception, [e.value for e in at.exception]
    said = [unescape(str(e.value)) for e in at.error]
    assert any(
        s.startswith(f"{box} must lie in ") and s.endswith("not 1,000,000,000.") for s in said
    ), said
    assert next(b for b in at.button if b.label == button).disabled
