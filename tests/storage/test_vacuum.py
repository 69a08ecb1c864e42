"""``driftlens vacuum``: freed space goes back to the file; PostgreSQL gets VACUUM ANALYZE."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlmodel import Session

from storage.engine import make_engine
from storage.maintenance import database_bytes, vacuum_database
from storage.migrate import upgrade
from storage.models import Prompt


def _fill_and_free(url: str) -> None:
    """Write ~4 MB of prompt rows, then delete them: the space is free but still held."""
    engine = make_engine(url)
    upgrade(engine)
    with Session(engine) as session:
        big = "x" * 2000
        session.add_all(
            Prompt(hash=f"h{i}", messages=[{"role": "user", "content": f"{big}{i}"}])
            for i in range(2000)
        )
        session.commit()
        session.execute(text("DELETE FROM prompt"))
        session.commit()


def test_sqlite_vacuum_shrinks_the_file_and_reports_both_sizes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v.db'}"
    _fill_and_free(url)
    engine = make_engine(url)
    held = database_bytes(engine)
    result = vacuum_database(engine)
    assert result.dialect == "sqlite"
    assert result.bytes_before == held
    assert result.bytes_after == database_bytes(engine)
    assert result.bytes_after < result.bytes_before - 3_000_000
    # ANALYZE ran: the planner's statistics table exists and describes our tables.
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM sqlite_stat1")).scalar_one() > 0


def test_vacuum_command_prints_sizes_and_json(
    cli: Callable[..., Any], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path = workspace / "driftlens.db"
    monkeypatch.setenv("DRIFTLENS_DB_URL", f"sqlite:///{db_path}")
    _fill_and_free(f"sqlite:///{db_path}")
    result = cli("vacuum")
    assert result.exit_code == 0, result.output
    assert "before" in result.output and "after" in result.output and "MB" in result.output
    again = cli("vacuum", "--json")
    assert again.exit_code == 0, again.output
    payload = json.loads(again.output)
    assert payload["dialect"] == "sqlite" and payload["version"] == 1
    assert payload["bytes_after"] <= payload["bytes_before"]
    assert payload["freed"] == payload["bytes_before"] - payload["bytes_after"]


def test_postgres_vacuum_analyze_runs_and_reports_sizes(
    pg_url: str, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill_and_free(pg_url)
    monkeypatch.setenv("DRIFTLENS_DB_URL", pg_url)
    result = cli("vacuum", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["dialect"] == "postgresql"
    assert payload["bytes_before"] > 0 and payload["bytes_after"] > 0
    with make_engine(pg_url).connect() as conn:
        vacuumed, analyzed = conn.execute(
            text(
                "SELECT last_vacuum IS NOT NULL, last_analyze IS NOT NULL "
                "FROM pg_stat_user_tables WHERE relname = 'prompt'"
            )
        ).one()
    assert vacuumed and analyzed
