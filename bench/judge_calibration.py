"""Judge noise in the interval: coverage of the judge-free and judge-inclusive intervals,
and recovery of a simulated judge's flip rate (``docs/calibration.md``, issue 22).

**Coverage.** Each replication is one study of ``n`` items judged ``K`` times (column 0
the stored judgement, the others re-judgements): verdict ``v_ij = t_i + b_j + e_ij`` with
item truth ``t_i ~ N(μ, 1)``, a leniency ``b_j ~ N(0, τ²)`` shared by every verdict of
judgement ``j`` (a judge's seed/temperature/model shifting all its scores) and per-verdict
noise ``e_ij ~ N(0, σ²)``. The target is ``μ``, the mean a *random* judgement of a random
item gives: what a study means by its judged headline. Both 95% intervals come from
:func:`driftlens_core.judge_noise.two_stage_bootstrap` on the same draws: ``judge_free``
(items resampled, the stored judgement taken as the truth) and ``judge_inclusive``
(items, then one judgement per replicate). With ``τ = 0`` both should cover; with
``τ > 0`` the judge-free interval under-covers and the judge-inclusive one should not.

**Flip rate.** A judge reading a binary truth flips each verdict with probability ``f``
independently per judgement; two judgements then disagree with probability
``2f(1 - f)``. The bench measures :func:`driftlens_core.judge_noise.flip_rate` of the
re-judgements against the stored one and inverts it to ``f̂ = (1 - √(1 - 2r)) / 2``.

Run: ``nice -n 19 python bench/judge_calibration.py [--reps 2000] [--boot 1000]``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from driftlens_core.judge_noise import flip_rate, two_stage_bootstrap


def coverage(
    *, n: int, k: int, tau: float, sigma: float, reps: int, boot: int, seed: int
) -> dict[str, float]:
    """Coverage and mean width of both intervals over ``reps`` simulated studies."""
    rng = np.random.default_rng(seed)
    mu = 10.0
    hits = {"judge_free": 0, "judge_inclusive": 0}
    width = {"judge_free": 0.0, "judge_inclusive": 0.0}
    share = 0.0
    for _ in range(reps):
        truth = rng.normal(mu, 1.0, size=n)
        v = truth[:, None] + rng.normal(0.0, tau, size=k) + rng.normal(0.0, sigma, size=(n, k))
        r = two_stage_bootstrap(v, n_boot=boot, seed=rng)
        for name, (lo, hi) in (
            ("judge_free", r.judge_free),
            ("judge_inclusive", r.judge_inclusive),
        ):
            hits[name] += lo <= mu <= hi
            width[name] += hi - lo
        share += r.judge_share
    out = {f"cover_{k_}": hits[k_] / reps for k_ in hits}
    out.update({f"width_{k_}": width[k_] / reps for k_ in width})
    out["judge_share"] = share / reps
    out["mc_se"] = math.sqrt(0.95 * 0.05 / reps)
    return out


def flips(*, n: int, k: int, f: float, seed: int) -> dict[str, float]:
    """Measured flip rate of ``k - 1`` re-judgements, its expectation and the recovered f."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, size=n).astype(float)
    flip = rng.random((n, k)) < f
    v = np.where(flip, 1.0 - truth[:, None], truth[:, None])
    r = flip_rate(v[:, 0], v[:, 1:])
    return {
        "f": f,
        "expected_rate": 2 * f * (1 - f),
        "measured_rate": r,
        "recovered_f": (1 - math.sqrt(max(0.0, 1 - 2 * r))) / 2,
    }


def main() -> None:
    """Print both tables (Markdown)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(f"coverage of mu, n = {a.n} items, {a.reps} studies, B = {a.boot}, sigma = 1")
    print("| K | tau | judge-free cover | judge-incl. cover | free width | incl. width | share |")
    print("|---|---|---|---|---|---|---|")
    for k, tau in ((3, 0.0), (3, 0.3), (5, 0.0), (5, 0.15), (10, 0.15), (10, 0.3), (20, 0.3)):
        c = coverage(n=a.n, k=k, tau=tau, sigma=1.0, reps=a.reps, boot=a.boot, seed=a.seed)
        print(
            f"| {k} | {tau} | {c['cover_judge_free']:.3f} | {c['cover_judge_inclusive']:.3f} | "
            f"{c['width_judge_free']:.3f} | {c['width_judge_inclusive']:.3f} | "
            f"{c['judge_share']:.2f} |"
        )
    print(f"(Monte Carlo SE of a 95% coverage: {math.sqrt(0.95 * 0.05 / a.reps):.4f})")
    print()
    print("| simulated f | expected flip rate | measured | recovered f |")
    print("|---|---|---|---|")
    for f in (0.05, 0.1, 0.2, 0.3):
        r = flips(n=20000, k=4, f=f, seed=a.seed)
        print(
            f"| {f} | {r['expected_rate']:.4f} | {r['measured_rate']:.4f} | "
            f"{r['recovered_f']:.4f} |"
        )


if __name__ == "__main__":
    main()
