"""Effect sizes and separability: Cohen's d, Welch t-tests, Benjamini–Hochberg, letters.

* Cohen's d (SPEC §7) compares a condition's drift rows with the no-perturbation rows
  (baseline vs. resampled baseline: the drift the instrument reports when nothing changed),
  standardised by the pooled row standard deviation (``ddof = 1`` in each group). It is a
  complementary point estimate; inference is the cluster bootstrap of d_rel.
* Separability: pairwise Welch t-tests between conditions, BH-adjusted over all pairs, then
  a compact letter display (Piepho 2004, insert-and-absorb): conditions that share a letter
  do not differ at the chosen level. The observations handed to the tests should be one
  value per question (the question mean under the condition): questions are the
  independent unit, rows of one question are not (SPEC §8, "resample the independent
  unit"). Welch ignores that the same questions appear in every condition, which makes it
  conservative for positively correlated conditions; that is acceptable for a display.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats


def cohens_d(x: ArrayLike, y: ArrayLike) -> float:
    """Cohen's d of ``x`` against ``y``: ``(mean x − mean y) / s_pooled``.

    ``s_pooled = sqrt(((n_x − 1) s_x² + (n_y − 1) s_y²) / (n_x + n_y − 2))``. Returns NaN
    when either group has fewer than two values or the pooled SD is 0.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    nx, ny = a.size, b.size
    if nx < 2 or ny < 2:
        return float("nan")
    pooled = ((nx - 1) * a.var(ddof=1) + (ny - 1) * b.var(ddof=1)) / (nx + ny - 2)
    if pooled <= 0:
        return float("nan")
    return float((a.mean() - b.mean()) / np.sqrt(pooled))


@dataclass(frozen=True)
class WelchResult:
    """Welch's unequal-variance t-test of ``mean x − mean y``."""

    statistic: float
    df: float
    p_value: float


def welch_from_moments(
    mean_x: float, var_x: float, n_x: int, mean_y: float, var_y: float, n_y: int
) -> WelchResult:
    """Welch t-test from group means, sample variances (ddof 1) and sizes."""
    if n_x < 2 or n_y < 2:
        return WelchResult(float("nan"), float("nan"), float("nan"))
    vx, vy = var_x / n_x, var_y / n_y
    se2 = vx + vy
    if se2 <= 0:
        same = mean_x == mean_y
        return WelchResult(
            0.0 if same else float(np.copysign(np.inf, mean_x - mean_y)),
            float(n_x + n_y - 2),
            1.0 if same else 0.0,
        )
    t = (mean_x - mean_y) / np.sqrt(se2)
    df = se2**2 / (vx**2 / (n_x - 1) + vy**2 / (n_y - 1))
    p = 2.0 * stats.t.sf(abs(t), df)
    return WelchResult(float(t), float(df), float(p))


def welch_t(x: ArrayLike, y: ArrayLike) -> WelchResult:
    """Welch's t-test (two-sided), as ``scipy.stats.ttest_ind(x, y, equal_var=False)``."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    return welch_from_moments(
        float(a.mean()) if a.size else float("nan"),
        float(a.var(ddof=1)) if a.size > 1 else float("nan"),
        a.size,
        float(b.mean()) if b.size else float("nan"),
        float(b.var(ddof=1)) if b.size > 1 else float("nan"),
        b.size,
    )


def bh_adjust(p_values: ArrayLike) -> NDArray[np.float64]:
    """Benjamini–Hochberg adjusted p-values (step-up, monotone, capped at 1).

    Matches ``scipy.stats.false_discovery_control(p, method="bh")``; NaN entries are left
    out of the family and stay NaN.
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    pv = p[ok]
    order = np.argsort(pv, kind="stable")
    ranked = pv[order] * m / np.arange(1, m + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    adj = np.empty(m)
    adj[order] = np.minimum(ranked, 1.0)
    out[ok] = adj
    return out


def letter_token(i: int) -> str:
    """The ``i``-th letter token: ``a`` … ``z``, then ``aa``, ``ab``, … (spreadsheet order)."""
    alphabet = string.ascii_lowercase
    name = ""
    i += 1
    while i > 0:
        i, r = divmod(i - 1, 26)
        name = alphabet[r] + name
    return name


#: Separator between letter tokens once some token has more than one character.
LETTER_SEPARATOR = ","


def _maximal_cliques(adjacent: list[int], k: int) -> list[int]:
    """Every maximal clique of a graph given as bit masks (Bron–Kerbosch with pivoting)."""
    out: list[int] = []
    stack: list[tuple[int, int, int]] = [(0, (1 << k) - 1, 0)]
    while stack:
        r, p, x = stack.pop()
        if not p and not x:
            out.append(r)
            continue
        px = p | x
        # pivot: the vertex of P ∪ X with most neighbours in P (fewest branches)
        pivot = max(_bits(px), key=lambda u: (adjacent[u] & p).bit_count())
        for v in _bits(p & ~adjacent[pivot]):
            bit = 1 << v
            stack.append((r | bit, p & adjacent[v], x & adjacent[v]))
            p &= ~bit
            x |= bit
    return out


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def letter_groups(different: ArrayLike, order: Sequence[int] | None = None) -> list[list[int]]:
    """The groups of a compact letter display: maximal sets of mutually non-different conditions.

    These are the maximal cliques of the "not significantly different" graph, which is
    exactly what Piepho's (2004) insert-and-absorb algorithm produces; they are found here
    with Bron–Kerbosch (pivoting, bit sets), which stays fast at 60+ conditions where
    insert-and-absorb's intermediate group lists explode. Groups are sorted by the display
    rank of their members (``order``, e.g. conditions by mean drift) so the first letter
    marks the top.
    """
    diff = np.asarray(different, dtype=bool)
    k = diff.shape[0]
    if diff.ndim != 2 or diff.shape != (k, k):
        raise ValueError("different must be a square matrix")
    if k == 0:
        return []
    same = ~(diff | diff.T)
    adjacent = [sum(1 << j for j in range(k) if j != i and same[i, j]) for i in range(k)]
    rank = {c: r for r, c in enumerate(order if order is not None else range(k))}
    groups = [sorted(_bits(m), key=lambda c: rank[c]) for m in _maximal_cliques(adjacent, k)]
    groups.sort(key=lambda g: [rank[c] for c in g])
    return groups


def compact_letter_tokens(
    different: ArrayLike, order: Sequence[int] | None = None
) -> tuple[tuple[str, ...], ...]:
    """The letter tokens of every condition (see :func:`compact_letter_display`)."""
    groups = letter_groups(different, order)
    k = np.asarray(different).shape[0]
    tokens: list[list[str]] = [[] for _ in range(k)]
    for n, g in enumerate(groups):
        for c in g:
            tokens[c].append(letter_token(n))
    return tuple(tuple(t) for t in tokens)


def compact_letter_display(
    different: ArrayLike, order: Sequence[int] | None = None
) -> tuple[str, ...]:
    """Compact letter display from a symmetric "significantly different" matrix.

    Conditions share a letter exactly when they are not significantly different from one
    another: every letter is a maximal set of mutually non-different conditions
    (:func:`letter_groups`). Letters follow the order of each group's first member in
    ``order`` (e.g. conditions sorted by mean drift, so "a" marks the highest). Beyond 26
    groups the tokens continue ``aa``, ``ab``, … and are rendered with separators
    (:func:`render_letters`) for every condition of that display.

    Args:
        different: ``(K, K)`` bool, ``True`` where conditions i and j differ.
        order: display order of the conditions (default ``0..K-1``).

    Returns:
        One letter string per condition (in the original index order).
    """
    tokens = compact_letter_tokens(different, order)
    many = any(len(t) > 1 for ts in tokens for t in ts)
    if many:
        return tuple(LETTER_SEPARATOR.join(ts) for ts in tokens)
    return tuple("".join(ts) for ts in tokens)


def _welch_p_pairs(
    means: NDArray[np.float64],
    variances: NDArray[np.float64],
    sizes: NDArray[np.float64],
    pairs: tuple[NDArray[np.intp], NDArray[np.intp]],
) -> NDArray[np.float64]:
    """Vectorised :func:`welch_from_moments` p-values for index pairs ``(i, j)``."""
    i, j = pairs
    out = np.full(i.shape, np.nan)
    ok = (sizes[i] >= 2) & (sizes[j] >= 2)
    if not ok.any():
        return out
    i, j = i[ok], j[ok]
    vx, vy = variances[i] / sizes[i], variances[j] / sizes[j]
    se2 = vx + vy
    diff = means[i] - means[j]
    res = np.where(diff == 0, 1.0, 0.0)  # zero variance: equal means or certainly different
    pos = se2 > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        t = diff[pos] / np.sqrt(se2[pos])
        df = se2[pos] ** 2 / (
            vx[pos] ** 2 / (sizes[i][pos] - 1) + vy[pos] ** 2 / (sizes[j][pos] - 1)
        )
    res[pos] = 2.0 * stats.t.sf(np.abs(t), df)
    out[ok] = res
    return out


@dataclass(frozen=True)
class Separability:
    """Pairwise Welch tests between conditions and their letter display."""

    names: tuple[str, ...]
    p_values: NDArray[np.float64]  # (K, K), NaN on the diagonal
    p_adjusted: NDArray[np.float64]  # (K, K), BH over the upper triangle
    letters: tuple[str, ...]


def separability(
    groups: Sequence[ArrayLike], names: Sequence[str], *, alpha: float = 0.05
) -> Separability:
    """Pairwise Welch t-tests (BH over all pairs) summarised as a compact letter display.

    Args:
        groups: one array of observations per condition (use per-question means).
        names: condition names.
        alpha: level at which an adjusted p-value counts as a difference.

    Conditions with fewer than two observations cannot be tested; they get an empty
    letter string and NaN p-values.
    """
    arrays = [np.asarray(g, dtype=np.float64) for g in groups]
    k = len(arrays)
    means = np.array([a.mean() if a.size else np.nan for a in arrays])
    variances = np.array([a.var(ddof=1) if a.size > 1 else np.nan for a in arrays])
    sizes = [a.size for a in arrays]
    p = np.full((k, k), np.nan)
    iu = np.triu_indices(k, 1)
    p_upper = _welch_p_pairs(means, variances, np.asarray(sizes, dtype=np.float64), iu)
    p[iu] = p_upper
    p[(iu[1], iu[0])] = p_upper
    adj = np.full((k, k), np.nan)
    adj_upper = bh_adjust(p[iu])
    adj[iu] = adj_upper
    adj[(iu[1], iu[0])] = adj_upper
    testable = [i for i in range(k) if sizes[i] >= 2]
    sub = np.ix_(testable, testable)
    diff = np.nan_to_num(adj[sub], nan=1.0) < alpha
    order = sorted(range(len(testable)), key=lambda r: -means[testable[r]])
    sub_letters = compact_letter_display(diff, order)
    letters = [""] * k
    for r, i in enumerate(testable):
        letters[i] = sub_letters[r]
    return Separability(tuple(names), p, adj, tuple(letters))
