"""Binary logistic regression with question-clustered (cluster-robust) standard errors.

Why it lives in the core rather than calling statsmodels: the source-reliance statistics
(``driftlens sources stats``) must run on a plain install, and the core may import only
numpy, scipy and krippendorff. The fit is small (six coefficients, a few thousand rows), so
a Newton–Raphson loop is all it takes; statsmodels' ``Logit(...).fit(cov_type="cluster")``
stays the test oracle (``tests/sources/test_logistic.py``: coefficients and odds ratios to
1e-6 relative, standard errors to 1e-6).

The model is ``P(y = 1 | x) = 1 / (1 + exp(−x·β))``. The estimate maximises the
log-likelihood by Newton steps ``β ← β + (XᵀWX)⁻¹ Xᵀ(y − p)`` with ``W = diag(p(1 − p))``,
halving a step while it lowers the likelihood (the guard that keeps Newton from
overshooting when a column almost separates the outcome).

Covariance (the sandwich, as statsmodels computes it for ``cov_type="cluster"`` with its
default small-sample correction)::

    V = c · H⁻¹ (Σ_g s_g s_gᵀ) H⁻¹,   s_g = Σ_{i∈g} x_i (y_i − p_i),   H = XᵀWX
    c = G / (G − 1) · (N − 1) / (N − K)

with ``G`` clusters, ``N`` rows and ``K`` coefficients. Without clusters ``V = H⁻¹`` (the
model-based covariance).

Separation: when a combination of columns predicts the outcome perfectly the MLE does not
exist (coefficients run off to ±∞). Rather than silence that (as the released code of the
source-reliance paper does), the result says so: ``separation`` is set when some fitted
probability is within 1e-8 of 0 or 1 at convergence, or the fit did not converge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

# the fitted probability counted as "perfectly predicted" when flagging separation
_SEPARATION_EPS = 1e-8


@dataclass(frozen=True)
class LogitResult:
    """A fitted logistic regression.

    Attributes:
        coef: Coefficients, one per column of ``X``.
        cov: Their covariance (cluster-robust when clusters were given).
        se: Standard errors, ``sqrt(diag(cov))``.
        converged: Whether the Newton iterations met the tolerance.
        iterations: Newton iterations used.
        n: Rows fitted.
        n_clusters: Clusters (``None`` without clustering).
        log_likelihood: Log-likelihood at the estimate.
        separation: True when the outcome is (quasi-)perfectly predicted somewhere or the
            fit did not converge: the estimate and its SEs are then not to be trusted.
    """

    coef: NDArray[np.float64]
    cov: NDArray[np.float64]
    se: NDArray[np.float64]
    converged: bool
    iterations: int
    n: int
    n_clusters: int | None
    log_likelihood: float
    separation: bool


def _loglik(eta: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    # log p = −log(1 + e^{−η}), log(1 − p) = −log(1 + e^{η}); logaddexp keeps both finite
    return float(-np.sum(y * np.logaddexp(0.0, -eta) + (1.0 - y) * np.logaddexp(0.0, eta)))


def _sigmoid(eta: NDArray[np.float64]) -> NDArray[np.float64]:
    out: NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * eta))
    return out


def fit_logit(
    x: ArrayLike,
    y: ArrayLike,
    *,
    clusters: ArrayLike | None = None,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> LogitResult:
    """Fit a logistic regression by Newton–Raphson, with cluster-robust covariance.

    Args:
        x: ``(N, K)`` design matrix (include a constant column yourself).
        y: ``N`` outcomes in {0, 1}.
        clusters: ``N`` cluster labels (e.g. question ids); ``None`` for the model-based
            covariance.
        max_iter: Newton iterations at most.
        tol: Convergence when the largest absolute coefficient change is below this.

    Returns:
        The fit (see :class:`LogitResult`).

    Raises:
        ValueError: shapes disagree, ``y`` is not 0/1, there are fewer rows than columns,
            the design is rank-deficient, or fewer than two clusters are given.
    """
    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if xa.ndim != 2 or ya.ndim != 1 or xa.shape[0] != ya.shape[0]:
        raise ValueError("x must be (N, K) and y must have N entries")
    n, k = xa.shape
    if n <= k:
        raise ValueError(f"a logit with {k} coefficients needs more than {k} rows (got {n})")
    if not np.all((ya == 0.0) | (ya == 1.0)):
        raise ValueError("y must be 0 or 1")
    if np.linalg.matrix_rank(xa) < k:
        raise ValueError("the design matrix is rank-deficient (a column is redundant)")

    beta = np.zeros(k, dtype=np.float64)
    eta = xa @ beta
    ll = _loglik(eta, ya)
    converged = False
    it = 0
    while it < max_iter:
        it += 1
        p = _sigmoid(eta)
        w = p * (1.0 - p)
        hess = (xa * w[:, None]).T @ xa
        grad = xa.T @ (ya - p)
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break  # the information matrix is singular: separation (flagged below)
        # step halving: never accept a step that lowers the likelihood
        t = 1.0
        while True:
            cand = beta + t * step
            eta_c = xa @ cand
            ll_c = _loglik(eta_c, ya)
            if ll_c >= ll - 1e-12 or t < 1e-8:
                break
            t *= 0.5
        change = float(np.max(np.abs(cand - beta)))
        beta, eta, ll = cand, eta_c, ll_c
        if change < tol:
            converged = True
            break

    p = _sigmoid(eta)
    w = p * (1.0 - p)
    hess = (xa * w[:, None]).T @ xa
    try:
        bread = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        bread = np.linalg.pinv(hess)  # only under separation, which is flagged
    n_clusters: int | None = None
    if clusters is None:
        cov = bread
    else:
        codes = np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
        if codes.shape[0] != n:
            raise ValueError("clusters must have one label per row")
        g = int(codes.max()) + 1
        if g < 2:
            raise ValueError("cluster-robust covariance needs at least two clusters")
        scores = xa * (ya - p)[:, None]
        per_cluster = np.zeros((g, k), dtype=np.float64)
        np.add.at(per_cluster, codes, scores)
        meat = per_cluster.T @ per_cluster
        correction = g / (g - 1.0) * (n - 1.0) / (n - k)
        cov = correction * (bread @ meat @ bread)
        n_clusters = g
    cov = 0.5 * (cov + cov.T)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    separation = (not converged) or bool(
        np.any((p < _SEPARATION_EPS) | (p > 1.0 - _SEPARATION_EPS))
    )
    return LogitResult(
        coef=beta,
        cov=cov,
        se=se,
        converged=converged,
        iterations=it,
        n=n,
        n_clusters=n_clusters,
        log_likelihood=ll,
        separation=separation,
    )
