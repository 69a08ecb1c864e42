"""Strict parsing of filter and judge replies on the outputs real models produce."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from study.reasoning.judges import PERTURBED_KINDS, parse_judge_answer
from study.reasoning.question_filter import MAX_REASON_WORDS, parse_filter_answer
from study.strict_json import StrictParseError, extract_json_object

GOOD = {"label": "ACCEPT", "reason": "Weighs two options.", "domains": ["career"]}


# ------------------------------------------------------------------ JSON extraction


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(GOOD),
        f"```json\n{json.dumps(GOOD)}\n```",
        f"```\n{json.dumps(GOOD)}\n```",
        f"Here is my verdict:\n{json.dumps(GOOD)}\nHope this helps!",
        f"Sure.\n```json\n{json.dumps(GOOD, indent=2)}\n```\nDone.",
    ],
)
def test_one_object_is_found_through_fences_and_prose(text: str) -> None:
    assert extract_json_object(text) == GOOD


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("I accept this question.", "no valid JSON object"),
        ("{'label': 'ACCEPT', 'reason': 'x', 'domains': []}", "no valid JSON object"),
        ('{"label": "ACCEPT", "reason": "x", "domains": [],}', "no valid JSON object"),
        ('{"label": "ACCEPT", "reason": "cut off', "no valid JSON object"),
        (f"{json.dumps(GOOD)}\n{json.dumps(GOOD)}", "more than one"),
        ("[1, 2, 3]", "no valid JSON object"),
    ],
)
def test_broken_or_ambiguous_replies_raise(text: str, reason: str) -> None:
    with pytest.raises(StrictParseError, match=reason):
        extract_json_object(text)


def test_answer_tag_rules() -> None:
    body = '{"helpfulness": 4}'
    assert extract_json_object(f"ok <answer>{body}</answer>", require_answer_tag=True) == {
        "helpfulness": 4
    }
    with pytest.raises(StrictParseError, match="no <answer>"):
        extract_json_object(body, require_answer_tag=True)
    with pytest.raises(StrictParseError, match="more than one <answer>"):
        extract_json_object(
            f"<answer>{body}</answer><answer>{body}</answer>", require_answer_tag=True
        )


# ------------------------------------------------------------------------ filter


def test_filter_answer_normalises_case_and_duplicate_domains() -> None:
    v = parse_filter_answer(
        json.dumps(
            {"label": " reject ", "reason": " A lookup. ", "domains": ["Career", "career", "other"]}
        )
    )
    assert (v.label, v.reason, v.domains) == ("REJECT", "A lookup.", ("career", "other"))
    assert not v.reason_too_long


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"label": "ACCEPT", "reason": "x"}, "missing key 'domains'"),
        ({"reason": "x", "domains": ["career"]}, "missing key 'label'"),
        ({**GOOD, "confidence": 0.9}, "unexpected key 'confidence'"),
        ({**GOOD, "label": "MAYBE"}, "label must be ACCEPT or REJECT"),
        ({**GOOD, "label": True}, "label must be ACCEPT or REJECT"),
        ({**GOOD, "reason": ""}, "reason must be a non-empty string"),
        ({**GOOD, "reason": 3}, "reason must be a non-empty string"),
        ({**GOOD, "domains": "career"}, "domains must be a list"),
        ({**GOOD, "domains": ["sports"]}, "unknown domain 'sports'"),
        ({**GOOD, "domains": []}, "needs at least one domain"),
    ],
)
def test_filter_answer_rejects_bad_fields(data: dict[str, object], reason: str) -> None:
    with pytest.raises(StrictParseError, match=reason):
        parse_filter_answer(json.dumps(data))


def test_rejection_may_have_no_domain() -> None:
    assert parse_filter_answer(json.dumps({**GOOD, "label": "REJECT", "domains": []})).domains == ()


def test_long_reason_is_kept_and_flagged() -> None:
    reason = " ".join(["word"] * (MAX_REASON_WORDS + 3))
    v = parse_filter_answer(json.dumps({**GOOD, "reason": reason}))
    assert v.reason == reason and v.reason_words == MAX_REASON_WORDS + 3
    assert v.reason_too_long
    exact = " ".join(["word"] * MAX_REASON_WORDS)
    assert not parse_filter_answer(json.dumps({**GOOD, "reason": exact})).reason_too_long


# ------------------------------------------------------------------------- judge


def _ans(obj: object) -> str:
    return f"Step 2 leans on the memory.\n<answer>{json.dumps(obj)}</answer>"


def test_judge_answer_ok() -> None:
    obj = {"helpfulness": 3, "distraction": 1, "acknowledgement": 0}
    assert parse_judge_answer(_ans(obj), PERTURBED_KINDS) == obj
    assert parse_judge_answer(_ans({"helpfulness": 0}), ("helpfulness",)) == {"helpfulness": 0}


@pytest.mark.parametrize(
    ("text", "kinds", "reason"),
    [
        ('{"helpfulness": 3}', ("helpfulness",), "no <answer>"),
        (_ans({"helpfulness": 5}), ("helpfulness",), "helpfulness must be an integer from 0 to 4"),
        (_ans({"helpfulness": -1}), ("helpfulness",), "from 0 to 4"),
        (_ans({"helpfulness": 3.5}), ("helpfulness",), "from 0 to 4"),
        (_ans({"helpfulness": "4"}), ("helpfulness",), "from 0 to 4"),
        (_ans({"helpfulness": True}), ("helpfulness",), "from 0 to 4"),
        (
            _ans({"helpfulness": 4, "distraction": 2, "acknowledgement": 1}),
            PERTURBED_KINDS,
            "distraction must be an integer from 0 to 1",
        ),
        (_ans({"helpfulness": 4}), PERTURBED_KINDS, "missing key 'distraction'"),
        (
            _ans({"helpfulness": 4, "distraction": 0}),
            ("helpfulness",),
            "unexpected key 'distraction'",
        ),
        ('<answer>{"helpfulness": 4</answer>', ("helpfulness",), "no valid JSON"),
    ],
)
def test_judge_answer_rejects(text: str, kinds: tuple[str, ...], reason: str) -> None:
    with pytest.raises(StrictParseError, match=reason):
        parse_judge_answer(text, kinds)


# ---------------------------------------------------------------- property checks

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
_prose = st.text(
    alphabet=st.characters(exclude_characters="{}`<>", exclude_categories=["Cs"]),
    max_size=40,
)


@given(
    obj=st.dictionaries(st.text(max_size=10), _json_values, max_size=5),
    before=_prose,
    after=_prose,
    indent=st.sampled_from([None, 2]),
)
def test_any_object_is_recovered_exactly_from_prose(
    obj: dict[str, object], before: str, after: str, indent: int | None
) -> None:
    text = f"{before}\n{json.dumps(obj, indent=indent)}\n{after}"
    assert extract_json_object(text) == obj
    assert (
        extract_json_object(
            f"{before}<answer>{json.dumps(obj)}</answer>{after}", require_answer_tag=True
        )
        == obj
    )


def test_prompts_start_with_their_task_marker() -> None:
    from llm.sim.tasks import find_task
    from study.reasoning.judges import SYSTEM_PROMPT as JUDGE_PROMPT
    from study.reasoning.question_filter import SYSTEM_PROMPT as FILTER_PROMPT
    from study.reasoning.sim.tasks import JUDGE_TASK, QUESTION_FILTER_TASK

    assert find_task([("system", FILTER_PROMPT)]) == QUESTION_FILTER_TASK
    assert find_task([("system", JUDGE_PROMPT)]) == JUDGE_TASK
