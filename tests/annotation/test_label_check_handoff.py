"""The ontology studio hands its human label check to Label Studio (``validate human --push``)."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.client import LabelStudioConnection
from llm.specs import ModelSpec
from ontology.rounds import run_round
from storage.settings import resolve_settings
from storage.workspace import open_workspace_session
from study.questions import QuestionRow, store_questions
from study.reasoning.generation import GenerationOptions, run_generation

pytestmark = pytest.mark.labelstudio


def _round_on_a_small_run() -> int:
    with open_workspace_session(resolve_settings()) as session:
        rows = [
            QuestionRow("h1", "Should a team adopt a four-day week or keep five days?", (), 1),
            QuestionRow("h2", "Is it wiser to pay off a loan early or to invest the money?", (), 2),
        ]
        store_questions(rows, session=session, source="test")
        run_generation(
            GenerationOptions(
                model=ModelSpec.parse("sim/default"), run="h", perturbations="filler", samples=1
            ),
            session=session,
        )
        result = run_round("h", ["sim", "keywords"], session=session, sample=6, seed=3)
        session.commit()
        return result.round


def test_validate_human_pushes_the_label_check_study_once(
    ls_connection: LabelStudioConnection, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABEL_STUDIO_URL", ls_connection.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_connection.api_key)
    number = _round_on_a_small_run()
    args = ("ontology", "validate", "human", "--round", str(number), "--labeler", "keywords")
    shown = run_cli(*args, "--json")
    assert shown.code == 0, shown.err
    assert "annotate push label_check" in shown.out and "labeler=keywords" in shown.out
    first = run_cli(*args, "--limit", "7", "--push", "--json")
    assert first.code == 0, first.err
    pushed = first.json()
    assert pushed["selected"] == 7 and pushed["imported"] == 7
    again = run_cli(*args, "--limit", "7", "--push", "--json").json()
    assert again["imported"] == 0 and again["already_present"] == 7
    assert again["project_id"] == pushed["project_id"]
