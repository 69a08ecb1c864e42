"""The instruments' ``show`` commands: a run's stored answers and verdict reasons printed,
filtered and limited, model text escaped; a bad name is one ``error:`` line.

The hostile runs (``sim/hostile``, ``sim/mc-hostile``, ``sim/disp-hostile-d050``,
``sim/src-hostile``) are the instrument checks' own (each kit's smallest study): their
payload must show as text, escape sequences written out.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlmodel import Session

from driftlens_plugins import StudyKit, get_instrument, load_ref
from storage.settings import resolve_settings
from tests.cli_runner import CliOutcome, cli_runner


def _kit(name: str) -> StudyKit:
    kit: StudyKit = load_ref(str(get_instrument(name).study_kit))()
    return kit


def _hostile_run(name: str, session: Session) -> str:
    kit = _kit(name)
    assert kit.hostile_model is not None
    return kit.run("hx", model=kit.hostile_model, session=session, settings=resolve_settings()).run


@pytest.fixture
def run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliOutcome]:
    return cli_runner(capsys, monkeypatch)


def _escaped(out: str) -> None:
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[31m" in out and "alert(1)" in out  # the payload, shown as text


def test_reasoning_show_prints_answers_and_verdicts_filtered(
    session: Session, run: Callable[..., CliOutcome]
) -> None:
    name = _hostile_run("reasoning", session)
    got = run("show", "--run", name, "--limit", "3")
    assert got.code == 0, got.err
    assert got.out.startswith(f"Run {name}: 3 of 84 responses.")
    assert got.out.count("  answer: ") == 3 and "judge sim/default: helpfulness" in got.out
    _escaped(got.out)
    one = run("show", "--run", name, "--question", "dl-002", "--limit", "100")
    assert one.code == 0 and f"Run {name}: 14 of 14 responses." in one.out
    assert "dl-001" not in one.out and one.out.count("dl-002 · ") == 14
    line = run("show", "--run", name, "--question", "nope").one_line()
    assert line.startswith("error:") and "no response to question 'nope'" in line
    assert run("show", "--run", "missing").one_line().startswith("error:")


def test_conflicts_show_prints_answers_and_rubric_scores(
    session: Session, run: Callable[..., CliOutcome]
) -> None:
    name = _hostile_run("conflicts", session)
    got = run("conflicts", "show", "--run", name, "--limit", "2")
    assert got.code == 0, got.err
    assert "2 of 84 responses" in got.out and "judge sim/judge-lenient: conflict_d1" in got.out
    _escaped(got.out)
    assert run("conflicts", "show", "--run", "missing").one_line().startswith("error:")


def test_disposition_show_prints_an_arms_answers_and_categories(
    session: Session, run: Callable[..., CliOutcome]
) -> None:
    name = _hostile_run("disposition", session)
    study, _, arm = name.partition(":")
    got = run("disposition", "show", "--study", study, "--arm", arm, "--limit", "2")
    assert got.code == 0, got.err
    assert f"Study {study}: 2 of 48 answers." in got.out and "sim/default: " in got.out
    _escaped(got.out)
    stem = run("disposition", "show", "--study", study, "--stem", "self_interest/si-02",
               "--limit", "100")  # fmt: skip
    assert stem.code == 0 and "12 of 12 answers" in stem.out and "si-01" not in stem.out
    line = run("disposition", "show", "--study", study, "--arm", "nope").one_line()
    assert line.startswith("error:") and "no arm 'nope'" in line
    assert (
        run("disposition", "show", "--study", study, "--stem", "x").one_line().startswith("error:")
    )


def test_sources_show_prints_replies_as_written(
    session: Session, run: Callable[..., CliOutcome]
) -> None:
    name = _hostile_run("sources", session)
    got = run("sources", "show", "--run", name, "--limit", "2")
    assert got.code == 0, got.err
    assert f"Run {name}: 2 of 156 probes." in got.out and "read by logprobs" in got.out
    _escaped(got.out)
    item = run("sources", "show", "--run", name, "--item", "cs-002", "--limit", "100")
    assert item.code == 0 and "13 of 13 probes" in item.out and "cs-001" not in item.out
    assert run("sources", "show", "--run", name, "--item", "nope").one_line().startswith("error:")
