"""A run whose requests failed exits 3 with the cause, on every instrument (as generate)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.limits.conftest import Outcome
from tests.limits.failing_server import FailingServer

MODEL = "openai-api/fail/m"


@pytest.fixture(params=["500", "null"])
def failing(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FailingServer]:
    server = FailingServer(request.param)
    with server as url:
        monkeypatch.setenv("FAIL_BASE_URL", url)
        monkeypatch.setenv("FAIL_API_KEY", "k")
        monkeypatch.setenv("DRIFTLENS_MAX_ATTEMPTS", "1")
        yield server


def test_conflicts_generate_against_a_failing_endpoint_exits_3(
    workspace: object, failing: FailingServer, run_main: Callable[..., Outcome]
) -> None:
    assert run_main("conflicts", "import", "--sample").code == 0
    res = run_main("conflicts", "generate", "--model", MODEL, "--run", "f", "--concurrency", "4")
    assert res.code == 3, res
    assert "Traceback" not in res.err
    assert "requests failed" in res.err and "Run the same command again" in res.err
    # a healthy endpoint then completes the run: the failed rows are asked again
    failing.healthy = True
    again = run_main("conflicts", "generate", "--model", MODEL, "--run", "f")
    assert again.code == 0, again
    assert "0 failed; status done" in again.out
