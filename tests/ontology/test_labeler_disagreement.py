"""Who splits from the others: odd one out per pair, labeler vs majority, disagreement rows."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import pytest

from ontology.agreement_tracking import LabelRecord, compute_agreement
from ontology.labeler_disagreement import disagreements, majority_confusion, odd_one_out

# step -> labels of A, B, C
STEPS = {
    1: ("x", "x", "y"),  # C alone
    2: ("x", "x", "y"),  # C alone
    3: ("y", "x", "x"),  # A alone
    4: ("x", "x", "x"),  # all agree
    5: ("x", "y", "z"),  # no majority
}


def _records(steps: Mapping[int, tuple[str, ...]], names: str = "ABC") -> list[LabelRecord]:
    return [
        LabelRecord(10, step, name, "root", leaf)
        for step, leaves in steps.items()
        for name, leaf in zip(names, leaves, strict=True)
    ]


def test_the_labeler_that_splits_alone_most_often_is_the_odd_one_out() -> None:
    (xy,) = odd_one_out(_records(STEPS), [("x", "y")])
    assert xy.steps == 4  # steps 1, 2, 3, 5 hold both x and y
    assert xy.by_labeler == {"A": 1, "B": 0, "C": 2}
    assert (xy.labeler, xy.times) == ("C", 2)


def test_no_odd_one_out_on_a_tie_or_with_two_labelers() -> None:
    (tie,) = odd_one_out(_records({1: ("x", "x", "y"), 2: ("y", "x", "x")}), [("x", "y")])
    assert tie.labeler is None and tie.times == 0
    two = _records({1: ("x", "y"), 2: ("y", "x")}, names="AB")
    (pair,) = odd_one_out(two, [("x", "y")])
    assert pair.by_labeler == {"A": 2, "B": 2} and pair.labeler is None
    (unseen,) = odd_one_out(_records(STEPS), [("y", "q")])
    assert (unseen.steps, unseen.labeler) == (0, None)


def test_labeler_against_the_others_majority() -> None:
    c = majority_confusion(_records(STEPS), "C")
    assert c.leaves == ("x", "y")
    assert c.counts == ((1, 2), (0, 0))  # rows: majority of A and B; columns: C
    assert c.steps == 3 and c.agreement == pytest.approx(100 / 3)
    with pytest.raises(KeyError):
        majority_confusion(_records(STEPS), "D")


def test_with_two_labelers_the_majority_matrix_is_the_plain_confusion_matrix() -> None:
    from sklearn.metrics import confusion_matrix

    rng = random.Random(4)
    leaves = ["p", "q", "r", "s"]
    steps = {k: (rng.choice(leaves), rng.choice(leaves)) for k in range(300)}
    got = majority_confusion(_records(steps, names="AB"), "B")
    a, b = [s[0] for s in steps.values()], [s[1] for s in steps.values()]
    expected = confusion_matrix(a, b, labels=list(got.leaves))
    assert [list(row) for row in got.counts] == expected.tolist()
    assert got.agreement == pytest.approx(
        100 * sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    )


def test_disagreements_are_one_row_per_step_and_filter_by_pair() -> None:
    records = _records(STEPS)
    rows = disagreements(records, texts={(10, 5): "step five"})
    assert [r.step_index for r in rows] == [1, 2, 3, 5]
    assert rows[-1].pairs == (("x", "y"), ("x", "z"), ("y", "z"))
    assert rows[-1].labels == {"A": "x", "B": "y", "C": "z"} and rows[-1].text == "step five"
    assert [r.step_index for r in disagreements(records, pair=("x", "z"))] == [5]
    assert [r.step_index for r in disagreements(records, pair=("z", "x"))] == [5]
    assert len(disagreements(records, limit=2)) == 2


def test_disagreement_rows_cover_every_confused_comparison_of_the_agreement() -> None:
    rng = random.Random(9)
    leaves = ["p", "q", "r"]
    steps = {k: tuple(rng.choice(leaves) for _ in range(3)) for k in range(200)}
    records = _records(steps)
    agreement = compute_agreement(records, examples=1000)
    for pair in agreement.most_confused:
        rows = disagreements(records, pair=(pair.leaf_a, pair.leaf_b))
        assert {(e.response_id, e.step_index) for e in pair.examples} == {
            (r.response_id, r.step_index) for r in rows
        }
    assert not math.isnan(agreement.mean_pairwise)
