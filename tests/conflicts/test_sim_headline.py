"""The conflicts simulator reproduces its seed's headline numbers (issue 23 item 8).

The seed's two human annotators agree within one point on CPC 91.3 % > BOC 89.4 % > SCC
80.5 % of the dimension-level pairs, and its two judges' mean D1–D5 totals fall by 0.63
and 0.87 points from 0 to 6 distractors. The two simulated judges must give the same, on
the default cohort (every model × type), within the tolerances docs/conflicts.md states:
±2 points on each type's within-one share (Monte Carlo SE about 0.45 points at 1,000
answers per type) and ±0.05 on each drop (exact expectations, no Monte Carlo error).
"""

from __future__ import annotations

import pytest

from driftlens_core.ordinal import ordinal_agreement
from study.conflicts.sim.judge import (
    JUDGE_PROFILES,
    JudgeProfile,
    expected_judged_total,
    simulate_judge_pairs,
)
from study.conflicts.sim.moves import RESPONDER_PROFILES, TYPES

SEED_WITHIN_ONE = {"CPC": 0.913, "BOC": 0.894, "SCC": 0.805}
#: The seed's judges (GPT-5.4, Opus) and the simulated ones standing for them.
SEED_DROP = {"judge-lenient": -0.63, "judge-strict": -0.87}


@pytest.fixture(scope="module")
def by_type() -> dict[str, float]:
    """Within-one agreement of the two simulated judges per conflict type."""
    n_models = len(RESPONDER_PROFILES)
    a, b, _ = simulate_judge_pairs(
        JUDGE_PROFILES["judge-lenient"], JUDGE_PROFILES["judge-strict"], 3000, seed=23
    )
    out = {}
    for k, type_ in enumerate(TYPES):
        # answer i is of type (i // models) % 3, and its five scores sit at 5i .. 5i + 4
        idx = [j for j in range(len(a)) if (j // 5 // n_models) % len(TYPES) == k]
        out[type_] = ordinal_agreement([a[j] for j in idx], [b[j] for j in idx]).within_one
    return out


@pytest.mark.parametrize("type_", sorted(SEED_WITHIN_ONE))
def test_within_one_agreement_of_each_type_is_the_seeds(
    by_type: dict[str, float], type_: str
) -> None:
    assert abs(by_type[type_] - SEED_WITHIN_ONE[type_]) <= 0.02, by_type


def test_types_agree_in_the_seeds_order(by_type: dict[str, float]) -> None:
    assert by_type["CPC"] > by_type["BOC"] > by_type["SCC"], by_type


def _drop(judge: JudgeProfile) -> float:
    """Expected judged total at 6 minus 0 distractors, mean over the models and types."""
    diffs = [
        expected_judged_total(p.at_dose(t, 6), judge, t, distractors_shown=True)
        - expected_judged_total(p.at_dose(t, 0), judge, t, distractors_shown=False)
        for p in RESPONDER_PROFILES.values()
        for t in TYPES
    ]
    return sum(diffs) / len(diffs)


@pytest.mark.parametrize("judge", sorted(SEED_DROP))
def test_distractor_drop_of_each_judge_is_the_seeds(judge: str) -> None:
    assert abs(_drop(JUDGE_PROFILES[judge]) - SEED_DROP[judge]) <= 0.05


def test_the_strict_judges_larger_drop_comes_from_its_distractor_penalty() -> None:
    strict = JUDGE_PROFILES["judge-strict"]
    assert strict.distractor_penalty > 0
    twin = JudgeProfile(strict.name, strict.leniency, p_large_by_type=strict.p_large_by_type)
    # without the penalty the two judges' drops are within 0.05 of each other, as before
    assert abs(_drop(twin) - _drop(JUDGE_PROFILES["judge-lenient"])) < 0.05
