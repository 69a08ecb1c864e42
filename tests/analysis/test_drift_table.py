"""The drift table pairs every response with its question's baseline sample 0."""

from __future__ import annotations

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from study.reasoning.drift import Trajectory, build_drift_table


def _t(
    q: str, cond: str, cls: str, sample: int, symbols: tuple[int, ...], **kw: object
) -> Trajectory:
    return Trajectory("m", q, cond, cls, sample, symbols, **kw)  # type: ignore[arg-type]


def test_pairs_against_baseline_sample_zero_and_marks_null_rows() -> None:
    items = [
        _t("q1", "baseline", "none", 0, (1, 2, 3)),
        _t("q1", "baseline", "none", 1, (1, 2, 4)),
        _t("q1", "noise/filler/1", "noise", 0, (1, 2, 3)),
        _t("q1", "attribute/age/1", "attribute", 1, (3, 2, 1)),
        _t("q2", "attribute/age/1", "attribute", 0, (1,)),  # q2 has no baseline
        _t("q1", "life_event/job_loss/1", "life_event", 0, (), usable=False, reason="no_steps"),
    ]
    table = build_drift_table(items)
    rows = table.rows.set_index(["condition", "sample"])
    assert table.skipped == {"no_baseline": 1, "no_steps": 1}
    assert list(table.rows["condition_class"]) == ["none", "noise", "attribute"]
    assert rows.loc[("noise/filler/1", 0), "dtw"] == 0.0
    # (1,2,3) vs (1,2,4): one substitution in three steps.
    assert rows.loc[("baseline", 1), "levenshtein"] == pytest.approx(1 / 3)
    assert rows.loc[("baseline", 1), "dtw"] == pytest.approx(1 / 3)
    # (1,2,3) vs (3,2,1): two substitutions; same histogram, so JSD = 0.
    assert rows.loc[("attribute/age/1", 1), "levenshtein"] == pytest.approx(
        Levenshtein.distance([1, 2, 3], [3, 2, 1]) / 3
    )
    assert rows.loc[("attribute/age/1", 1), "jsd"] == pytest.approx(0.0)
    assert rows.loc[("attribute/age/1", 1), "sri"] == pytest.approx(0.5 * 2 / 3)
    assert np.all((table.rows[["dtw", "sri"]] >= 0) & (table.rows[["dtw", "sri"]] <= 1))


def test_empty_input_gives_an_empty_table_with_the_columns() -> None:
    table = build_drift_table([])
    assert table.n_pairs == 0 and "dtw" in table.rows.columns
