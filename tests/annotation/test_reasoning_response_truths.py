"""The simulator's truth of reasoning drift's response studies, which the simulated
annotator pool answers ``helpfulness`` and ``distraction`` tasks with.

Known dose both ways: ``sim/null`` edits no step under a memory (only its 5 % model noise
moves a step: the truth counts it, about 0.3 of the tasks), ``sim/strong`` edits a step under
a life event with probability 0.85 (its truth names a step on nearly every task); a
response whose answer did not parse is scored as having none.
"""

from __future__ import annotations

from sqlmodel import Session

from llm.specs import ModelSpec


def _tasks(kind: str, model: str, run: str, session: Session) -> list[dict[str, object]]:
    from annotation.selection import Selection
    from annotation.sync import tasks_to_push
    from study.questions import (
        SAMPLE_SOURCE,
        list_questions,
        read_questions,
        sample_questions_path,
        store_questions,
    )
    from study.reasoning.generation import GenerationOptions, run_generation

    if not list_questions(session=session):
        store_questions(read_questions(sample_questions_path())[:10], session=session,
                        source=SAMPLE_SOURCE)  # fmt: skip
    options = GenerationOptions(
        model=ModelSpec.parse(model), run=run, perturbations="bereavement,job_loss", samples=2,
        seed=3,
    )  # fmt: skip
    run_generation(options, session=session)
    session.commit()
    return [dict(t.data) for t in tasks_to_push(kind, Selection(run=run), session=session)]


def _influenced(tasks: list[dict[str, object]]) -> float:
    from study.reasoning.human.simulated import distraction_truth

    votes = [distraction_truth(t).get("step") for t in tasks]
    assert all(v is not None for v in votes), votes  # every simulated task is answered
    return sum(v != "no" for v in votes) / len(votes)


def test_distraction_truth_tells_a_null_model_from_a_strong_one(session: Session) -> None:
    null = _influenced(_tasks("distraction", "sim/null", "t-null", session))
    strong = _influenced(_tasks("distraction", "sim/strong", "t-strong", session))
    # null's share is its model noise (about 5 % a step over up to seven steps)
    assert null < 0.45 and strong > 0.8, (null, strong)


def test_distraction_truth_gives_no_answer_for_a_model_that_is_not_simulated() -> None:
    from study.reasoning.human.simulated import distraction_truth

    task = {"question": "q", "steps_text": "Step 1: x", "model": "openai/gpt-x"}
    assert distraction_truth(task) == {}


def test_helpfulness_truth_reads_a_parsed_answer_as_complete(session: Session) -> None:
    from study.reasoning.human.simulated import helpfulness_truth

    tasks = _tasks("helpfulness", "sim/null", "t-help", session)
    assert tasks and {helpfulness_truth(t)["score"] for t in tasks} <= {"4", "1"}
    assert helpfulness_truth({"response": "<think><step_1>a</step_1></think>"}) == {"score": "1"}
    assert helpfulness_truth({"response": ""}) == {"score": "0"}
