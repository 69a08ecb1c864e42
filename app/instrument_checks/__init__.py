"""The checks every instrument plugin must pass (scikit-learn's ``check_estimator`` shape).

:func:`instrument_checks` gives the checks that apply to one
:class:`~driftlens_plugins.instrument.InstrumentPlugin`, each a named callable that raises
``AssertionError`` with a sentence saying what is wrong. The project's own suite runs them
over every installed instrument, the toy fifth included (``tests/test_instrument_checks.py``);
an instrument in another package runs them from its own tests::

    from app.instrument_checks import instrument_checks
    from driftlens_plugins import get_instrument

    for check in instrument_checks(get_instrument("yours")):
        check.run(session, settings=settings)

Two families: the structural checks (:mod:`app.instrument_checks.parts`: every part loads
and has the shape the shared rooms use) and, for a plugin with a ``study_kit``, the
behavioural ones (:mod:`app.instrument_checks.study`: its smallest simulated study is
stored and resumed, compared, run as a background job and sharded on the cluster
executor, its judge is re-judged, its human study makes the round trip offline, its
report and downloads are written and hostile answers stay inert in them and on the
terminal); with a ``run_listing`` too, a run it stores is listed on the Runs page
(:mod:`app.instrument_checks.listing`).
"""

from __future__ import annotations

from collections.abc import Iterator

from app.instrument_checks.check import InstrumentCheck
from app.instrument_checks.listing import check_run_listed
from app.instrument_checks.parts import (
    check_cli_groups,
    check_compare,
    check_entry_points_signatures,
    check_human_kinds,
    check_pages,
    check_parts_load,
    check_simulator,
)
from app.instrument_checks.study import STUDY_CHECKS
from driftlens_plugins import InstrumentPlugin

__all__ = ["InstrumentCheck", "instrument_checks"]


def instrument_checks(plugin: InstrumentPlugin) -> Iterator[InstrumentCheck]:
    """The checks that apply to ``plugin`` (a part it does not have is not checked)."""
    yield InstrumentCheck("parts load", plugin, check_parts_load)
    yield InstrumentCheck("pages", plugin, check_pages)
    yield InstrumentCheck("entry-point signatures", plugin, check_entry_points_signatures)
    if plugin.cli_modules:
        yield InstrumentCheck("command groups", plugin, check_cli_groups)
    if plugin.sim_module is not None:
        yield InstrumentCheck("simulator", plugin, check_simulator)
    if plugin.human_module is not None:
        yield InstrumentCheck("human-study kinds", plugin, check_human_kinds)
    if plugin.compare_module is not None:
        yield InstrumentCheck("compare adapter", plugin, check_compare)
    if plugin.study_kit is not None:
        for name, func in STUDY_CHECKS:
            yield InstrumentCheck(name, plugin, func)
        if plugin.run_listing is not None:
            yield InstrumentCheck("runs listed", plugin, check_run_listed)
