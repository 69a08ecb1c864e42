"""A toy fifth instrument registers from ``tests/`` alone (docs/adding-an-instrument.md).

Every part a new instrument needs — items, plan, score, analysis, report, a human study
kind, a simulator preset, a CLI group and a page — is written under
``tests/toy_instrument/`` and reaches the workbench through the registries only; the last
test checks that no file outside ``tests/`` names it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session
from typer.testing import CliRunner

from annotation.aggregate import AggregationConfig, AnnotationRecord, aggregate
from annotation.kinds import get_kind, label_config, study_kinds
from annotation.selection import Selection
from annotation.tasks import build_tasks
from app.instruments import instruments
from app.ui.navigation import sections
from llm.sim.backend import SimBackend
from llm.sim.registry import families, get_preset
from storage.errors import ConfigError, InputError
from tests.entry_points import installed_entry_points, write_distribution
from tests.toy_instrument.install import installed_toy
from tests.toy_instrument.plugin import ENTRY_POINT

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def toy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The toy announced by its entry point for this module only (registries restored)."""
    with installed_toy(tmp_path_factory.mktemp("site")):
        yield


def test_without_its_entry_point_the_toy_is_not_an_instrument(tmp_path: Path) -> None:
    with installed_entry_points(tmp_path, "driftlens-empty", []):
        pass  # leaving re-reads the registry: the module's own entry point is still there
    assert "toy" in [i.name for i in instruments()]
    code = (
        "from driftlens_plugins import instruments; print(','.join(p.name for p in instruments()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["reasoning,conflicts,disposition,sources"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("no_such_pkg:PLUGIN", r"entry point 'dice' \(no_such_pkg:PLUGIN\) could not be loaded"),
        (ENTRY_POINT[1], r"entry point 'dice' .* names itself 'toy'"),
        (
            "tests.toy_instrument.plugin:ENTRY_POINT",
            r"'dice' .* is a tuple, not an InstrumentPlugin",
        ),
    ],
)
def test_a_broken_entry_point_is_one_sentence_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    from driftlens_plugins.registry import refresh

    write_distribution(tmp_path, "driftlens-broken", [("dice", value)])
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ConfigError, match=message):
            refresh()
    finally:
        monkeypatch.undo()
        refresh()


def test_the_toy_is_registered_with_every_registry() -> None:
    assert "toy" in [i.name for i in instruments()]
    assert families()["toy"].keys() == {"coin-fair", "coin-yes", "coin-hostile"}
    assert "coin_check" in study_kinds()
    pages = [p for pages in sections().values() for p, _, _ in pages]
    assert ROOT / "tests" / "toy_instrument" / "page.py" in pages


def test_items_plan_score_analysis_recover_the_known_share() -> None:
    from tests.toy_instrument.analysis import analyse
    from tests.toy_instrument.items import read_items
    from tests.toy_instrument.plan import plan, run
    from tests.toy_instrument.score import score

    items = read_items()
    requests = plan(items, samples=40)
    assert len({r.tag for r in requests}) == 5 * 40  # resumable keys: one per item x sample
    backend = SimBackend(get_preset("sim/coin-yes"))
    answers = run(backend, requests)
    res = analyse([score(a.text) for a in answers])
    assert res.unreadable == 0 and res.n == 200
    assert res.ci_low < 0.8 < res.ci_high  # the preset's true share
    fair = analyse([score(a.text) for a in run(SimBackend("coin-fair"), requests)])
    assert fair.ci_high < res.ci_low  # the two coins are told apart


def test_bad_items_name_file_and_line(tmp_path: Path) -> None:
    from tests.toy_instrument.items import read_items

    bad = tmp_path / "items.jsonl"
    bad.write_text('{"id": "a", "question": "q?"}\n{"id": "a", "question": "r?"}\n')
    with pytest.raises(InputError, match=r"items\.jsonl, line 2: item id 'a' repeats"):
        read_items(bad)


def test_cli_group_runs_and_writes_the_report(tmp_path: Path) -> None:
    from app.cli.root import build_app

    out = tmp_path / "coin.md"
    result = CliRunner().invoke(
        build_app(), ["toy", "run", "--model", "sim/coin-fair", "--report", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "sim/coin-fair:" in result.output and "of 100 yes" in result.output
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Coin (toy)") and "sim/coin\\-fair" in text  # escaped cell


def test_page_renders_in_the_workbench() -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app" / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("../tests/toy_instrument/page.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [h.value for h in at.header] == ["Coin (toy)"]
    assert at.metric[0].label == "Share of yes"


def test_study_kind_builds_tasks_and_applies(session: Session) -> None:
    from tests.toy_instrument.human import CoinCheckResult

    config = ET.fromstring(label_config("coin_check"))
    assert [c.get("alias") for c in config.iter("Choice")] == ["yes", "no"]
    tasks = build_tasks("coin_check", Selection(limit=3), session=session)
    assert len(tasks) == 3 and all(t.data["external_key"] == t.key for t in tasks)
    kind = get_kind("coin_check")

    def vote(i: int, item: str, value: str) -> AnnotationRecord:
        result = [{"from_name": "yes_no", "value": {"choices": [value]}}]
        return AnnotationRecord(item, i, f"a{i % 3}", result, 30.0, None, {})

    records = [vote(i, "coin:c1", "yes") for i in range(3)]
    records += [vote(i + 3, "coin:c2", v) for i, v in enumerate(["no", "no", "yes"])]
    applied = kind.apply(aggregate(kind.spec, records), session, AggregationConfig())
    assert isinstance(applied, CoinCheckResult)
    assert (applied.yes_no, applied.not_yes_no) == (("coin:c1",), ("coin:c2",))
    assert applied.payload() == {"yes_no": ["coin:c1"], "not_yes_no": ["coin:c2"]}


def test_nothing_outside_tests_names_the_toy() -> None:
    found = subprocess.run(
        [
            "git",
            "grep",
            "--untracked",
            "-l",
            "-e",
            "toy_instrument",
            "-e",
            "coin-yes",
            "--",
            ".",
            ":!tests",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    named = [f for f in found.stdout.split() if not f.startswith("docs/")]
    assert named == []


def _job_process(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "study.jobs.run", "--workspace", str(workspace), *args],
        cwd=workspace, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def test_a_toy_job_runs_from_a_shell_through_the_study_level_entry_point(
    workspace: Path, session: Session
) -> None:
    from study.jobs import list_jobs

    args = '{"model": "sim/coin-yes", "run": "from-shell"}'
    done = _job_process(workspace, "toy", "run", args)
    assert done.returncode == 0, done.stderr
    (job,) = list_jobs(session=session)
    assert (job.kind, job.origin, job.state) == ("toy run", "shell", "done")
    assert job.argv == ("@job", "toy", "run", args)
    assert job.result == {"run": "from-shell", "stored": 40, "added": 40, "total": 40}
    assert dict(job.scope) == {"model": "sim/coin-yes", "run": "from-shell"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["toy", "nope", "{}"], "error: 'toy' has no job 'nope' (it has: run).\n"),
        (["toy", "run", "[1]"], "error: A job's arguments must be a JSON object.\n"),
        (["toy", "run", "{}"], "error: A toy run job needs run and model (text).\n"),
        (["dice", "run", "{}"], "error: Unknown instrument 'dice'; installed: "),
    ],
)
def test_a_bad_job_is_one_sentence_not_a_traceback(
    workspace: Path, args: list[str], message: str
) -> None:
    done = _job_process(workspace, *args)
    assert done.returncode == 1
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


# --- the Runs page and `driftlens demo` reach the toy through its plugin's parts ----------


def test_the_runs_page_lists_a_stored_coin_run_and_draws_the_toys_section(
    session: Session,
) -> None:
    from app.ui.run_listing import page_url
    from tests.app.apptest_support import open_page, unescape
    from tests.toy_instrument.store import run_coin

    name = "coin <b>x</b> & y"  # a run name is anyone's text: a table cell, never markup
    run_coin(name, model="sim/coin-yes", session=session, samples=2)
    at = open_page("runs.py")
    assert not at.exception, [e.value for e in at.exception]
    (listed,) = [d.value for d in at.dataframe if "answers" in d.value.columns]
    assert list(listed["name"]) == [name] and list(listed["answers"]) == [10]
    assert list(listed["model"]) == ["sim/coin-yes"] and list(listed["open"]) == ["page"]
    assert "Coin (toy) runs: 1" in [unescape(c.value) for c in at.caption]
    assert "No runs yet" in at.info[0].value  # reasoning drift's own section is still drawn
    assert [s.value for s in at.subheader] == ["Coin runs"]  # then the toy's, after it
    assert next(m for m in at.metric if m.label == "Share of yes").value
    # a run's link carries its name URL-encoded in the query
    assert page_url("app.pages.sources", [("results", "run:a&b c")]) == (
        "sources?results=run%3Aa%26b+c"
    )


def _no_lines(*, session: Session) -> list[object]:
    return []


def test_the_runs_listed_check_fails_a_listing_that_leaves_a_run_out(session: Session) -> None:
    from dataclasses import replace

    from app.instrument_checks import instrument_checks
    from tests.toy_instrument.plugin import PLUGIN

    plugin = replace(PLUGIN, run_listing=f"{__name__}:_no_lines")
    (check,) = [c for c in instrument_checks(plugin) if c.name == "runs listed"]
    with pytest.raises(AssertionError, match="is listed 0 times on the Runs page"):
        check.run(session)


def test_the_demo_command_runs_the_toys_demo_through_its_part(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    import app.cli.demo_cmds as demo_cmds
    from app.cli.root import build_app
    from driftlens_plugins import get_instrument

    # the registry narrowed to the toy: the built-ins' demos are minutes (tests/test_demo.py)
    monkeypatch.setattr(demo_cmds, "instruments", lambda: (get_instrument("toy"),))
    first = CliRunner().invoke(build_app(), ["demo", "--samples", "2"])
    assert first.exit_code == 0, first.output
    out = first.output
    assert "SIMULATED DATA — coin (toy): two simulated coins" in out
    assert "Coin run coin-demo-yes (sim/coin-yes): 10 answers now, 10 stored." in out
    assert "Time per stage: coin-demo-yes " in out and "coin report " in out
    report = workspace / "reports" / "coin-demo" / "report.html"
    assert report.is_file()
    nxt = out[out.index("Next:") :]
    assert f"  coin (toy)           {report.resolve()}" in nxt
    assert nxt.index("coin (toy)") < nxt.index("open the workbench") < nxt.index("toy show")
    again = CliRunner().invoke(build_app(), ["demo", "--samples", "2"])
    assert again.exit_code == 0, again.output
    assert "Coin run coin-demo-yes (sim/coin-yes): 0 answers now, 10 stored." in again.output
