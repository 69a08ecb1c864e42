"""Benchmark of the statistics engine (not a test): ``python bench/stats.py``.

Workload (the issue's reference): one model, 400 questions, 10 attribute conditions plus a
pragmatic-noise condition and the ``none`` (baseline-vs-baseline) reference, 2 metrics,
25 rows per question and condition = 120,000 rows; B = 10,000.

Measured in one run, best and median of repeats:

* the full ``driftlens stats`` analysis (:func:`analyze_table` on the validated table), and
  end-to-end including reading and validating the CSV;
* the d_rel bootstrap alone (both metrics, all conditions), compiled kernel vs the
  pure-numpy sufficient-statistics twin;
* the mixed model (both metrics) vs statsmodels ``MixedLM`` (REML) on the same rows;
* a naive pandas loop (materialise the resampled rows, groupby) timed on a small B and
  extrapolated linearly to B = 10,000 (stated as such in the output).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _simtable import simulate_table

from driftlens_core import implementation, use_implementation
from driftlens_core.analysis import analyze_table
from driftlens_core.bootstrap import drel_bootstrap, question_sums
from driftlens_core.mixed_model import fit_random_intercept, fit_random_intercept_sums
from study.reasoning.stats_table import read_stats_csv, stats_input


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """Best and median wall time and best process CPU time (s) over ``repeat`` calls.

    The CPU time (all threads of this process) is less sensitive to other jobs on a
    shared machine than wall time; BLAS threads count twice when both cores work.
    """
    fn()
    times, cpus = [], []
    for _ in range(repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(times), statistics.median(times), min(cpus)


def naive_pandas(df: pd.DataFrame, n_boot: int, seed: int) -> np.ndarray:
    """The obvious implementation: materialise each resample and group it (reference only)."""
    rng = np.random.default_rng(seed)
    questions = df["question_id"].unique()
    by_q = {q: g for q, g in df.groupby("question_id")}
    out = []
    for _ in range(n_boot):
        draw = rng.choice(questions, size=questions.size, replace=True)
        rows = pd.concat([by_q[q] for q in draw], ignore_index=True)
        noise = rows[rows["condition_class"] == "noise"]
        mu, sd = noise[["dtw", "sri"]].mean(), noise[["dtw", "sri"]].std(ddof=1)
        means = rows.groupby("condition")[["dtw", "sri"]].mean()
        out.append(((means - mu) / sd).to_numpy())
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description="statistics engine benchmark")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--naive-boot", type=int, default=20)
    ap.add_argument("--skip-statsmodels", action="store_true")
    args = ap.parse_args()
    b = 10_000
    rng = np.random.default_rng(2026)
    df, _ = simulate_table(
        rng,
        n_questions=400,
        attributes={f"attr{k:02d}": 0.05 * k for k in range(10)},
        n_noise=1,
        rows_per_cell=25,
    )
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    print(f"load average before the run: {' '.join(load)} (2-core machine shared with other jobs)")
    print(
        f"table: {len(df):,} rows, {df['question_id'].nunique()} questions, "
        f"{df['condition'].nunique()} conditions, 2 metrics; B = {b:,}; "
        f"implementation (auto) = {implementation()}"
    )
    inp = stats_input(df)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "drift.csv"
        df.to_csv(csv, index=False)

        def end_to_end() -> object:
            return analyze_table(stats_input(read_stats_csv(csv)), bootstrap=b, seed=1)

        rows: list[tuple[str, float, float, float]] = []
        with use_implementation("compiled"):
            rows.append(
                (
                    "full analysis, compiled (analyze_table)",
                    *timed(lambda: analyze_table(inp, bootstrap=b, seed=1), args.repeat),
                )
            )
            rows.append(
                (
                    "  end to end incl. CSV read + validation",
                    *timed(end_to_end, max(3, args.repeat // 2)),
                )
            )
        with use_implementation("python"):
            rows.append(
                (
                    "full analysis, python twin",
                    *timed(lambda: analyze_table(inp, bootstrap=b, seed=1), args.repeat),
                )
            )

    noise = np.array([k == "noise" for k in inp.condition_classes])
    qs = question_sums(inp.question, inp.condition, inp.values, noise)
    with use_implementation("compiled"):
        boot_c = timed(lambda: drel_bootstrap(qs, n_boot=b, seed=1), args.repeat)
    with use_implementation("python"):
        boot_p = timed(lambda: drel_bootstrap(qs, n_boot=b, seed=1), args.repeat)
    rows.append(("bootstrap d_rel, compiled kernel", *boot_c))
    rows.append(("bootstrap d_rel, numpy sufficient statistics (twin)", *boot_p))
    sums_t = timed(
        lambda: question_sums(inp.question, inp.condition, inp.values, noise), args.repeat
    )
    rows.append(("  per-question sufficient statistics (once)", *sums_t))

    names = inp.condition_names
    ref = names.index("none")
    y = inp.values[:, 0]

    def mixed_from_sums() -> None:
        for m in range(2):
            fit_random_intercept_sums(
                qs.n,
                qs.sums[:, :, m],
                float(((inp.values[:, m] - qs.shift[m]) ** 2).sum()),
                names=names,
                reference=ref,
            )

    def mixed_from_rows() -> None:
        for m in range(2):
            fit_random_intercept(
                inp.values[:, m], inp.question, inp.condition, names=names, reference=ref
            )

    mm = timed(mixed_from_sums, args.repeat)
    rows.append(("mixed model, 2 metrics (profiled REML on sums)", *mm))
    rows.append(("mixed model, 2 metrics, from rows", *timed(mixed_from_rows, args.repeat)))
    sm_time = None
    if not args.skip_statsmodels:
        import statsmodels.formula.api as smf

        data = pd.DataFrame({"y": y, "q": inp.question, "cond": np.array(names)[inp.condition]})

        def sm_fit() -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                smf.mixedlm("y ~ C(cond, Treatment('none'))", data, groups=data["q"]).fit(reml=True)

        sm_time = timed(sm_fit, 1)
        rows.append(("statsmodels MixedLM, 1 metric", *sm_time))

    t0 = time.perf_counter()
    naive_pandas(df, args.naive_boot, 1)
    naive = (time.perf_counter() - t0) / args.naive_boot * b
    rows.append(
        (f"naive pandas loop (B = {args.naive_boot}, extrapolated to {b:,})", naive, naive, naive)
    )

    print("\n| step | best wall | median wall | best CPU |\n|---|---|---|---|")
    for name, best, med, cpu in rows:
        print(f"| {name} | {1000 * best:.1f} ms | {1000 * med:.1f} ms | {1000 * cpu:.1f} ms |")
    print("\nratios (best times):")
    print(
        f"  bootstrap: numpy twin / compiled = {boot_p[0] / boot_c[0]:.1f}x; "
        f"naive pandas (extrapolated) / compiled = {naive / boot_c[0]:,.0f}x"
    )
    if sm_time is not None:
        print(
            f"  mixed model: statsmodels (1 metric) / ours (1 metric) = "
            f"{sm_time[0] / (mm[0] / 2):,.0f}x"
        )


if __name__ == "__main__":
    main()
