"""Every installed instrument passes the instrument checks, the toy fifth included, and the
checks fail on a plugin that lacks what it names or a toy that breaks what they check
(app/instrument_checks/)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlmodel import Session

from app.instrument_checks import InstrumentCheck, instrument_checks
from app.instrument_checks.study import STUDY_CHECKS
from driftlens_plugins import InstrumentPage, InstrumentPlugin, RunOutcome, StudyKit, instruments
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


def test_the_toy_and_every_built_in_get_every_behavioural_check() -> None:
    behavioural = {name for name, _ in STUDY_CHECKS}
    by_plugin = {p.name: {c.name for c in instrument_checks(p)} for p in [*instruments(), TOY]}
    for name in ("toy", "reasoning", "conflicts", "disposition", "sources"):
        assert behavioural <= by_plugin[name], name


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


# --- the behavioural checks fail a toy that breaks what they check -------------------------


def _toy_kit(**changes: object) -> StudyKit:
    from tests.toy_instrument.kit import study_kit

    return replace(study_kit(), **changes)  # type: ignore[arg-type]


def _kit_no_resume() -> StudyKit:
    """Ignores ``limit``: an interruption stores everything (nothing left to resume)."""
    inner = _toy_kit().run

    def run(name: str, **kw: Any) -> RunOutcome:
        return inner(name, **{**kw, "limit": None})

    return _toy_kit(run=run)


def _kit_same_models() -> StudyKit:
    """Two runs of one coin: nothing to tell apart."""
    return _toy_kit(models=("sim/coin-yes", "sim/coin-yes"))


def _kit_short_shards() -> StudyKit:
    """On an executor it stores only the first units (a shard's work lost)."""
    inner = _toy_kit().run

    def run(name: str, **kw: Any) -> RunOutcome:
        if kw.get("executor") is not None:
            return inner(name, **{**kw, "executor": None, "limit": 3})
        return inner(name, **kw)

    return _toy_kit(run=run)


def _raw_report(runs: Sequence[str], out: Path, *, session: Session, guard: bool) -> Path:
    from storage.repo.instrument_runs import read_records, require_instrument_run

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in runs:
        run_id = require_instrument_run("toy", name, session=session).id
        assert run_id is not None
        rows += [{"run": name, "answer": r.text} for r in read_records(run_id, session=session)]
    frame = pd.DataFrame(rows)
    if guard:  # the HTML is escaped, the CSV carries the answers unguarded (but visible)
        from storage.safe_text import escape_control
        from study.report.html import esc

        frame["answer"] = frame["answer"].map(escape_control)
        html = "".join(f"<p>{esc(a)}</p>" for a in frame["answer"])
    else:  # the answers pasted into the HTML as they are
        html = "".join(f"<p>{a}</p>" for a in frame["answer"])
    (out / "report.html").write_text(f"<html>{' '.join(runs)}{html}</html>", encoding="utf-8")
    frame.to_csv(out / "answers.csv", index=False)
    return out / "report.html"


def _kit_raw_html() -> StudyKit:
    return _toy_kit(report=lambda runs, out, *, session: _raw_report(runs, out, session=session,
                                                                     guard=False))  # fmt: skip


def _kit_unguarded_csv() -> StudyKit:
    return _toy_kit(report=lambda runs, out, *, session: _raw_report(runs, out, session=session,
                                                                     guard=True))  # fmt: skip


def _kit_unknown_model() -> StudyKit:
    """Its job asks a simulator preset that does not exist: the job process fails."""
    return _toy_kit(models=("sim/coin-nowhere", "sim/coin-fair"))


def _toy_with(**parts: object) -> InstrumentPlugin:
    return replace(TOY, **parts)  # type: ignore[arg-type]


_HERE = "tests.test_instrument_checks"


@pytest.mark.parametrize(
    ("plugin", "check_name", "message"),
    [
        (_toy_with(study_kit=f"{_HERE}:_kit_no_resume"), "store and resume", "stopped early"),
        (_toy_with(study_kit=f"{_HERE}:_kit_same_models"), "compare two runs", "told apart"),
        (
            _toy_with(study_kit=f"{_HERE}:_kit_short_shards"),
            "sharded on the cluster executor",
            "sharded run stored 3",
        ),
        (_toy_with(study_kit=f"{_HERE}:_kit_raw_html"), "hostile text inert", "control|live"),
        (_toy_with(study_kit=f"{_HERE}:_kit_unguarded_csv"), "hostile text inert", "formula"),
        (_toy_with(study_kit=f"{_HERE}:_kit_unknown_model"), "background job", "ended failed"),
    ],
    ids=["no resume", "same models", "lost shard", "raw html", "unguarded csv", "failed job"],
)
def test_the_behavioural_checks_fail_a_toy_that_breaks_them(
    plugin: InstrumentPlugin, check_name: str, message: str, session: Session
) -> None:
    (check,) = [c for c in instrument_checks(plugin) if c.name == check_name]
    with pytest.raises(AssertionError, match=message):
        check.run(session)


def test_the_terminal_check_fails_a_toy_command_that_prints_raw_answers(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer

    import tests.toy_instrument.cli as toy_cli

    def raw(lines: list[str]) -> None:  # typer.echo writes the text as it is
        for line in lines:
            typer.echo(line)

    monkeypatch.setattr(toy_cli, "print_answers", raw)
    (check,) = [c for c in instrument_checks(TOY) if c.name == "hostile text inert in the terminal"]
    with pytest.raises(AssertionError, match="raw control character"):
        check.run(session)


def _same_models(name: str) -> StudyKit:
    from driftlens_plugins import get_instrument, load_ref

    kit: StudyKit = load_ref(str(get_instrument(name).study_kit))()
    return replace(kit, models=(kit.models[0], kit.models[0]))


def _reasoning_one_model() -> StudyKit:
    """sim/null twice: no drift in either run, nothing to tell apart."""
    return _same_models("reasoning")


def _disposition_one_model() -> StudyKit:
    """The 0 % fine-tune twice: one aligned rate."""
    return _same_models("disposition")


@pytest.mark.parametrize("name", ["reasoning", "disposition"])
def test_the_compare_check_fails_a_built_in_kit_with_no_known_difference(
    name: str, session: Session
) -> None:
    from driftlens_plugins import get_instrument

    plugin = replace(get_instrument(name), study_kit=f"{_HERE}:_{name}_one_model")
    (check,) = [c for c in instrument_checks(plugin) if c.name == "compare two runs"]
    with pytest.raises(AssertionError, match="told apart"):
        check.run(session)


# --- reasoning drift's response judge: the checks reach it, and fail when it is broken -----


def _reasoning_kit() -> StudyKit:
    from study.reasoning.kit import study_kit

    return study_kit()


def _reasoning_unstored_verdicts() -> StudyKit:
    """The response judge runs, but its verdicts are not kept (deleted after every run)."""
    from sqlmodel import col, delete, select

    from storage.models import JudgeScore, Response
    from storage.repo.runs import require_run
    from study.reasoning.kit import RESPONSE_JUDGE

    kit = _reasoning_kit()

    def run(name: str, *, session: Session, **kw: Any) -> RunOutcome:
        out = kit.run(name, session=session, **kw)
        ids = select(Response.id).where(Response.run_id == require_run(name, session=session).id)
        session.exec(
            delete(JudgeScore)
            .where(col(JudgeScore.response_id).in_(ids))
            .where(col(JudgeScore.judge_model) == RESPONSE_JUDGE)
        )
        session.commit()
        return out

    return replace(kit, run=run)


def _reasoning_response_studies() -> StudyKit:
    """The reasoning kit with the response judge's human studies only (a smaller round trip)."""
    return replace(_reasoning_kit(), human_kinds=("helpfulness", "distraction", "acknowledgement"))


def test_the_reasoning_kit_names_its_response_judge_and_its_studies() -> None:
    kit = _reasoning_kit()
    assert {"helpfulness", "distraction", "acknowledgement", "label_check"} <= set(kit.human_kinds)
    judged = {s.judges[0]: s for s in kit.judge_setups()}
    assert "sim/default" in judged and "sim" in judged, judged
    assert not judged["sim/default"].options.get("labeler")  # the response judge, not labels


def test_the_judge_check_fails_a_reasoning_kit_whose_response_verdicts_are_not_stored(
    session: Session,
) -> None:
    from driftlens_plugins import get_instrument

    plugin = replace(get_instrument("reasoning"), study_kit=f"{_HERE}:_reasoning_unstored_verdicts")
    (check,) = [c for c in instrument_checks(plugin) if c.name == "judge robustness"]
    with pytest.raises(AssertionError, match="response judge sim/default refused"):
        check.run(session)


def test_the_human_check_fails_a_response_study_whose_pull_applies_nothing(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    from annotation import kinds
    from driftlens_plugins import get_instrument

    kind = kinds.get_kind("distraction")
    monkeypatch.setitem(
        kinds._KINDS,
        "distraction",
        replace(kind, apply=lambda agg, s, c: kind.apply(replace(agg, items=()), s, c)),
    )
    plugin = replace(get_instrument("reasoning"), study_kit=f"{_HERE}:_reasoning_response_studies")
    (check,) = [c for c in instrument_checks(plugin) if c.name == "human-study round trip"]
    with pytest.raises(AssertionError, match="distraction aggregated 0 of"):
        check.run(session)


# --- the terminal check reads each built-in's answers as printed ----------------------------

#: Each built-in's answer-printing command: the module whose console prints it.
_SHOW_CONSOLES = {
    "reasoning": "app.cli.show_cmds",
    "conflicts": "app.cli.conflicts_cmds",
    "disposition": "app.cli.disposition_cmds",
    "sources": "app.cli.sources_cmds",
}


@pytest.mark.parametrize("name", sorted(_SHOW_CONSOLES))
def test_the_terminal_check_fails_a_built_in_show_that_prints_raw(
    name: str, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    from rich.console import Console

    from driftlens_plugins import get_instrument

    plugin = get_instrument(name)
    assert _kit_of(name).hostile_model is not None and _kit_of(name).hostile_text
    # the show command's console swapped for a plain Rich one: the escaping bypassed
    module = importlib.import_module(_SHOW_CONSOLES[name])
    monkeypatch.setattr(module, "_out", Console(highlight=False, markup=False))
    (check,) = [
        c for c in instrument_checks(plugin) if c.name == "hostile text inert in the terminal"
    ]
    with pytest.raises(AssertionError, match="raw control character"):
        check.run(session)


def _kit_of(name: str) -> StudyKit:
    from driftlens_plugins import get_instrument, load_ref

    kit: StudyKit = load_ref(str(get_instrument(name).study_kit))()
    return kit


def _disposition_summary_only() -> StudyKit:
    """Its terminal command is the study's summary, which prints no answer."""
    from study.disposition.kit import STUDY

    return replace(
        _kit_of("disposition"),
        terminal=lambda runs, out: ["disposition", "analyze", "--study", STUDY, "--out",
                                    str(out), "-B", "200"],
    )  # fmt: skip


def test_the_terminal_check_fails_a_command_that_prints_no_answer(session: Session) -> None:
    from driftlens_plugins import get_instrument

    plugin = replace(get_instrument("disposition"), study_kit=f"{_HERE}:_disposition_summary_only")
    (check,) = [
        c for c in instrument_checks(plugin) if c.name == "hostile text inert in the terminal"
    ]
    with pytest.raises(AssertionError, match="did not print the hostile answer's text"):
        check.run(session)
