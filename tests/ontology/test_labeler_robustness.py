"""``driftlens judges robustness --instrument reasoning``: the step labeler relabels a sample.

The primary labeler is the *served* simulator (over HTTP) confusing leaf pairs at a seeded
rate, so its resamples with new seeds disagree with the stored labels; the alternative is
the in-process perfect simulator labeler.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import Result
from sqlmodel import col, select

from llm.sim.server import SimServer
from ontology.labelers.sim import parse_sim_options, studio_answerer
from storage.models import Question
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.judge_robustness.result import stored_robustness
from study.reasoning.trajectories import label_run
from tests.cli_runner import cli_runner

SERVED = "llm:openai-api/simstudio/sim/default"


def test_reasoning_robustness_cli_on_a_served_llm_labeler(
    sim_run: str, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = parse_sim_options("confuse=1~2@0.4+3~4@0.4+5~6@0.4+7~8@0.4;seed=3")
    with SimServer(answerers=(studio_answerer(config),)) as url:
        monkeypatch.setenv("SIMSTUDIO_BASE_URL", url)
        monkeypatch.setenv("SIMSTUDIO_API_KEY", "k")
        with open_workspace_session(resolve_settings()) as session:
            from ontology.versions import seed_ontologies

            seed_ontologies(session=session)
            session.commit()
            few = session.exec(select(Question.id).order_by(col(Question.id)).limit(4)).all()
            label_run(sim_run, SERVED, session=session, question_ids=[int(q) for q in few if q])
            session.commit()
        result = cli(
            "judges", "robustness", "--instrument", "reasoning", "--run", sim_run,
            "--labeler", SERVED, "--resamples", "3", "--judge", "sim",
            "--sample", "40", "--bootstrap", "400", "--json",
        )  # fmt: skip
    assert result.exit_code == 0, (result.output, result.exception)
    got = json.loads(result.stdout)
    assert got["instrument"] == "reasoning" and got["primary"] == SERVED
    assert (
        got["n_items"] == sum(got["strata"].values())
        and got["resamples"] == 3
        and got["alternatives"] == ["sim"]
    )
    assert len(got["strata"]) >= 2
    # Four labeled questions give four noise-floor pairs, under the default minimum of 5:
    # all four are sampled (a proportional share of 40 would give one) and the result says so.
    assert got["strata"]["none"] == 4
    assert got["notes"] == [
        "Fewer pairs than the minimum of 5 per class: none (4); all of them are sampled."
    ]
    # New seeds redraw the confusions: some steps change label, and the perfect labeler
    # disagrees with the confusing one on more steps still.
    assert 0 < got["resample_flip_rate"] < 1
    alt = next(ln for ln in got["lines"] if ln["kind"] == "alternative")
    assert alt["flip_rate"] > 0
    free, both = got["judge_free"], got["judge_inclusive"]
    assert free[0] <= got["mean"] <= free[1] and both[0] <= got["mean"] <= both[1]
    with open_workspace_session(resolve_settings()) as session:
        kept = stored_robustness("reasoning", sim_run, session=session)
    assert kept is not None and kept.resample_flip_rate == got["resample_flip_rate"]


def test_the_noise_floor_gets_the_minimum_when_enough_pairs_exist(
    sim_run: str, cli: Callable[..., Result]
) -> None:
    with open_workspace_session(resolve_settings()) as session:
        from ontology.versions import seed_ontologies

        seed_ontologies(session=session)
        session.commit()
        few = session.exec(select(Question.id).order_by(col(Question.id)).limit(4)).all()
        label_run(sim_run, "sim", session=session, question_ids=[int(q) for q in few if q])
        session.commit()

    def strata(minimum: int) -> tuple[dict[str, int], list[str]]:
        result = cli(
            "judges", "robustness", "--instrument", "reasoning", "--run", sim_run,
            "--labeler", "sim", "--resamples", "1", "--judge", "keywords",
            "--sample", "40", "--bootstrap", "200", "--min-per-class", str(minimum), "--json",
        )  # fmt: skip
        assert result.exit_code == 0, (result.output, result.exception)
        got = json.loads(result.stdout)
        return got["strata"], got["notes"]

    # A proportional share of 40 gives the noise floor one of its four pairs; a minimum
    # of 3 takes three, the same three on a second call (seeded), with nothing to note.
    got, notes = strata(3)
    assert got["none"] == 3 and notes == []
    assert all(n >= 3 for n in got.values())
    assert strata(3) == (got, notes)
    assert strata(1)[0]["none"] < 3


def test_a_deterministic_labeler_says_there_is_nothing_to_resample(
    sim_run: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = cli_runner(capsys, monkeypatch)
    line = run(
        "judges", "robustness", "--instrument", "reasoning", "--run", sim_run,
        "--labeler", "keywords", "--resamples", "3",
    ).one_line()  # fmt: skip
    assert "deterministic" in line and "nothing to resample" in line
