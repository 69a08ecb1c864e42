"""Alembic owns the schema: migrations apply, are idempotent and match the models."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

import storage.models  # noqa: F401
from storage import migrate
from storage.engine import make_engine


def test_fresh_sqlite_upgrades_to_head(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    assert migrate.current_revision(engine) is None
    assert migrate.upgrade(engine) == migrate.head_revision()
    tables = set(inspect(engine).get_table_names())
    assert tables == set(SQLModel.metadata.tables) | {"alembic_version"}


def test_upgrade_twice_is_a_noop(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO workspace_meta (key, value, updated_at) "
                "VALUES ('a', 'b', '2026-01-01')"
            )
        )
    assert migrate.upgrade(sqlite_url) == migrate.head_revision()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM workspace_meta")).scalar_one() == "b"
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1


def test_migrated_schema_equals_models(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrate.upgrade(engine)
    assert migrate.schema_diff(engine) == []


def test_downgrade_to_base_and_back(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrate.upgrade(engine)
    assert migrate.downgrade(engine, "base") is None
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(engine)
    assert migrate.schema_diff(engine) == []


def test_single_head() -> None:
    # Two engineers adding revisions in parallel must merge them, not leave two heads.
    script = ScriptDirectory.from_config(migrate.alembic_config())
    assert len(script.get_heads()) == 1


def test_runs_from_any_cwd(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert migrate.upgrade(sqlite_url) == migrate.head_revision()
    assert migrate.MIGRATIONS_DIR.is_absolute()


def test_module_cli(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert migrate.main(["--db", sqlite_url, "upgrade"]) == 0
    assert migrate.main(["--db", sqlite_url, "current"]) == 0
    assert migrate.main(["heads"]) == 0
    lines = capsys.readouterr().out.split()
    assert lines == [migrate.head_revision()] * 3


def test_offline_sql_mentions_every_table(capsys: pytest.CaptureFixture[str]) -> None:
    from alembic import command

    cfg = migrate.alembic_config("sqlite:///ignored.db")
    command.upgrade(cfg, "head", sql=True)
    out = capsys.readouterr().out
    for name in SQLModel.metadata.tables:
        assert f"CREATE TABLE {name}" in out


def test_concurrent_upgrades_of_a_fresh_file_do_not_collide(tmp_path: Path) -> None:
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    code = "import sys; from storage.migrate import upgrade; print(upgrade(sys.argv[1]))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:  # a timed-out upgrade must not outlive the test
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in results]
    assert {out.strip() for out, _ in results} == {migrate.head_revision()}
    assert migrate.schema_diff(make_engine(url)) == []
