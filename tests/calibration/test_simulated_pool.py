"""The simulated annotator pool: its votes reach the workspace as Label Studio's do, known noise."""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import pytest
from sqlmodel import Session

from annotation.simulated import AnnotatorPool, OfflineLabelStudio, truth_of
from storage.errors import InputError
from tests.calibration.conftest import Slice


def _votes_against_truth(
    db: Callable[[], AbstractContextManager[Session]],
) -> list[tuple[int, int]]:
    from annotation.apply import study_aggregate

    truth = truth_of("conflict_rubric")
    pairs: list[tuple[int, int]] = []
    with db() as session:
        _, agg = study_aggregate("conflict_rubric", session=session)
        for it in agg.items:
            true = truth(it.payload)
            for d in ("d1", "d2", "d4", "d5"):
                o = it.outcome(d)
                assert o is not None and o.n_votes == 2
                pairs.extend((int(true[d]), int(v)) for _, v in o.votes)
    return pairs


def test_without_noise_the_pulled_votes_are_the_simulator_truth(
    pulled_slice: Callable[..., Slice], db: Callable[[], AbstractContextManager[Session]]
) -> None:
    sl = pulled_slice(limit=30, flip=0.0)
    assert sl.tasks == 30
    pairs = _votes_against_truth(db)
    assert len(pairs) == 30 * 4 * 2
    assert all(t == v for t, v in pairs)


def test_with_full_noise_every_vote_slips_one_level_or_stays_at_an_end(
    pulled_slice: Callable[..., Slice], db: Callable[[], AbstractContextManager[Session]]
) -> None:
    pulled_slice(limit=30, flip=1.0)
    pairs = _votes_against_truth(db)
    assert all(abs(t - v) == 1 or (t == v and t in (0, 4)) for t, v in pairs)
    assert sum(t != v for t, v in pairs) > len(pairs) // 2


def test_expected_vote_is_exact() -> None:
    pool = AnnotatorPool(flip=0.3)
    rng = random.Random(0)
    scale = [str(k) for k in range(5)]
    for level in (0, 2, 4):
        draws = [int(pool.vote(str(level), scale, ordinal=True, rng=rng)) for _ in range(20000)]
        assert np.mean(draws) == pytest.approx(pool.expected_vote(level, 5), abs=0.015)


def test_a_study_without_a_simulated_truth_is_one_sentence() -> None:
    client = OfflineLabelStudio()
    with pytest.raises(InputError, match="has no simulated truth"):
        AnnotatorPool().annotate(client, "orthogonality", 1)


_BENCH = Path(__file__).resolve().parents[2] / "bench" / "calibration_coverage.py"


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("driftlens_bench_calibration_coverage", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize(
    ("judge", "sign"), [("sim/judge-lenient", 1.0), ("sim/judge-strict", -1.0)]
)
def test_coverage_bench_known_dose_both_ways(judge: str, sign: float, tmp_path: Path) -> None:
    """A biased judge's interval misses the people's mean; the calibrated one covers it.

    The same machinery, so a bench that could not tell them apart (a truth read off the
    judge, a calibrated interval that ignored the humans) fails here. Two studies of ~420
    answers: the lenient judge's D2 is ~0.22 above the people's (the strict one's ~0.2
    below), over twice its SE.
    """
    bench = _bench()
    out = bench.main(  # type: ignore[attr-defined]
        ["--studies", "2", "--judge", judge, "--bootstrap", "300",
         "--workspace", str(tmp_path / "ws")]
    )  # fmt: skip
    assert out["judge_only_coverage"] == 0.0
    assert out["calibrated_coverage"] == 1.0
    assert sign * (out["mean_judge_only"] - out["mean_truth"]) > 0.15
    assert abs(out["mean_calibrated"] - out["mean_truth"]) < 0.15
    assert out["calibrated_width"] < out["human_only_width"]
