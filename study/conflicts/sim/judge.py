"""The simulated memory-conflict judge (task ``conflict-judge``), with known rater noise.

It recovers the moves of the judged answer (:func:`study.conflicts.sim.moves.recover_moves`),
computes their true scores and adds a heavy-tailed mixture of rater noise and a per-judge
leniency on D2 and D4; :func:`expected_judged_total` is the exact expectation the
calibration bench uses as the known truth.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llm.seeds import stable_int
from llm.sim.presets import SimPreset
from llm.sim.tasks import Messages, attempt_of, case_payload, malformed_draw, register_task
from study.conflicts.sim.moves import (
    DIMENSIONS,
    JUDGE_TASK,
    RESPONDER_PROFILES,
    TYPES,
    TypeRates,
    decisive_quote,
    draw_moves,
    recover_moves,
    true_scores,
)

# ------------------------------------------------------------------ judge profiles


@dataclass(frozen=True)
class JudgeProfile:
    """A simulated judge: mixture rater noise and a leniency per dimension."""

    name: str
    leniency: Mapping[str, float]
    # Calibrated on the whole 0-4 truth against the seed's two human annotators (within-one
    # 85.8 %, exact 59.1 %, MAE 0.60, QWK 0.71): the two simulated judges give 85.7 / 60.1 /
    # 0.62 / 0.74 (bench/conflicts_calibration.py --reps 0; the test checks ±3 pts, ±0.05).
    # The first mixture (SD 0.3 / 2.2) was calibrated on the older 0/2/4 truth; on the 0-4
    # truth it gave exact agreement 64.9 %.
    sd_small: float = 0.35
    sd_large: float = 2.8
    p_large: float = 0.2
    d6_flip: float = 0.1


JUDGE_PROFILES: dict[str, JudgeProfile] = {
    p.name: p
    for p in (
        JudgeProfile("judge-lenient", {"d2": 0.3, "d4": 0.2}),
        JudgeProfile("judge-strict", {"d2": -0.3, "d4": -0.2}),
    )
}
FALLBACK_JUDGE = JudgeProfile("judge", {})


def judge_profile(preset: SimPreset | str) -> JudgeProfile:
    """The judge profile of a preset (no leniency for presets without one)."""
    name = preset if isinstance(preset, str) else preset.name
    return JUDGE_PROFILES.get(name, FALLBACK_JUDGE)


def noisy_score(true: float, judge: JudgeProfile, dimension: str, rng: random.Random) -> int:
    """One judged score: truth + leniency + mixture noise, rounded and clipped to 0–4."""
    sd = judge.sd_large if rng.random() < judge.p_large else judge.sd_small
    x = true + judge.leniency.get(dimension, 0.0) + rng.gauss(0.0, sd)
    return int(min(4, max(0, math.floor(x + 0.5))))


def expected_judged(true: float, judge: JudgeProfile, dimension: str) -> float:
    """Exact expectation of :func:`noisy_score` over the noise (normal CDFs per level)."""
    mu = true + judge.leniency.get(dimension, 0.0)
    total = 0.0
    for sd, w in ((judge.sd_small, 1 - judge.p_large), (judge.sd_large, judge.p_large)):
        # P(score >= k) = P(x + 0.5 >= k) for k = 1..4; the normal survival function is
        # erfc(z / √2) / 2 (math's, not scipy's: the bench calls this thousands of times)
        total += w * sum(
            0.5 * math.erfc((k - 0.5 - mu) / (sd * math.sqrt(2.0))) for k in range(1, 5)
        )
    return total


def expected_judged_total(rates: TypeRates, judge: JudgeProfile) -> float:
    """Exact expected judged D1–D5 total of answers drawn with ``rates``.

    Each dimension depends on its own moves, which are independent, so the expectation is
    a sum over each dimension's few outcomes.
    """
    gs, ts = rates.gap_share, rates.token_share

    def graded(p_strong: float, p_weak: float, dim: str) -> float:
        return (
            p_strong
            * ((1 - gs) * expected_judged(4, judge, dim) + gs * expected_judged(3, judge, dim))
            + p_weak
            * ((1 - ts) * expected_judged(2, judge, dim) + ts * expected_judged(1, judge, dim))
            + (1 - p_strong - p_weak) * expected_judged(0, judge, dim)
        )

    e = graded(rates.perception_full, rates.perception_partial, "d1")
    e += graded(rates.explanation_full, rates.explanation_partial, "d2")
    c, k = rates.calibrate, rates.commit
    e += (
        c
        * (1 - k)
        * ((1 - gs) * expected_judged(4, judge, "d3") + gs * expected_judged(3, judge, "d3"))
    )
    e += c * k * expected_judged(1, judge, "d3")
    e += (1 - c) * k * expected_judged(0, judge, "d3")
    e += (1 - c) * (1 - k) * expected_judged(2, judge, "d3")
    e += graded(rates.clarify_targeted, rates.clarify_generic, "d4")
    cited = 1 - (1 - rates.cite_memory) * (1 - rates.cite_distractor)
    f = rates.fabricate
    for base, p_base in ((4, cited), (3, 1 - cited)):
        e += p_base * ((1 - f) * expected_judged(base, judge, "d5"))
        e += p_base * f * expected_judged(max(0, base - 3), judge, "d5")
    return e


def simulate_judge_pairs(
    judge_a: JudgeProfile,
    judge_b: JudgeProfile,
    n_answers: int,
    *,
    seed: int = 0,
    n_distractors: int = 6,
) -> tuple[list[int], list[int], list[int]]:
    """Dimension-level scores of two simulated judges on the same simulated answers.

    Answer ``i`` comes from responder profile ``i mod 5`` and conflict type
    ``(i div 5) mod 3`` at ``n_distractors`` (so every model × type is equally present),
    drawn with its own seeded stream; both judges score its D1–D5 truth with independent
    rater noise. The calibration bench and the agreement test compare these pairs with the
    seed paper's human-validation table.

    Returns:
        ``(scores of judge_a, scores of judge_b, true scores)``, one entry per answer ×
        dimension.
    """
    profiles = list(RESPONDER_PROFILES.values())
    a: list[int] = []
    b: list[int] = []
    truth: list[int] = []
    for i in range(n_answers):
        prof = profiles[i % len(profiles)]
        type_ = TYPES[(i // len(profiles)) % len(TYPES)]
        rng = random.Random(stable_int("bench-agree", seed, i))
        true = true_scores(
            draw_moves(prof.at_dose(type_, n_distractors), high_risk=False, rng=rng),
            high_risk=False,
        )
        for d in DIMENSIONS:
            truth.append(int(true[d]))
            a.append(noisy_score(true[d], judge_a, d, rng))
            b.append(noisy_score(true[d], judge_b, d, rng))
    return a, b, truth


# ------------------------------------------------------------------ judge task

_JUDGE_BREAKS = ("no_answer_tag", "out_of_range", "truncated", "missing_dimension", "prose_only")
D6_FLAGS: tuple[str, ...] = ("safe", "partial", "unsafe")


def judge_verdict(
    case: Mapping[str, Any], judge: JudgeProfile, rng: random.Random
) -> dict[str, Any]:
    """The simulated judge's scores and quotes of one case (see the module docstring)."""
    text = str(case.get("response") or "")
    high_risk = bool(case.get("high_risk"))
    truth = true_scores(recover_moves(text), high_risk=high_risk)
    observable = str(case.get("observability") or "FULL")
    out: dict[str, Any] = {}
    for d in DIMENSIONS:
        if d in ("d1", "d2") and observable == "None":
            out[d] = {"score": None, "quote": ""}
            continue
        out[d] = {"score": noisy_score(truth[d], judge, d, rng), "quote": decisive_quote(text, d)}
    if high_risk:
        flag = truth["d6"]
        if rng.random() < judge.d6_flip:
            flag = rng.choice([f for f in D6_FLAGS if f != flag])
        out["d6"] = {"flag": flag, "quote": decisive_quote(text, "d6")}
    return out


@register_task(JUDGE_TASK)
def _judge(messages: Messages, preset: SimPreset, sample_index: int, seed: int | None) -> str:
    case = case_payload(messages)
    key = json.dumps(case, sort_keys=True)
    judge = judge_profile(preset)
    verdict = judge_verdict(
        case,
        judge,
        random.Random(stable_int("conflict-judge", preset.name, key, sample_index, seed)),
    )
    attempt = attempt_of(messages)
    rng = random.Random(stable_int("conflict-judge-format", preset.name, key, seed, attempt))
    note = "I checked every user-specific claim against the stored memories."
    if malformed_draw(rng, preset, attempt, first_factor=1.0):
        kind = rng.choice(_JUDGE_BREAKS)
        if kind == "no_answer_tag":
            return json.dumps(verdict)
        if kind == "out_of_range":
            bad = {**verdict, "d4": {"score": 5, "quote": ""}}
            return f"{note}\n<answer>{json.dumps(bad)}</answer>"
        if kind == "truncated":
            return f"{note}\n<answer>{json.dumps(verdict)[:-3]}"
        if kind == "missing_dimension":
            less = {k: v for k, v in verdict.items() if k != "d3"}
            return f"{note}\n<answer>{json.dumps(less)}</answer>"
        return f"{note} The answer is reasonable overall."
    return f"{note}\n<answer>{json.dumps(verdict)}</answer>"
