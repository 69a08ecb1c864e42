"""``unit=question``: a calibration slice drawn by question, every task of each drawn question."""

from __future__ import annotations

import pytest

from annotation.selection import Selection, TaskSpec, parse_selection
from annotation.tasks import _limited_questions, inclusion_probability
from storage.errors import InputError


def _tasks(questions: int, per: int) -> list[TaskSpec]:
    return [
        TaskSpec(f"t:{q}:{i}", {"question_id": f"q{q}", "i": i})
        for q in range(questions)
        for i in range(per)
    ]


def test_limit_counts_questions_and_keeps_every_task_of_each() -> None:
    sel = parse_selection(["run=r", "unit=question", "limit=4", "seed=3"])
    kept, available = _limited_questions(_tasks(10, 3), sel)
    assert available == 10 and len(kept) == 12
    assert len({t.data["question_id"] for t in kept}) == 4
    assert inclusion_probability(sel, available) == pytest.approx(0.4)
    # a larger limit keeps every question of a smaller one (the seeded order is nested)
    more, _ = _limited_questions(_tasks(10, 3), sel.model_copy(update={"limit": 7}))
    assert {t.key for t in kept} <= {t.key for t in more}
    other, _ = _limited_questions(_tasks(10, 3), sel.model_copy(update={"seed": 4}))
    assert {t.key for t in other} != {t.key for t in kept}


def test_a_task_without_a_question_is_refused_in_one_sentence() -> None:
    tasks = [*_tasks(3, 2), TaskSpec("loose", {"text": "no question"})]
    with pytest.raises(InputError) as err:
        _limited_questions(tasks, Selection(unit="question", limit=2))
    assert "Task loose names no question" in str(err.value) and "\n" not in str(err.value)


def test_unknown_unit_is_refused() -> None:
    with pytest.raises(InputError, match="unit"):
        parse_selection(["unit=step"])
