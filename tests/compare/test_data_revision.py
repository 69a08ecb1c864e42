"""The Compare page's cache token follows every adapter's own tables, a fifth's included."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlmodel import Session

import study.compare.registry as registry
from storage.curation_models import Question
from study.compare import adapter_names, data_revision, get_adapter


@dataclass
class _QuestionAdapter:
    """Only what ``data_revision`` reads of an adapter: its name and its tables."""

    name: str = "questions_only"
    headline: str = "a test adapter whose runs are read from the question table"
    default_margin: float | None = None
    revision_tables: tuple[type, ...] = (Question,)


@pytest.fixture
def restored_adapters() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry, "_ADAPTERS", dict(registry._ADAPTERS))
        yield


def _add_question(session: Session, key: str) -> None:
    session.add(Question(external_id=key, text="Is this a question?"))
    session.commit()


def test_every_adapter_names_tables_with_an_id() -> None:
    for name in adapter_names():
        tables = get_adapter(name).revision_tables
        assert tables, name
        assert all("id" in t.__table__.c for t in tables), name  # type: ignore[attr-defined]


def test_a_row_in_a_registered_adapters_table_changes_the_token(
    session: Session, restored_adapters: None
) -> None:
    before = data_revision(session=session)
    _add_question(session, "rev-1")
    # no adapter reads questions yet: a stale-proof token need not change
    assert data_revision(session=session) == before
    registry.register_adapter(_QuestionAdapter())  # type: ignore[arg-type]
    with_adapter = data_revision(session=session)
    _add_question(session, "rev-2")
    assert data_revision(session=session) != with_adapter
