"""One bound on B (and on every count) for every instrument, refused before any work."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from sqlmodel import Session, select

from storage.models import GenerationRun
from tests.limits.conftest import Outcome

STATS = (
    ["stats"],
    ["disposition", "stats"],
    ["sources", "stats"],
    ["conflicts", "stats"],
    ["judges", "calibration"],
)


@pytest.mark.parametrize("command", STATS, ids=lambda c: " ".join(c))
@pytest.mark.parametrize("b", ["1", "1000000000"])
def test_every_stats_command_refuses_the_same_b_in_one_line(
    run_main: Callable[..., Outcome], tmp_path: Path, command: list[str], b: str
) -> None:
    # the table does not exist: a refusal that names it would mean B was checked too late
    res = run_main(*command, str(tmp_path / "absent.csv"), "-B", b)
    line = res.one_line()
    assert res.code == 2 and "--bootstrap" in line and "absent.csv" not in line


@pytest.mark.parametrize("command", STATS[:4], ids=lambda c: " ".join(c))
def test_the_bound_itself_is_accepted(
    run_main: Callable[..., Outcome], tmp_path: Path, command: list[str]
) -> None:
    res = run_main(*command, str(tmp_path / "absent.csv"), "-B", "200")
    # past the option check: the missing table is what stops it now
    assert "absent.csv" in res.one_line()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("generate", "--model", "sim/default", "--run", "g", "--samples", "1000000000"),
         "--samples"),
        (("generate", "--model", "sim/default", "--run", "g", "--temperature", "-1"),
         "--temperature"),
        (("generate", "--model", "sim/default", "--run", "g", "--max-tokens", "-10"),
         "--max-tokens"),
        (("conflicts", "generate", "--model", "sim/default", "--run", "c", "--samples",
          "1000000000"), "--samples"),
        (("conflicts", "generate", "--model", "sim/default", "--run", "c", "--distractors",
          "3..1"), "backwards"),
        (("disposition", "arms", "add", "x", "--model", "sim/disp-qwen-d000", "--dose", "-5"),
         "--dose"),
        (("disposition", "arms", "add", "x", "--model", "sim/disp-qwen-d000", "--dose", "1000"),
         "--dose"),
        (("disposition", "arms", "add", "x", "--model", "sim/disp-qwen-d000", "--max-tokens",
          "-5"), "--max-tokens"),
        (("disposition", "arms", "add", "x", "--model", "sim/disp-qwen-d000", "--samples",
          "1000000000"), "--samples"),
    ],
)  # fmt: skip
def test_counts_and_sizes_are_refused_before_a_run_is_stored(
    db: Callable[[], AbstractContextManager[Session]],
    run_main: Callable[..., Outcome],
    args: tuple[str, ...],
    needle: str,
) -> None:
    # nothing imported: a refusal naming the option (not "no questions") came first
    assert needle in run_main(*args).one_line()
    with db() as session:
        assert session.exec(select(GenerationRun)).all() == []
