"""Benchmark of the drift-metric core: ``pair_drift`` against its twin and the libraries.

Run from the repository root::

    .venv/bin/python bench/core.py            # 120,000 pairs, seed 0
    .venv/bin/python bench/core.py --pairs 20000 --python-pairs 1000

Workload: random pairs of symbol sequences, 12 symbols, lengths uniform in 2..15, fixed
seed. Each row gives pairs per second on one core (best of ``--repeats`` runs):

1. the pure-Python twin (``DRIFTLENS_IMPL=python``) on the first ``--python-pairs``
   pairs, extrapolated;
2. the best combination of libraries a user would assemble, each timed on all pairs:
   rapidfuzz ``process.cpdist`` (Levenshtein, ``workers=1``) on the sequences encoded as
   strings; dtaidistance's C DTW for n-dimensional series (``dtw_cc.distance_ndim``, the
   entry point under ``dtw_ndim.distance_fast``) on one-hot vectors, one call per pair
   (its squared Euclidean cost on one-hot vectors is 2·1[v≠u], so DTW_raw = d²/2); and
   ``scipy.spatial.distance.jensenshannon(base=2, axis=1)`` on histograms made with
   ``np.bincount``. Encoding the inputs (strings, one-hot arrays) is left out of the
   library timings, which favours the libraries; the combination's time is the sum;
3. ``pair_drift`` on :class:`~driftlens_core.sequences.PackedSequences` (all four metrics
   in one pass) with the widest lane kernels the CPU runs and, for comparison, with the
   SSE2 and portable-C kernels; ``pair_drift`` on the Python lists (packing included);
   and ``pack_sequences`` alone.

The script also checks that the libraries and ``pair_drift`` agree. It never asserts on
time: numbers depend on the machine (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from driftlens_core import _metrics, pack_sequences, pair_drift, use_implementation
from driftlens_core._impl import implementation

ALPHABET = 12
MIN_LEN, MAX_LEN = 2, 15


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Smallest wall time of ``repeats`` calls of ``fn`` and the last result."""
    best = float("inf")
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def make_pairs(count: int, seed: int) -> tuple[list[list[int]], list[list[int]]]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(MIN_LEN, MAX_LEN + 1, size=(2, count))
    flat = rng.integers(0, ALPHABET, size=int(lengths.sum())).tolist()
    seqs: list[list[int]] = []
    pos = 0
    for n in lengths.reshape(-1, order="F").tolist():
        seqs.append(flat[pos : pos + n])
        pos += n
    return seqs[0::2], seqs[1::2]


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=120_000)
    parser.add_argument("--python-pairs", type=int, default=3_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from dtaidistance import dtw_cc
    from dtaidistance.dtw import DTWSettings
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cpdist
    from scipy.spatial.distance import jensenshannon

    count = args.pairs
    base, other = make_pairs(count, args.seed)
    rows: list[tuple[str, float, str]] = []

    # 1. pure-Python twin on a subset
    sub = min(args.python_pairs, count)
    pb_sub, po_sub = pack_sequences(base[:sub]), pack_sequences(other[:sub])
    with use_implementation("python"):
        t_py, _ = best_time(lambda: pair_drift(pb_sub, po_sub), 1)
    rows.append(("pure-Python twin (all metrics)", sub / t_py, f"{sub:,} pairs, extrapolated"))

    # 2. libraries (inputs encoded beforehand)
    str_a = ["".join(chr(65 + s) for s in seq) for seq in base]
    str_b = ["".join(chr(65 + s) for s in seq) for seq in other]
    eye = np.eye(ALPHABET)
    hot_a = [np.ascontiguousarray(eye[seq]) for seq in base]
    hot_b = [np.ascontiguousarray(eye[seq]) for seq in other]
    len_a = np.array([len(s) for s in base])
    len_b = np.array([len(s) for s in other])
    mx = np.maximum(len_a, len_b)
    flat_a = np.concatenate([np.asarray(s) for s in base])
    flat_b = np.concatenate([np.asarray(s) for s in other])
    pair_a = np.repeat(np.arange(count), len_a)
    pair_b = np.repeat(np.arange(count), len_b)
    dtw_opts = DTWSettings().c_kwargs()

    def lib_levenshtein() -> np.ndarray:
        raw = cpdist(str_a, str_b, scorer=Levenshtein.distance, workers=1)
        return raw / mx

    def lib_dtw() -> np.ndarray:
        d = np.fromiter(
            (dtw_cc.distance_ndim(x, y, **dtw_opts) for x, y in zip(hot_a, hot_b, strict=True)),
            dtype=np.float64,
            count=count,
        )
        return d * d / 2 / mx

    def lib_jsd() -> np.ndarray:
        h_a = np.bincount(pair_a * ALPHABET + flat_a, minlength=count * ALPHABET)
        h_b = np.bincount(pair_b * ALPHABET + flat_b, minlength=count * ALPHABET)
        return jensenshannon(
            h_a.reshape(count, ALPHABET), h_b.reshape(count, ALPHABET), base=2, axis=1
        )

    t_lev, lev = best_time(lib_levenshtein, args.repeats)
    t_dtw, dtw = best_time(lib_dtw, args.repeats)
    t_jsd, jsd = best_time(lib_jsd, args.repeats)
    t_lib = t_lev + t_dtw + t_jsd
    rows.append(("rapidfuzz cpdist Levenshtein", count / t_lev, "on strings"))
    rows.append(("dtaidistance C DTW (one-hot)", count / t_dtw, "one call per pair"))
    rows.append(("scipy jensenshannon (+ bincount)", count / t_jsd, "vectorised, axis=1"))
    rows.append(("library combination (sum of the 3)", count / t_lib, "reference"))

    # 3. pair_drift, compiled
    with use_implementation("compiled"):
        t_pack, (pb, po) = best_time(
            lambda: (pack_sequences(base), pack_sequences(other)), args.repeats
        )
        t_fast, result = best_time(lambda: pair_drift(pb, po), args.repeats * 4)
        t_lists, _ = best_time(lambda: pair_drift(base, other), args.repeats)
        variants = []
        best_level = _metrics.simd_level()
        try:
            for level in ("sse2", "generic"):
                if level != best_level and _metrics._limit_simd(level) == level:
                    t_level, _ = best_time(lambda: pair_drift(pb, po), args.repeats * 2)
                    variants.append((level, t_level))
        finally:
            _metrics._limit_simd("avx2")
    rows.append(("pair_drift, compiled (all metrics)", count / t_fast, "PackedSequences input"))
    for level, t_level in variants:
        label = "SSE2 lane kernels" if level == "sse2" else "portable C lane kernels"
        rows.append((f"pair_drift, {label}", count / t_level, "PackedSequences input"))
    rows.append(("pair_drift, compiled, from lists", count / t_lists, "packing included"))
    rows.append(("pack_sequences (2 × lists → packed)", count / t_pack, "one-off, compiled"))

    # agreement with the libraries
    errors = {
        "levenshtein": float(np.abs(result.levenshtein - lev).max()),
        "dtw": float(np.abs(result.dtw - dtw).max()),
        "jsd": float(np.abs(result.jsd - jsd).max()),
        "sri": float(np.abs(result.sri - (0.5 * lev + 0.5 * jsd)).max()),
    }

    lib_rate = count / t_lib
    print(
        f"# bench/core.py — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {cpu_name()}, "
        f"one core, Python {platform.python_version()}, numpy {np.__version__}, "
        f"core implementation: {implementation()} (lane kernels: {_metrics.simd_level()})"
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"# {count:,} pairs, seed {args.seed}, {ALPHABET} symbols, lengths {MIN_LEN}–{MAX_LEN}; "
        f"load average at the end: {load} ({os.cpu_count()} CPUs)"
    )
    print()
    print("| method | pairs/s | × library combination | note |")
    print("|---|---:|---:|---|")
    for name, rate, note in rows:
        print(f"| {name} | {rate:,.0f} | {rate / lib_rate:.2f} | {note} |")
    print()
    print("max |pair_drift − libraries|: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))


if __name__ == "__main__":
    main()
