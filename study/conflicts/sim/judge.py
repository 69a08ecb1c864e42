"""The simulated memory-conflict judge (task ``conflict-judge``), with known rater noise.

It recovers the moves of the judged answer (:func:`study.conflicts.sim.moves.recover_moves`),
computes their true scores and adds a heavy-tailed mixture of rater noise (its large
errors more frequent on the conflict types that are harder to rate), a per-judge leniency
on D2 and D4, and a per-judge penalty on answers that lean on a shown distractor;
:func:`expected_judged_total` is the exact expectation the calibration bench uses as the
known truth. It reads the answer's action class off the same moves without error
(:func:`study.conflicts.sim.moves.true_action`) and, as the rubric says, scores D3 of an
abstention as not applicable (``null``).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from llm.seeds import stable_int
from llm.sim.presets import SimPreset
from llm.sim.tasks import Messages, attempt_of, case_payload, malformed_draw, register_task
from study.conflicts.actions import is_abstention
from study.conflicts.sim.moves import (
    DIMENSIONS,
    JUDGE_TASK,
    RESPONDER_PROFILES,
    TYPES,
    TypeRates,
    decisive_quote,
    draw_moves,
    recover_moves,
    true_action,
    true_scores,
)
from study.named import by_name

# ------------------------------------------------------------------ judge profiles


#: Share of large rater errors per conflict type, fitted so the two simulated judges agree
#: by type in the seed's order and size (human within-one: CPC 91.3 %, BOC 89.4 %, SCC
#: 80.5 %: source-contradiction answers need fine-grained attribution and credibility
#: judgments). With one share for every type (0.2) they read CPC 85.0 ~ SCC 85.4 < BOC
#: 87.0 (issue 23 item 8). Fit and tolerances: docs/conflicts.md, "What is simulated".
P_LARGE_BY_TYPE: dict[str, float] = {"CPC": 0.08, "BOC": 0.12, "SCC": 0.265}
#: The dimensions the strict judge marks down when an answer leans on a distractor.
DISTRACTOR_DIMS: tuple[str, ...] = ("d3", "d4")


@dataclass(frozen=True)
class JudgeProfile:
    """A simulated judge: mixture rater noise, a leniency per dimension and a distractor penalty.

    Attributes:
        p_large_by_type: Share of large errors per conflict type (``p_large`` for a type
            not in it, and for every type when it is empty).
        distractor_penalty: Points taken off D3 and D4 (:data:`DISTRACTOR_DIMS`) of an
            answer that cites a shown distractor: the seed's more interpretive judge reads
            such an answer as weaker calibration and clarification, so its distractor drop
            is larger (−0.87 against −0.63 over 0→6 distractors). Not D2: at the penalty
            the drop needs, D2 fell below D4 for ``mc-literal``, and the seed's D4 is the
            lowest dimension for every model.
    """

    name: str
    leniency: Mapping[str, float]
    # Calibrated on the whole 0-4 truth against the seed's two human annotators (within-one
    # 85.8 %, exact 59.1 %, MAE 0.60, QWK 0.71), together with P_LARGE_BY_TYPE and the
    # strict judge's distractor penalty: the two simulated judges give 87.1 / 59.6 / 0.60 /
    # 0.76 (bench/conflicts_calibration.py --reps 0; the test checks ±3 pts, ±0.05). Before
    # the per-type shares the mixture was SD 0.35 / 2.8 w.p. 0.8 / 0.2 (85.7 / 60.1 / 0.62 /
    # 0.74); the first one (SD 0.3 / 2.2) was calibrated on the older 0/2/4 truth.
    sd_small: float = 0.38
    sd_large: float = 2.8
    p_large: float = 0.2
    d6_flip: float = 0.1
    p_large_by_type: Mapping[str, float] = field(default_factory=dict)
    distractor_penalty: float = 0.0

    def large_share(self, type_: str | None) -> float:
        """The share of large errors on answers of conflict type ``type_``."""
        return float(self.p_large_by_type.get(type_ or "", self.p_large))


#: judge-strict's distractor penalty, fitted to the seed's −0.87 (closed form over the RQ3
#: cohort: every model × type; judge-lenient gives −0.63 without one).
DISTRACTOR_PENALTY_STRICT = 1.7

JUDGE_PROFILES: dict[str, JudgeProfile] = by_name(
    JudgeProfile("judge-lenient", {"d2": 0.3, "d4": 0.2}, p_large_by_type=P_LARGE_BY_TYPE),
    JudgeProfile(
        "judge-strict",
        {"d2": -0.3, "d4": -0.2},
        p_large_by_type=P_LARGE_BY_TYPE,
        distractor_penalty=DISTRACTOR_PENALTY_STRICT,
    ),
)
FALLBACK_JUDGE = JudgeProfile("judge", {})


def judge_profile(preset: SimPreset | str) -> JudgeProfile:
    """The judge profile of a preset (no leniency for presets without one)."""
    name = preset if isinstance(preset, str) else preset.name
    return JUDGE_PROFILES.get(name, FALLBACK_JUDGE)


def judged_targets(
    truth: Mapping[str, Any], judge: JudgeProfile, *, cites_distractor: bool
) -> dict[str, float]:
    """What the judge aims at per dimension: the truth, less its distractor penalty."""
    off = judge.distractor_penalty if cites_distractor else 0.0
    return {
        d: float(truth[d]) - (off if d in DISTRACTOR_DIMS else 0.0)
        for d in DIMENSIONS
        if truth[d] is not None  # D3 of an abstention does not apply
    }


def noisy_score(
    true: float,
    judge: JudgeProfile,
    dimension: str,
    rng: random.Random,
    *,
    type_: str | None = None,
) -> int:
    """One judged score: truth + leniency + mixture noise, rounded and clipped to 0–4."""
    sd = judge.sd_large if rng.random() < judge.large_share(type_) else judge.sd_small
    x = true + judge.leniency.get(dimension, 0.0) + rng.gauss(0.0, sd)
    return int(min(4, max(0, math.floor(x + 0.5))))


def expected_judged(
    true: float, judge: JudgeProfile, dimension: str, type_: str | None = None
) -> float:
    """Exact expectation of :func:`noisy_score` over the noise (normal CDFs per level)."""
    mu = true + judge.leniency.get(dimension, 0.0)
    total = 0.0
    p = judge.large_share(type_)
    for sd, w in ((judge.sd_small, 1 - p), (judge.sd_large, p)):
        # P(score >= k) = P(x + 0.5 >= k) for k = 1..4; the normal survival function is
        # erfc(z / √2) / 2 (math's, not scipy's: the bench calls this thousands of times)
        total += w * sum(
            0.5 * math.erfc((k - 0.5 - mu) / (sd * math.sqrt(2.0))) for k in range(1, 5)
        )
    return total


def expected_judged_total(
    rates: TypeRates,
    judge: JudgeProfile,
    type_: str | None = None,
    *,
    distractors_shown: bool = False,
) -> float:
    """Exact expected judged D1–D5 total of answers drawn with ``rates``.

    Each dimension depends on its own moves, which are independent, so the expectation is
    a sum over each dimension's few outcomes. ``type_`` sets the share of large errors;
    a distractor can be cited (and penalised) only when ``distractors_shown``. An
    abstention (drawn independently, at ``rates.abstain``) has no D3, and its total is its
    other four scores × 5/4 (:func:`study.conflicts.actions.rubric_total`).
    """
    gs, ts = rates.gap_share, rates.token_share
    cd = rates.cite_distractor if distractors_shown else 0.0

    def ej(true: float, dim: str) -> float:
        if dim not in DISTRACTOR_DIMS or judge.distractor_penalty == 0 or cd == 0:
            return expected_judged(true, judge, dim, type_)
        # citing a distractor is drawn independently of this dimension's moves
        return (1 - cd) * expected_judged(true, judge, dim, type_) + cd * expected_judged(
            true - judge.distractor_penalty, judge, dim, type_
        )

    def graded(p_strong: float, p_weak: float, dim: str) -> float:
        return (
            p_strong * ((1 - gs) * ej(4, dim) + gs * ej(3, dim))
            + p_weak * ((1 - ts) * ej(2, dim) + ts * ej(1, dim))
            + (1 - p_strong - p_weak) * ej(0, dim)
        )

    e = graded(rates.perception_full, rates.perception_partial, "d1")
    e += graded(rates.explanation_full, rates.explanation_partial, "d2")
    c, k = rates.calibrate, rates.commit
    e3 = c * (1 - k) * ((1 - gs) * ej(4, "d3") + gs * ej(3, "d3"))
    e3 += c * k * ej(1, "d3")
    e3 += (1 - c) * k * ej(0, "d3")
    e3 += (1 - c) * (1 - k) * ej(2, "d3")
    e += graded(rates.clarify_targeted, rates.clarify_generic, "d4")
    cited = 1 - (1 - rates.cite_memory) * (1 - cd)
    f = rates.fabricate
    for base, p_base in ((4, cited), (3, 1 - cited)):
        e += p_base * ((1 - f) * ej(base, "d5"))
        e += p_base * f * ej(max(0, base - 3), "d5")
    a = rates.abstain
    return (1 - a) * (e + e3) + a * e * 5 / 4


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
    rater noise (and each its distractor penalty: a distractor is cited only when some are
    shown). The calibration bench and the agreement tests compare these pairs with the
    seed paper's human-validation table.

    Returns:
        ``(scores of judge_a, scores of judge_b, true scores)``, one entry per answer ×
        dimension (answer ``i``'s five in ``DIMENSIONS`` order at ``5 i`` … ``5 i + 4``).
    """
    profiles = list(RESPONDER_PROFILES.values())
    a: list[int] = []
    b: list[int] = []
    truth: list[int] = []
    for i in range(n_answers):
        prof = profiles[i % len(profiles)]
        type_ = TYPES[(i // len(profiles)) % len(TYPES)]
        rng = random.Random(stable_int("bench-agree", seed, i))
        moves = draw_moves(prof.at_dose(type_, n_distractors), high_risk=False, rng=rng)
        if n_distractors == 0:  # nothing shown to cite (as the served responder)
            moves = replace(moves, cite_distractor=False)
        true = true_scores(moves, high_risk=False)
        cites = moves.cite_distractor
        ta = judged_targets(true, judge_a, cites_distractor=cites)
        tb = judged_targets(true, judge_b, cites_distractor=cites)
        for d in DIMENSIONS:
            truth.append(int(true[d]))
            a.append(noisy_score(ta[d], judge_a, d, rng, type_=type_))
            b.append(noisy_score(tb[d], judge_b, d, rng, type_=type_))
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
    moves = recover_moves(text)
    truth = true_scores(moves, high_risk=high_risk)
    target = judged_targets(truth, judge, cites_distractor=moves.cite_distractor)
    type_ = str(case.get("type") or "") or None
    observable = str(case.get("observability") or "FULL")
    action = true_action(moves, type_ or "CPC")
    out: dict[str, Any] = {"action": action}
    for d in DIMENSIONS:
        if d in ("d1", "d2") and observable == "None":
            out[d] = {"score": None, "quote": ""}
            continue
        if d == "d3" and is_abstention(action):  # recommends nothing: D3 does not apply
            out[d] = {"score": None, "quote": decisive_quote(text, d)}
            continue
        score = noisy_score(target[d], judge, d, rng, type_=type_)
        out[d] = {"score": score, "quote": decisive_quote(text, d)}
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
