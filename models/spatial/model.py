"""The spatial model of Quick, Holan & Wikle as the paper writes it (eq. 1, Sections 2 and 3.1-3.3).

For records at locations ``s_1..s_N`` with covariates ``x(s_i)``:

* eq. (1): ``Y(s_i) | theta ~ N(x(s_i)'beta + w(s_i), tau^2)``;
* Section 2: ``w | sigma^2, phi ~ MVN(0, Sigma_W)``, ``Sigma_W[i, j] = sigma^2 exp(-phi ||s_i - s_j||)``;
* eq. (7), the restricted model of stage 2: ``w`` replaced by ``w* = A w``, ``A_ii = 1 / sqrt(1 + gamma a_i)``
  (eq. 6, the unrestricted model of stage 1, is ``A = I``);
* "vague" priors on ``beta``, ``sigma^2``, ``phi`` and ``tau^2`` (Section 3.3), here those of
  :class:`SpatialPriors`: ``beta_k ~ N(0, 100^2)``, half-Cauchy ``sigma`` and ``tau`` with the sample
  standard deviation of the response as scale, and equal weights on a grid of ``phi`` equally spaced in
  ``log phi`` (a discretised log-uniform prior); stage 2 fixes ``phi`` at ``phi_hat``, a grid of one value.

:func:`paper_model` declares exactly this, ``w`` included. The sampler uses the equivalent of
:mod:`bayessdc.models.spatial.marginal` (``w`` and ``beta`` integrated out in the eigenbasis of ``A R(phi) A``,
``phi`` summed over its grid); ``tests/models/test_spatial_model.py`` checks that the two log densities agree.

References
----------
.. [1] Quick, H., Holan, S. H., & Wikle, C. K. (2018). Generating partially synthetic geocoded public use data with
    decreased disclosure risk by using differential smoothing. *Journal of the Royal Statistical Society,
    Series A*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.distance import cdist

from .data import SpatialData
from .geometry import nearest_neighbour_distance

__all__ = ["SpatialPriors", "default_phi_grid", "paper_model"]


def default_phi_grid(coords: np.ndarray, n_grid: int = 60) -> np.ndarray:
    """Grid of ``phi``: effective range ``3/phi`` from the median nearest-neighbour distance to the largest distance.

    Equally spaced in ``log phi`` (a discretised log-uniform prior when weighted equally).
    """
    nn = float(np.median(nearest_neighbour_distance(coords)))
    hull = coords[np.unique(np.r_[np.argmin(coords, 0), np.argmax(coords, 0)])]
    d_max = float(max(cdist(coords, hull).max(), nn * 4))
    return np.exp(np.linspace(math.log(3.0 / d_max), math.log(3.0 / nn), n_grid))


@dataclass(frozen=True)
class SpatialPriors:
    """Prior settings (the paper says "vague"; these are the defaults).

    Parameters
    ----------
    beta_sd
        Standard deviation of the independent normal priors of the regression coefficients.
    sigma_scale, tau_scale
        Scales of the half-Cauchy priors of ``sigma`` and ``tau`` (``None``: the sample standard deviation
        of the response on the modelling scale).
    n_phi_grid
        Number of grid values of ``phi`` when no grid is given (see :func:`default_phi_grid`).
    phi_grid
        Explicit grid of ``phi`` values with equal prior weight (overrides ``n_phi_grid``).
    """

    beta_sd: float = 100.0
    sigma_scale: float | None = None
    tau_scale: float | None = None
    n_phi_grid: int = 60
    phi_grid: tuple[float, ...] | None = None

    def scales(self, data: SpatialData) -> tuple[float, float]:
        """The half-Cauchy scales of ``sigma`` and ``tau`` for ``data``."""
        sd = float(np.std(data.y, ddof=1)) or 1.0
        return (self.sigma_scale or sd, self.tau_scale or sd)

    def grid(self, data: SpatialData) -> np.ndarray:
        """The grid of ``phi`` for ``data``."""
        if self.phi_grid is not None:
            grid = np.asarray(self.phi_grid, float)
            if (grid <= 0).any():
                raise ValueError("phi grid values must be positive")
            return grid
        return default_phi_grid(data.coords, self.n_phi_grid)


def paper_model(
    data: SpatialData,
    priors: SpatialPriors = SpatialPriors(),
    *,
    phi_grid: np.ndarray | None = None,
    smoothing: np.ndarray | None = None,
) -> Any:
    """Declare eq. (1) with its Gaussian process and priors, as written (eq. 6, or eq. 7 given ``smoothing``).

    PyMC declares a parent before its child, so the paper's lines are read from the priors up: priors,
    ``w`` (Section 2), then the likelihood of eq. (1). Sampling this form means an ``N``-dimensional ``w``
    and a discrete ``phi``; the sampler uses :func:`bayessdc.models.spatial.marginal.build_model` instead.

    Parameters
    ----------
    data
        The records: locations, response on the modelling scale, design matrix.
    priors
        ``beta_sd`` and the half-Cauchy scales; the defaults as in :class:`SpatialPriors`.
    phi_grid
        Values of ``phi`` with equal prior weight (default ``priors.grid(data)``); ``[phi_hat]`` for stage 2.
    smoothing
        The diagonal of ``A`` (eq. 7); ``None`` for the unrestricted model (eq. 6, ``A = I``).

    Returns
    -------
    pymc.Model
        Dimensions ``record`` and ``coefficient``; free ``beta`` (coefficient), ``sigma``, ``tau``,
        ``phi_index`` (position in the grid), ``w`` (record); deterministic ``phi``; observed ``y`` (record).
    """
    import pymc as pm
    import pytensor.tensor as pt

    grid = priors.grid(data) if phi_grid is None else np.atleast_1d(np.asarray(phi_grid, float))
    sigma_scale, tau_scale = priors.scales(data)
    a = np.ones(data.n) if smoothing is None else np.asarray(smoothing, float)
    distance = cdist(data.coords, data.coords)
    with pm.Model(coords={"record": np.arange(data.n), "coefficient": data.covariate_names}) as model:
        beta = pm.Normal("beta", mu=0.0, sigma=priors.beta_sd, dims="coefficient")  # vague priors (Section 3.3)
        sigma = pm.HalfCauchy("sigma", beta=sigma_scale)
        tau = pm.HalfCauchy("tau", beta=tau_scale)
        phi_index = pm.Categorical("phi_index", p=np.full(len(grid), 1 / len(grid)))
        phi = pm.Deterministic("phi", pt.as_tensor(grid)[phi_index])
        # Section 2: w | sigma^2, phi ~ MVN(0, Sigma_W), Sigma_W[i, j] = sigma^2 exp(-phi ||s_i - s_j||)
        w = pm.MvNormal("w", mu=np.zeros(data.n), cov=sigma**2 * pt.exp(-phi * distance), dims="record")
        # eq. (1), with w* = A w in eq. (7): Y(s_i) | theta ~ N(x(s_i)'beta + w*(s_i), tau^2)
        pm.Normal("y", mu=pt.dot(data.X, beta) + a * w, sigma=tau, observed=data.y, dims="record")
    return model
