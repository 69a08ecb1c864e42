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


def _probe_table(tmp_path: Path, run_main: Callable[..., Outcome]) -> Path:
    out = tmp_path / "r"
    res = run_main("sources", "run", "--model", "sim/src-rigid", "--limit", "4",
                   "--bootstrap", "200", "--out", str(out))  # fmt: skip
    assert res.code == 0, res
    return out / "probes.csv"


def test_sources_stats_refuses_letters_outside_the_choices_and_imports_are_checked(
    workspace: object, tmp_path: Path, run_main: Callable[..., Outcome]
) -> None:
    import pandas as pd

    table = _probe_table(tmp_path, run_main)
    df = pd.read_csv(table, keep_default_na=False)
    for col, value in (("choice", "ZZ"), ("choice", "Z"), ("wrong_choice", "Q")):
        bad = df.copy()
        row = int((bad["variant"] != "bare").to_numpy().argmax())
        bad.loc[row, col] = value
        path = tmp_path / f"bad-{col}-{value}.csv"
        bad.to_csv(path, index=False)
        line = run_main("sources", "stats", str(path), "-B", "200").one_line()
        assert f"line {row + 2}" in line and repr(value) in line
    # items: a null id is refused, not stored as "None"
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": null, "question": "q?", "choices": ["a", "b"], "answer": "A"}\n')
    assert "line 1" in run_main("sources", "items", str(items)).one_line()
    # claims: an empty file, and a claim for an id no item has
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert "no claims" in run_main("sources", "claims-import", str(empty), "--set", "x").one_line()
    stray = tmp_path / "stray.jsonl"
    stray.write_text('{"id": "no-such-item", "claim": "The answer is [answer]."}\n')
    line = run_main("sources", "claims-import", str(stray), "--set", "x").one_line()
    assert "line 1" in line and "no-such-item" in line
