"""Reward functions for mitigation training and answer quality (SPEC §10).

Plain functions on already-parsed responses (steps, answer) and label sequences:

* :func:`lexical_diversity`: ``D = unique / total`` alphabetic lower-cased tokens,
  ``L = min(1, total / 5)``, score ``sigmoid(8 · (D · L − 0.2))``. Tokens are maximal runs
  of letters (``"Don't stop-now"`` → ``don, t, stop, now``); digits and punctuation are not
  tokens. A missing or empty answer, or one with no letters at all, scores 0.
* :func:`format_reward`: ``0.25·[steps present] + 0.25·[answer present] +
  0.5·[shortest non-empty step ≥ 2 characters]`` (whitespace stripped; "present" means at
  least one non-blank step / a non-blank answer).
* :func:`dtw_reward` / :func:`sri_reward`: ``−DTW`` and ``−σ_SRI`` between the response's
  label sequence and a reference sequence (lower drift, higher reward);
  :func:`grpo_reward` adds them to the format reward as in the published GRPO recipe
  (DTW + SRI + format).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_TOKEN = re.compile(r"[^\W\d_]+", re.UNICODE)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def lexical_diversity(answer: str | None) -> float:
    """Lexical-diversity score of an answer in ``(0, 1)``; 0 for a missing/empty answer."""
    if not answer or not answer.strip():
        return 0.0
    tokens = [t.lower() for t in _TOKEN.findall(answer)]
    total = len(tokens)
    if total == 0:
        return 0.0
    d = len(set(tokens)) / total
    length = min(1.0, total / 5.0)
    return _sigmoid(8.0 * (d * length - 0.2))


def format_reward(steps: Sequence[str] | None, answer: str | None) -> float:
    """Format reward in ``{0, 0.25, 0.5, 0.75, 1}`` (see module docstring)."""
    non_empty = [s.strip() for s in (steps or []) if s is not None and s.strip()]
    reward = 0.0
    if non_empty:
        reward += 0.25
    if answer is not None and answer.strip():
        reward += 0.25
    if non_empty and min(len(s) for s in non_empty) >= 2:
        reward += 0.5
    return reward


def dtw_reward(labels: Sequence[int], reference: Sequence[int]) -> float:
    """``−DTW(labels, reference)`` (:func:`driftlens_core.metrics.dtw_distance`)."""
    from driftlens_core.metrics import dtw_distance

    return -float(dtw_distance(list(labels), list(reference)))


def sri_reward(labels: Sequence[int], reference: Sequence[int], *, alpha: float = 0.5) -> float:
    """``−σ_SRI(labels, reference)`` (:func:`driftlens_core.metrics.sri`)."""
    from driftlens_core.metrics import sri

    return -float(sri(list(labels), list(reference), alpha=alpha))


def grpo_reward(
    steps: Sequence[str] | None,
    answer: str | None,
    labels: Sequence[int],
    reference: Sequence[int],
    *,
    w_dtw: float = 1.0,
    w_sri: float = 1.0,
    w_format: float = 1.0,
) -> float:
    """Weighted sum ``w_dtw·(−DTW) + w_sri·(−SRI) + w_format·format`` for GRPO training."""
    total = w_format * format_reward(steps, answer)
    if w_dtw:
        total += w_dtw * dtw_reward(labels, reference)
    if w_sri:
        total += w_sri * sri_reward(labels, reference)
    return total
