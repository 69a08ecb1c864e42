"""The logit-normal model of per-stem rates: its fit and the drift SE it implies.

Stem logits ``mu_arm + tau·Z`` (one standard-normal ``Z`` per stem, shared by the arms of a
study) with binomial answers; expectations over ``Z`` use 48-node Gauss–Hermite quadrature.
:func:`fit_logit_normal` fits it by maximum likelihood to per-stem counts, and
:func:`drift_se_curve` gives the standard error of a drift at each shift of the logit, which
the varying-effect MDD of :mod:`driftlens_core.rates` solves against. Pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(48)
_GH_W = _GH_W / _GH_W.sum()


def _expit(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)), dtype=np.float64)


@dataclass(frozen=True)
class LogitNormalFit:
    """Stem logits ``mu_arm + tau·Z`` (one ``Z`` per stem, shared by all arms), binomial answers."""

    mu: tuple[float, ...]
    tau: float
    converged: bool

    def rate(self, arm: int = 0, shift: float = 0.0) -> float:
        """Population rate of ``arm`` after adding ``shift`` to every stem's logit."""
        return float((_GH_W * _expit(self.mu[arm] + self.tau * _GH_X + shift)).sum())


def fit_logit_normal(k: ArrayLike, n: ArrayLike) -> LogitNormalFit | None:
    """Maximum-likelihood logit-normal fit of per-stem counts of one or more arms.

    The arms of a study answer the same stems, so a stem's effect ``tau·Z`` is shared and
    each arm has its own mean logit: every arm's answers inform ``tau``, which 30 stems of
    one arm near a ceiling hardly do.

    Args:
        k: ``(S,)`` or ``(S, A)`` aligned answers per stem (and arm).
        n: the same shape: scored answers (stems with none in any arm are ignored).

    Returns:
        The fit, or ``None`` when every answer is aligned or none is (the likelihood has no
        finite maximum then).
    """
    from scipy import optimize

    kk = np.asarray(k, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    if kk.ndim == 1:
        kk, nn = kk[:, None], nn[:, None]
    keep = nn.sum(axis=1) > 0
    kk, nn = kk[keep], nn[keep]
    if kk.shape[0] < 2 or kk.sum() <= 0 or kk.sum() >= nn.sum():
        return None
    n_a = kk.shape[1]
    log_w = np.log(_GH_W)

    def nll(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        """Negative log-likelihood and its gradient (posterior node weights per stem)."""
        tau = np.exp(theta[n_a])
        eta = theta[:n_a, None] + tau * _GH_X[None, :]  # A × G
        log_p = -np.logaddexp(0.0, -eta)
        log_q = -np.logaddexp(0.0, eta)
        ll = kk @ log_p + (nn - kk) @ log_q + log_w  # S × G
        top = ll.max(axis=1, keepdims=True)
        post = np.exp(ll - top)
        norm = post.sum(axis=1, keepdims=True)
        post /= norm
        # d ll_sg / d eta_ag = k_as − n_as·p_ag, weighted by the posterior of node g
        resid = (post.T @ kk).T - np.exp(log_p) * (post.T @ nn).T  # A × G
        grad = np.empty(n_a + 1)
        grad[:n_a] = -resid.sum(axis=1)
        grad[n_a] = -float((resid * (tau * _GH_X)[None, :]).sum())
        return float(-(top[:, 0] + np.log(norm[:, 0])).sum()), grad

    with np.errstate(invalid="ignore", divide="ignore"):
        p0 = np.clip(kk.sum(axis=0) / nn.sum(axis=0), 0.02, 0.98)
    p0 = np.where(np.isfinite(p0), p0, 0.5)
    start = np.append(np.log(p0 / (1 - p0)), 0.0)
    bounds = [(-15.0, 15.0)] * n_a + [(np.log(0.01), np.log(8.0))]
    res = optimize.minimize(nll, start, jac=True, method="L-BFGS-B", bounds=bounds)
    return LogitNormalFit(
        mu=tuple(float(x) for x in res.x[:n_a]), tau=float(np.exp(res.x[n_a])),
        converged=bool(res.success),
    )  # fmt: skip


def drift_se_curve(
    fit: LogitNormalFit,
    m_arm: ArrayLike,
    m_ref: float,
    *,
    direction: int,
    reference: int = 0,
    scale: float = 100.0,
    grid: int = 1201,
    max_shift: float = 16.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Model variance of a paired rate difference as a function of the drift size.

    Args:
        fit: the study's logit-normal fit.
        m_arm: ``(K,)`` scored answers per stem of each compared arm.
        m_ref: scored answers per stem of the reference arm.
        direction: −1 (the arm loses aligned answers) or +1.
        reference: the reference arm's index in ``fit.mu``.
        scale: 100 for percentage points.
        grid: number of logit shifts on the grid.
        max_shift: largest logit shift.

    Returns:
        ``(shift, size, var)``: logit shifts ``(G,)``, drift sizes ``|drift|`` on the
        ``scale`` ``(G,)`` (increasing from 0), and per-stem variances ``(G, K)``.
    """
    c = direction * np.linspace(0.0, max_shift, grid)
    eta = fit.mu[reference] + fit.tau * _GH_X
    p0 = _expit(eta)  # nodes
    pc = _expit(eta[None, :] + c[:, None])  # G × nodes
    r0 = float((_GH_W * p0).sum())
    rc = (_GH_W * pc).sum(axis=1)
    diff = pc - p0[None, :]
    between = (_GH_W * diff**2).sum(axis=1) - (rc - r0) ** 2
    within_arm = (_GH_W * pc * (1 - pc)).sum(axis=1)
    within_ref = float((_GH_W * p0 * (1 - p0)).sum())
    m_a = np.asarray(m_arm, dtype=np.float64)
    var = np.maximum(between, 0.0)[:, None] + within_arm[:, None] / m_a + within_ref / m_ref
    size = np.maximum.accumulate(np.abs(scale * (rc - r0)))
    return (
        np.asarray(c, dtype=np.float64),
        np.asarray(size, dtype=np.float64),
        np.asarray(var, dtype=np.float64),
    )
