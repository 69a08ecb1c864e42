"""Fixtures: a chaos server per module, a fresh SQLite cache database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, SQLModel, create_engine

from tests.llm.chaos_server import ChaosServer


@pytest.fixture(scope="module")
def chaos_server() -> Iterator[ChaosServer]:
    """One chaos server for a test module (counters reset by ``chaos``)."""
    server = ChaosServer(ok_delay_s=0.02, slow_s=3.0)
    with server:
        yield server


@pytest.fixture
def chaos(chaos_server: ChaosServer) -> ChaosServer:
    """The module's chaos server with fresh counters."""
    chaos_server.reset()
    return chaos_server


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh SQLite file with every table (``create_all`` only in tests)."""
    import storage.models  # noqa: F401 - registers the tables on SQLModel.metadata

    path = tmp_path / "cache.db"
    engine = create_engine(f"sqlite:///{path}")
    SQLModel.metadata.create_all(engine)
    engine.dispose()
    return path


@pytest.fixture
def session(db_path: Path) -> Iterator[Session]:
    """A session on the test database."""
    engine = create_engine(f"sqlite:///{db_path}")
    with Session(engine) as s:
        yield s
    engine.dispose()
