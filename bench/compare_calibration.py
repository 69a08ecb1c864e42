"""Calibration of the paired run comparison (``driftlens compare``, issue #21).

Simulated pairs of runs answer the same items. Item ``q`` has a difficulty
``u_q ~ N(0, σ_item)`` shared by both runs (what makes the runs correlated); each run answers
every item ``samples`` times, a binary outcome with ``P = expit(μ + u_q)`` in run A and
``expit(μ + δ + u_q)`` in run B. The statistic is the rate of each of ``tendencies``
families of items (one comparison each, the family BH adjusts over), estimated exactly as
``driftlens compare`` does (:func:`driftlens_core.paired.paired_ratio_difference`, the paired
item-cluster bootstrap, and the exact McNemar test on the paired answers).

The target is the population difference of rates, ``E_u[expit(μ + δ + u)] − E_u[expit(μ + u)]``
(Gauss–Hermite quadrature, 80 nodes): what the pooled rate over items estimates.

Reported, with Monte Carlo SEs:

* ``null``: δ = 0 for every tendency: the share of studies with *any* BH-adjusted rejection
  at α (under the complete null the FDR is the family-wise error rate), for the bootstrap
  p-values and for McNemar's (exact and mid-p), and the per-comparison rejection rates;
* ``coverage``: δ ≠ 0: the share of 95 % intervals covering the target at 30 and 200 items,
  with the mean width;
* ``power``: δ ≠ 0 on correlated items: rejections by the paired bootstrap, by McNemar and
  by two unpaired tests of the same data (Welch's t on the item rates as two independent
  samples, and a bootstrap that resamples each run's items independently), i.e. what
  pairing gains.

Usage::

    python bench/compare_calibration.py                    # 1,000 studies per scenario
    python bench/compare_calibration.py --reps 200 --bootstrap 500 --seed 3
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any

import numpy as np
from scipy import special, stats

from driftlens_core.bootstrap import bootstrap_p_value, cluster_bootstrap_sums
from driftlens_core.effects import bh_adjust
from driftlens_core.paired import mcnemar_pairs, paired_ratio_difference


def population_rate(mu: float, sd: float) -> float:
    """``E[expit(mu + sd·Z)]`` by Gauss–Hermite quadrature."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float(np.sum(w * special.expit(mu + sd * x)) / np.sum(w))


def simulate(
    rng: np.random.Generator, n_items: int, samples: int, mu: float, delta: float, sd: float
) -> tuple[np.ndarray, np.ndarray]:
    """Paired 0/1 answers ``(items, samples)`` of runs A and B."""
    u = rng.normal(0.0, sd, size=n_items)[:, None]
    a = rng.random((n_items, samples)) < special.expit(mu + u)
    b = rng.random((n_items, samples)) < special.expit(mu + delta + u)
    return a.astype(float), b.astype(float)


def unpaired_bootstrap_p(
    a: np.ndarray, b: np.ndarray, n_boot: int, rng: np.random.Generator
) -> float:
    """Two-sided p of a bootstrap that resamples each run's items independently."""
    q = a.shape[0]
    sa = np.stack([a.sum(axis=1), np.full(q, a.shape[1])], axis=1)
    sb = np.stack([b.sum(axis=1), np.full(q, b.shape[1])], axis=1)
    ra = cluster_bootstrap_sums(sa, n_boot=n_boot, seed=rng)
    rb = cluster_bootstrap_sums(sb, n_boot=n_boot, seed=rng)
    d = rb[:, 0] / rb[:, 1] - ra[:, 0] / ra[:, 1]
    # the same p the paired comparison uses (expanded interval inverted), on unpaired draws
    return float(bootstrap_p_value(d, 0.0, n_clusters=q)[0])


def one_study(
    rng: np.random.Generator,
    *,
    n_items: int,
    samples: int,
    tendencies: int,
    mu: float,
    delta: float,
    sd: float,
    n_boot: int,
    unpaired: bool,
) -> dict[str, Any]:
    """Every tendency's comparison of one simulated pair of runs."""
    boot_p, mc_p, mid_p, lo, hi, est, welch_p, unp_p = ([] for _ in range(8))
    for _ in range(tendencies):
        a, b = simulate(rng, n_items, samples, mu, delta, sd)
        den = np.full(n_items, float(samples))
        res = paired_ratio_difference(
            a.sum(axis=1), den, b.sum(axis=1), den, n_boot=n_boot, seed=rng
        )
        m = mcnemar_pairs(a.ravel(), b.ravel())
        boot_p.append(float(res.p_value[0]))
        mc_p.append(m.p_exact)
        mid_p.append(m.p_mid)
        lo.append(float(res.ci_low[0]))
        hi.append(float(res.ci_high[0]))
        est.append(float(res.diff[0]))
        if unpaired:
            welch_p.append(
                float(stats.ttest_ind(b.mean(axis=1), a.mean(axis=1), equal_var=False).pvalue)
            )
            unp_p.append(unpaired_bootstrap_p(a, b, n_boot, rng))
    return {
        "boot_p": boot_p, "mc_p": mc_p, "mid_p": mid_p, "lo": lo, "hi": hi, "est": est,
        "welch_p": welch_p, "unp_p": unp_p,
    }  # fmt: skip


def share(x: list[bool]) -> dict[str, float]:
    """A proportion with its Monte Carlo SE."""
    p = float(np.mean(x)) if x else math.nan
    return {"rate": p, "mc_se": math.sqrt(p * (1 - p) / len(x)) if x else math.nan}


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(args.seed)
    out: dict[str, Any] = {"settings": vars(args)}
    alpha = args.alpha
    # 1. complete null: family-wise rejections after BH
    for n_items in (30, 200):
        any_boot: list[bool] = []
        any_mc: list[bool] = []
        any_mid: list[bool] = []
        each_boot: list[bool] = []
        each_mc: list[bool] = []
        for _ in range(args.reps):
            s = one_study(rng, n_items=n_items, samples=args.samples, tendencies=args.tendencies,
                          mu=args.mu, delta=0.0, sd=args.item_sd, n_boot=args.bootstrap,
                          unpaired=False)  # fmt: skip
            any_boot.append(bool((bh_adjust(s["boot_p"]) < alpha).any()))
            any_mc.append(bool((bh_adjust(s["mc_p"]) < alpha).any()))
            any_mid.append(bool((bh_adjust(s["mid_p"]) < alpha).any()))
            each_boot.extend(p < alpha for p in s["boot_p"])
            each_mc.extend(p < alpha for p in s["mc_p"])
        out[f"null_{n_items}"] = {
            "familywise_bh_bootstrap": share(any_boot),
            "familywise_bh_mcnemar_exact": share(any_mc),
            "familywise_bh_mcnemar_midp": share(any_mid),
            "per_test_bootstrap": share(each_boot),
            "per_test_mcnemar_exact": share(each_mc),
        }
    # 2. coverage of the paired interval at a known difference
    target = population_rate(args.mu + args.delta, args.item_sd) - population_rate(
        args.mu, args.item_sd
    )
    out["target_difference"] = target
    for n_items in (30, 200):
        cover, width, ests = [], [], []
        for _ in range(args.reps):
            s = one_study(rng, n_items=n_items, samples=args.samples, tendencies=1,
                          mu=args.mu, delta=args.delta, sd=args.item_sd,
                          n_boot=args.bootstrap, unpaired=False)  # fmt: skip
            cover.append(s["lo"][0] <= target <= s["hi"][0])
            width.append(s["hi"][0] - s["lo"][0])
            ests.append(s["est"][0])
        out[f"coverage_{n_items}"] = {
            **share(cover), "mean_width": float(np.mean(width)),
            "mean_estimate": float(np.mean(ests)),
        }  # fmt: skip
    # 3. power of paired vs unpaired on correlated items
    n_items = args.power_items
    rej: dict[str, list[bool]] = {"paired_bootstrap": [], "mcnemar_exact": [],
                                  "unpaired_welch": [], "unpaired_bootstrap": []}  # fmt: skip
    for _ in range(args.reps):
        s = one_study(rng, n_items=n_items, samples=args.samples, tendencies=1, mu=args.mu,
                      delta=args.power_delta, sd=args.item_sd, n_boot=args.bootstrap,
                      unpaired=True)  # fmt: skip
        rej["paired_bootstrap"].append(s["boot_p"][0] < alpha)
        rej["mcnemar_exact"].append(s["mc_p"][0] < alpha)
        rej["unpaired_welch"].append(s["welch_p"][0] < alpha)
        rej["unpaired_bootstrap"].append(s["unp_p"][0] < alpha)
    out["power"] = {
        "n_items": n_items,
        "target_difference": population_rate(args.mu + args.power_delta, args.item_sd)
        - population_rate(args.mu, args.item_sd),
        **{k: share(v) for k, v in rej.items()},
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--samples", type=int, default=2, help="answers per item and run")
    ap.add_argument("--tendencies", type=int, default=4, help="comparisons in the family")
    ap.add_argument("--mu", type=float, default=1.0, help="logit of run A's typical item")
    ap.add_argument("--item-sd", type=float, default=1.5, help="SD of item difficulty (logit)")
    ap.add_argument("--delta", type=float, default=-0.5, help="run B's logit shift (coverage)")
    ap.add_argument("--power-delta", type=float, default=-0.4)
    ap.add_argument("--power-items", type=int, default=100)
    ap.add_argument("--json", default=None, help="write the results here too")
    args = ap.parse_args()
    t0 = time.perf_counter()
    res = run(args)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(res, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
