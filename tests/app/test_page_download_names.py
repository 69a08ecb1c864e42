"""No two download buttons of a page save under one file name (issue 37, item 11).

``AppTest`` runs pages without Streamlit's media server, so the file name a button would
give its download is not in the page's elements. The test wraps the real
``download_button`` (it still draws the button) to record each ``file_name`` the page passes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlmodel import Session
from streamlit.delta_generator import DeltaGenerator

from llm.specs import ModelSpec
from study.sources.items import shipped_items
from study.sources.plan import SourcesConfig
from study.sources.sim.wiring import backend_for
from study.sources.store import run_stored_sources
from tests.app.apptest_support import open_page


def _recorded_file_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``file_name`` given to ``download_button`` from now on (the button still runs)."""
    names: list[str] = []
    real = DeltaGenerator.download_button

    def recording(self: DeltaGenerator, *args: Any, **kwargs: Any) -> Any:
        names.append(str(kwargs.get("file_name")))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    return names


def test_sources_page_downloads_have_distinct_file_names(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = shipped_items()[:4]
    run_stored_sources(
        "dl-names",
        items,
        backend_for(ModelSpec.parse("sim/src-paper"), items),
        [SourcesConfig()],
        session=session,
    )
    session.commit()
    names = _recorded_file_names(monkeypatch)
    open_page("sources.py")
    assert any(n.endswith(".jsonl") for n in names), names  # the downloads were drawn
    shared = [n for n, count in Counter(names).items() if count > 1]
    assert shared == [], f"downloads saved under one name: {shared} (all: {names})"
