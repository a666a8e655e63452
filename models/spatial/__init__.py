"""Spatial Gaussian-process synthesizer with differential smoothing of spatial outliers.

Quick, Holan & Wikle, *Generating partially synthetic geocoded public use data with decreased disclosure
risk using differential smoothing*.

The model (eq. 1 and Section 2; Section 3.1)::

    Y(s_i) = x(s_i)' beta + w(s_i) + eps_i,   eps_i ~ N(0, tau^2),
    w ~ N(0, Sigma_W),  Sigma_W[i, j] = sigma^2 exp(-phi ||s_i - s_j||).

The two-stage procedure of Section 3.3:

1. fit the unrestricted model (eq. 6);
2. flag spatial outliers by the nearest-neighbour distance, ``a_i = 1`` when
   ``min_j ||s_i - s_j|| >= M = -log(0.20) / phi_hat`` (Section 3.2, ``phi_hat`` the posterior median), or
   use the continuous weights ``a_i(phi) = 1 - exp(-phi min_j d_ij)`` of Section 6;
3. fit the restricted model (eq. 7), ``Y = mu + A w + eps`` with ``A_ii = 1 / sqrt(1 + gamma a_i)``,
   ``phi`` fixed at ``phi_hat``; ``gamma = inf`` (the default) forces ``w*(s_i) = (A w)_i = 0`` at outliers,
   and a finite ``gamma`` can be chosen from a target smoothing level ``alpha`` by eq. (5).

Priors (arguments, with defaults; the paper only says "vague"): ``beta_k ~ N(0, 100^2)``, half-Cauchy
priors on ``sigma`` and ``tau`` with scale the sample standard deviation of the response (weakly
informative, flat near zero), and the grid prior on ``phi`` above.

Large N (``approximation="nngp"``, or ``"auto"`` beyond :data:`AUTO_EXACT_LIMIT` = 3,000 records): the
exact computation needs one ``N x N`` eigendecomposition per grid value of ``phi`` (about 0.1 s at N = 500,
10 s at N = 3,000). The nearest-neighbour (Vecchia) GP of :mod:`bayessdc.models.spatial.nngp` replaces it:
the response NNGP (Finley et al. 2019) for the likelihood of both stages, each record conditioned on its
``neighbours`` (default 15) nearest earlier records, with ``phi``, ``tau^2/sigma^2`` and ``sigma^2`` on a
grid and ``beta`` integrated out (independent draws, no MCMC), and the latent NNGP with the same neighbour
sets for the draws of ``w``. That module's docstring states exactly what is approximated.

Modules:

* :mod:`~bayessdc.models.spatial.model`: eq. (1) with its Gaussian process and priors as the paper writes
  it (:func:`paper_model`), and the prior settings;
* :mod:`~bayessdc.models.spatial.marginal`: the exact equivalent NUTS samples (``w`` and ``beta`` integrated
  out, eigenbasis of ``A R(phi) A``, ``phi`` summed over a grid) and the conditional draws of ``beta, phi``;
* :mod:`~bayessdc.models.spatial.nngp`: the nearest-neighbour GP for large N (grid posterior, no MCMC);
* :mod:`~bayessdc.models.spatial.data`: input checks, :class:`SpatialData`;
* :mod:`~bayessdc.models.spatial.geometry` and :mod:`~bayessdc.models.spatial.smoothing`: distances, risk
  weights, ``A`` and the restriction of stage 2 (differential smoothing);
* :mod:`~bayessdc.models.spatial.simulate`: the paper's simulated example;
* :mod:`~bayessdc.models.spatial.synthesizer`: :class:`SpatialSynthesizer` and :func:`fit_two_stage`.
"""

from .data import SpatialData, SpatialDataError, prepare_spatial_data
from .geometry import exponential_correlation, nearest_neighbour_distance
from .marginal import RotatedData, build_model, correlation_eigen, default_start, draw_beta_and_phi, rotate
from .model import SpatialPriors, default_phi_grid, paper_model
from .simulate import paper_mean, simulate_spatial
from .smoothing import (
    Restriction,
    RiskWeights,
    gamma_from_smoothing,
    make_restriction,
    outlier_threshold,
    risk_weights,
    smoothing_diagonal,
)
from .synthesizer import (
    AUTO_EXACT_LIMIT,
    COMPILED_MODELS,
    Approximation,
    SpatialSynthesizer,
    TwoStageFit,
    fit_two_stage,
    posterior_summary,
    resolve_approximation,
)

__all__ = [
    "AUTO_EXACT_LIMIT",
    "COMPILED_MODELS",
    "Approximation",
    "Restriction",
    "RiskWeights",
    "RotatedData",
    "SpatialData",
    "SpatialDataError",
    "SpatialPriors",
    "SpatialSynthesizer",
    "TwoStageFit",
    "build_model",
    "correlation_eigen",
    "default_phi_grid",
    "default_start",
    "draw_beta_and_phi",
    "exponential_correlation",
    "fit_two_stage",
    "gamma_from_smoothing",
    "make_restriction",
    "nearest_neighbour_distance",
    "outlier_threshold",
    "paper_mean",
    "paper_model",
    "posterior_summary",
    "prepare_spatial_data",
    "resolve_approximation",
    "risk_weights",
    "rotate",
    "simulate_spatial",
    "smoothing_diagonal",
]
