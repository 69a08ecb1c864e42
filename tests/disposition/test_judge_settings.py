"""The disposition judges store their settings with every score, the report prints them,
and a judge whose scores mix settings is refused in one sentence (never pooled)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlmodel import Session, select

from llm.specs import ModelSpec
from storage.disposition_models import DispositionScore
from storage.errors import InputError
from study.disposition.analysis import analyze_study
from study.disposition.awareness import AWARENESS_PROMPT_VERSION
from study.disposition.items import BatteryDocument, load_sample_batteries
from study.disposition.report import write_disposition_report
from study.disposition.runs import ArmSpec, add_arms, run_study
from study.disposition.score import CLASSIFIER_PROMPT_VERSION, GRADER_PROMPT_VERSION
from study.report.markdown import md_escape


def _small() -> BatteryDocument:
    doc = load_sample_batteries()
    return BatteryDocument(
        batteries=[doc.batteries[0].model_copy(update={"stems": doc.batteries[0].stems[:2]})]
    )


def test_scores_carry_settings_report_shows_them_mixing_is_refused(
    session: Session, tmp_path: Path
) -> None:
    arms = [
        ArmSpec(
            "ref", ModelSpec.parse("sim/disp-qwen-d000"), role="reference", dose=0, max_tokens=400
        ),
        ArmSpec("d100", ModelSpec.parse("sim/disp-qwen-d100"), dose=100, max_tokens=400),
    ]
    add_arms("js", arms, session=session)
    run_study(
        "js",
        _small(),
        session=session,
        judge=ModelSpec.parse("sim/default"),
        repeat_share=0.2,
        grade_share=0.5,
        awareness_share=0.5,
    )
    rows = list(session.exec(select(DispositionScore)))
    versions = {
        "category": CLASSIFIER_PROMPT_VERSION,
        "graded": GRADER_PROMPT_VERSION,
        "awareness": AWARENESS_PROMPT_VERSION,
    }
    assert {r.kind for r in rows} == set(versions) and {r.repeat for r in rows} == {0, 1}
    for r in rows:
        assert r.settings is not None, r
        assert r.settings["model"] == "sim/default"
        assert r.settings["prompt_version"] == versions[r.kind]
        assert (r.settings["temperature"], r.settings["seed"]) == (0.0, 0)
        assert len(r.settings["prompt_hash"]) == 16
    # one setting per kind (the repeat is the same request again, its own cache entry)
    assert {(r.kind, str(r.settings)) for r in rows} == {
        (k, str(next(r.settings for r in rows if r.kind == k))) for k in versions
    }

    analysis = analyze_study("js", session=session, n_boot=100, seed=0)
    assert [j for j, _ in analysis.judge_settings] == [
        "sim/default (classifier)", "sim/default (graded review)", "sim/default (test awareness)",
    ]  # fmt: skip
    files = write_disposition_report(analysis, tmp_path / "r")
    html = re.sub(r"\s+", " ", files["report_html"].read_text("utf-8"))
    md = files["report_md"].read_text("utf-8")
    shown = f"prompt_version {CLASSIFIER_PROMPT_VERSION}, seed 0, temperature 0.0"
    for text, line in ((html, shown), (md, md_escape(shown))):
        assert "Judge settings (provenance)" in text and line in text
    assert "Not assessed: no human check of the classifier" in html

    # half of the classifier's verdicts re-given at another temperature: not pooled
    category = [r for r in rows if r.kind == "category" and r.settings is not None]
    for r in category[: len(category) // 2]:
        r.settings = {**(r.settings or {}), "temperature": 0.7}
        session.add(r)
    session.commit()
    with pytest.raises(
        InputError,
        match=r"^The verdicts of sim/default \(classifier\) in study js mix judge settings",
    ) as err:
        analyze_study("js", session=session, n_boot=100, seed=0)
    assert "\n" not in str(err.value) and "temperature 0.7" in str(err.value)
