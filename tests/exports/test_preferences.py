"""DPO preference pairs follow the SPEC §10 rule exactly."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session, select
from typer.testing import Result

from storage.errors import InputError
from storage.models import (
    GenerationRun,
    JudgeScore,
    ModelSpecRow,
    Perturbation,
    PerturbationCatalog,
    Question,
    Response,
)
from study.prompts import build_messages
from study.reasoning.preferences import ScoredResponse, export_preferences, select_pairs

JUDGE = "sim/default"


def _r(
    rid: int, q: str, cond: str, sample: int, h: float | None, d: float | None, a: float | None
) -> ScoredResponse:
    return ScoredResponse(rid, q, cond, sample, h, d, a)


# (helpfulness, distraction, acknowledgement) -> (chosen, rejected), every combination.
RULE = {
    (h, d, a): (h == 4 and d == 0 and a == 1, h < 4 and (d == 1 or a == 0))
    for h in range(5)
    for d in (0, 1)
    for a in (0, 1)
}


@pytest.mark.parametrize(("scores", "expected"), sorted(RULE.items()))
def test_chosen_and_rejected_flags(
    scores: tuple[int, int, int], expected: tuple[bool, bool]
) -> None:
    r = _r(1, "q", "c", 0, *scores)
    assert (r.is_chosen, r.is_rejected) == expected


def test_spot_checks_of_the_rule() -> None:
    assert _r(1, "q", "c", 0, 4, 0, 1).is_chosen
    assert not _r(1, "q", "c", 0, 4, 0, 0).is_rejected  # maximal helpfulness is never rejected
    assert not _r(1, "q", "c", 0, 3, 0, 1).is_rejected  # undistracted and acknowledging
    assert _r(1, "q", "c", 0, 3, 0, 0).is_rejected
    assert _r(1, "q", "c", 0, 0, 1, 1).is_rejected
    missing = _r(1, "q", "c", 0, 4, None, 1)
    assert not missing.is_chosen and not missing.is_rejected


def test_pairs_join_samples_of_the_same_prompt_only() -> None:
    table = [
        _r(1, "q1", "age/1", 0, 4, 0, 1),  # chosen
        _r(2, "q1", "age/1", 1, 3, 1, 1),  # rejected -> pair (1, 2)
        _r(3, "q1", "age/1", 2, 2, 0, 0),  # rejected -> pair (1, 3)
        _r(4, "q1", "age/1", 3, 3, 0, 1),  # neither
        _r(5, "q1", "age/2", 0, 2, 1, 0),  # rejected, but no chosen under age/2
        _r(6, "q2", "age/1", 0, 1, 1, 1),  # rejected, other question: no pair with 1
        _r(7, "q1", "baseline", 0, 4, 0, 1),  # baselines never pair
        _r(8, "q1", "baseline", 1, 0, 1, 0),
        _r(9, "q3", "noise/1", 1, 4, 0, 1),  # chosen
        _r(10, "q3", "noise/1", 0, 4, 0, 1),  # chosen
        _r(11, "q3", "noise/1", 2, 3, 1, 0),  # rejected -> pairs (10, 11), (9, 11)
        _r(12, "q3", "noise/1", 3, None, 1, 0),  # incomplete: excluded
    ]
    pairs = [(g.response_id, b.response_id) for g, b in select_pairs(table)]
    assert pairs == [(1, 2), (1, 3), (10, 11), (9, 11)]


def _seed(session: Session) -> dict[str, int]:
    spec = ModelSpecRow(spec="sim/default", provider="sim", model="default", simulated=True)
    cat = PerturbationCatalog(name="t")
    q = Question(external_id="q-1", text="Rent or buy? Weigh it.")
    session.add_all([spec, cat, q])
    session.flush()
    p = Perturbation(
        catalog_id=cat.id or 0,
        key="age/1",
        condition_class="attribute",
        category="age",
        text="I am 70 years old.",
    )
    run = GenerationRun(name="prefs", model_spec_id=spec.id or 0, prompt_version="steps-v1")
    session.add_all([p, run])
    session.flush()
    ids: dict[str, int] = {}
    table = {
        "base": (None, "baseline", 0, (4, None, None)),
        "good": (p.id, "age/1", 0, (4, 0, 1)),
        "bad": (p.id, "age/1", 1, (2, 1, 1)),
    }
    for name, (pid, cond, sample, (h, d, a)) in table.items():
        msgs = build_messages(q.text, "" if pid is None else p.text)
        resp = Response(
            run_id=run.id or 0,
            question_id=q.id or 0,
            perturbation_id=pid,
            condition=cond,
            condition_class="none" if pid is None else "attribute",
            sample=sample,
            request={"messages": [{"role": m.role, "content": m.content} for m in msgs]},
            text=f"<think><step_1>{name}</step_1></think><answer>{name}</answer>",
            parse_status="ok",
        )
        session.add(resp)
        session.flush()
        ids[name] = resp.id or 0
        for kind, value in (("helpfulness", h), ("distraction", d), ("acknowledgement", a)):
            if value is not None:
                session.add(
                    JudgeScore(response_id=resp.id or 0, judge_model=JUDGE, kind=kind, value=value)
                )
    session.commit()
    return ids


def test_export_writes_conversational_pairs(session: Session, tmp_path: Path) -> None:
    _seed(session)
    out = tmp_path / "pairs.jsonl"
    s = export_preferences("prefs", JUDGE, out, session=session)
    assert (s.pairs, s.chosen, s.rejected, s.judged, s.responses) == (1, 1, 1, 3, 3)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert rec["prompt"] == [
        {"role": m.role, "content": m.content}
        for m in build_messages("Rent or buy? Weigh it.", "I am 70 years old.")
    ]
    assert rec["chosen"] == [
        {
            "role": "assistant",
            "content": "<think><step_1>good</step_1></think><answer>good</answer>",
        }
    ]
    assert rec["rejected"][0]["content"].endswith("<answer>bad</answer>")
    assert rec["question_id"] == "q-1" and rec["condition"] == "age/1"
    assert rec["memory"] == "I am 70 years old." and rec["model"] == "sim/default"
    assert rec["judge_model"] == JUDGE and rec["run"] == "prefs"
    assert rec["judge_settings"] is None  # scores written without settings (before 0012)
    assert (rec["chosen_sample"], rec["rejected_sample"]) == (0, 1)
    assert rec["chosen_scores"] == {"helpfulness": 4, "distraction": 0, "acknowledgement": 1}
    assert rec["rejected_scores"] == {"helpfulness": 2, "distraction": 1, "acknowledgement": 1}


def test_export_errors(session: Session, tmp_path: Path) -> None:
    _seed(session)
    with pytest.raises(InputError, match=r"\.jsonl"):
        export_preferences("prefs", JUDGE, tmp_path / "pairs.csv", session=session)
    with pytest.raises(InputError, match="has scored no response"):
        export_preferences("prefs", "sim/strong", tmp_path / "p.jsonl", session=session)
    assert not (tmp_path / "p.jsonl").exists()
    # one score re-given under recorded settings beside the others': never paired
    one = session.exec(select(JudgeScore)).first()
    assert one is not None
    one.settings = {"model": JUDGE, "temperature": 0.0, "seed": 0}
    session.add(one)
    session.commit()
    with pytest.raises(InputError, match=r"^The verdicts of \S+ in run prefs mix judge") as err:
        export_preferences("prefs", JUDGE, tmp_path / "p.jsonl", session=session)
    said = str(err.value)
    assert "seed 0, temperature 0.0" in said and "settings not recorded" in said
    assert not (tmp_path / "p.jsonl").exists()


def test_cli_export_preferences(
    cli: Callable[..., Result], session: Session, tmp_path: Path
) -> None:
    _seed(session)
    out = tmp_path / "cli.jsonl"
    res = cli("export", "preferences", "--run", "prefs", "--judge", JUDGE, "--out", str(out))
    assert res.exit_code == 0, res.output
    assert "Wrote 1 pair(s)" in res.output and len(out.read_text().splitlines()) == 1
