"""The paper's simulated example (Quick, Holan & Wikle, Sections 2 and 4) on the unit square."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd

from .geometry import exponential_correlation

__all__ = ["paper_mean", "simulate_spatial"]


def paper_mean(coords: np.ndarray) -> np.ndarray:
    """The mean of eq. (8): ``11 + 0.25 |s_1 - 0.25| + 0.25 |s_2 - 0.5|``."""
    return 11 + 0.25 * np.abs(coords[:, 0] - 0.25) + 0.25 * np.abs(coords[:, 1] - 0.5)


def simulate_spatial(
    n: int = 500,
    *,
    tau_sq: float = 0.0625,
    sigma_sq: float = 4.0,
    phi: float = 12.7,
    outlier: tuple[float, float] | None = (0.51, 0.01),
    outlier_gap: float = 0.26,
    outlier_latent: float | None = None,
    dense_share: float = 0.92,
    seed: int = 0,
    covariates: Literal["paper", "none"] = "paper",
    simulation_neighbours: int | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Simulate the paper's example (Sections 2 and 4) on the unit square.

    Most locations fall in a dense region (``x < 0.45``), a few elsewhere; no location but the outlier lies
    within ``outlier_gap`` of ``outlier``, which is the last record. ``w`` is drawn from the exponential GP
    (with ``w(outlier) = outlier_latent`` when given, the others then from their conditional given it), and
    ``Y = mean of eq. (8) + w + eps``.

    ``simulation_neighbours``: ``None`` draws ``w`` from the exact GP (an ``N x N`` Cholesky factor, for up to
    a few thousand points); a number ``m`` draws it from the NNGP with ``m`` neighbours instead (sequentially,
    ``w_i | w_N(i)``, ``O(N m^3)``; for large N), and ``outlier_latent`` is then imposed by the exact
    conditional update ``w + Sigma[:, k] / Sigma[k, k] (value - w_k)``.

    Returns
    -------
    frame
        Columns ``x``, ``y`` (location), ``d1 = |x - 0.25|``, ``d2 = |y - 0.5|`` (the covariates of eq. 8 and
        Table 2) and ``response``.
    truth
        ``w``, ``mean``, ``tau_sq``, ``sigma_sq``, ``phi``, ``outlier_index``.
    """
    rng = np.random.default_rng(seed)
    n_regular = n - (outlier is not None)
    points: list[np.ndarray] = []
    while sum(len(p) for p in points) < n_regular:
        k = n_regular
        dense = rng.random(k) < dense_share
        xs = np.where(dense, rng.uniform(0, 0.45, k), rng.uniform(0.45, 1.0, k))
        cand = np.column_stack([xs, rng.uniform(0, 1, k)])
        if outlier is not None:
            cand = cand[np.hypot(cand[:, 0] - outlier[0], cand[:, 1] - outlier[1]) > outlier_gap]
        points.append(cand)
    coords = np.concatenate(points)[:n_regular]
    if outlier is not None:
        coords = np.vstack([coords, np.asarray(outlier, float)[None, :]])
    if simulation_neighbours is not None:
        w = _simulate_nngp(coords, sigma_sq, phi, int(simulation_neighbours), rng)
        if outlier is not None and outlier_latent is not None:
            column = np.exp(-phi * np.hypot(*(coords - coords[-1]).T))
            w = w + column * (float(outlier_latent) - w[-1])
        mean = paper_mean(coords)
        return _simulated_frame(coords, mean, w, tau_sq, sigma_sq, phi, outlier, covariates, rng)
    corr = exponential_correlation(coords, None, phi)
    cov = sigma_sq * corr + 1e-10 * np.eye(n)
    if outlier is not None and outlier_latent is not None:
        k = n - 1
        w_out = float(outlier_latent)
        cond_mean = cov[:k, k] / cov[k, k] * w_out
        cond_cov = cov[:k, :k] - np.outer(cov[:k, k], cov[k, :k]) / cov[k, k]
        w = np.append(cond_mean + np.linalg.cholesky(cond_cov) @ rng.standard_normal(k), w_out)
    else:
        w = np.linalg.cholesky(cov) @ rng.standard_normal(n)
    mean = paper_mean(coords)
    return _simulated_frame(coords, mean, w, tau_sq, sigma_sq, phi, outlier, covariates, rng)


def _simulate_nngp(coords: np.ndarray, sigma_sq: float, phi: float, m: int, rng: np.random.Generator) -> np.ndarray:
    """``w`` from the NNGP prior: ``(I - B)^-1 F^1/2 z`` by a sparse triangular solve in the ordering."""
    from scipy.sparse.linalg import spsolve_triangular

    from .nngp import latent_nngp_factor, nearest_earlier_neighbours, nngp_ordering

    neighbours = nearest_earlier_neighbours(coords, m)
    identity_minus_b, f = latent_nngp_factor(coords, neighbours, phi)
    order = nngp_ordering(coords)
    lower = identity_minus_b[order][:, order].tocsr()
    z = np.sqrt(sigma_sq * f[order]) * rng.standard_normal(len(coords))
    w = np.empty(len(coords))
    w[order] = spsolve_triangular(lower, z, lower=True)
    return w


def _simulated_frame(coords, mean, w, tau_sq, sigma_sq, phi, outlier, covariates, rng):
    n = len(coords)
    response = mean + w + rng.normal(0, math.sqrt(tau_sq), n)
    frame = pd.DataFrame({"x": coords[:, 0], "y": coords[:, 1]})
    if covariates == "paper":
        frame["d1"] = np.abs(coords[:, 0] - 0.25)
        frame["d2"] = np.abs(coords[:, 1] - 0.5)
    frame["response"] = response
    truth = {
        "w": w,
        "mean": mean,
        "tau_sq": tau_sq,
        "sigma_sq": sigma_sq,
        "phi": phi,
        "outlier_index": n - 1 if outlier is not None else None,
    }
    return frame, truth
