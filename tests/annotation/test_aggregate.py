"""Aggregation rules on hand-made annotations (no server): 2-of-3, unanimity, lead-time
filter, newest-edit-wins, confidence, disagreement rate and Krippendorff's alpha."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import krippendorff
import numpy as np
import pytest

from annotation.aggregate import AggregationConfig, AnnotationRecord, aggregate, extract_answers
from annotation.kinds import study_specs

QC = study_specs()["question_checks"]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _rec(
    item: str, ann_id: int, who: str, clear: str | None, lead: float | None = 30.0, minutes: int = 0
) -> AnnotationRecord:
    result = (
        []
        if clear is None
        else [
            {
                "from_name": "clear",
                "to_name": "question",
                "type": "choices",
                "value": {"choices": [clear]},
            }
        ]
    )
    return AnnotationRecord(
        item=item,
        annotation_id=ann_id,
        annotator=who,
        result=result,
        lead_time=lead,
        updated_at=T0 + timedelta(minutes=minutes),
    )


def _three(item: str, start: int, values: tuple[str, str, str]) -> list[AnnotationRecord]:
    return [_rec(item, start + i, f"a{i + 1}", v) for i, v in enumerate(values)]


def test_majority_unanimity_confidence_and_alpha_by_hand() -> None:
    records = [
        *_three("A", 10, ("yes", "yes", "yes")),
        *_three("B", 20, ("no", "no", "no")),
        *_three("C", 30, ("yes", "yes", "no")),
    ]
    agg = aggregate(QC, records)
    a, b, c = (it.outcome("clear") for it in agg.items)
    assert a is not None and b is not None and c is not None
    assert (a.label, a.unanimous, a.confidence) == ("yes", True, 1.0)
    assert (b.label, b.unanimous) == ("no", True)
    assert (c.label, c.unanimous) == ("yes", False)
    assert c.confidence == pytest.approx(2 / 3)
    # By hand: n = 9 values; D_o = (0 + 0 + 2) / 9; 5 yes and 4 no give
    # D_e = (81 - 25 - 16) / (9 * 8) = 5/9; alpha = 1 - (2/9) / (5/9) = 0.6.
    assert agg.alpha == pytest.approx(0.6)
    assert agg.alpha_by_question["clear"] == pytest.approx(0.6)
    assert agg.alpha_by_question["no_vague_terms"] is None  # nobody answered it
    assert agg.disagreement_rate == pytest.approx(1 / 3)
    assert [it.disagreement_rate for it in agg.items] == [0.0, 0.0, 1.0]
    assert agg.annotators == ("a1", "a2", "a3")


def test_no_label_without_two_agreeing_votes() -> None:
    agg = aggregate(QC, _three("A", 1, ("yes", "no", "unsure")))
    o = agg.items[0].outcome("clear")
    assert o is not None
    assert o.label is None and not o.unanimous
    assert o.confidence == pytest.approx(1 / 3)
    assert agg.alpha is None or not np.isnan(agg.alpha)


def test_fast_annotations_are_dropped_and_threshold_is_configurable() -> None:
    records = [
        _rec("A", 1, "a1", "no", lead=4.0),  # under 10 s: dropped
        _rec("A", 2, "a2", "yes"),
        _rec("A", 3, "a3", "yes"),
    ]
    agg = aggregate(QC, records)
    o = agg.items[0].outcome("clear")
    assert o is not None
    assert o.votes == (("a2", "yes"), ("a3", "yes"))
    assert o.label == "yes"
    assert not o.unanimous  # two votes left: agreement, but not three annotators
    assert agg.n_dropped_fast == 1 and agg.items[0].dropped_fast == 1
    assert agg.n_kept == 2 and agg.n_annotations == 3

    relaxed = aggregate(QC, records, AggregationConfig(min_lead_time_s=3.0))
    o = relaxed.items[0].outcome("clear")
    assert o is not None and o.n_votes == 3 and relaxed.n_dropped_fast == 0


def test_missing_lead_time_is_kept_and_cancelled_annotations_carry_no_vote() -> None:
    records = [
        _rec("A", 1, "a1", "yes", lead=None),
        _rec("A", 2, "a2", None),  # skipped in Label Studio: empty result
        _rec("A", 3, "a3", "yes"),
    ]
    agg = aggregate(QC, records)
    o = agg.items[0].outcome("clear")
    assert o is not None and o.votes == (("a1", "yes"), ("a3", "yes"))
    assert agg.n_cancelled == 1


def test_newest_annotation_of_an_annotator_wins() -> None:
    records = [
        _rec("A", 1, "a1", "no", minutes=0),
        _rec("A", 5, "a1", "yes", minutes=9),
        _rec("A", 2, "a2", "yes"),
    ]
    o = aggregate(QC, records).items[0].outcome("clear")
    assert o is not None and o.votes == (("a1", "yes"), ("a2", "yes"))
    assert o.annotation_ids == (5, 2)


def test_alpha_matches_the_krippendorff_package_on_random_data() -> None:
    rng = np.random.default_rng(7)
    values = ("yes", "no", "unsure")
    records = []
    matrix = np.full((4, 40), np.nan)
    for item in range(40):
        for who in range(4):
            if rng.random() < 0.2:
                continue  # missing votes are allowed
            v = int(rng.choice(3, p=[0.6, 0.3, 0.1]))
            matrix[who, item] = v
            records.append(_rec(f"i{item:02d}", item * 10 + who, f"a{who}", values[v]))
    agg = aggregate(QC, records)
    expected = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="nominal", value_domain=[0, 1, 2]
    )
    assert agg.alpha == pytest.approx(expected)


def test_helpfulness_alpha_is_ordinal() -> None:
    spec = study_specs()["helpfulness"]
    scores = [("4", "4", "3"), ("1", "0", "1"), ("2", "2", "2"), ("3", "4", "4")]
    records = []
    matrix = np.zeros((3, len(scores)))
    for i, row in enumerate(scores):
        for who, s in enumerate(row):
            matrix[who, i] = float(s)
            records.append(
                AnnotationRecord(
                    item=f"r{i}",
                    annotation_id=i * 10 + who,
                    annotator=f"a{who}",
                    lead_time=20.0,
                    result=[
                        {
                            "from_name": "score",
                            "to_name": "response",
                            "type": "choices",
                            "value": {"choices": [s]},
                        }
                    ],
                )
            )
    agg = aggregate(spec, records)
    expected = krippendorff.alpha(
        reliability_data=matrix,
        level_of_measurement="ordinal",
        value_domain=[0.0, 1.0, 2.0, 3.0, 4.0],
    )
    assert agg.alpha == pytest.approx(expected)
    assert agg.items[0].outcome("score").label == "4"  # type: ignore[union-attr]


def test_extract_answers_reads_aliases_and_ignores_foreign_tags() -> None:
    result = [
        {"from_name": "irrelevant", "type": "choices", "value": {"choices": ["YES"]}},
        {"from_name": "confidence", "type": "choices", "value": {"choices": ["0.8"]}},
        {"from_name": "comment", "type": "textarea", "value": {"text": ["hi"]}},
    ]
    assert extract_answers(study_specs()["orthogonality"], result) == {
        "irrelevant": "yes",
        "confidence": "0.8",
    }
    assert extract_answers(study_specs()["orthogonality"], "garbage") == {}
