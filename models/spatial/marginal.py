"""The spatial model in the form the sampler uses: ``w`` and ``beta`` integrated out, in an eigenbasis.

The same posterior as :func:`bayessdc.models.spatial.model.paper_model` (Quick, Holan & Wikle, eq. 1 with
eq. 6 or 7), computed exactly, without approximating the Gaussian process:

* ``w`` is integrated out, ``Y ~ N(X beta, sigma^2 A R(phi) A + tau^2 I)`` with ``R(phi) = exp(-phi D)``.
  For a fixed ``phi`` the eigendecomposition ``A R A = U diag(lambda) U'`` turns this into independent
  normals, ``U'Y ~ N(U'X beta, diag(sigma^2 lambda + tau^2))`` (an orthogonal change of variables, unit
  Jacobian). ``beta`` (normal prior) is integrated out as well, by Woodbury's identity on ``p x p``
  matrices (see :func:`build_model`), so one gradient costs ``O(N p^2)`` instead of a Cholesky
  factorisation, and NUTS samples only ``log sigma`` and ``log tau``.
* Stage 2 fixes ``phi`` (Section 3.3), so its covariance is factored once.
* Stage 1 puts the prior of ``phi`` on a grid (default: 60 values equally spaced in ``log phi`` between
  effective ranges ``3/phi`` of the median nearest-neighbour distance and the largest distance, uniform
  weights, a discretised log-uniform prior). Each grid value is factored once; the likelihood sums ``phi``
  out (a ``logsumexp`` over the grid).
* For each posterior draw of ``(sigma, tau)``, ``phi`` is then drawn from its discrete conditional and
  ``beta`` from its Gaussian conditional (:func:`draw_beta_and_phi`).
* ``w`` is drawn afterwards, for each kept posterior draw, from its Gaussian full conditional (eq. 2),
  which in the eigenbasis is again diagonal (:class:`bayessdc.models.spatial.SpatialSynthesizer`).
  Together this is an exact draw from the joint posterior.
* With ``gamma = inf``, the outliers' rows of ``A R A`` are zero: they enter the likelihood as independent
  ``N(x'beta, tau^2)``.

Hence, with ``(beta, w) | sigma, tau, phi, y`` Gaussian, at any point of the paper's model (its log density
on the log scale of ``sigma`` and ``tau``, as PyMC evaluates it)

``log p_marginal(log sigma, log tau, y) = logsumexp_g [log p_paper(beta, sigma, tau, phi_g, w, y)
- log p(beta, w | sigma, tau, phi_g, y)]``,

the identity ``tests/models/test_spatial_model.py`` checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import SpatialData
from .geometry import exponential_correlation
from .model import SpatialPriors

__all__ = [
    "RotatedData",
    "build_model",
    "correlation_eigen",
    "default_start",
    "draw_beta_and_phi",
    "rotate",
]


@dataclass
class RotatedData:
    """The data rotated into the eigenbases of ``A R(phi) A``, one per value of ``phi``.

    Attributes
    ----------
    phi
        The values of ``phi``, shape ``(G,)``.
    eigenvalues
        ``lambda``, shape ``(G, N)`` (0 for records with ``A_ii = 0``).
    y
        ``U'y``, shape ``(G, N)``.
    X
        ``U'X``, shape ``(G, N, p)``.
    """

    phi: np.ndarray
    eigenvalues: np.ndarray
    y: np.ndarray
    X: np.ndarray


def correlation_eigen(coords: np.ndarray, phi: float, scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues and eigenvectors of ``A R(phi) A`` restricted to the records with ``A_ii > 0``."""
    inside = np.ones(len(coords), bool) if scale is None else scale > 0
    corr = exponential_correlation(coords[inside], None, phi)
    if scale is not None:
        a = scale[inside]
        corr = a[:, None] * corr * a[None, :]
    values, vectors = np.linalg.eigh(corr)
    return np.clip(values, 0.0, None), vectors


def rotate(data: SpatialData, phi_values: np.ndarray, scale: np.ndarray | None = None) -> RotatedData:
    """Rotate ``y`` and ``X`` for each ``phi`` (records with ``scale == 0`` keep their own coordinate, eigenvalue 0)."""
    phi_values = np.atleast_1d(np.asarray(phi_values, float))
    n, p = data.X.shape
    inside = np.ones(n, bool) if scale is None else scale > 0
    lam = np.zeros((len(phi_values), n))
    yr = np.zeros((len(phi_values), n))
    xr_ = np.zeros((len(phi_values), n, p))
    k = int(inside.sum())
    for g, phi in enumerate(phi_values):
        values, vectors = correlation_eigen(data.coords, float(phi), scale)
        lam[g, :k] = values
        yr[g, :k] = vectors.T @ data.y[inside]
        xr_[g, :k] = vectors.T @ data.X[inside]
        yr[g, k:] = data.y[~inside]
        xr_[g, k:] = data.X[~inside]
    return RotatedData(phi_values, lam, yr, xr_)


def build_model(
    rotated: RotatedData,
    priors: SpatialPriors,
    scales: tuple[float, float],
    covariate_names: list[str],
    start: dict[str, Any],
) -> Any:
    """Declare the marginal model of ``sigma`` and ``tau``: ``w`` and ``beta`` integrated out, ``phi`` summed out.

    With ``beta ~ N(0, s^2 I)`` (``s = beta_sd``) and ``w`` integrated out, in the eigenbasis of
    ``A R(phi) A`` the data are ``z = U'y ~ N(0, D + s^2 X_r X_r')`` with ``D = diag(sigma^2 lambda + tau^2)``
    and ``X_r = U'X``. By the matrix determinant lemma and Woodbury's identity, with
    ``M = I/s^2 + X_r' D^-1 X_r`` and ``r = X_r' D^-1 z`` (``p x p`` and ``p``),

    ``log p(z) = -1/2 [N log 2 pi + sum log D + p log s^2 + log det M + z' D^-1 z - r' M^-1 r]``,

    one gradient costing ``O(G N p^2)``. Stage 1 (eq. 6) sums this over the grid of ``phi`` with equal
    weights (``logsumexp - log G``); stage 2 (eq. 7) has the single value ``phi_hat``. ``beta`` is drawn
    afterwards from its Gaussian conditional ``N(M^-1 r, M^-1)``, so NUTS only sees ``log sigma`` and
    ``log tau``: integrating ``beta`` out removes the funnel between ``tau`` and ``beta`` that the records
    with ``A_ii = 0`` (whose only variance is ``tau^2``) otherwise create.

    The free variable is an offset of ``(log sigma, log tau)`` from a starting point held in ``pm.Data``
    (``start``); the half-Cauchy priors are stated on ``sigma`` and ``tau`` (with the log-Jacobian). The shift
    leaves the posterior unchanged; it makes NUTS start at ``start`` (stage 2 starts from the unrestricted
    fit, Section 3.3) while one compiled model serves every dataset, grid and stage (all data, starting
    points and prior settings are swappable ``pm.Data``).

    Parameters
    ----------
    rotated
        Output of :func:`rotate` (``G`` values of ``phi``).
    priors
        ``beta_sd`` is used here; the half-Cauchy scales come in ``scales``.
    scales
        Half-Cauchy scales of ``sigma`` and ``tau``.
    covariate_names
        Names of the coefficients (their number ``p`` is compiled in).
    start
        Starting values ``sigma`` and ``tau``.

    Returns
    -------
    pymc.Model
        Free ``log_sd_offset`` (2); deterministics ``sigma``, ``tau``, ``sigma_sq``, ``tau_sq``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    p = len(covariate_names)
    with pm.Model() as model:
        lam = pm.Data("eigenvalues", rotated.eigenvalues)
        y_rot = pm.Data("y_rotated", rotated.y)
        x_rot = pm.Data("X_rotated", rotated.X)
        settings = pm.Data("prior_settings", np.array([priors.beta_sd, *scales], float))
        start_log_sd = pm.Data("start_log_sd", np.log([start["sigma"], start["tau"]]))
        log_sd_offset = pm.Flat("log_sd_offset", shape=2)
        log_sd = start_log_sd + log_sd_offset
        sigma = pm.Deterministic("sigma", pt.exp(log_sd[0]))
        tau = pm.Deterministic("tau", pt.exp(log_sd[1]))
        pm.Deterministic("sigma_sq", sigma**2)
        pm.Deterministic("tau_sq", tau**2)
        # vague priors (Section 3.3): half-Cauchy sigma and tau, + log sigma + log tau for the log transform
        prior = (
            pm.logp(pm.HalfCauchy.dist(settings[1]), sigma)
            + pm.logp(pm.HalfCauchy.dist(settings[2]), tau)
            + pt.sum(log_sd)
        )
        pm.Potential("prior", prior)
        # eq. (6)/(7) with w and beta integrated out, in the eigenbasis of A R(phi) A, phi summed out
        variance = sigma**2 * lam + tau**2  # (G, N)
        inverse = 1.0 / variance
        beta_precision = 1.0 / settings[0] ** 2
        m_entries = {
            (i, j): pt.sum(x_rot[:, :, i] * x_rot[:, :, j] * inverse, axis=1) + (beta_precision if i == j else 0.0)
            for i in range(p)
            for j in range(i + 1)
        }
        r = [pt.sum(x_rot[:, :, i] * y_rot * inverse, axis=1) for i in range(p)]
        chol, log_det, solved = _unrolled_cholesky_solve(m_entries, r, p)
        quad = pt.sum(y_rot**2 * inverse, axis=1) - sum(u**2 for u in solved)
        n = y_rot.shape[1]
        log_lik = -0.5 * (
            n * math.log(2 * math.pi) + pt.sum(pt.log(variance), axis=1) + p * pt.log(settings[0] ** 2) + log_det + quad
        )
        pm.Potential("marginal_likelihood", pt.logsumexp(log_lik) - pt.log(log_lik.shape[0]))
        del chol
    return model


def _unrolled_cholesky_solve(entries: dict[tuple[int, int], Any], rhs: list[Any], p: int) -> tuple[Any, Any, list[Any]]:
    """Cholesky factor ``L`` of a batch of small ``p x p`` matrices given by their lower entries, written out
    element by element (elementwise tensor operations only), ``log det`` and ``L^-1 rhs``."""
    import pytensor.tensor as pt

    chol: dict[tuple[int, int], Any] = {}
    for j in range(p):
        diag = entries[(j, j)] - sum((chol[(j, k)] ** 2 for k in range(j)), start=0.0)
        chol[(j, j)] = pt.sqrt(diag)
        for i in range(j + 1, p):
            off = entries[(i, j)] - sum((chol[(i, k)] * chol[(j, k)] for k in range(j)), start=0.0)
            chol[(i, j)] = off / chol[(j, j)]
    log_det = 2 * sum(pt.log(chol[(j, j)]) for j in range(p))
    solved: list[Any] = []
    for i in range(p):
        solved.append((rhs[i] - sum((chol[(i, k)] * solved[k] for k in range(i)), start=0.0)) / chol[(i, i)])
    return chol, log_det, solved


def default_start(data: SpatialData) -> dict[str, Any]:
    """A crude starting point for stage 1: the least-squares residual variance split evenly."""
    beta, *_ = np.linalg.lstsq(data.X, data.y, rcond=None)
    sd = float(np.std(data.y - data.X @ beta)) or 1.0
    return {"sigma": sd / math.sqrt(2), "tau": sd / math.sqrt(2)}


def _beta_conditional(
    rotated: RotatedData, g: int, sigma_sq: np.ndarray, tau_sq: np.ndarray, beta_sd: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For grid value ``g`` and each draw: ``M``, ``r`` and the log marginal likelihood (beta integrated out)."""
    lam, z, x = rotated.eigenvalues[g], rotated.y[g], rotated.X[g]
    var = sigma_sq[:, None] * lam[None, :] + tau_sq[:, None]  # (S, N)
    inv = 1.0 / var
    p = x.shape[1]
    m = np.einsum("ni,sn,nj->sij", x, inv, x) + np.eye(p) / beta_sd**2
    r = (inv * z[None, :]) @ x  # (S, p)
    chol = np.linalg.cholesky(m)
    solved = np.linalg.solve(chol, r[..., None])[..., 0]
    log_det = 2 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
    log_lik = -0.5 * (
        len(z) * math.log(2 * math.pi)
        + np.log(var).sum(axis=1)
        + p * math.log(beta_sd**2)
        + log_det
        + (z[None, :] ** 2 * inv).sum(axis=1)
        - (solved**2).sum(axis=1)
    )
    return m, r, log_lik


def draw_beta_and_phi(
    rotated: RotatedData, sigma_sq: np.ndarray, tau_sq: np.ndarray, beta_sd: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Exact conditional draws of ``phi`` (on the grid) and then ``beta`` given each draw of ``sigma^2, tau^2``.

    ``p(phi_g | sigma, tau, y)`` is proportional to the marginal likelihood at ``phi_g`` (equal prior
    weights); ``beta | phi, sigma, tau, y ~ N(M^-1 r, M^-1)`` (see :func:`build_model`).

    Returns
    -------
    phi_index
        Grid position of each draw's ``phi``.
    beta
        Shape ``(S, p)``.
    """
    n_grid = len(rotated.phi)
    log_lik = np.column_stack([_beta_conditional(rotated, g, sigma_sq, tau_sq, beta_sd)[2] for g in range(n_grid)])
    prob = np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    index = np.minimum((prob.cumsum(axis=1) < rng.random(len(prob))[:, None]).sum(axis=1), n_grid - 1)
    beta = np.empty((len(sigma_sq), rotated.X.shape[2]))
    for g in np.unique(index):
        rows = np.flatnonzero(index == g)
        m, r, _ = _beta_conditional(rotated, int(g), sigma_sq[rows], tau_sq[rows], beta_sd)
        chol = np.linalg.cholesky(m)
        mean = np.linalg.solve(m, r[..., None])[..., 0]
        # beta = mean + L^-T e has covariance (L L')^-1 = M^-1
        e = rng.standard_normal(mean.shape)
        beta[rows] = mean + np.linalg.solve(np.swapaxes(chol, 1, 2), e[..., None])[..., 0]
    return index, beta
