"""Issue 37 item 5: one extra judgement, an often unreadable judge, an interval off the scale."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pytest
from sqlmodel import Session

from storage.errors import InputError
from study.judge_robustness.result import RobustnessResult
from study.judge_robustness.service import judge_robustness, summarize


def _summary(values: np.ndarray, *, scale: tuple[float, float]) -> RobustnessResult:
    n, k = values.shape
    verdicts = np.nan_to_num(values, nan=-1.0)[:, :, None]
    labels = ["stored", *[f"alt{j}" for j in range(1, k)]]
    return summarize(
        instrument="conflicts", run="r", labels=labels,
        kinds=["stored", *["alternative"] * (k - 1)], values=values, verdicts=verdicts,
        strata=["t"] * n, measure="m", midpoint=10.0, bootstrap=400, seed=0, scale=scale,
    )  # fmt: skip


def test_a_judge_unreadable_on_a_third_of_the_answers_stops_with_its_share() -> None:
    rng = np.random.default_rng(0)
    values = rng.integers(0, 21, (60, 3)).astype(float)
    values[:22, 2] = np.nan  # 37 % unreadable: under the judges' 50 % stop
    with pytest.raises(InputError, match=r"alt2 gave no readable verdict on 22 of 60"):
        _summary(values, scale=(0.0, 20.0))


def test_answers_left_out_are_counted_with_the_reason() -> None:
    rng = np.random.default_rng(1)
    values = rng.integers(0, 21, (60, 3)).astype(float)
    values[:5, 1] = np.nan
    res = _summary(values, scale=(0.0, 20.0))
    assert res.n_items == 55
    assert any(
        "5 of 60 sampled answers left out" in n and "alt1 unreadable on 5" in n for n in res.notes
    )


def test_every_interval_stays_on_the_scale_and_says_when_it_was_clipped() -> None:
    rng = np.random.default_rng(2)
    # answers near the bottom, judges far apart: the judge-inclusive shift leaves 0..20
    base = rng.integers(0, 3, (40, 1)).astype(float)
    values = np.hstack([base, base + 15.0, np.clip(base - 0.0, 0, 20)])
    res = _summary(values, scale=(0.0, 20.0))
    lo, hi = res.judge_inclusive
    assert 0.0 <= lo <= hi <= 20.0
    for line in res.lines:
        assert 0.0 <= line.ci_low <= line.ci_high <= 20.0
    assert any("clipped to the scale" in n for n in res.notes)


def test_one_alternative_judge_and_no_resamples_is_refused_before_any_request(
    db: Callable[[], AbstractContextManager[Session]],
) -> None:
    with db() as session, pytest.raises(InputError, match="at least three judgements"):
        # no such run: a refusal about the run would mean the counts were checked late
        judge_robustness("conflicts", "absent", session=session, resamples=1,
                         judges=["sim/default"])  # fmt: skip
