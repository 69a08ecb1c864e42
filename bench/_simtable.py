"""Synthetic drift tables with known effects (shared by bench/stats.py and bench/calibration.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def simulate_table(
    rng: np.random.Generator,
    *,
    n_questions: int = 400,
    attributes: dict[str, float] | None = None,
    life_events: dict[str, float] | None = None,
    n_noise: int = 1,
    rows_per_cell: int = 1,
    tau: float = 0.6,
    sigma: float = 0.8,
    samples: int = 0,
    metrics: tuple[str, ...] = ("dtw", "sri"),
    base: float = 0.3,
    with_none: bool = True,
    errors: str = "normal",
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Simulate ``drift = base + δ_c + u_q + e`` for every question and condition.

    Noise conditions have δ = 0, so the noise rows have marginal SD ``sqrt(τ² + σ²)`` and the
    true d_rel of a condition with shift δ is ``δ / sqrt(τ² + σ²)``. ``attributes`` and
    ``life_events`` map condition names to their *true d_rel*. The second metric is the first
    plus independent noise (a correlated second instrument). ``errors="gamma"`` draws
    right-skewed residuals (centred Gamma(2), skewness 1.4) with the same variance, so the
    true d_rel is unchanged. Returns the table and the true d_rel of every condition.
    """
    attributes = attributes or {}
    life_events = life_events or {}
    sd = float(np.sqrt(tau**2 + sigma**2))
    conds: list[tuple[str, str, float]] = []
    if with_none:
        conds.append(("none", "none", -1.0 * sd))
    conds += [(f"noise{k}", "noise", 0.0) for k in range(n_noise)]
    conds += [(n, "attribute", d * sd) for n, d in attributes.items()]
    conds += [(n, "life_event", d * sd) for n, d in life_events.items()]
    reps = max(samples, 1) * rows_per_cell
    n_c = len(conds)
    q = np.repeat(np.arange(n_questions), n_c * reps)
    c = np.tile(np.repeat(np.arange(n_c), reps), n_questions)
    u = rng.normal(0.0, tau, n_questions)
    delta = np.array([d for _, _, d in conds])
    if errors == "gamma":
        e = (rng.gamma(2.0, 1.0, q.size) - 2.0) * sigma / np.sqrt(2.0)
    else:
        e = rng.normal(0.0, sigma, q.size)
    y = base + delta[c] + u[q] + e
    data: dict[str, object] = {
        "question_id": np.char.add("q", q.astype(str)),
        "condition": np.array([n for n, _, _ in conds])[c],
        "condition_class": np.array([k for _, k, _ in conds])[c],
    }
    data[metrics[0]] = y
    for extra in metrics[1:]:
        data[extra] = 0.8 * y + rng.normal(0.0, 0.3, q.size)
    if samples:
        data["sample"] = np.tile(np.repeat(np.arange(samples), rows_per_cell), n_questions * n_c)
    truth = {n: d / sd for n, _, d in conds}
    return pd.DataFrame(data), truth
