"""Spatial Gaussian-process synthesizer with differential smoothing of spatial outliers.

Quick, Holan & Wikle, *Generating partially synthetic geocoded public use data with decreased disclosure
risk using differential smoothing* (``../shared/papers/002_5418d1e134491608.txt`` in the development tree).

The model (eq. 1, Section 3.1)::

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

How it is computed (exactly, without approximating the Gaussian process):

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
  which in the eigenbasis is again diagonal. Together this is an exact draw from the joint posterior.
* With ``gamma = inf``, the outliers' rows of ``A R A`` are zero: they enter the likelihood as independent
  ``N(x'beta, tau^2)`` and their ``w*`` is exactly zero. Their synthetic ``w`` is drawn from its conditional
  prior given the other locations' ``w`` (Section 3.3). With a finite ``gamma`` the synthetic values come
  from the restricted model's own predictive, ``x'beta + w* + eps``, whose conditional mean at an isolated
  outlier is ``x'beta + alpha (Y - x'beta)`` (eq. 5).

Priors (arguments, with defaults; the paper only says "vague"): ``beta_k ~ N(0, 100^2)``, half-Cauchy
priors on ``sigma`` and ``tau`` with scale the sample standard deviation of the response (weakly
informative, flat near zero), and the grid prior on ``phi`` above.

Large N (``approximation="nngp"``, or ``"auto"`` beyond :data:`AUTO_EXACT_LIMIT` = 3,000 records): the
exact computation needs one ``N x N`` eigendecomposition per grid value of ``phi`` (about 0.1 s at N = 500,
10 s at N = 3,000). The nearest-neighbour (Vecchia) GP of :mod:`bayessdc.models.spatial_nngp` replaces it:
the response NNGP (Finley et al. 2019) for the likelihood of both stages, each record conditioned on its
``neighbours`` (default 15) nearest earlier records, with ``phi``, ``tau^2/sigma^2`` and ``sigma^2`` on a
grid and ``beta`` integrated out (independent draws, no MCMC), and the latent NNGP with the same neighbour
sets for the draws of ``w``. That module's docstring states exactly what is approximated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from .base import stack_draws
from .flows import _rows  # 1-based data row numbers, the same wording as the flow model's errors
from .sampling import CompiledModelCache, SamplerSettings, resolve_backend, sample_model

__all__ = [
    "AUTO_EXACT_LIMIT",
    "Restriction",
    "RotatedData",
    "SpatialData",
    "SpatialDataError",
    "SpatialPriors",
    "SpatialSynthesizer",
    "TwoStageFit",
    "build_model",
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
    "posterior_summary",
    "prepare_spatial_data",
    "resolve_approximation",
    "risk_weights",
    "rotate",
    "simulate_spatial",
    "smoothing_diagonal",
]

RiskWeights = Literal["binary", "continuous"]
Approximation = Literal["exact", "nngp", "auto"]

#: ``approximation="auto"`` uses the exact GP up to this many records and the NNGP beyond.
AUTO_EXACT_LIMIT = 3000


class SpatialDataError(ValueError):
    """The spatial data cannot be modelled as given (the message names the column or rows at fault)."""


# --------------------------------------------------------------------------------------------------
# Data


@dataclass
class SpatialData:
    """One spatial dataset on the modelling scale.

    Attributes
    ----------
    coords
        Locations, shape ``(N, 2)`` (jittered if jitter was requested).
    y
        Response on the modelling scale (log scale with ``log_response``).
    X
        Design matrix, shape ``(N, p)``; the first column is the intercept.
    covariate_names
        Names of the columns of ``X`` (``"intercept"`` first).
    log_response
        Whether ``y`` is the log of the released response.
    n_jittered
        Number of locations moved by jitter (0 when none was requested).
    """

    coords: np.ndarray
    y: np.ndarray
    X: np.ndarray
    covariate_names: list[str]
    log_response: bool = False
    n_jittered: int = 0

    @property
    def n(self) -> int:
        """Number of records."""
        return len(self.y)

    def with_response(self, y: np.ndarray) -> SpatialData:
        """The same locations and covariates with another response (modelling scale)."""
        return SpatialData(self.coords, np.asarray(y, float), self.X, self.covariate_names, self.log_response)

    def released(self, values: np.ndarray) -> np.ndarray:
        """Values on the released scale (``exp`` when the response is modelled on the log scale)."""
        return np.exp(values) if self.log_response else np.asarray(values)


def _numeric(frame: pd.DataFrame, column: str, role: str) -> np.ndarray:
    if column not in frame.columns:
        raise SpatialDataError(
            f"{role} column {column!r} is not in the table; it has {', '.join(repr(str(c)) for c in frame.columns)}"
        )
    raw = frame[column]
    missing = raw.isna().to_numpy()
    if missing.any():
        raise SpatialDataError(f"{role} column {column!r} has missing values at {_rows(missing)}")
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        raise SpatialDataError(f"{role} column {column!r} is not numeric at {_rows(bad)}")
    out = values.to_numpy(dtype=float)
    infinite = ~np.isfinite(out)
    if infinite.any():
        raise SpatialDataError(f"{role} column {column!r} has infinite values at {_rows(infinite)}")
    return out


def prepare_spatial_data(
    frame: pd.DataFrame,
    response: str,
    coords: tuple[str, str],
    covariates: tuple[str, ...] | list[str] = (),
    *,
    log_response: bool = False,
    jitter: float | None = None,
    seed: int = 0,
    min_points: int = 10,
) -> SpatialData:
    """Check a table and turn it into :class:`SpatialData`, before any sampling.

    Parameters
    ----------
    frame
        One row per record.
    response
        Column of the confidential continuous response (replaced in the synthetic data).
    coords
        The two coordinate columns (x, y); Euclidean distances are used.
    covariates
        Covariate columns (an intercept is always included).
    log_response
        Model ``log(response)``; the response must then be positive.
    jitter
        When given, records that share a location are moved by a uniform random offset in a disc of this
        radius (seeded by ``seed``); otherwise shared locations are an error.
    seed
        Seed of the jitter.
    min_points
        Fewest records accepted.

    Raises
    ------
    SpatialDataError
        Missing columns, missing, non-numeric or infinite values, a non-positive response with
        ``log_response``, duplicate locations without ``jitter``, or fewer than ``min_points`` records.
    """
    if len(coords) != 2:
        raise SpatialDataError(f"give exactly two coordinate columns, got {list(coords)}")
    frame = frame.reset_index(drop=True)
    if len(frame) < min_points:
        raise SpatialDataError(
            f"{len(frame)} records are too few for a spatial model: at least {min_points} are needed to "
            "estimate a covariance function"
        )
    y = _numeric(frame, response, "response")
    xy = np.column_stack([_numeric(frame, c, "coordinate") for c in coords])
    columns = [_numeric(frame, c, "covariate") for c in covariates]
    if log_response:
        non_positive = y <= 0
        if non_positive.any():
            raise SpatialDataError(
                f"response column {response!r} has non-positive values at {_rows(non_positive)}, so it has no "
                "log; drop --log-response or remove those records"
            )
        y = np.log(y)
    n_jittered = 0
    duplicated = pd.DataFrame(xy).duplicated(keep=False).to_numpy()
    if duplicated.any():
        if jitter is None or jitter <= 0:
            raise SpatialDataError(
                f"{int(duplicated.sum())} records share a location with another record ({_rows(duplicated)}): "
                "their nearest-neighbour distance is 0, so none of them can be flagged as a spatial outlier, "
                "and their spatial effects cannot be told apart. Aggregate them, or pass --jitter DIST to move "
                "each of them by a random offset of at most DIST (in coordinate units; seeded, recorded)"
            )
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 7]))
        k = int(duplicated.sum())
        angle = rng.uniform(0, 2 * np.pi, k)
        radius = jitter * np.sqrt(rng.uniform(0, 1, k))
        xy = xy.copy()
        xy[duplicated] += np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
        n_jittered = k
    for name, column in zip(covariates, columns, strict=True):
        if np.ptp(column) == 0:
            raise SpatialDataError(f"covariate column {name!r} is constant; the intercept already covers it")
    X = np.column_stack([np.ones(len(y)), *columns]) if columns else np.ones((len(y), 1))
    if np.linalg.matrix_rank(X) < X.shape[1]:
        raise SpatialDataError("the covariates are collinear (the design matrix is not of full rank)")
    return SpatialData(xy, y, X, ["intercept", *covariates], log_response, n_jittered)


# --------------------------------------------------------------------------------------------------
# Geometry, risk weights and the smoothing matrix (Section 3.2)


def exponential_correlation(a: np.ndarray, b: np.ndarray | None, phi: float) -> np.ndarray:
    """``exp(-phi ||a_i - b_j||)``: the exponential correlation of Section 2 (``b = a`` when ``None``)."""
    return np.exp(-phi * cdist(a, a if b is None else b))


def nearest_neighbour_distance(coords: np.ndarray) -> np.ndarray:
    """``min_{j != i} ||s_i - s_j||`` for every location."""
    distances, _ = cKDTree(coords).query(coords, k=2)
    return distances[:, 1]


def outlier_threshold(phi_hat: float, correlation: float = 0.20) -> float:
    """``M = -log(correlation) / phi_hat`` (Section 3.2): beyond ``M`` the correlation is below ``correlation``."""
    if not 0 < correlation < 1:
        raise ValueError(f"correlation must be in (0, 1), got {correlation}")
    return -math.log(correlation) / phi_hat


def risk_weights(
    coords: np.ndarray, phi_hat: float, kind: RiskWeights = "binary", correlation: float = 0.20
) -> np.ndarray:
    """Risk weights ``a_i``.

    ``"binary"`` (Section 3.2): 1 when the nearest-neighbour distance is at least
    ``M = -log(correlation)/phi_hat``, else 0. ``"continuous"`` (Section 6): ``1 - exp(-phi_hat min_j d_ij)``.
    """
    nn = nearest_neighbour_distance(coords)
    if kind == "binary":
        return (nn >= outlier_threshold(phi_hat, correlation)).astype(float)
    if kind == "continuous":
        return 1.0 - np.exp(-phi_hat * nn)
    raise ValueError(f"risk weights must be 'binary' or 'continuous', got {kind!r}")


def smoothing_diagonal(weights: np.ndarray, gamma: float) -> np.ndarray:
    """``A_ii = 1 / sqrt(1 + gamma a_i)`` (Section 3.1); exactly 0 where ``gamma = inf`` and ``a_i > 0``."""
    weights = np.asarray(weights, float)
    if gamma < 0:
        raise ValueError(f"gamma must be non-negative, got {gamma}")
    if math.isinf(gamma):
        return np.where(weights > 0, 0.0, 1.0)
    return 1.0 / np.sqrt(1.0 + gamma * weights)


def gamma_from_smoothing(alpha: float, sigma_sq: float, tau_sq: float) -> float:
    """The ``gamma`` giving smoothing level ``alpha`` at an isolated outlier (eq. 5).

    ``alpha = (sigma^2/(1+gamma)) / (tau^2 + sigma^2/(1+gamma))``, so ``gamma = sigma^2 (1-alpha)/(alpha tau^2) - 1``;
    ``alpha = 1/2`` gives ``gamma = sigma^2/tau^2 - 1``. ``alpha`` must lie in ``(0, sigma^2/(sigma^2+tau^2)]``.
    """
    top = sigma_sq / (sigma_sq + tau_sq)
    if not 0 < alpha <= top:
        raise ValueError(
            f"smoothing level alpha must be in (0, {top:.3f}] (sigma^2/(sigma^2+tau^2)); got {alpha}; "
            "alpha = 0 is gamma = inf"
        )
    return max(0.0, sigma_sq * (1 - alpha) / (alpha * tau_sq) - 1.0)


# --------------------------------------------------------------------------------------------------
# The rotated (eigen) form of the marginal likelihood


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


def _eigen(coords: np.ndarray, phi: float, scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
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
        values, vectors = _eigen(data.coords, float(phi), scale)
        lam[g, :k] = values
        yr[g, :k] = vectors.T @ data.y[inside]
        xr_[g, :k] = vectors.T @ data.X[inside]
        yr[g, k:] = data.y[~inside]
        xr_[g, k:] = data.X[~inside]
    return RotatedData(phi_values, lam, yr, xr_)


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


# --------------------------------------------------------------------------------------------------
# The restriction of stage 2


@dataclass
class Restriction:
    """What stage 1 hands to stage 2 (Section 3.3).

    Attributes
    ----------
    phi_hat
        Posterior median of ``phi`` from the unrestricted fit; ``phi`` is fixed there in stage 2.
    weights
        Risk weights ``a_i``.
    gamma
        Global risk parameter (``inf``: full smoothing).
    smoothing
        ``A_ii = 1/sqrt(1 + gamma a_i)``.
    threshold
        ``M = -log(correlation)/phi_hat`` (binary weights).
    kind
        ``"binary"`` or ``"continuous"``.
    initial
        Starting values for stage 2: posterior medians of ``sigma`` and ``tau`` from stage 1.
    alpha
        Target smoothing level when ``gamma`` was derived from it (eq. 5), else ``None``.
    """

    phi_hat: float
    weights: np.ndarray
    gamma: float
    smoothing: np.ndarray
    threshold: float
    kind: str = "binary"
    initial: dict[str, Any] = field(default_factory=dict)
    alpha: float | None = None

    @property
    def at_risk(self) -> np.ndarray:
        """Boolean mask of the at-risk records (``a_i > 0`` for binary weights; ``a_i`` at least the
        binary threshold's weight ``1 - correlation`` for continuous ones)."""
        if self.kind == "binary":
            return self.weights > 0
        return self.weights >= 1 - math.exp(-self.phi_hat * self.threshold)

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary (private: contains ``phi_hat``)."""
        return {
            "phi_hat": self.phi_hat,
            "threshold_M": self.threshold,
            "risk_weights": self.kind,
            "gamma": "inf" if math.isinf(self.gamma) else self.gamma,
            "alpha": self.alpha,
            "n_at_risk": int(self.at_risk.sum()),
        }


def make_restriction(
    data: SpatialData,
    unrestricted: az.InferenceData,
    *,
    kind: RiskWeights = "binary",
    correlation: float = 0.20,
    gamma: float = math.inf,
    alpha: float | None = None,
) -> Restriction:
    """Flag the at-risk records from the unrestricted fit and build ``A`` (Sections 3.2-3.3 and 6).

    Parameters
    ----------
    data
        The data.
    unrestricted
        Stage-1 posterior (with ``phi``, ``beta``, ``sigma``, ``tau``, ``sigma_sq``, ``tau_sq``).
    kind
        ``"binary"`` or ``"continuous"`` risk weights.
    correlation
        The 0.20 of ``M = -log(0.20)/phi_hat``.
    gamma
        Global risk parameter; ignored when ``alpha`` is given.
    alpha
        Target smoothing level; ``gamma`` then follows from eq. (5) at the posterior medians of
        ``sigma^2`` and ``tau^2``.
    """
    post = unrestricted.posterior
    phi_hat = float(post["phi"].median())
    if alpha is not None:
        gamma = gamma_from_smoothing(alpha, float(post["sigma_sq"].median()), float(post["tau_sq"].median()))
    weights = risk_weights(data.coords, phi_hat, kind, correlation)
    if kind == "continuous" and math.isinf(gamma):
        raise ValueError(
            "continuous risk weights are positive everywhere, so gamma = inf would remove the spatial effect "
            "of every record; choose a finite gamma or a smoothing level alpha"
        )
    initial = {
        "sigma": float(post["sigma"].median()),
        "tau": float(post["tau"].median()),
    }
    return Restriction(
        phi_hat=phi_hat,
        weights=weights,
        gamma=float(gamma),
        smoothing=smoothing_diagonal(weights, gamma),
        threshold=outlier_threshold(phi_hat, correlation),
        kind=kind,
        initial=initial,
        alpha=alpha,
    )


# --------------------------------------------------------------------------------------------------
# The synthesizer

#: Compiled stage-1 models of this process, keyed by shape and priors.
COMPILED_MODELS = CompiledModelCache()


def resolve_approximation(approximation: str, n: int, neighbours: int = 15) -> str:
    """``"exact"`` or ``"nngp"`` for ``n`` records (``"auto"``: exact up to :data:`AUTO_EXACT_LIMIT` records).

    Raises
    ------
    ValueError
        An unknown approximation or a number of neighbours below 1.
    """
    if approximation not in ("exact", "nngp", "auto"):
        raise ValueError(f"approximation must be 'exact', 'nngp' or 'auto', got {approximation!r}")
    if not isinstance(neighbours, int | np.integer) or neighbours < 1:
        raise ValueError(f"neighbours must be a positive integer, got {neighbours!r}")
    if approximation == "auto":
        return "exact" if n <= AUTO_EXACT_LIMIT else "nngp"
    return approximation


@dataclass
class SpatialSynthesizer:
    """One stage of the spatial synthesizer: unrestricted (``restriction=None``) or restricted.

    Parameters
    ----------
    priors
        Prior settings.
    settings
        NUTS settings. The default target acceptance is 0.95: the posterior of ``(log sigma, log tau)`` is
        curved when ``tau`` is weakly identified, and at 0.8 a few divergent transitions remained there;
        2,000 draws per chain because ``tau`` mixes slowly in stage 1 (about 0.05 ESS per draw at N = 100).
        Draws are cheap: a gradient costs ``O(G N p^2)``.
    restriction
        Stage-2 restriction from :func:`make_restriction`; ``None`` for the unrestricted model.
    approximation
        ``"exact"`` (the GP above, NUTS), ``"nngp"`` (nearest-neighbour / Vecchia GP with ``neighbours``
        neighbours, a grid posterior with independent draws: :mod:`bayessdc.models.spatial_nngp`; the
        sampler settings then give only the number of draws, ``chains x draws``) or ``"auto"`` (exact up to
        :data:`AUTO_EXACT_LIMIT` records). Resolved when fitting; both stages should use the same.
    neighbours
        Neighbours of each record under the NNGP (``m``; Datta et al. 2016 found 10 to 15 enough for the
        exponential covariance).
    """

    priors: SpatialPriors = field(default_factory=SpatialPriors)
    settings: SamplerSettings = field(default_factory=lambda: SamplerSettings(draws=2000, target_accept=0.95))
    restriction: Restriction | None = None
    name: str = "spatial"
    approximation: Approximation = "auto"
    neighbours: int = 15
    _eigen_cache: dict[float, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    _method: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        resolve_approximation(self.approximation, 0, self.neighbours)  # clear errors before any sampling

    def method(self, data: SpatialData) -> str:
        """``"exact"`` or ``"nngp"`` for ``data`` (the resolved ``approximation``)."""
        return resolve_approximation(self.approximation, data.n, self.neighbours)

    @property
    def stage(self) -> str:
        """``"unrestricted"`` or ``"restricted"``."""
        return "unrestricted" if self.restriction is None else "restricted"

    # -- fitting ------------------------------------------------------------------------------------

    def fit(self, data: SpatialData, seed: int) -> az.InferenceData:
        """Sample this stage's posterior of ``beta, sigma, tau`` and ``phi`` (``w`` is drawn on demand)."""
        self._method = self.method(data)
        if self._method == "nngp":
            return self._fit_nngp(data, seed)
        scales = self.priors.scales(data)
        r = self.restriction
        if r is None:
            grid = self.priors.grid(data)
            rotated = rotate(data, grid)
            start = default_start(data)
        else:
            grid = np.array([r.phi_hat])
            rotated = rotate(data, grid, r.smoothing)
            start = r.initial
        backend = resolve_backend(self.settings.backend)
        if backend == "nutpie":
            key = ("spatial", data.X.shape[1])
            compiled = COMPILED_MODELS.get(
                key, lambda: build_model(rotated, self.priors, scales, data.covariate_names, start)
            )
            swap = {
                "eigenvalues": rotated.eigenvalues,
                "y_rotated": rotated.y,
                "X_rotated": rotated.X,
                "prior_settings": np.array([self.priors.beta_sd, *scales], float),
                "start_log_sd": np.log([start["sigma"], start["tau"]]),
            }
            idata = sample_model(None, self.settings, seed, compiled=compiled, data=swap)
        else:
            model = build_model(rotated, self.priors, scales, data.covariate_names, start)
            idata = sample_model(model, self.settings, seed)
        post = idata.posterior
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
        shape = (post.sizes["chain"], post.sizes["draw"])
        index, beta = draw_beta_and_phi(
            rotated, post["sigma_sq"].to_numpy().ravel(), post["tau_sq"].to_numpy().ravel(), self.priors.beta_sd, rng
        )
        post["phi"] = (("chain", "draw"), grid[index].reshape(shape))
        post["beta"] = xr.DataArray(
            beta.reshape(*shape, -1),
            dims=("chain", "draw", "coefficient"),
            coords={"coefficient": data.covariate_names},
        )
        keep = ["beta", "sigma", "tau", "sigma_sq", "tau_sq", "phi"]
        idata.posterior = post[keep]
        for extra in [g for g in idata.groups() if g not in ("posterior", "sample_stats")]:
            delattr(idata, extra)
        idata.attrs["stage"] = self.stage
        return idata

    def _fit_nngp(self, data: SpatialData, seed: int) -> az.InferenceData:
        """The NNGP posterior on a grid, ``chains x draws`` independent draws (:func:`fit_nngp_grid`)."""
        from .spatial_nngp import draw_nngp_posterior, fit_nngp_grid, nearest_earlier_neighbours, neighbour_geometry

        r = self.restriction
        if r is None:
            grid, scale, refine = self.priors.grid(data), None, self.priors.phi_grid is None
        else:
            grid, scale, refine = np.array([r.phi_hat]), r.smoothing, False
        include = None if scale is None else scale > 0
        neighbours = nearest_earlier_neighbours(data.coords, self.neighbours, include)
        geometry = neighbour_geometry(data.coords, data.y, data.X, neighbours, scale)
        posterior_grid = fit_nngp_grid(
            geometry, grid, beta_sd=self.priors.beta_sd, scales=self.priors.scales(data), refine_phi=refine
        )
        chains, n_draws = self.settings.chains, self.settings.draws
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 2]))
        draws = draw_nngp_posterior(posterior_grid, chains * n_draws, rng)
        shape = (chains, n_draws)
        coords = {"chain": np.arange(chains), "draw": np.arange(n_draws), "coefficient": data.covariate_names}
        post = xr.Dataset(
            {
                "beta": (("chain", "draw", "coefficient"), draws["beta"].reshape(*shape, -1)),
                "sigma": (("chain", "draw"), np.sqrt(draws["sigma_sq"]).reshape(shape)),
                "tau": (("chain", "draw"), np.sqrt(draws["tau_sq"]).reshape(shape)),
                "sigma_sq": (("chain", "draw"), draws["sigma_sq"].reshape(shape)),
                "tau_sq": (("chain", "draw"), draws["tau_sq"].reshape(shape)),
                "phi": (("chain", "draw"), draws["phi"].reshape(shape)),
            },
            coords=coords,
        )
        stats = xr.Dataset(
            {"diverging": (("chain", "draw"), np.zeros(shape, dtype=bool))},
            coords={"chain": coords["chain"], "draw": coords["draw"]},
        )
        idata = az.InferenceData(posterior=post, sample_stats=stats)
        evaluations, eigen = posterior_grid.n_evaluations
        idata.attrs.update(
            {
                "sampler": "independent draws from the NNGP grid posterior (no MCMC)",
                "sampler_settings": str({"draws": n_draws, "chains": chains, "neighbours": self.neighbours}),
                "sampler_seed": int(seed),
                "sampling_seconds": float(posterior_grid.seconds),
                "grid_phi_values": int(len(posterior_grid.phi)),
                "grid_evaluations": int(evaluations),
                "grid_eigendecompositions": int(eigen),
                "stage": self.stage,
            }
        )
        return idata

    def convergence_variables(self) -> list[str]:
        """Posterior variables the convergence gate monitors (``phi`` only where it is sampled by NUTS).

        Under the NNGP the draws are independent; ``phi`` is left out there because its grid posterior may sit
        on one or two grid values at large N, where r_hat is undefined.
        """
        base = ["beta", "sigma", "tau"]
        return base + ["phi"] if self.restriction is None and self._method != "nngp" else base

    # -- the latent process -------------------------------------------------------------------------

    def _eigen_for(self, data: SpatialData, phi: float) -> tuple[np.ndarray, np.ndarray]:
        key = float(phi)
        if key not in self._eigen_cache:
            scale = None if self.restriction is None else self.restriction.smoothing
            self._eigen_cache[key] = _eigen(data.coords, key, scale)
        return self._eigen_cache[key]

    def _resolved(self, data: SpatialData) -> str:
        return self._method or self.method(data)

    def draw_latent(self, posterior: xr.Dataset, data: SpatialData, rng: np.random.Generator) -> xr.DataArray:
        """Draws of ``w*`` = ``A w`` (``w`` itself when unrestricted) from its full conditional (eq. 2).

        One draw per posterior draw in ``posterior`` (dimension ``sample``); dims ``(sample, item)``.
        Exactly 0 at records with ``A_ii = 0``. Under the NNGP: the full conditional under the latent NNGP
        prior (one sparse solve per draw, :func:`bayessdc.models.spatial_nngp.draw_latent_nngp`).
        """
        beta = posterior["beta"].transpose("sample", "coefficient").to_numpy()
        sigma_sq = posterior["sigma_sq"].to_numpy()
        tau_sq = posterior["tau_sq"].to_numpy()
        phi = posterior["phi"].to_numpy()
        inside = np.ones(data.n, bool) if self.restriction is None else self.restriction.smoothing > 0
        out = np.zeros((len(sigma_sq), data.n))
        resid = data.y[None, inside] - beta @ data.X[inside].T
        if self._resolved(data) == "nngp":
            from .spatial_nngp import draw_latent_nngp, nearest_earlier_neighbours

            coords = data.coords[inside]
            scale = None if self.restriction is None else self.restriction.smoothing[inside]
            neighbours = nearest_earlier_neighbours(coords, self.neighbours)
            out[:, inside] = draw_latent_nngp(coords, resid, sigma_sq, tau_sq, phi, neighbours, rng, scale)
            return xr.DataArray(out, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()})
        for value in np.unique(phi):
            rows = np.flatnonzero(phi == value)
            lam, vectors = self._eigen_for(data, value)
            prior_var = sigma_sq[rows, None] * lam[None, :]
            shrink = prior_var / (prior_var + tau_sq[rows, None])
            mean = shrink * (resid[rows] @ vectors)
            sd = np.sqrt(shrink * tau_sq[rows, None])
            z = mean + sd * rng.standard_normal(mean.shape)
            out[np.ix_(rows, np.flatnonzero(inside))] = z @ vectors.T
        return xr.DataArray(out, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()})

    def draw_synthetic_process(
        self, posterior: xr.Dataset, data: SpatialData, rng: np.random.Generator
    ) -> xr.DataArray:
        """The spatial effect the synthetic values are drawn with, one per posterior draw.

        Unrestricted: ``w``. Restricted with finite ``gamma``: ``w* = A w`` (the restricted model's own
        predictive). Restricted with ``gamma = inf``: ``w*`` where ``A_ii = 1`` and, at the outliers,
        ``w`` drawn from its conditional prior given the others (Section 3.3).
        """
        latent = self.draw_latent(posterior, data, rng)
        r = self.restriction
        if r is None or not math.isinf(r.gamma):
            return latent
        outside = r.smoothing == 0
        if not outside.any():
            return latent
        inside = ~outside
        if self._resolved(data) == "nngp":
            from .spatial_nngp import draw_outliers_nngp

            values = latent.to_numpy().copy()
            values[:, outside] = draw_outliers_nngp(
                data.coords[inside],
                data.coords[outside],
                values[:, inside],
                posterior["sigma_sq"].to_numpy(),
                r.phi_hat,
                self.neighbours,
                rng,
            )
            return latent.copy(data=values)
        corr_ii = exponential_correlation(data.coords[inside], None, r.phi_hat)
        corr_oi = exponential_correlation(data.coords[outside], data.coords[inside], r.phi_hat)
        corr_oo = exponential_correlation(data.coords[outside], None, r.phi_hat)
        chol = np.linalg.cholesky(corr_ii)
        solved = np.linalg.solve(chol, corr_oi.T)
        weights = np.linalg.solve(chol.T, solved).T  # R_oi R_ii^-1
        conditional = corr_oo - solved.T @ solved
        cond_chol = np.linalg.cholesky(conditional + 1e-12 * np.eye(len(conditional)))
        values = latent.to_numpy().copy()
        sigma = np.sqrt(posterior["sigma_sq"].to_numpy())
        noise = rng.standard_normal((values.shape[0], int(outside.sum()))) @ cond_chol.T
        values[:, outside] = values[:, inside] @ weights.T + sigma[:, None] * noise
        return latent.copy(data=values)

    # -- the contract hooks -------------------------------------------------------------------------

    def observed(self, data: SpatialData) -> xr.DataArray:
        """The response on the modelling scale (dimension ``item``)."""
        return xr.DataArray(data.y, dims="item", name="y")

    def posterior_predictive(self, posterior: xr.Dataset, data: SpatialData, rng: np.random.Generator) -> xr.DataArray:
        """Synthetic responses (modelling scale), one per posterior draw: ``x'beta + w + eps`` (Section 3.3)."""
        process = self.draw_synthetic_process(posterior, data, rng).to_numpy()
        beta = posterior["beta"].transpose("sample", "coefficient").to_numpy()
        tau = np.sqrt(posterior["tau_sq"].to_numpy())
        values = beta @ data.X.T + process + tau[:, None] * rng.standard_normal(process.shape)
        return xr.DataArray(
            values, dims=("sample", "item"), coords={"sample": posterior["sample"].to_numpy()}, name="synthetic"
        )

    def candidates(self, data: SpatialData) -> xr.DataArray:
        """Not used: the response is continuous (risk is measured by proximity, ``risk/proximity.py``)."""
        raise NotImplementedError("continuous response: use bayessdc.risk.proximity")

    def candidate_log_prob(self, posterior: xr.Dataset, data: SpatialData) -> xr.DataArray:
        """Not used: the response is continuous (risk is measured by proximity, ``risk/proximity.py``)."""
        raise NotImplementedError("continuous response: use bayessdc.risk.proximity")

    def predict_surface(
        self, posterior: xr.Dataset, data: SpatialData, new_coords: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Posterior mean of the synthesis process at new locations (kriging each draw's process).

        Returns ``E[w(s_0) | y]`` at ``new_coords`` (shape ``(K,)``), averaged over the draws in ``posterior``;
        add ``x(s_0)'beta`` for the response surface. For the restricted model with ``gamma = inf`` the new
        locations are kriged from the non-outliers only (their process does not depend on the outliers' data).
        """
        process = self.draw_synthetic_process(posterior, data, rng).to_numpy()
        phi = posterior["phi"].to_numpy()
        total = np.zeros(len(new_coords))
        if self._resolved(data) == "nngp":  # NNGP kriging from the nearest records
            from .spatial_nngp import krige_nngp

            for value in np.unique(phi):
                rows = np.flatnonzero(phi == value)
                total += krige_nngp(data.coords, process[rows], new_coords, float(value), self.neighbours).sum(0)
            return total / len(phi)
        for value in np.unique(phi):
            rows = np.flatnonzero(phi == value)
            corr = exponential_correlation(data.coords, None, value) + 1e-10 * np.eye(data.n)
            cross = exponential_correlation(new_coords, data.coords, value)
            weights = np.linalg.solve(corr, cross.T)  # (N, K)
            total += (process[rows] @ weights).sum(axis=0)
        return total / len(phi)

    def describe(self) -> dict[str, Any]:
        """Public description of the model (no estimates)."""
        r = self.restriction
        method = self._method or self.approximation
        if method == "nngp":
            process = (
                "w ~ GP(0, sigma^2 exp(-phi ||s - s'||)), approximated by a nearest-neighbour (Vecchia) GP: each "
                f"record conditioned on its {self.neighbours} nearest earlier records (ordered by the first "
                "coordinate); the response NNGP of the marginal covariance for the parameters, the latent NNGP "
                "with the same neighbour sets for w"
            )
            sampler: dict[str, Any] = {
                "method": "grid posterior of (phi, tau^2/sigma^2, sigma^2), beta integrated out; independent draws",
                "draws": self.settings.chains * self.settings.draws,
            }
        else:
            process = "w ~ GP(0, sigma^2 exp(-phi ||s - s'||)) (exact, marginalised)"
            if method == "auto":
                process += f"; nearest-neighbour (Vecchia) GP beyond {AUTO_EXACT_LIMIT} records"
            sampler = {k: v for k, v in self.settings.to_dict().items() if k != "progressbar"}
        return {
            "synthesizer": self.name,
            "stage": self.stage,
            "approximation": method,
            "paper": "Quick, Holan & Wikle, Generating partially synthetic geocoded public use data with decreased "
            "disclosure risk using differential smoothing",
            "model": {
                "response": "Y(s) = x(s)'beta + w(s) + eps, eps ~ N(0, tau^2)",
                "process": process,
                "priors": {
                    "beta": f"Normal(0, {self.priors.beta_sd:g}^2) each",
                    "sigma, tau": "half-Cauchy, scale the sample sd of the response unless set",
                    "phi": "equal weights on a grid equally spaced in log phi" if r is None else "fixed (stage 2)",
                },
                "differential_smoothing": None
                if r is None
                else {
                    "risk_weights": r.kind,
                    "gamma": "inf" if math.isinf(r.gamma) else "finite",
                    "process_scaling": "A_ii = 1/sqrt(1 + gamma a_i)",
                },
            },
            "synthesis": "partially synthetic: the response is replaced by x'beta + w + eps under one posterior "
            "draw per dataset; locations and covariates are released unchanged",
            "sampler": sampler,
        }


# --------------------------------------------------------------------------------------------------
# The two stages together


@dataclass
class TwoStageFit:
    """Both fits of the differential-smoothing procedure (Section 3.3)."""

    data: SpatialData
    unrestricted: SpatialSynthesizer
    unrestricted_idata: az.InferenceData
    restriction: Restriction
    restricted: SpatialSynthesizer
    restricted_idata: az.InferenceData


def fit_two_stage(
    data: SpatialData,
    *,
    priors: SpatialPriors | None = None,
    settings: SamplerSettings | None = None,
    seed: int = 0,
    risk_weights: RiskWeights = "binary",
    correlation: float = 0.20,
    gamma: float = math.inf,
    alpha: float | None = None,
    approximation: Approximation = "auto",
    neighbours: int = 15,
) -> TwoStageFit:
    """Fit the unrestricted model, flag the at-risk records, fit the restricted model (Section 3.3).

    Parameters
    ----------
    data
        From :func:`prepare_spatial_data` or :func:`simulate_spatial`.
    priors, settings
        Prior and sampler settings (defaults: :class:`SpatialPriors`, :class:`SamplerSettings`).
    seed
        Seed of both stages.
    risk_weights, correlation, gamma, alpha
        See :func:`make_restriction`.
    approximation, neighbours
        ``"exact"``, ``"nngp"`` or ``"auto"`` (exact up to :data:`AUTO_EXACT_LIMIT` records), resolved once for
        both stages; see :class:`SpatialSynthesizer`.
    """
    priors = priors or SpatialPriors()
    settings = settings or SamplerSettings(draws=2000, target_accept=0.95)
    method = resolve_approximation(approximation, data.n, neighbours)
    first = SpatialSynthesizer(priors, settings, approximation=method, neighbours=neighbours)  # type: ignore[arg-type]
    idata1 = first.fit(data, seed)
    restriction = make_restriction(data, idata1, kind=risk_weights, correlation=correlation, gamma=gamma, alpha=alpha)
    second = SpatialSynthesizer(priors, settings, restriction, approximation=method, neighbours=neighbours)  # type: ignore[arg-type]
    idata2 = second.fit(data, seed + 1)
    return TwoStageFit(data, first, idata1, restriction, second, idata2)


# --------------------------------------------------------------------------------------------------
# Simulation (Sections 2 and 4)


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

    from .spatial_nngp import _ordering, latent_nngp_factor, nearest_earlier_neighbours

    neighbours = nearest_earlier_neighbours(coords, m)
    identity_minus_b, f = latent_nngp_factor(coords, neighbours, phi)
    order = _ordering(coords)
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


def posterior_summary(
    idata: az.InferenceData, names: tuple[str, ...] = ("beta", "sigma_sq", "tau_sq", "phi")
) -> pd.DataFrame:
    """Posterior medians and 95% equal-tailed intervals (the layout of Table 1)."""
    post = stack_draws(idata.posterior)
    rows = []
    for name in names:
        values = post[name]
        if "coefficient" in values.dims:
            for c in values["coefficient"].to_numpy():
                v = values.sel(coefficient=c).to_numpy()
                rows.append((f"{name}[{c}]", *np.quantile(v, [0.5, 0.025, 0.975])))
        else:
            rows.append((name, *np.quantile(values.to_numpy(), [0.5, 0.025, 0.975])))
    return pd.DataFrame(rows, columns=["parameter", "median", "lower", "upper"]).set_index("parameter")
