"""Agreement measures against the krippendorff package and hand computations."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from driftlens_core.agreement import (
    agreement_summary,
    cohens_kappa,
    confusion_counts,
    encode_labels,
    krippendorff_alpha,
    pairwise_agreement,
)

LABELS: list[list[str | None]] = [
    ["Social", "Practical", "Social", None, "Personal", "Protective"],
    ["Social", "Practical", "Practical", "Personal", "Personal", "Protective"],
    ["Social", "Protective", "Practical", "Personal", "", "Protective"],
]


def test_pairwise_exact_match_by_hand() -> None:
    res = pairwise_agreement(LABELS)
    # pair (0,1): items 0,1,2,4,5 labeled by both, agree on 0,1,4,5 -> 4/5
    # pair (0,2): items 0,1,2,5 -> agree on 0,5 -> 2/4
    # pair (1,2): items 0,1,2,3,5 -> agree on 0,2,3,5 -> 4/5
    assert [p[2] for p in res.pairs] == pytest.approx([0.8, 0.5, 0.8])
    assert [p[3] for p in res.pairs] == [5, 4, 5]
    assert res.mean == pytest.approx(0.7)


def test_cohens_kappa_by_hand() -> None:
    a = ["x", "x", "y", "y", "x", "z"]
    b = ["x", "y", "y", "y", "x", "x"]
    p_o = 4 / 6
    # marginals a: x 3, y 2, z 1; b: x 3, y 3
    p_e = (3 / 6) * (3 / 6) + (2 / 6) * (3 / 6)
    assert cohens_kappa(a, b) == pytest.approx((p_o - p_e) / (1 - p_e))
    assert cohens_kappa(["x", "x"], ["x", "x"]) != cohens_kappa(["x", "x"], ["x", "x"])  # NaN
    assert cohens_kappa(["x", None, "y"], ["x", "y", "y"]) == pytest.approx(1.0)


def test_krippendorff_matches_package_with_string_labels() -> None:
    data, domain = encode_labels(LABELS)
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert krippendorff_alpha(LABELS) == pytest.approx(ref, rel=1e-12)
    assert set(domain) == {"Social", "Practical", "Personal", "Protective"}


@pytest.mark.parametrize("seed", range(5))
def test_krippendorff_random_against_package(seed: int) -> None:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 4, size=(3, 30)).astype(float)
    raw[rng.uniform(size=raw.shape) < 0.1] = np.nan
    labels = [[None if np.isnan(v) else f"cat{int(v)}" for v in row] for row in raw]
    ref = krippendorff.alpha(reliability_data=raw, level_of_measurement="nominal")
    assert krippendorff_alpha(labels) == pytest.approx(ref, rel=1e-12)


def test_krippendorff_single_category_is_undefined() -> None:
    same: list[list[str | None]] = [["a", "a", "a"], ["a", "a", None]]
    with pytest.raises(ValueError):  # the package refuses
        krippendorff.alpha(reliability_data=encode_labels(same)[0], level_of_measurement="nominal")
    assert np.isnan(krippendorff_alpha(same))
    summary = agreement_summary(same)
    assert np.isnan(summary.alpha)
    assert "same category" in summary.alpha_note
    assert summary.pairwise.mean == 1.0


def test_tuple_labels_and_confusion() -> None:
    labels = [
        [("Personal", "Pleasure"), ("Social", "Equity"), ("Social", "Equity")],
        [("Personal", "Emotion"), ("Social", "Equity"), ("Personal", "Pleasure")],
    ]
    conf = confusion_counts(labels)
    assert conf.counts.sum() == 3 + 2  # 3 item pairs, two disagreements counted twice
    assert conf.most_confused_pair() is not None
    assert pairwise_agreement(labels).mean == pytest.approx(1 / 3)


def test_confusion_most_confused_pair() -> None:
    conf = confusion_counts([["a", "a", "b", "c", "b"], ["b", "a", "a", "c", "c"]])
    assert conf.most_confused_pair() == ("a", "b", 2)
    assert conf.counts[conf.labels.index("c"), conf.labels.index("c")] == 1
