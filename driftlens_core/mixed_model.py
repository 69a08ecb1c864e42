"""Random-intercept linear mixed model ``drift ~ condition + (1 | question)`` by REML.

Model: ``y_qr = x_qr'β + u_q + e_qr`` with ``u_q ~ N(0, τ²)`` and ``e_qr ~ N(0, σ²)``;
``x`` is treatment coding of the condition with the no-perturbation condition as reference
(intercept = reference mean, each coefficient = condition minus reference).

Why it is cheap
---------------
Within question ``i`` (``n_i`` rows) the covariance is ``σ² M_i`` with
``M_i = I + γ J`` (``γ = τ²/σ²``, ``J`` the all-ones matrix), whose inverse is closed form
(Sherman–Morrison/Woodbury): ``M_i⁻¹ = I − c_i J`` with ``c_i = γ / (1 + n_i γ)`` and
``log|M_i| = log(1 + n_i γ)``. Because every row of question ``i`` shares the same random
intercept, only per-question sums enter:

    A(γ)     = X'M⁻¹X = X'X − Σ_i c_i t_i t_i'        (t_i = X_i'1: condition counts of i)
    b(γ)     = X'M⁻¹y = X'y − Σ_i c_i t_i Y_i         (Y_i = Σ_r y_ir)
    y'M⁻¹y   = y'y − Σ_i c_i Y_i²

so one evaluation costs O(Q p²) however many rows there are. σ² is profiled out
(σ̂² = RSS/(N − p) with RSS = y'M⁻¹y − b'A⁻¹b), leaving the 1-D profiled REML criterion

    −2 ℓ_R(γ) = (N − p) log σ̂²(γ) + Σ_i log(1 + n_i γ) + log|A(γ)| + const,

minimised over ``log γ`` with a coarse grid and a bounded Brent search
(``scipy.optimize.minimize_scalar``). The boundary ``γ = 0`` (no between-question
variance; the model is then OLS) is compared explicitly because a log-scale search can
only approach it. Fixed effects are the GLS solution ``β̂ = A⁻¹b`` and their covariance is
the inverse observed information of the profiled likelihood, as statsmodels ``MixedLM``
reports it (see :func:`_observed_fe_cov`); at the boundary ``τ² = 0`` it is the OLS
covariance ``σ̂² A⁻¹``.
The response is centred first (the intercept absorbs the shift) to keep the sums accurate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize_scalar

_LOG_GAMMA_BOUNDS = (-25.0, 12.0)


@dataclass(frozen=True)
class FixedEffect:
    """One condition's coefficient (difference from the reference condition)."""

    name: str
    estimate: float
    se: float


@dataclass(frozen=True)
class MixedModelResult:
    """REML fit of ``drift ~ condition + (1 | question)``.

    Attributes:
        reference: name of the reference condition (the intercept).
        intercept, intercept_se: mean of the reference condition and its standard error.
        fixed: one :class:`FixedEffect` per non-reference condition.
        var_question: between-question variance τ² (random intercept).
        var_residual: residual variance σ².
        icc: τ² / (τ² + σ²).
        reml_criterion: −2 × restricted log-likelihood at the optimum (with constants).
        boundary: True when τ² was estimated at 0.
        n_obs, n_groups: rows and questions used.
    """

    reference: str
    intercept: float
    intercept_se: float
    fixed: tuple[FixedEffect, ...]
    var_question: float
    var_residual: float
    icc: float
    reml_criterion: float
    boundary: bool
    n_obs: int
    n_groups: int

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form used by ``driftlens stats``."""
        return {
            "reference": self.reference,
            "intercept": self.intercept,
            "intercept_se": self.intercept_se,
            "fixed": {f.name: {"estimate": f.estimate, "se": f.se} for f in self.fixed},
            "var_question": self.var_question,
            "var_residual": self.var_residual,
            "icc": self.icc,
            "boundary": self.boundary,
        }


@dataclass(frozen=True)
class _Design:
    n_i: NDArray[np.float64]  # (Q,)
    t: NDArray[np.float64]  # (Q, p)
    xtx: NDArray[np.float64]  # (p, p)
    n_obs: int
    p: int


def _design(n_qc: NDArray[np.float64], reference: int) -> _Design:
    c = n_qc.shape[1]
    keep = [j for j in range(c) if j != reference]
    t = np.concatenate([n_qc.sum(axis=1, keepdims=True), n_qc[:, keep]], axis=1)
    tot = t.sum(axis=0)
    p = t.shape[1]
    xtx = np.zeros((p, p))
    xtx[0, :] = tot
    xtx[:, 0] = tot
    xtx[np.arange(1, p), np.arange(1, p)] = tot[1:]
    return _Design(n_i=t[:, 0], t=t, xtx=xtx, n_obs=int(tot[0]), p=p)


def _criterion(
    gamma: float, d: _Design, xty: NDArray[np.float64], y_i: NDArray[np.float64], yy: float
) -> tuple[float, NDArray[np.float64], NDArray[np.float64], float]:
    """Return ``(−2ℓ_R without constants, β̂, A⁻¹, σ̂²)`` at variance ratio ``gamma``."""
    c = gamma / (1.0 + d.n_i * gamma)
    tc = d.t * c[:, None]
    a = d.xtx - d.t.T @ tc
    b = xty - tc.T @ y_i
    yvy = yy - float(c @ (y_i * y_i))
    cf = cho_factor(a, lower=True, check_finite=False)
    beta = cho_solve(cf, b, check_finite=False)
    rss = max(yvy - float(b @ beta), 1e-300)
    dof = d.n_obs - d.p
    sigma2 = rss / dof
    logdet_a = 2.0 * float(np.log(np.diag(cf[0])).sum())
    crit = dof * np.log(sigma2) + float(np.log1p(d.n_i * gamma).sum()) + logdet_a
    a_inv = cho_solve(cf, np.eye(d.p), check_finite=False)
    return crit, beta, a_inv, sigma2


def _criterion_batch(
    gammas: NDArray[np.float64],
    d: _Design,
    xty: NDArray[np.float64],
    y_i: NDArray[np.float64],
    yy: float,
) -> NDArray[np.float64]:
    """``−2ℓ_R`` (without constants) for many variance ratios at once (the grid search)."""
    g = np.asarray(gammas, dtype=np.float64)
    c = g[:, None] / (1.0 + g[:, None] * d.n_i[None, :])  # (G, Q)
    a = d.xtx[None] - np.einsum("gq,qi,qj->gij", c, d.t, d.t, optimize=True)
    b = xty[None] - (c * y_i[None]) @ d.t
    yvy = yy - c @ (y_i * y_i)
    beta = np.linalg.solve(a, b[..., None])[..., 0]
    rss = np.maximum(yvy - np.einsum("gi,gi->g", b, beta), 1e-300)
    dof = d.n_obs - d.p
    _, logdet = np.linalg.slogdet(a)
    out: NDArray[np.float64] = (
        dof * np.log(rss / dof) + np.log1p(g[:, None] * d.n_i[None, :]).sum(axis=1) + logdet
    )
    return out


def _observed_fe_cov(
    gamma: float,
    d: _Design,
    beta: NDArray[np.float64],
    y_i: NDArray[np.float64],
    a_inv: NDArray[np.float64],
    sigma2: float,
) -> NDArray[np.float64]:
    """Covariance of β̂ from the observed information of the profiled REML likelihood.

    ``σ̂² A⁻¹`` alone would be the expected-information (model-based) covariance; the
    observed Hessian of ``ℓ(β, γ) = −½(N−p) log R − ½ Σ log(1+n_iγ) − ½ log|A|`` also has a
    β–γ block ``H_βγ = −(N−p) Σ c'_i t_i e_i / R`` (``e_i`` = residual sum of question i),
    which is zero only in expectation. statsmodels ``MixedLM`` inverts the full observed
    Hessian; we do the same so the two agree, which makes the standard errors slightly
    larger than ``σ̂² A⁻¹`` when the residual question sums correlate with the design.
    """
    fac = d.n_obs - d.p
    r = fac * sigma2
    one = 1.0 + d.n_i * gamma
    c1 = 1.0 / one**2  # dc/dγ
    c2 = -2.0 * d.n_i / one**3  # d²c/dγ²
    e = y_i - d.t @ beta
    h_ff = -fac * np.linalg.inv(a_inv) / r
    h_fr = -fac * (d.t.T @ (c1 * e)) / r
    r1 = -float(c1 @ (e * e))
    r2 = -float(c2 @ (e * e))
    a1 = -(d.t.T * c1) @ d.t
    a2 = -(d.t.T * c2) @ d.t
    logdet2 = float(np.trace(a_inv @ a2) - np.trace(a_inv @ a1 @ a_inv @ a1))
    h_rr = (
        -0.5 * fac * (r2 / r - (r1 / r) ** 2)
        + 0.5 * float((d.n_i**2 / one**2).sum())
        - 0.5 * logdet2
    )
    p = d.p
    h = np.empty((p + 1, p + 1))
    h[:p, :p] = h_ff
    h[:p, p] = h_fr
    h[p, :p] = h_fr
    h[p, p] = h_rr
    try:
        cov = np.linalg.inv(-h)[:p, :p]
    except np.linalg.LinAlgError:
        cov = sigma2 * a_inv
    if not np.all(np.diag(cov) > 0):
        cov = sigma2 * a_inv
    return np.asarray(cov, dtype=np.float64)


def fit_random_intercept_sums(
    n_qc: ArrayLike,
    sum_qc: ArrayLike,
    sumsq: float,
    *,
    names: tuple[str, ...],
    reference: int = 0,
) -> MixedModelResult:
    """Fit the model from per-question sufficient statistics.

    Args:
        n_qc: ``(Q, C)`` rows per question and condition (questions without rows allowed).
        sum_qc: ``(Q, C)`` sums of the response per question and condition.
        sumsq: sum of squared responses over all rows.
        names: condition names (length C).
        reference: index of the reference condition.

    Returns:
        A :class:`MixedModelResult`.

    Raises:
        ValueError: too few rows or questions, or a condition with no rows.
    """
    n = np.asarray(n_qc, dtype=np.float64)
    s = np.asarray(sum_qc, dtype=np.float64)
    keep_q = n.sum(axis=1) > 0
    n, s = n[keep_q], s[keep_q]
    q, c = n.shape
    if len(names) != c:
        raise ValueError("names must have one entry per condition")
    if (n.sum(axis=0) == 0).any():
        raise ValueError("every condition needs at least one row for the mixed model")
    d = _design(n, reference)
    if q < 2 or d.n_obs <= d.p:
        raise ValueError(
            "the mixed model needs at least two questions and more rows than conditions"
        )
    # centre y: sums shift by n·m, squares by 2m·Σy − N m²
    total = float(s.sum())
    mean = total / d.n_obs
    s_c = s - n * mean
    yy = float(sumsq) - 2.0 * mean * total + d.n_obs * mean * mean
    keep = [j for j in range(c) if j != reference]
    y_i = s_c.sum(axis=1)
    xty = np.concatenate([[y_i.sum()], s_c.sum(axis=0)[keep]])

    def f(log_g: float) -> float:
        return float(_criterion_batch(np.array([np.exp(log_g)]), d, xty, y_i, yy)[0])

    grid = np.linspace(*_LOG_GAMMA_BOUNDS, 38)
    vals = _criterion_batch(np.exp(grid), d, xty, y_i, yy)
    k = int(np.argmin(vals))
    lo = grid[max(k - 1, 0)]
    hi = grid[min(k + 1, grid.size - 1)]
    res = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    best_g, best_f = float(np.exp(res.x)), float(res.fun)
    at_zero = _criterion(0.0, d, xty, y_i, yy)
    boundary = at_zero[0] <= best_f
    gamma = 0.0 if boundary else best_g
    crit, beta, a_inv, sigma2 = at_zero if boundary else _criterion(gamma, d, xty, y_i, yy)
    # at the boundary the constraint τ² ≥ 0 is active: γ is not a free direction, so the
    # β block alone (σ̂² A⁻¹, the OLS covariance) is the right observed information
    cov = sigma2 * a_inv if boundary else _observed_fe_cov(gamma, d, beta, y_i, a_inv, sigma2)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    tau2 = gamma * sigma2
    const = (d.n_obs - d.p) * (1.0 + np.log(2.0 * np.pi))
    fixed = tuple(
        FixedEffect(name=names[j], estimate=float(beta[i + 1]), se=float(se[i + 1]))
        for i, j in enumerate(keep)
    )
    return MixedModelResult(
        reference=names[reference],
        intercept=float(beta[0] + mean),
        intercept_se=float(se[0]),
        fixed=fixed,
        var_question=float(tau2),
        var_residual=float(sigma2),
        icc=float(tau2 / (tau2 + sigma2)) if tau2 + sigma2 > 0 else float("nan"),
        reml_criterion=float(crit + const),
        boundary=bool(boundary),
        n_obs=d.n_obs,
        n_groups=q,
    )


def fit_random_intercept(
    y: ArrayLike,
    question: ArrayLike,
    condition: ArrayLike,
    *,
    names: tuple[str, ...] | None = None,
    reference: int = 0,
) -> MixedModelResult:
    """Fit ``y ~ condition + (1 | question)`` by profiled REML from rows.

    Args:
        y: ``(N,)`` response (drift).
        question: ``(N,)`` integer question codes.
        condition: ``(N,)`` integer condition codes ``0..C-1``.
        names: condition names (default ``"0", "1", ...``).
        reference: code of the reference condition (the no-perturbation condition).
    """
    yv = np.asarray(y, dtype=np.float64)
    _, qi = np.unique(np.asarray(question), return_inverse=True)
    ci = np.asarray(condition, dtype=np.int64)
    if not (yv.shape == qi.shape == ci.shape):
        raise ValueError("y, question and condition must have the same length")
    if not np.isfinite(yv).all():
        raise ValueError("y contains NaN or infinite values")
    n_c = int(ci.max()) + 1 if names is None else len(names)
    n_q = int(qi.max()) + 1
    cell = qi * n_c + ci
    n = np.bincount(cell, minlength=n_q * n_c).reshape(n_q, n_c).astype(np.float64)
    s = np.bincount(cell, weights=yv, minlength=n_q * n_c).reshape(n_q, n_c)
    nm = names if names is not None else tuple(str(j) for j in range(n_c))
    return fit_random_intercept_sums(n, s, float(yv @ yv), names=nm, reference=reference)
