"""Stored source-reliance runs: written as they go, resumed without duplicates, read back.

The stored run's table is the one ``sources run`` writes as probes.csv, so ``stats --run``
and ``stats probes.csv`` agree exactly; a killed run resumes (two-phase plan included)
without re-asking what it stored.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

import pytest
from sqlmodel import Session, select

from llm.specs import ModelSpec
from storage.errors import ConfigError, NotFoundError
from storage.models import SourceProbe, SourceRun
from study.sources.items import shipped_items
from study.sources.plan import ProbeRecord, SourcesConfig, run_sources
from study.sources.sim.wiring import backend_for
from study.sources.store import load_sources_runs, run_stored_sources, stored_run_table
from tests.sources.holding_server import HoldingSourceServer
from tests.study.counting_server import kill_once_stored

Opener = Callable[[], AbstractContextManager[Session]]


def _probe_rows(session: Session, name: str) -> list[SourceProbe]:
    run = session.exec(select(SourceRun).where(SourceRun.name == name)).one()
    return list(session.exec(select(SourceProbe).where(SourceProbe.run_id == run.id)))


def test_a_run_is_stored_and_stats_and_report_agree_with_its_csv(
    cli, db: Opener, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = ["--bootstrap", "200", "--seed", "3"]
    res = cli(
        "sources", "run", "--model", "sim/src-paper", "--limit", "5", "--run", "r1",
        "--out", str(out), *args,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "Run r1 (done): 0 probes already stored, 65 answered now, 0 failed." in res.output
    with db() as session:
        rows = _probe_rows(session, "r1")
        run = session.exec(select(SourceRun).where(SourceRun.name == "r1")).one()
    assert run.status == "done" and run.simulated and run.model == "sim/src-paper"
    assert run.config["items"]["n"] == 5 and run.config["configs"][0]["instruction"] == "n"
    assert len(rows) == 65
    assert len({(r.instruction, r.tier, r.item_id, r.variant) for r in rows}) == 65
    assert {r.status for r in rows} == {"ok"} and all(r.cache_key for r in rows)
    for r in rows:
        assert r.probs is not None and sum(r.probs.values()) == pytest.approx(1.0)
        assert r.logprobs and r.top and r.prompt_id is not None
        assert (r.tier == 0) == (r.variant == "bare")
        assert r.wrong_letter and r.wrong_letter != r.correct_letter
    # stats on the stored run and on the CSV it wrote: the same numbers
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert cli("sources", "stats", str(out / "probes.csv"), "--json", str(a), *args).exit_code == 0
    res = cli("sources", "stats", "--run", "r1", "--json", str(b), *args)
    assert res.exit_code == 0, res.output
    assert json.loads(a.read_text()) == json.loads(b.read_text())
    # the report from the stored run writes the same folder content
    again = tmp_path / "again"
    res = cli("sources", "report", "--run", "r1", "--out", str(again), *args)
    assert res.exit_code == 0, res.output
    for name in ("probes.csv", "probes.jsonl", "stats.json", "report.md"):
        assert (again / name).read_text() == (out / name).read_text(), name
    listed = cli("sources", "runs")
    assert listed.exit_code == 0 and "r1" in listed.output and "SIMULATED" in listed.output
    # a second run with the same settings asks nothing; other settings are refused
    res = cli("sources", "run", "--model", "sim/src-paper", "--limit", "5", "--run", "r1",
              "--out", str(out), *args)  # fmt: skip
    assert res.exit_code == 0 and "65 probes already stored, 0 answered now" in res.output
    res = cli("sources", "run", "--model", "sim/src-paper", "--limit", "6", "--run", "r1")
    assert isinstance(res.exception, ConfigError) or res.exit_code != 0
    assert "exists with other items" in res.output and "Traceback" not in res.output
    res = cli("sources", "stats", "--run", "nope")
    assert res.exit_code != 0 and "No source-reliance run named 'nope'" in res.output
    res = cli("sources", "stats")
    assert res.exit_code != 0 and "--run NAME" in res.output


def test_resume_asks_only_what_is_missing_and_equals_a_whole_run(session: Session) -> None:
    items = shipped_items()[:6]
    backend = backend_for(ModelSpec.parse("sim/src-selective"), items)
    cfgs = [SourcesConfig(instruction="n"), SourcesConfig(instruction="s")]
    whole = run_stored_sources("w", items, backend, cfgs, session=session)
    assert (whole.answered, whole.failed, whole.status) == (6 * 13 * 2, 0, "done")
    before = stored_run_table("w", session=session)
    # lose two bare probes (and everything after one of them) and some other probes
    rows = _probe_rows(session, "w")
    lost = [
        r
        for r in rows
        if (r.variant == "bare" and r.item_id in (items[0].id, items[3].id))
        or (r.item_id == items[3].id)
        or (r.instruction == "s" and r.variant in ("u-d+", "d+"))
    ]
    for r in lost:
        session.delete(r)
    session.commit()
    again = run_stored_sources("w", items, backend, cfgs, session=session)
    assert again.already_stored == 6 * 13 * 2 - len(lost)
    assert again.answered == len(lost) and again.status == "done"
    after = stored_run_table("w", session=session)
    assert after.equals(before)
    assert len(_probe_rows(session, "w")) == 6 * 13 * 2
    with pytest.raises(ConfigError, match="exists with other settings"):
        run_stored_sources("w", items, backend, cfgs[:1], session=session)
    with pytest.raises(NotFoundError):
        load_sources_runs("nope", session=session)


def test_a_stored_probe_with_another_wrong_option_is_asked_again() -> None:
    items = shipped_items()[:3]
    backend = backend_for(ModelSpec.parse("sim/src-paper"), items)
    full = run_sources(items, backend)
    first = items[0].id
    # the first item's bare probe failed before; its other probes asserted another option
    other = next(
        k for k in items[0].letters if k not in (items[0].answer, full.records[0].wrong_letter)
    )
    done = {
        r.key: (replace(r, wrong_letter=other) if r.item_id == first else r)
        for r in full.records
        if not (r.item_id == first and r.variant == "bare")
    }
    asked: list[ProbeRecord] = []
    again = run_sources(items, backend, done=done, on_record=asked.append)
    assert sorted(r.variant for r in asked) == sorted(
        r.variant for r in full.records if r.item_id == first
    )
    assert {r.item_id for r in asked} == {first}
    assert again.table().equals(full.table())


# ------------------------------------------------------------------ kill and resume


def _count(db_path: Path) -> int:
    with sqlite3.connect(db_path) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM source_probe").fetchone()[0])
        except sqlite3.OperationalError:  # not migrated yet
            return 0


def _user_of(rec: ProbeRecord) -> str:
    return next(m.content for m in reversed(rec.messages) if m.role == "user")


def test_kill_midway_and_resume(workspace: Path, db: Opener, tmp_path: Path) -> None:
    items = shipped_items()[:3]
    per_run = 3 * 13
    env = {**os.environ, "DRIFTLENS_WORKSPACE": str(workspace), "SLOW_API_KEY": "secret-key"}
    out = tmp_path / "out"
    command = [
        sys.executable, "-c", "from app.cli import main; main()",
        "sources", "run", "--model", "openai-api/slow/sim/src-paper", "--limit", "3",
        "--run", "killme", "--concurrency", "2", "--bootstrap", "200", "--out", str(out),
    ]  # fmt: skip
    db_path = workspace / "driftlens.db"
    # the 3 bare probes and 7 others are answered, the rest held until released
    server = HoldingSourceServer(items, answer_first=10)
    with server as url:
        env["SLOW_BASE_URL"] = url
        # committed within the commit interval (2 s) although no further answer arrives
        kill_once_stored(command, env, lambda: _count(db_path), 8)
        with db() as session:
            (killed,) = load_sources_runs("killme", session=session)
        before = [_user_of(r) for r in killed.records]
        assert 8 <= len(before) < per_run
        assert sum(r.variant == "bare" for r in killed.records) == 3
        received_before = server.received

        server.release()
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        counts = Counter(user for user, _seed in server.seen.elements())
    flat = re.sub(r"\s+", " ", done.stdout)
    assert f"{len(before)} probes already stored" in flat, flat
    with db() as session:
        (resumed,) = load_sources_runs("killme", session=session)
        rows = _probe_rows(session, "killme")
        status = session.exec(select(SourceRun.status).where(SourceRun.name == "killme")).one()
    assert status == "done" and len(rows) == per_run
    assert len({(r.tier, r.item_id, r.variant) for r in rows}) == per_run
    # `sources run` sends one seeded request twice past the cache to see whether the endpoint
    # honours seed and temperature (llm/determinism.check_repeat, once per run): those two
    # requests are the check, not a re-ask; every other stored probe is asked exactly once.
    extra = {user: counts[user] - 1 for user in before if counts[user] != 1}
    assert len(extra) <= 1 and set(extra.values()) <= {2, 4}, "a stored probe was requested again"
    assert sum(counts.values()) - received_before <= per_run - len(before) + 2
    # the resumed two-phase run gives what an uninterrupted one gives
    whole = run_sources(items, backend_for(ModelSpec.parse("sim/src-paper"), items))
    assert [(r.variant, r.reading.letter, r.wrong_letter) for r in resumed.records] == [
        (r.variant, r.reading.letter, r.wrong_letter) for r in whole.records
    ]
    assert len((out / "probes.jsonl").read_text().splitlines()) == per_run
    for suffix in ("", "-wal"):
        stored = Path(f"{db_path}{suffix}")
        if stored.exists():
            assert b"secret-key" not in stored.read_bytes()


def test_sources_and_runs_pages_list_stored_runs(session: Session) -> None:
    from tests.app.apptest_support import open_page

    evil = "<script>alert(1)</script>"
    items = shipped_items()[:4]
    name = f"page {evil}"
    run_stored_sources(
        name,
        items,
        backend_for(ModelSpec.parse("sim/src-paper"), items),
        [SourcesConfig()],
        session=session,
    )
    at = open_page("sources.py")
    listed = at.dataframe[0].value
    assert list(listed["name"]) == [name] and int(listed["probes"].iloc[0]) == 52
    # the stored run is the first choice: its statistics are computed and shown
    assert any("52 probes stored" in t.value for t in at.text)
    assert any(line.value.startswith("Source effect:") for line in at.text)
    shown = " ".join(m.value for m in at.markdown) + " ".join(s.value for s in at.subheader)
    assert evil not in shown
    at = open_page("runs.py")
    lines = [df.value for df in at.dataframe if "probes" in df.value.columns]
    assert len(lines) == 1 and list(lines[0]["name"]) == [name]
    assert "No runs yet" in at.info[0].value  # no generation run: the rest stays as it was
