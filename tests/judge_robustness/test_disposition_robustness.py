"""Judge robustness of the disposition classifier: re-classified samples, the interval with
and without judge noise, and the drift's sign, significance and the arm ranking checked
under every judgement."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sqlmodel import Session
from typer.testing import Result

from llm.specs import ModelSpec
from storage.repo.disposition import require_arms
from study.disposition.analysis import analyze_study
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.report import write_disposition_report
from study.disposition.robustness import DispositionJudgements, conclusions
from study.disposition.runs import ArmSpec, add_arms, run_study
from study.judge_robustness.service import summarize
from tests.judge_robustness.cli_steps import strict_robustness


def _small() -> BatteryDocument:
    doc = load_sample_batteries()
    return BatteryDocument(
        batteries=[b.model_copy(update={"stems": b.stems[:4]}) for b in doc.batteries[:1]]
    )


def test_study_rejudged_report_shows_the_section(
    cli: Callable[..., Result], session: Session, tmp_path: Path
) -> None:
    arms = [
        ArmSpec(
            "ref", ModelSpec.parse("sim/disp-qwen-d000"), role="reference", dose=0, max_tokens=400
        ),
        ArmSpec("d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100, max_tokens=400),
    ]
    add_arms("rb", arms, session=session)
    run_study(
        "rb", _small(), session=session, judge=ModelSpec.parse("sim/default"), repeat_share=0.0
    )
    before = write_disposition_report(
        analyze_study("rb", session=session, n_boot=100), tmp_path / "a"
    )
    assert "Not assessed: the judge was not re-judged" in before["report_html"].read_text()

    data = strict_robustness(cli, "disposition", "rb", sample=40, bootstrap=300)
    assert data["primary"] == "sim/default"
    assert set(data["strata"]) == {"ref", "d100"} and data["n_items"] >= 35
    free, both = data["judge_free"], data["judge_inclusive"]
    assert both[1] - both[0] >= free[1] - free[0]
    # the simulated classifier flips a category with probability 0.0075 per scoring
    assert data["resample_flip_rate"] < 0.1 and data["lines"][-1]["flip_rate"] < 0.1

    after = write_disposition_report(
        analyze_study("rb", session=session, n_boot=100), tmp_path / "b"
    )
    text = re.sub(r"\s+", " ", after["report_html"].read_text())
    assert "Not assessed: the judge was not re-judged" not in text
    assert "Run rb, judge sim/default" in text and "judge-inclusive" in text
    assert "Alternative judge sim/judge-strict: flip rate" in text
    assert "Judge robustness" in after["report_md"].read_text()


def test_conclusion_flips_name_the_sign_significance_and_ranking(session: Session) -> None:
    add_arms(
        "cf",
        [
            ArmSpec("ref", ModelSpec.parse("sim/disp-qwen-d000"), role="reference", dose=0),
            ArmSpec("d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100),
        ],
        session=session,
    )
    arms = require_arms("cf", session=session)
    n = 40
    strata = ("ref",) * n + ("d100",) * n
    stored = np.r_[np.ones(n), np.zeros(n)]  # d100 far below the reference
    flipped = np.r_[np.zeros(n), np.ones(n)]  # another judge reads the opposite
    aligned = np.stack([stored, stored, flipped], axis=1)
    got = DispositionJudgements(
        response_ids=tuple(range(2 * n)), strata=strata, labels=("j", "j (resample 1)", "alt"),
        codes=aligned[:, :, None].copy(), aligned=aligned,
    )  # fmt: skip
    found = conclusions(got, arms, bootstrap=200, seed=0)
    assert found[0] == {
        "d100 drift sign": "negative",
        "d100 drift significance": "significant",
        "arm ranking by aligned rate": "ref > d100",
    }
    assert found[1] == found[0] and found[2]["d100 drift sign"] == "positive"
    result = summarize(
        instrument="disposition", run="cf", labels=got.labels,
        kinds=["stored", "resample", "alternative"], values=aligned, verdicts=got.codes,
        strata=strata, measure="aligned", midpoint=0.5, bootstrap=200, seed=0,
        conclusions=found,
    )  # fmt: skip
    assert result.lines[1].flip_rate == 0.0 and result.lines[2].flip_rate == 1.0
    flips = [c for c in result.conclusion_flips if c.startswith("alt: d100")]
    assert "alt: d100 drift sign positive (stored judgement: negative)" in flips
    assert any("arm ranking by aligned rate d100 > ref" in c for c in result.conclusion_flips)
    assert not any(c.startswith("j (resample 1)") for c in result.conclusion_flips)
