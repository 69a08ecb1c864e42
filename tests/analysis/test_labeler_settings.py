"""The LLM step labeler stores its request settings with every label; the reasoning-drift
report prints them, and labels of one labeler made under different settings are refused
(study/judge_settings, the mechanism every judge goes through)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlmodel import Session, select

from ontology.labelers.registry import ensure_labeler_spec
from ontology.prompts import LABEL_PROMPT_VERSION
from storage.errors import InputError
from storage.models import StepLabel
from study.reasoning.analysis import analyze_run
from study.reasoning.trajectories import label_run
from tests.analysis._sim_workspace import RUN, build_sim_workspace

LABELER = "sim"


def test_llm_labels_carry_settings_shown_and_never_mixed(session: Session, tmp_path: Path) -> None:
    build_sim_workspace(session, n_questions=3)
    label_run(RUN, LABELER, session=session)
    spec = ensure_labeler_spec(LABELER, session=session)
    rows = list(session.exec(select(StepLabel).where(StepLabel.labeler_id == spec.id)))
    asked = [r for r in rows if r.parse_status != "empty_step"]
    assert asked and all(r.settings is not None for r in asked)
    first = asked[0].settings
    assert first is not None
    assert first["model"] == LABELER and first["prompt_version"] == LABEL_PROMPT_VERSION
    assert (first["temperature"], first["seed"]) == (0.0, 0) and first["max_tokens"] > 0
    assert {str(r.settings) for r in asked} == {str(first)}  # one ontology, one setting

    out = tmp_path / "r"
    analyze_run(RUN, LABELER, session=session, out_dir=out, bootstrap=200)
    html = re.sub(r"\s+", " ", (out / "report.html").read_text("utf-8"))
    assert "<dt>Labeler settings</dt>" in html
    assert f"prompt_version {LABEL_PROMPT_VERSION}, seed 0, temperature 0.0" in html
    assert "Labeler settings:" in (out / "report.md").read_text("utf-8")

    # a third of the labels re-made at another temperature under the same labeler: refused
    for r in asked[: len(asked) // 3]:
        r.settings = {**first, "temperature": 0.7}
        session.add(r)
    session.commit()
    with pytest.raises(
        InputError, match=r"^The verdicts of sim in run\(s\) sim-run mix judge settings"
    ) as err:
        analyze_run(RUN, LABELER, session=session, out_dir=tmp_path / "r2", bootstrap=200)
    assert "temperature 0.7" in str(err.value) and "\n" not in str(err.value)
