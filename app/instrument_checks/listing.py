"""The Runs page's check: a run the instrument's kit stores is in its ``run_listing``.

The shared Runs page shows only what each plugin's listing returns, so an instrument whose
listing leaves a stored run out would hide it there without any error.
"""

from __future__ import annotations

import importlib.util

from sqlmodel import Session

from driftlens_plugins import InstrumentPlugin, RunLine, StudyKit, load_ref
from storage.settings import Settings

#: The run the check stores (its own name: the checks share one workspace).
LISTED_RUN = "check-listed"


def _lines(plugin: InstrumentPlugin, session: Session) -> list[RunLine]:
    assert plugin.run_listing is not None
    lines = list(load_ref(plugin.run_listing)(session=session))
    for line in lines:
        assert isinstance(line, RunLine), (
            f"{plugin.name}: run_listing must return RunLine rows, not {type(line).__name__}"
        )
    return lines


def check_run_listed(plugin: InstrumentPlugin, session: Session, settings: Settings) -> None:
    """A run of the kit's first model, once stored (even interrupted), is listed once, with
    its model, and the page its line links to is installed."""
    assert plugin.study_kit is not None
    kit = load_ref(plugin.study_kit)()
    assert isinstance(kit, StudyKit), f"{plugin.name}: study_kit must return a StudyKit"
    model = kit.models[0]
    outcome = kit.run(LISTED_RUN, model=model, session=session, settings=settings, limit=2)
    listed = [line for line in _lines(plugin, session) if line.name == outcome.run]
    assert len(listed) == 1, (
        f"{plugin.name}: the stored run {outcome.run!r} is listed {len(listed)} times on the "
        "Runs page (once expected)"
    )
    (line,) = listed
    # the stored spec may be the canonical text of the kit's (or name it among several)
    assert line.model and (model in line.model or line.model in model), (
        f"{plugin.name}: run {outcome.run!r} is listed with model {line.model!r}, not {model!r}"
    )
    if line.page is not None:
        assert importlib.util.find_spec(line.page) is not None, (
            f"{plugin.name}: run {outcome.run!r} links to page {line.page!r}, not installed"
        )
