"""Why a calibration coverage cell sits off 95 %: interval variants on the same studies.

Issue 35's coverage cells (docs/calibration.md) against candidate intervals, every one
computed on the same simulated studies, the same slices and the same question-jackknife
replicates, so a column differs from another only by its interval:

* ``reported``: what every instrument reports (``ppi_mean_jackknife`` /
  ``ppi_difference_jackknife``: the delete-one-question jackknife, λ re-tuned in every
  replicate, ``t`` on ``G_h − 1``, ends skewed by the jackknife's acceleration since
  2026-12-06), and ``human-only (reported)`` (λ = 0), the yardstick of the widths;
* ``symmetric t (reported until 2026-12-06)``: ``θ̂ ± t · SE`` of the same jackknife (and
  the human-only one);
* ``skew-corrected t (Hall)``: both ends moved by ``γ̂ (2q² + 1) / (6 √G_h)`` SEs, ``γ̂``
  the skewness of the replicates (Hall 1992);
* ``jackknife acceleration (BCa-type)``: the ends ``θ̂ + SE · z / (1 − â z)`` at
  ``z = ∓q``, with Efron's acceleration ``â = Σ U³ / (6 (Σ U²)^{3/2})``,
  ``U = θ̄ − θ̂₍₋ᵢ₎`` of the same replicates (no bias term), written out here apart from
  ``driftlens_core.ppi`` (the two columns agree where ``|â| q < 1``, always in these cells);
* ``log scale (means)``: the ``t`` interval of ``log θ`` by the delta method, mapped back
  (a variance-stabilising transform for a non-negative mean; a difference keeps the
  symmetric ``t``);
* ``studentised cluster bootstrap``: bootstrap-t over questions (the labelled and the
  unlabelled questions resampled apart, so the slice keeps its size; λ re-tuned; each
  replicate studentised by its CR1 sandwich SE, vectorised over the per-question sums);
* ``jackknife, lambda fixed`` (symmetric, and accelerated): the replicates with λ held at
  the full slice's value (the tuning's noise left out).

Cells:

* ``conflicts``: the D2 mean of ``bench/calibration_coverage_core.py``'s studies (that
  bench's own draw and seed), for any judges and slice shares; the truth is the population's
  mean D2 vote.
* ``reasoning``: ``bench/calibration_coverage_reasoning.py``'s studies (its draw, seeds and
  truth), DTW and SRI from the same studies: the mean drift of ``none``, the attribute and
  the life event, and each minus the noise floor. Its ``reported`` column equals
  that bench's calibrated interval to the last bit (checked on three studies).

The first 2,000-study runs (docs/calibration.md) ran before the acceleration was adopted:
their ``reported jackknife`` and ``human-only jackknife`` are the symmetric ``t`` columns
here, their ``jackknife acceleration (BCa-type)`` and ``human-only, BCa-type`` what is now
``reported`` and ``human-only (reported)``.

Each table cell is the coverage, then the mean width ÷ the reported human-only interval's (the share
of unbounded intervals where a bootstrap-t replicate had no spread).

Usage::

    python bench/calibration_interval_variants.py reasoning --studies 2000 --bootstrap 299
    python bench/calibration_interval_variants.py conflicts --studies 1000 --bootstrap 299 \\
        --judges sim/judge-lenient sim/judge-strict confuse=3~4@0.3 --human-share 0.05 0.1
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import driftlens_core.ppi as ppi

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _skew_shift(dev: np.ndarray, q: float) -> float:
    """Hall's skewness correction, in SEs, from the replicates' deviations ``mean − θ̂₍₋ᵢ₎``."""
    m2, m3 = float(np.mean(dev**2)), float(np.mean(dev**3))
    gamma = m3 / m2**1.5 if m2 > 0 else 0.0
    return gamma * (2 * q * q + 1) / (6 * math.sqrt(dev.size))


# ---------------------------------------------------------------------------------------
# The candidate intervals of issue 35's last coverage cells, each from the same replicates.


def _sums(arms: Sequence[tuple[float, ppi.PPIArm]]) -> ppi._QuestionSums:
    """The arms' per-question sums, as the core's jackknife reads them."""
    return ppi._question_sums([(c, ppi._parts(arm, k)) for k, (c, arm) in enumerate(arms)])


def _resampled(
    s: ppi._QuestionSums, m: np.ndarray, lam_fixed: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """PPI++ estimate (λ re-tuned, or ``lam_fixed``) and CR1 sandwich SE for each row of
    question counts ``m`` (B, G)."""
    theta, _, se = ppi._weighted_points(s, m, lam_fixed)
    return theta, se


def bootstrap_t(
    arms: Sequence[tuple[float, ppi.PPIArm]], level: float, reps: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Studentised cluster bootstrap: questions resampled (labelled and unlabelled apart, so
    the slice keeps its size), λ re-tuned, ``t* = (θ̂* − θ̂) / SE*`` with the sandwich SE."""
    s = _sums(arms)
    g = s.labelled.size
    theta0, se0 = _resampled(s, np.ones((1, g)))
    m = np.zeros((reps, g))
    for mask in (s.labelled, ~s.labelled):
        idx = np.flatnonzero(mask)
        if idx.size:
            m[:, idx] = rng.multinomial(idx.size, np.full(idx.size, 1 / idx.size), size=reps)
    theta, se = _resampled(s, m)
    diff = theta - theta0[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        # a replicate with no spread at all: 0 if it did not move, else off the scale
        t = np.where(se > 0, diff / se, np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
    # no interpolation between order statistics: an infinite t* gives an unbounded end
    lo_q, hi_q = np.quantile(t, [0.5 - level / 2, 0.5 + level / 2], method="inverted_cdf")
    return float(theta0[0] - hi_q * se0[0]), float(theta0[0] - lo_q * se0[0])


def _acceleration(reps: np.ndarray) -> float:
    """Efron's jackknife acceleration ``Σ U³ / (6 (Σ U²)^{3/2})``, ``U = θ̄ − θ̂₍₋ᵢ₎``."""
    u = reps.mean() - reps
    s2 = float(np.sum(u**2))
    return float(np.sum(u**3)) / (6 * s2**1.5) if s2 > 0 else 0.0


def accelerated(point: float, se: float, reps: np.ndarray, q: float) -> tuple[float, float]:
    """BCa-type ends (no bias term): ``θ̂ + SE · z / (1 − a z)`` at ``z = ∓q``."""
    a = _acceleration(reps)
    lo = point - se * q / (1 + a * q) if 1 + a * q > 0 else -math.inf
    hi = point + se * q / (1 - a * q) if 1 - a * q > 0 else math.inf
    return lo, hi


def log_scale(point: float, se: float, q: float) -> tuple[float, float]:
    """The ``t`` interval of ``log θ`` (delta method) mapped back; a non-positive point keeps
    the symmetric one."""
    if point <= 0:
        return point - q * se, point + q * se
    return point * math.exp(-q * se / point), point * math.exp(q * se / point)


def variant_intervals(
    arms: Sequence[tuple[float, ppi.PPIArm]], level: float, boot: int, rng: np.random.Generator
) -> dict[str, tuple[float, float]]:
    """Every variant's interval of one estimate, from one set of jackknife replicates."""
    full, reps, var_model = ppi._jackknife_replicates(arms, None, level)
    rep = ppi._jackknife_interval(full, reps, var_model, level)
    out = {"reported": rep.ci, "human-only (reported)": rep.human_only_ci}
    if reps is None:
        return out
    g_h = reps.shape[0]
    q = float(stats.t.ppf(0.5 + level / 2, g_h - 1))
    se0 = math.sqrt((g_h - 1) / g_h * float(np.sum((reps[:, 1] - reps[:, 1].mean()) ** 2)))
    out["symmetric t (reported until 2026-12-06)"] = (
        rep.estimate - q * rep.se,
        rep.estimate + q * rep.se,
    )
    out["human-only, symmetric t"] = (rep.human_only - q * se0, rep.human_only + q * se0)
    # the bench's own accelerated ends, written apart from driftlens_core's
    out["jackknife acceleration (BCa-type)"] = accelerated(rep.estimate, rep.se, reps[:, 0], q)
    dev = reps.mean(axis=0) - reps
    a = _skew_shift(dev[:, 0], q)
    out["skew-corrected t (Hall)"] = (
        rep.estimate - rep.se * (q - a),
        rep.estimate + rep.se * (q + a),
    )
    if len(arms) == 1:
        out["log scale (means)"] = log_scale(rep.estimate, rep.se, q)
    else:
        out["log scale (means)"] = out["symmetric t (reported until 2026-12-06)"]
    out["studentised cluster bootstrap"] = bootstrap_t(arms, level, boot, rng)
    # the jackknife with λ held at the full slice's value (the tuning's noise left out)
    s = _sums(arms)
    lab = np.flatnonzero(s.labelled)
    m = np.ones((lab.size, s.labelled.size))
    m[np.arange(lab.size), lab] = 0.0
    fixed, _ = _resampled(s, m, rep.lam)
    se_f = math.sqrt((lab.size - 1) / lab.size * np.sum((fixed - fixed.mean()) ** 2) + var_model)
    out["jackknife, lambda fixed"] = (rep.estimate - q * se_f, rep.estimate + q * se_f)
    out["jackknife, lambda fixed, BCa-type"] = accelerated(rep.estimate, se_f, fixed, q)
    return out


#: cell → ``covers`` / ``widths`` → variant → one value per study.
Cells = dict[str, dict[str, dict[str, list[float]]]]


def _table(title: str, cells: Cells, mc: float) -> None:
    """One markdown table: a row per cell, a column per variant: coverage (mean finite width
    ÷ the reported human-only interval's; the share of unbounded intervals where there are any)."""
    names = list(next(iter(cells.values()))["covers"].keys()) if cells else []
    print(f"\n{title} (Monte Carlo SE of a 95 % coverage {100 * mc:.1f} points)")
    print("| cell | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))

    def cell_text(c: dict[str, dict[str, list[float]]], name: str, human: float) -> str:
        w = np.array(c["widths"][name])
        fin = np.isfinite(w)
        text = f"{100 * np.mean(c['covers'][name]):.1f} % ({np.mean(w[fin]) / human:.2f}"
        return text + (f", {100 * np.mean(~fin):.1f} % unbounded)" if (~fin).any() else ")")

    for cell, c in cells.items():
        human = float(np.mean(c["widths"]["human-only (reported)"]))
        print(f"| {cell} | " + " | ".join(cell_text(c, n, human) for n in names) + " |")


def _record(
    c: dict[str, dict[str, list[float]]], cis: dict[str, tuple[float, float]], truth: float
) -> None:
    for name, (lo, hi) in cis.items():
        c.setdefault("covers", {}).setdefault(name, []).append(float(lo <= truth <= hi))
        c.setdefault("widths", {}).setdefault(name, []).append(hi - lo)


def conflicts(argv: list[str]) -> dict[str, Any]:
    """The conflicts D2 cells' variants on ``calibration_coverage_core``'s studies."""
    from calibration_coverage_core import SCALE, parse_judge, population_truth

    from annotation.simulated import AnnotatorPool
    from llm.seeds import stable_int
    from study.conflicts.items import load_sample_banks
    from study.conflicts.sim.judge import judged_targets, noisy_score
    from study.conflicts.sim.moves import RESPONDER_PROFILES, draw_moves, true_scores

    ap = argparse.ArgumentParser()
    ap.add_argument("--judges", nargs="+", default=["sim/judge-strict"])
    ap.add_argument("--model", default="sim/mc-balanced")
    ap.add_argument("--human-share", nargs="+", type=float, default=[0.05])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--flip", type=float, default=0.2)
    ap.add_argument("--bootstrap", type=int, default=999)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    pool = AnnotatorPool(annotators=2, flip=args.flip, seed=args.seed)
    pop = population_truth(args.model, pool)
    banks = load_sample_banks()
    prof = RESPONDER_PROFILES[args.model.removeprefix("sim/")]
    cells: Cells = {}
    started = time.process_time()
    for judge in args.judges:
        jp, confuse = parse_judge(judge)
        for share in args.human_share:
            c = cells.setdefault(f"{judge}, {share:.0%}", {})
            for s in range(args.studies):
                # the same draw as calibration_coverage_core.one_study
                f, inst, human = [], [], []
                for b in banks:
                    for k in range(args.samples):
                        rng = random.Random(
                            stable_int("coverage-core", args.seed, s, b.instance_id, k)
                        )
                        moves = draw_moves(prof.at_dose(b.type, 6), high_risk=False, rng=rng)
                        true = true_scores(moves, high_risk=False)
                        target = judged_targets(true, jp, cites_distractor=moves.cite_distractor)
                        score = noisy_score(target["d2"], jp, "d2", rng, type_=b.type)
                        if (confuse is not None and score in confuse[:2]
                                and rng.random() < confuse[2]):  # fmt: skip
                            score = confuse[1] if score == confuse[0] else confuse[0]
                        f.append(score)
                        votes = [
                            int(pool.vote(str(int(true["d2"])), SCALE, ordinal=True, rng=rng))
                            for _ in range(2)
                        ]
                        human.append(float(np.mean(votes)))
                        inst.append(b.instance_id)
                n = len(f)
                rng_np = np.random.default_rng(stable_int("coverage-core-slice", args.seed, s))
                pick = np.zeros(n, dtype=bool)
                pick[rng_np.choice(n, size=max(2, round(share * n)), replace=False)] = True
                fa = np.array(f, float)
                h = np.where(pick, np.array(human), np.nan)
                arms = [(1.0, ppi.PPIArm(fa, h, None, np.array(inst)))]
                boot = np.random.default_rng(stable_int("variants-boot", args.seed, s))
                _record(c, variant_intervals(arms, 0.95, args.bootstrap, boot), pop)
    mc = math.sqrt(0.95 * 0.05 / args.studies)
    _table(
        f"conflicts D2 mean, {args.studies} studies, seed {args.seed}, population truth "
        f"{pop:.4f}, {time.process_time() - started:.0f} s CPU; coverage (width ÷ human-only)",
        cells, mc,
    )  # fmt: skip
    return _dump(args, cells)


def _dump(args: argparse.Namespace, cells: Cells) -> dict[str, Any]:
    out = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "cells": {
            cell: {
                name: {
                    "covers": float(np.mean(c["covers"][name])),
                    "finite_width": float(np.mean([w for w in c["widths"][name] if w < math.inf])),
                    "unbounded": float(np.mean(np.isinf(c["widths"][name]))),
                }
                for name in c["covers"]
            }
            for cell, c in cells.items()
        },
    }
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return out


def _model_only(arm: ppi.PPIArm) -> ppi.PPIArm:
    f = np.asarray(arm.model, dtype=float)
    return ppi.PPIArm(f, f, np.ones_like(f), arm.cluster)


def reasoning(argv: list[str]) -> dict[str, Any]:
    """``calibration_coverage_reasoning``'s studies (same draws and seeds), every variant, DTW
    and SRI from the same studies."""
    import calibration_coverage_reasoning as bench

    from llm.seeds import stable_int
    from storage.models import BASELINE_CONDITION
    from study.reasoning.calibrated import joined_table, slice_arm

    ap = argparse.ArgumentParser()
    bench.add_study_options(ap, studies=2000)
    ap.add_argument("--metrics", nargs="+", default=["dtw", "sri"])
    ap.add_argument("--bootstrap", type=int, default=999)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    started = time.process_time()
    conf = bench._confusions(args.confuse)
    # the truth exactly as the bench draws it
    pop = bench._questions(f"pop{args.seed}", args.population, args.preset)
    hrng = random.Random(stable_int("population-humans", args.seed))
    pop_h = bench._drift(
        bench._label(pop, lambda v: bench._human(v, args.human_flip, hrng)),
        [str(i) for i in range(len(pop))],
    )
    truth = {m: bench._targets(pop_h, m) for m in args.metrics}
    k = max(2, round(args.human_share * args.questions))
    cells: Cells = {}
    for s in range(args.studies):
        qs = bench._questions(f"s{args.seed}-{s}", args.questions, args.preset)
        qids = [f"q{i}" for i in range(len(qs))]
        lrng = random.Random(stable_int("llm", args.seed, s))
        model = bench._drift(bench._label(qs, lambda v, r=lrng: bench._llm(v, conf, r)), qids)
        srng = random.Random(stable_int("slice", args.seed, s))
        chosen = sorted(srng.sample(range(len(qs)), k))
        hr = random.Random(stable_int("humans", args.seed, s))
        human = bench._drift(
            bench._label([qs[i] for i in chosen],
                         lambda v, r=hr: bench._human(v, args.human_flip, r)),
            [qids[i] for i in chosen],
        )  # fmt: skip
        human["inclusion_probability"] = k / len(qs)
        table = joined_table(model, human, args.metrics)
        boot = np.random.default_rng(stable_int("variants-boot", args.seed, s))
        for metric in args.metrics:
            noise = table[table["condition_class"] == "noise"]
            for cond in bench.REPORTED:
                key = BASELINE_CONDITION if cond == "none" else cond
                sub = table[table["condition"] == key]
                arm, floor = slice_arm(sub, metric), slice_arm(noise, metric)
                for what, arms in (
                    ("mean", [(1.0, arm)]),
                    ("vs_noise", [(1.0, arm), (-1.0, floor)]),
                ):
                    cis = variant_intervals(arms, 0.95, args.bootstrap, boot)
                    # the LLM labels alone (the report's model-only interval: λ = 0, every
                    # pair "labelled" by its own value)
                    mo = [(c, _model_only(a)) for c, a in arms]
                    cis["model-only"] = ppi._contrast(mo, 0.0, 0.95).ci
                    c = cells.setdefault(f"{metric} {what}:{cond}", {})
                    _record(c, cis, truth[metric][f"{what}:{cond}"])
    mc = math.sqrt(0.95 * 0.05 / args.studies)
    _table(
        f"reasoning drift, {args.studies} studies, {k} of {args.questions} questions with "
        f"human labels, seed {args.seed}, {time.process_time() - started:.0f} s CPU; "
        "coverage (width ÷ human-only)",
        cells, mc,
    )  # fmt: skip
    return _dump(args, cells)


def main() -> None:
    """``conflicts ARGS`` or ``reasoning ARGS``."""
    if len(sys.argv) < 2 or sys.argv[1] not in ("conflicts", "reasoning"):
        sys.exit("usage: calibration_interval_variants.py conflicts|reasoning [ARGS]")
    (conflicts if sys.argv[1] == "conflicts" else reasoning)(sys.argv[2:])


if __name__ == "__main__":
    main()
