"""An endpoint whose logprobs cannot be read stops a source-reliance run in one line.

The server is the ``src-*`` simulator over real HTTP with its logprobs dropped, cut to
fewer alternatives than asked for, or moved to other positions (the prompt's): the run
exits non-zero with one sentence, no traceback, and no probe stored as a success. Text
reading still works when it is asked for (``--no-logprobs``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select
from typer.testing import Result

from llm.specs import ModelSpec
from storage.models import SourceProbe, SourceRun
from study.sources.items import shipped_items
from tests.sources.holding_server import HoldingSourceServer


class BrokenLogprobsServer(HoldingSourceServer):
    """The simulator's answers with their logprobs broken in one way (``mode``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        super().__init__(shipped_items()[:4])

    def answer(self, body: dict[str, Any], user: str) -> dict[str, Any]:
        out = super().answer(body, user)
        choice = out["choices"][0]
        if self.mode == "none":
            choice.pop("logprobs", None)
        elif self.mode == "short":
            for pos in choice["logprobs"]["content"]:
                pos["top_logprobs"] = pos["top_logprobs"][:3]
        elif self.mode == "misplaced":
            prompt: list[dict[str, Any]] = [
                {"token": w, "logprob": -1.0, "top_logprobs": []} for w in ("Q", ":")
            ]
            content = choice["logprobs"]["content"]
            choice["logprobs"]["content"] = [
                {**p, "top_logprobs": content[0]["top_logprobs"]} for p in prompt
            ]
        return out


def _run(
    cli: Callable[..., Result], url: str, monkeypatch: pytest.MonkeyPatch, *extra: str
) -> Result:
    monkeypatch.setenv("BROKEN_BASE_URL", url)
    monkeypatch.setenv("BROKEN_API_KEY", "k")
    return cli(
        "sources", "run", "--model", "openai-api/broken/sim/src-paper", "--limit", "4",
        "--run", "broken", "--bootstrap", "200", "--concurrency", "4", *extra,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("none", "returned no logprobs for 4 of 4 answers"),
        ("short", "returned 3 alternatives per position where 20 were asked for"),
        ("misplaced", "logprobs for other positions than the generated tokens"),
    ],
)
def test_unreadable_logprobs_stop_the_run_with_nothing_stored(
    mode: str,
    says: str,
    cli: Callable[..., Result],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with BrokenLogprobsServer(mode) as url:
        result = _run(cli, url, monkeypatch)
    assert result.exit_code != 0
    # one line says why; before it, stdout said only the plan's size (4 items x 13 probes)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert says in lines[0] and "--no-logprobs" in lines[0]
    assert [ln for ln in result.stdout.splitlines() if ln.strip()] == [
        "Plan: 4 items x 13 variants x 1 tiers x 1 instructions (bare once per instruction) "
        "= 52 requests"
    ], result.stdout
    assert "Traceback" not in result.output
    run = session.exec(select(SourceRun).where(SourceRun.name == "broken")).one()
    assert run.status == "failed"
    assert list(session.exec(select(SourceProbe).where(SourceProbe.run_id == run.id))) == []


def test_text_reading_when_asked_for_runs_on_the_same_endpoint(
    cli: Callable[..., Result],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    with BrokenLogprobsServer("none") as url:
        result = _run(cli, url, monkeypatch, "--no-logprobs", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    run = session.exec(select(SourceRun).where(SourceRun.name == "broken")).one()
    rows = list(session.exec(select(SourceProbe).where(SourceProbe.run_id == run.id)))
    assert len(rows) == 4 * 13 and all(r.status == "ok" for r in rows)


def test_answers_missing_the_asked_logprobs_are_not_cached(session: Session) -> None:
    from llm.backends import get_backend
    from storage.models import LLMCacheEntry
    from study.sources.first_batch import LogprobsUnusable
    from study.sources.plan import SourcesConfig, run_sources

    with BrokenLogprobsServer("none") as url:
        env = {"BROKEN_BASE_URL": url, "BROKEN_API_KEY": "k"}
        backend = get_backend(ModelSpec.parse("openai-api/broken/sim/src-paper"), env=env)
        items = shipped_items()[:2]
        with pytest.raises(LogprobsUnusable):
            run_sources(items, backend, config=SourcesConfig(), session=session)
        session.commit()
        assert list(session.exec(select(LLMCacheEntry))) == []
        # asked without logprobs, the same answers are complete and cached
        run_sources(items, backend, config=SourcesConfig(logprobs=False), session=session)
        session.commit()
        assert len(list(session.exec(select(LLMCacheEntry)))) == 2 * 13


def test_an_all_unknown_table_is_not_assessable(tmp_path: Path) -> None:
    """The issue's case: every letter unknown must not read as a bounded null effect."""
    from study.sources.analysis import analyze_sources_table
    from study.sources.plan import SourcesConfig, run_sources
    from study.sources.report import effect_lines, write_sources_report
    from study.sources.sim.wiring import backend_for

    items = shipped_items()[:6]
    run = run_sources(
        items, backend_for(ModelSpec.parse("sim/src-paper"), items), config=SourcesConfig()
    )
    table = run.table()
    ok = analyze_sources_table(table, bootstrap=20, seed=0).to_dict()
    (cell,) = ok["models"]["sim/src-paper"].values()
    assert cell["usable"]["assessable"] and cell["source_effect"]["available"]
    table["choice"] = "unknown"
    result = analyze_sources_table(table, bootstrap=20, seed=0).to_dict()
    (cell,) = result["models"]["sim/src-paper"].values()
    assert cell["usable"] == {**cell["usable"], "usable": 0, "total": 78, "assessable": False}
    assert not cell["source_effect"]["available"] and not cell["order_conflict"]["available"]
    assert all(b["type"] is None for b in cell["behaviour"].values())
    (line,) = effect_lines(cell)
    assert "not assessable: only 0 of 78 probes letter-read (0%)" in line
    files = write_sources_report(result, table, tmp_path)
    text = files.markdown.read_text()
    assert "not assessable" in text and "bound the shift" not in text


class SeedIgnoringServer(HoldingSourceServer):
    """The simulator, but every second answer is its runner-up letter, whatever the seed:
    what an endpoint sampling at its own temperature does."""

    def __init__(self) -> None:
        self.draws = 0
        super().__init__(shipped_items()[:4])

    def answer(self, body: dict[str, Any], user: str) -> dict[str, Any]:
        out = super().answer(body, user)
        self.draws += 1
        if self.draws % 2 == 0:
            choice = out["choices"][0]
            pos = choice["logprobs"]["content"][0]
            top = pos["top_logprobs"]
            top[0]["logprob"], top[1]["logprob"] = top[1]["logprob"], top[0]["logprob"]
            top[0], top[1] = top[1], top[0]
            pos["token"], pos["logprob"] = top[0]["token"], top[0]["logprob"]
            choice["message"]["content"] = top[0]["token"]
        return out


def test_an_endpoint_ignoring_the_seed_is_named_in_the_summary(session: Session) -> None:
    from llm.backends import get_backend
    from study.sources.plan import SourcesConfig
    from study.sources.store import run_stored_sources

    items = shipped_items()[:1]
    for server, name, warned in (
        (HoldingSourceServer(items), "a", False),
        (SeedIgnoringServer(), "b", True),
    ):
        with server as url:
            env = {"BROKEN_BASE_URL": url, "BROKEN_API_KEY": "k"}
            backend = get_backend(ModelSpec.parse("openai-api/broken/sim/src-paper"), env=env)
            summary = run_stored_sources(name, items, backend, [SourcesConfig()], session=session)
        assert summary.answered == 13
        if warned:
            assert summary.repeat_warning is not None
            assert summary.repeat_warning.startswith(
                "openai-api/broken/sim/src-paper ignores seed or temperature"
            )
        else:
            assert summary.repeat_warning is None
