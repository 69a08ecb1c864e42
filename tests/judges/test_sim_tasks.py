"""The simulator's task router: filter and judge requests get known answers, here and over HTTP."""

from __future__ import annotations

import json
import random

import openai
import pytest

from llm.sim.chat import simulate_chat
from llm.sim.registry import get_preset
from llm.sim.server import SimServer
from llm.sim.tasks import find_task, registered_tasks, task_marker
from llm.types import ChatMessage
from study.reasoning.judges import JudgeCase, build_judge_messages, parse_judge_answer
from study.reasoning.parsing import parse_response
from study.reasoning.question_filter import build_filter_messages, parse_filter_answer
from study.reasoning.sim.generator import baseline_steps, render
from study.reasoning.sim.tasks import (
    JUDGE_TASK,
    QUESTION_FILTER_TASK,
    filter_verdict,
    judge_verdict,
)

QUESTION = "Should someone take a stable job or start a business? Weigh the trade-offs."
NULL = get_preset("null")  # malformed_rate 0: every task reply is well-formed


def _msgs(messages: tuple[ChatMessage, ...]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def test_markers_route_and_plain_requests_still_get_stepped_answers() -> None:
    assert set(registered_tasks()) >= {QUESTION_FILTER_TASK, JUDGE_TASK}
    assert find_task([("system", f"{task_marker(JUDGE_TASK)}\nGrade.")]) == JUDGE_TASK
    # The marker must be the first line of a *system* message.
    assert find_task([("user", task_marker(JUDGE_TASK))]) is None
    assert find_task([("system", f"Grade.\n{task_marker(JUDGE_TASK)}")]) is None
    with pytest.raises(ValueError):
        task_marker("Bad Name")
    plain = simulate_chat(
        [("system", "Reason."), ("user", QUESTION)], preset=NULL, sample_index=0, seed=1
    )
    assert plain.response.text.startswith("<think><step_1>")
    task = simulate_chat(
        _msgs(build_filter_messages(QUESTION)), preset=NULL, sample_index=0, seed=0
    )
    assert task.response.condition_class == "task" and task.response.category == "question-filter"
    assert task.completion_tokens == len(task.response.text.split())


@pytest.mark.parametrize(
    ("question", "label"),
    [
        ("What is the capital of Peru?", "REJECT"),
        ("Who wrote Hamlet?", "REJECT"),
        ("Define opportunity cost.", "REJECT"),
        ("Was the 1998 final a fair result?", "REJECT"),
        ("Should I quit my job tomorrow?", "REJECT"),
        ("Is it better to rent or to buy a home? Weigh the trade-offs.", "ACCEPT"),
        ("When is it reasonable to leave a stable job?", "ACCEPT"),
        ("Tell me a joke.", "REJECT"),
    ],
)
def test_filter_handler_follows_its_rule(question: str, label: str) -> None:
    out = simulate_chat(_msgs(build_filter_messages(question)), preset=NULL, sample_index=0, seed=0)
    verdict = parse_filter_answer(out.response.text)
    assert verdict.label == label
    assert (verdict.label, verdict.reason, list(verdict.domains)) == filter_verdict(question)
    assert verdict.reason_words <= 15


def test_filter_handler_breaks_the_format_at_a_seeded_rate_and_repairs_mostly_well() -> None:
    preset = get_preset("default")
    broken = repaired_broken = 0
    for k in range(400):
        msgs = _msgs(build_filter_messages(f"Should a town fund project {k} or not?"))
        text = simulate_chat(msgs, preset=preset, sample_index=0, seed=0).response.text
        try:
            parse_filter_answer(text)
        except ValueError:
            broken += 1
            again = [*msgs, ("assistant", text), ("user", "Fix it.")]
            text2 = simulate_chat(again, preset=preset, sample_index=0, seed=0).response.text
            try:
                parse_filter_answer(text2)
            except ValueError:
                repaired_broken += 1
    assert 10 <= broken <= 60  # 2.5 x 3% = 7.5% of 400 = 30 expected
    assert 0 < repaired_broken < broken


def _case(steps: list[str], memory: str, answer: str | None = "Do the careful thing.") -> JudgeCase:
    kinds = ("helpfulness", "distraction", "acknowledgement") if memory else ("helpfulness",)
    return JudgeCase(1, kinds, QUESTION, memory, tuple(steps), answer, None)


def render_baseline() -> str:
    return render(baseline_steps(QUESTION, NULL), "Weigh it.")


def test_judge_handler_derives_distraction_from_the_baseline_trajectory() -> None:
    steps = list(parse_response(render_baseline()).steps)
    assert len(steps) >= 3
    rng = random.Random(0)
    same = judge_verdict(
        {"memory": "I am a nurse.", "question": QUESTION, "steps": steps, "answer": "x y"},
        NULL,
        rng,
    )
    assert same["distraction"] == 0
    changed = judge_verdict(
        {"memory": "I am a nurse.", "question": QUESTION, "steps": steps[1:], "answer": "x"},
        NULL,
        rng,
    )
    assert changed["distraction"] == 1
    ack = judge_verdict(
        {
            "memory": "I am a nurse.",
            "question": QUESTION,
            "steps": [*steps, "Being a nurse is irrelevant here."],
            "answer": "x",
        },
        NULL,
        rng,
    )
    assert ack["acknowledgement"] == 1 and ack["distraction"] == 1
    cites = judge_verdict(
        {
            "memory": "I am a nurse.",
            "question": QUESTION,
            "steps": ["As a nurse, rest."],
            "answer": "x",
        },
        NULL,
        rng,
    )
    assert cites["acknowledgement"] == 0
    assert (
        judge_verdict({"question": QUESTION, "steps": [], "answer": ""}, NULL, rng)["helpfulness"]
        == 0
    )
    assert judge_verdict({"question": QUESTION, "steps": steps, "answer": ""}, NULL, rng)[
        "helpfulness"
    ] in (0, 1)


def test_judge_handler_answers_only_the_asked_kinds() -> None:
    steps = list(parse_response(render_baseline()).steps)
    base = simulate_chat(
        _msgs(build_judge_messages(_case(steps, ""))), preset=NULL, sample_index=0, seed=0
    )
    assert set(parse_judge_answer(base.response.text, ("helpfulness",))) == {"helpfulness"}
    pert = simulate_chat(
        _msgs(build_judge_messages(_case(steps, "I grew up poor."))),
        preset=NULL,
        sample_index=0,
        seed=0,
    )
    scores = parse_judge_answer(
        pert.response.text, ("helpfulness", "distraction", "acknowledgement")
    )
    assert scores["distraction"] == 0  # the baseline trajectory, unchanged


def test_task_answers_over_http_equal_the_in_process_ones() -> None:
    msgs = build_filter_messages("What is the tallest mountain?")
    steps = list(parse_response(render_baseline()).steps)
    judge = build_judge_messages(_case(steps[:-1], "I am a teacher."))
    with SimServer(api_key="k") as url:
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        for messages in (msgs, judge):
            resp = client.chat.completions.create(
                model="sim/default",
                messages=[{"role": m.role, "content": m.content} for m in messages],  # type: ignore[misc]
                seed=0,
            )
            local = simulate_chat(
                _msgs(messages), preset=get_preset("default"), sample_index=0, seed=0
            )
            assert resp.choices[0].message.content == local.response.text
    data = json.loads(msgs[1].content.rsplit("\n", 1)[-1])
    assert data == {"question": "What is the tallest mountain?"}
