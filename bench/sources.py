"""Benchmark of the source-reliance statistics (not a test): ``python bench/sources.py``.

Workload: one simulated model (``src-paper``), 1,221 questions (the size of the
CommonsenseQA validation split the method was published on) x 13 variants, one tier.

Measured in one run, best and median of repeats:

* one source-influence regression (bare + single + user-first rows, question-clustered
  covariance): the core's Newton fit (``driftlens_core.logistic.fit_logit``) vs statsmodels
  ``Logit(...).fit(cov_type="cluster")`` on the same design;
* the discrimination bootstrap (both sources, B = 10,000) alone;
* the whole ``driftlens sources stats`` analysis of the table (B = 2,000).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from driftlens_core.logistic import fit_logit
from driftlens_core.source_discrimination import choice_counts, discrimination
from driftlens_core.source_reliance import influence_design
from study.sources.analysis import analyze_sources_table
from study.sources.sim.probe import SOURCE_PRESETS
from study.sources.table import validate
from tests.sources.simtable import probe_table


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best and median wall time (s) over ``repeat`` calls after one warm-up."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=1221)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    import statsmodels.api as sm

    df = probe_table(SOURCE_PRESETS["src-paper"], n_questions=args.questions, seed=1)
    clean = validate(df)
    rows = clean[clean["ordering"].isin(["", "user_first"])]
    x = influence_design(
        rows["bare_correct"],
        rows["user_present"],
        rows["user_correct"],
        rows["doc_present"],
        rows["doc_correct"],
    )
    y = rows["correct"].to_numpy(dtype=float)
    q = rows["question_id"].to_numpy()
    codes = np.unique(q, return_inverse=True)[1]

    def ours() -> object:
        return fit_logit(x, y, clusters=q)

    def theirs() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sm.Logit(y, x).fit(disp=0, cov_type="cluster", cov_kwds={"groups": codes})

    a, b = ours(), theirs()
    diff = float(np.max(np.abs(a.coef - b.params)))  # type: ignore[attr-defined]
    qidx = {k: i for i, k in enumerate(sorted(set(clean["question_id"])))}
    counts = {}
    for s, letter in (("user", "u"), ("doc", "d")):
        r = clean[clean["variant"].isin([f"{letter}+", f"{letter}-"])]
        counts[s] = choice_counts(
            r["question_id"].map(qidx).to_numpy(),
            r["bare_choice"].to_numpy(),
            r["choice"].to_numpy(),
            r["correct_choice"].to_numpy(),
            r["asserted"].to_numpy(),
            n_questions=len(qidx),
        )
    results = [
        ("logit, core Newton + cluster sandwich", timed(ours, args.repeat)),
        ("logit, statsmodels Logit cov_type=cluster", timed(theirs, args.repeat)),
        (
            "discrimination bootstrap, B = 10,000",
            timed(lambda: discrimination(counts, n_boot=10_000, seed=0), args.repeat),
        ),
        (
            "whole analysis (sources stats), B = 2,000",
            timed(
                lambda: analyze_sources_table(df, bootstrap=2000, seed=0), max(1, args.repeat // 3)
            ),
        ),
    ]
    best = min(results[0][1][0], results[1][1][0])  # the faster of the two logits
    ref = results[1][1][0]
    print(
        f"bench/sources.py — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{args.questions} questions x 13 variants ({len(df)} rows), regression rows {len(y)}"
    )
    print(f"max |coef difference| core vs statsmodels: {diff:.2e}")
    print(f"{'what':48} {'best ms':>9} {'median ms':>10} {'vs best logit':>14}")
    for name, (b_, m_) in results:
        ratio = f"{b_ / best:.2f}x" if "logit" in name else ""
        print(f"{name:48} {b_ * 1000:9.1f} {m_ * 1000:10.1f} {ratio:>14}")
    print(f"statsmodels / core (best times): {ref / results[0][1][0]:.2f}")


if __name__ == "__main__":
    main()
