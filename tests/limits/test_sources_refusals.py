"""``sources run`` refuses a bad option before any run is stored or probe asked (#23 10, 15)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.limits.conftest import Outcome
from tests.limits.failing_server import FailingServer

NO_RUNS = "No source-reliance runs stored yet"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [(("--tier", "3"), "unknown tier 3"), (("--instruction", "x"), "unknown instruction 'x'")],
)
def test_a_refused_option_leaves_no_run_behind(
    workspace: object, run_main: Callable[..., Outcome], extra: tuple[str, ...], needle: str
) -> None:
    res = run_main("sources", "run", "--model", "sim/src-rigid", "--limit", "2", *extra)
    assert needle in res.one_line()
    assert NO_RUNS in run_main("sources", "runs").out


def test_out_that_is_a_file_is_refused_before_any_probe(
    workspace: object, tmp_path: Path, run_main: Callable[..., Outcome]
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    res = run_main(
        "sources", "run", "--model", "sim/src-rigid", "--limit", "2", "--out", str(afile)
    )
    assert "is a file" in res.one_line()
    assert NO_RUNS in run_main("sources", "runs").out


def test_a_failing_endpoint_exits_3_naming_the_failure(
    workspace: object,
    tmp_path: Path,
    run_main: Callable[..., Outcome],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FailingServer("500") as url:
        monkeypatch.setenv("FAIL_BASE_URL", url)
        monkeypatch.setenv("FAIL_API_KEY", "k")
        monkeypatch.setenv("DRIFTLENS_MAX_ATTEMPTS", "1")
        res = run_main("sources", "run", "--model", "openai-api/fail/m", "--limit", "1",
                       "--no-logprobs", "--out", str(tmp_path / "r"))  # fmt: skip
    assert res.code == 3, res
    assert "requests failed" in res.err and "lacks the column" not in res.err
    assert not (tmp_path / "r").exists()
