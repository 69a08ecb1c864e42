"""Every installed instrument passes the instrument checks, the toy fifth included, and the
checks fail on a plugin that lacks what it names (app/instrument_checks.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session

from app.instrument_checks import InstrumentCheck, instrument_checks
from app.instrument_checks.study import STUDY_CHECKS
from driftlens_plugins import InstrumentPage, InstrumentPlugin, instruments
from tests.toy_instrument.install import installed_toy
from tests.toy_instrument.plugin import PLUGIN as TOY


def _checks() -> list[InstrumentCheck]:
    plugins = [p for p in instruments() if p.name != TOY.name]
    return [c for p in [*plugins, TOY] for c in instrument_checks(p)]


@pytest.fixture(scope="module", autouse=True)
def toy_installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The toy is announced by its entry point for this module, like an installed package."""
    with installed_toy(tmp_path_factory.mktemp("site")):
        yield


@pytest.mark.parametrize("check", _checks(), ids=lambda c: f"{c.plugin.name}: {c.name}")
def test_every_instrument_passes_its_checks(check: InstrumentCheck, session: Session) -> None:
    check.run(session)


def test_the_toy_passes_every_behavioural_check() -> None:
    names = {c.name for c in instrument_checks(TOY)}
    assert {name for name, _ in STUDY_CHECKS} <= names


def test_every_built_in_instrument_has_the_parts_the_shared_rooms_use() -> None:
    names: dict[str, set[str]] = {c.plugin.name: set() for c in _checks()}
    for c in _checks():
        names[c.plugin.name].add(c.name)
    for built_in in ("conflicts", "disposition", "sources"):
        assert {"command groups", "simulator", "human-study kinds", "compare adapter"} <= names[
            built_in
        ]
    assert {"simulator", "human-study kinds", "compare adapter"} <= names["reasoning"]


def _broken(**parts: object) -> InstrumentPlugin:
    base: dict[str, object] = {"name": "broken", "title": "Broken"}
    return InstrumentPlugin(**{**base, **parts})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("plugin", "check_name", "message"),
    [
        (_broken(sim_module="tests.toy_instrument.items"), "simulator", "no preset family"),
        (_broken(human_module="tests.toy_instrument.items"), "human-study kinds", "no study kind"),
        (_broken(cli_modules=("tests.toy_instrument.no_such",)), "parts load", "does not import"),
        (
            _broken(cli_demo="tests.toy_instrument.items:read_items"),
            "entry-point signatures",
            "cli_demo must take",
        ),
    ],
)
def test_the_checks_fail_a_plugin_that_lacks_what_it_names(
    plugin: InstrumentPlugin, check_name: str, message: str, session: Session
) -> None:
    (check,) = [c for c in instrument_checks(plugin) if c.name == check_name]
    with pytest.raises(AssertionError, match=message):
        check.run(session)


def test_a_page_file_that_does_not_compile_fails(tmp_path: Path, session: Session) -> None:
    bad = tmp_path / "bad_page_pkg"
    bad.mkdir()
    (bad / "__init__.py").write_text("")
    (bad / "page.py").write_text("def broken(:\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        plugin = _broken(pages=(InstrumentPage("bad_page_pkg.page", "Bad"),))
        (check,) = [c for c in instrument_checks(plugin) if c.name == "pages"]
        with pytest.raises(SyntaxError):
            check.run(session)
    finally:
        sys.path.remove(str(tmp_path))
