"""The question jackknife of the calibrated headlines: per-question sums vs arms rebuilt.

``python bench/ppi_jackknife.py [--repeat 3]`` times, on the same simulated arms,
``driftlens_core.ppi._jackknife_replicates`` (every delete-one-question replicate from the
per-question sums, what every headline uses) against ``_jackknife_replicates_direct`` (each
arm rebuilt without the question, the parity oracle it replaced), and checks they agree.
Normal model labels, a human label that is the model's plus noise, a simple random share of
the questions labelled, seed 0. CPU seconds of this process (best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from driftlens_core import ppi

SIZES = ((2_000, 200, 0.10), (20_000, 1_000, 0.10), (100_000, 2_000, 0.05))


def _arms(n: int, g: int, share: float) -> list[tuple[float, ppi.PPIArm]]:
    rng = np.random.default_rng(0)
    cluster = rng.integers(0, g, n)
    f = rng.normal(size=n)
    y = f + rng.normal(size=n)
    labelled = np.isin(cluster, rng.choice(g, int(g * share), replace=False))
    return [(1.0, ppi.PPIArm(f, np.where(labelled, y, np.nan), None, cluster))]


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> None:
    """Print the table (Markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| items | questions | labelled | per-question sums | arms rebuilt | ratio | max diff |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, g, share in SIZES:
        arms = _arms(n, g, share)
        fast = ppi._jackknife_replicates(arms, None, 0.95)[1]
        direct = ppi._jackknife_replicates_direct(arms, None, 0.95)[1]
        assert fast is not None and direct is not None
        diff = float(np.max(np.abs(fast - direct)))
        assert diff < 1e-9, diff
        t_fast = _best(partial(ppi._jackknife_replicates, arms, None, 0.95), args.repeat)
        t_direct = _best(partial(ppi._jackknife_replicates_direct, arms, None, 0.95), args.repeat)
        print(
            f"| {n:,} | {g:,} | {int(g * share):,} | {t_fast:.3f} s | {t_direct:.3f} s "
            f"| {t_direct / t_fast:.1f} | {diff:.1e} |"
        )


if __name__ == "__main__":
    main()
