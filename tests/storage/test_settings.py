"""Settings resolution: arguments, then environment, then defaults; passwords hidden."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from storage.settings import Settings, redacted_url, resolve_settings


def test_defaults_without_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DRIFTLENS_WORKSPACE", raising=False)
    monkeypatch.delenv("DRIFTLENS_DB_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    s = resolve_settings()
    assert s.version == 1
    assert s.workspace == tmp_path.resolve() / "driftlens-workspace"
    assert s.db_url == f"sqlite:///{tmp_path.resolve() / 'driftlens-workspace' / 'driftlens.db'}"
    assert s.is_sqlite


def test_env_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DRIFTLENS_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("DRIFTLENS_DB_URL", "postgresql+psycopg://u@h/db")
    s = resolve_settings()
    assert s.workspace == tmp_path / "ws"
    assert s.db_url == "postgresql+psycopg://u@h/db"
    assert not s.is_sqlite


def test_arguments_win_over_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DRIFTLENS_WORKSPACE", str(tmp_path / "env"))
    monkeypatch.setenv("DRIFTLENS_DB_URL", "postgresql+psycopg://u@h/db")
    s = resolve_settings(workspace=tmp_path / "arg", db_url="sqlite:///x.db")
    assert s.workspace == tmp_path / "arg"
    assert s.db_url == "sqlite:///x.db"


def test_default_db_follows_workspace_argument(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DRIFTLENS_DB_URL", raising=False)
    s = resolve_settings(workspace=Path(tmp_path / "a" / ".." / "b"))
    assert s.workspace == (tmp_path / "b").resolve()
    assert s.db_url.endswith("/b/driftlens.db") and s.db_url.startswith("sqlite:////")


def test_relative_workspace_is_made_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_settings(workspace=Path("rel")).workspace == tmp_path.resolve() / "rel"


def test_settings_are_frozen(tmp_path: Path) -> None:
    s = Settings(workspace=tmp_path, db_url="sqlite://")
    with pytest.raises(ValidationError):
        s.db_url = "other"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://me:pa%40ss@db:5432/x", "postgresql+psycopg://me:***@db:5432/x"),
        ("postgresql+psycopg://me@db/x", "postgresql+psycopg://me@db/x"),
        ("sqlite:////tmp/a.db", "sqlite:////tmp/a.db"),
        ("weird://me:secret@host/x", "weird://me:***@host/x"),
    ],
)
def test_redacted_url(url: str, expected: str) -> None:
    assert redacted_url(url) == expected


def test_display_url_hides_password(tmp_path: Path) -> None:
    s = Settings(workspace=tmp_path, db_url="postgresql+psycopg://u:topsecret@h/db")
    assert "topsecret" not in s.display_url()
