"""tests/app's failure hook reads only a Playwright page (issue 37, left from round three).

The hook attaches what a failed browser test's page showed. It took any argument named
``page`` for a browser page: a parametrized AppTest test whose ``page`` is a file name
(``test_streamlit_pages``) made the hook raise ``AttributeError`` while reporting, which
buried the test's own failure under an internal error.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.app.conftest import pytest_runtest_makereport


def _report_through_hook(page: Any) -> pytest.TestReport:
    item = SimpleNamespace(name="test_x", funcargs={"page": page})
    call = SimpleNamespace(when="call")
    report = pytest.TestReport(
        nodeid="tests/app/x.py::test_x", location=("x.py", 0, "test_x"), keywords={},
        outcome="failed", longrepr="boom", when="call",
    )  # fmt: skip
    gen = pytest_runtest_makereport(item, call)  # type: ignore[arg-type]
    next(gen)
    with pytest.raises(StopIteration) as done:
        gen.send(report)
    got: pytest.TestReport = done.value.value
    return got


@pytest.mark.parametrize("page", ["runs.py", 3, object()])
def test_an_argument_named_page_that_is_no_browser_page_is_left_alone(page: Any) -> None:
    report = _report_through_hook(page)
    assert report.failed and report.longrepr == "boom"
    assert not [s for s in report.sections if s[0] == "what the page showed"]
