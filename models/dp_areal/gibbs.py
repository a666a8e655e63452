"""A partially collapsed Gibbs sampler of the DP-areal model (eq. 7-12), every cell's log rate integrated out.

The likelihood sees the data only through the distinct ``(pattern, count)`` pairs ``d`` and ``n_d``, how many
labels share one (:mod:`bayessdc.models.dp_areal.marginal`). Given the components, the cells of one pair are
exchangeable, so the state holds ``N_dk``, how many of pair ``d``'s cells sit in component ``k``, instead of a
label per cell, and every update integrates each cell's log rate out by the quadrature of
:mod:`bayessdc.models.dp_areal.quadrature`. The coefficients are held in full, ``beta_k = (mu + theta*_k,
phi*_k)`` (eq. 8, 10-11), with the shared means ``(mu, mu_phi)`` (eq. 11-12); the likelihood sees ``beta_k`` only
through ``w_k = V' beta_k`` (:func:`bayessdc.models.dp_areal.marginal.identified_basis`). One sweep, each step
an exact draw from a conditional of the joint posterior:

1. the allocations ``N_d. ~ Multinomial(n_d; r_d.)``, ``r_dk ∝ rho_k p(c_d | m_{k b_d}, tau_lambda)`` (eq. 7-9);
2. label-swap Metropolis moves between components, ``alpha`` given the allocations with the sticks integrated
   out (slice sampling), then the sticks ``v_k | alpha ~ Beta(1 + N_k, alpha + N_{>k})`` (eq. 9; the moves of
   :mod:`bayessdc.models.dpmpm.moves`, which depend on the allocation counts only);
3. each occupied component's ``w_k`` by independence Metropolis-Hastings, a multivariate t proposal (4 degrees
   of freedom) at the mode of its log-concave conditional scaled by the curvature there (Newton's method on the
   quadrature's moments), then ``beta_k | w_k`` from its Gaussian conditional (Matheron's rule);
4. ``tau_lambda`` by slice sampling on its logarithm given the allocations and the locations (eq. 8);
5. ``tau_theta`` (Gamma, conjugate) and ``Sigma_phi`` (the paper's LKJ(eta) x half-t prior, slice sampling on
   every standard deviation's logarithm and every canonical partial correlation, :mod:`.lkj`) given the occupied
   components' ``beta_k`` and ``(mu, mu_phi)``; the empty components' ``beta_k`` are integrated out here;
6. ``(mu, mu_phi)`` given the occupied components (Gaussian, conjugate), then the empty components' ``beta_k``
   from their prior given them, then ``tau_mu`` and ``tau_phi`` (Gamma, conjugate).

Steps 5 and 6 are a partially collapsed pair (van Dyk & Park 2008): step 5 draws from a conditional with the
empty components integrated out, and step 6 draws them afresh before anything conditions on them.

The kernels take their inputs as records (:mod:`bayessdc.models.dp_areal.records`), built by ``_Problem.records``
and ``GibbsState.record`` only; chain ``c`` draws from the stream ``(seed, Stream.CHAIN, c)``. Measured against
NUTS on the same posterior (agreement, ESS per second, wall time) by ``bench/dp_areal_gibbs.py``, whose docstring
holds the dated figures.

References
----------
.. [1] Hu, J., & Savitsky, T. D. *Bayesian data synthesis and disclosure risk quantification: an application to
    the Consumer Expenditure Surveys*, Section 2.2.
.. [2] Ishwaran, H., & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors. *JASA*, 96, 161-173.
.. [3] Papaspiliopoulos, O., & Roberts, G. O. (2008). Retrospective Markov chain Monte Carlo methods for Dirichlet
    process hierarchical models. *Biometrika*, 95(1), 169-186.
.. [4] van Dyk, D. A., & Park, T. (2008). Partially collapsed Gibbs samplers. *JASA*, 103, 790-796.
.. [5] Neal, R. M. (2003). Slice sampling. *Annals of Statistics*, 31(3), 705-767.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numba
import numpy as np
from scipy import special

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from ..dpmpm.moves import log_allocation_prob, slice_log_alpha, swap_log_ratio
from ..exact_draws import binomial, multinomial, uniform_index
from .data import ArealData
from .lkj import cpc_beta_parameters
from .marginal import identified_basis
from .model import DEFAULT_K, DPArealPriors
from .quadrature import HALF_WIDTH, _cell_integral, _cell_posterior_kernel
from .records import (
    ChainState,
    CoefficientPrior,
    Covariance,
    CovariancePrior,
    Design,
    MixtureDraw,
    Moves,
    PairData,
    PriorValues,
    Quadrature,
    Scatter,
    SplitProposal,
)

__all__ = ["DPArealGibbsSettings", "GibbsState", "covariance_matrix", "run_chain", "slice_covariance"]

#: Degrees of freedom of the t proposal of a component's coefficients.
PROPOSAL_DF = 4.0


@dataclass(frozen=True)
class DPArealGibbsSettings:
    """Settings of the DP-areal's Gibbs sampler.

    Parameters
    ----------
    draws
        Draws kept per chain (after thinning).
    burn
        Sweeps discarded per chain before the first kept one.
    thin
        Sweeps per kept draw.
    chains
        Chains; chain ``c`` draws from the stream ``(seed, "chain", c)``, so a run that adds chains equals a
        run started with them.
    label_swaps
        Label-swap moves per sweep, in multiples of ``K``.
    split_merges
        Split-merge moves per sweep, in multiples of ``K`` (:func:`split_merge`).
    """

    draws: int = 500
    burn: int = 1000
    thin: int = 4
    chains: int = 4
    label_swaps: int = 1
    split_merges: int = 0

    def __post_init__(self) -> None:
        for name in ("draws", "burn", "thin", "chains", "label_swaps", "split_merges"):
            value = getattr(self, name)
            low = 0 if name in ("burn", "label_swaps", "split_merges") else 1
            if not isinstance(value, int | np.integer) or value < low:
                raise ValueError(f"Gibbs setting {name!r} must be an integer of at least {low}, got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values, the sampler named."""
        return {"sampler": "gibbs", **asdict(self)}


@dataclass
class GibbsState:
    """One chain's state: the allocation counts, the sticks, the coefficients and the precisions.

    Attributes
    ----------
    allocation
        ``(K, D)`` integer counts ``N_kd`` of pair ``d``'s cells in component ``k``.
    stick
        The ``K - 1`` sticks ``v_k`` (``v_K = 1``).
    beta
        ``(K, R + 1)`` coefficients ``(mu + theta*_k, phi*_k)``.
    mean
        ``(R + 1,)`` shared means ``(mu, mu_phi)``.
    sigma, cpc
        Standard deviations and canonical partial correlations of ``Sigma_phi`` (eq. 11).
    scalars
        ``(alpha, tau_lambda, tau_theta, tau_phi, tau_mu)``.
    counters
        Coefficient moves accepted and proposed, label swaps accepted, split-merge moves accepted.
    """

    allocation: np.ndarray
    stick: np.ndarray
    beta: np.ndarray
    mean: np.ndarray
    sigma: np.ndarray
    cpc: np.ndarray
    scalars: np.ndarray
    counters: np.ndarray = field(default_factory=lambda: np.zeros(4, dtype=np.int64))

    def log_rho(self) -> np.ndarray:
        """``log rho_k`` of the truncated stick breaking (eq. 9)."""
        return _log_rho(self.stick)

    def record(self) -> ChainState:
        """The state as the kernels take it (the same arrays, updated in place)."""
        return ChainState(self.allocation, self.stick, self.beta, self.mean, self.sigma, self.cpc, self.scalars,
                          self.counters)  # fmt: skip


#: Names of ``GibbsState.scalars``, in order.
SCALARS = ("alpha", "tau_lambda", "tau_theta", "tau_phi", "tau_mu")


@dataclass(frozen=True)
class _Problem:
    """The data and constants a sweep reads, as contiguous arrays."""

    count: np.ndarray
    pattern: np.ndarray
    weight: np.ndarray
    log_fact: np.ndarray
    full_t: np.ndarray  # (R + 1, B): [1, X]'
    V: np.ndarray  # (R + 1, r)
    V_t: np.ndarray
    basis: np.ndarray  # (B, r)
    basis_t: np.ndarray
    priors: np.ndarray
    cpc_b: np.ndarray
    K: int
    nodes: int
    swaps: int
    split_merges: int

    @classmethod
    def of(cls, data: ArealData, K: int, priors: DPArealPriors, nodes: int, swaps: int = 1,
           split_merges: int = 1) -> _Problem:  # fmt: skip
        V, basis = identified_basis(data.design)
        R = data.design.shape[1]
        full = np.hstack([np.ones((data.design.shape[0], 1)), data.design])
        count = data.distinct_count.astype(float)
        p = priors
        prior_values = np.array([p.a_alpha, p.b_alpha, *p.tau_theta, *p.tau_phi, *p.tau_mu, *p.tau_lambda, p.sigma_nu,
                                 p.sigma_scale], dtype=float)  # fmt: skip
        c = np.ascontiguousarray
        return cls(c(count), c(data.distinct_pattern, dtype=np.int64), c(data.distinct_weight, dtype=np.int64),
                   special.gammaln(count + 1.0), c(full.T), c(V), c(V.T), c(basis), c(basis.T), prior_values,
                   cpc_beta_parameters(R, p.lkj_eta) if R > 1 else np.zeros(0), K, nodes, swaps,
                   split_merges)  # fmt: skip

    def records(self) -> tuple[PairData, Design, PriorValues, Moves]:
        """The kernels' read-only records (:mod:`bayessdc.models.dp_areal.records`), built here only."""
        pairs = PairData(count=self.count, pattern=self.pattern, weight=self.weight, log_fact=self.log_fact,
                         nodes=int(self.nodes))  # fmt: skip
        design = Design(full_t=self.full_t, V=self.V, V_t=self.V_t, basis=self.basis, basis_t=self.basis_t)
        *gammas, nu, scale = (float(value) for value in self.priors)
        priors = PriorValues(*gammas, covariance=CovariancePrior(nu=nu, scale=scale, cpc_b=self.cpc_b))
        return pairs, design, priors, Moves(swaps=int(self.swaps), split_merges=int(self.split_merges))

    def sweep(self, rng: np.random.Generator, state: GibbsState) -> None:
        """One sweep of the sampler on ``state``, in place."""
        _sweep(rng, state.record(), *self.records())


# ------------------------------------------------------------------------------------------------------------
# Compiled kernels


@numba.njit(cache=True)
def _component_terms(w, n_dk, tau, pairs, design, half_width):  # pragma: no cover
    """``sum_d n_dk log p(c_d | basis_{b_d} w, tau)`` with its gradient and Hessian in ``w``.

    ``d/dm log p = tau E[x - m | c]`` and ``d^2/dm^2 log p = tau^2 Var[x | c] - tau`` (the moments of the
    quadrature).
    """
    count, pattern, log_fact, nodes = pairs.count, pairs.pattern, pairs.log_fact, pairs.nodes
    basis, basis_t = design.basis, design.basis_t
    B, r = basis.shape
    h = 2.0 * half_width / (nodes - 1)
    centre = 0.5 * (nodes - 1)
    const = 0.5 * math.log(tau / (2.0 * math.pi)) + math.log(h)
    log_tau = math.log(tau)
    m = basis @ w
    g_b = np.zeros(B)
    h_b = np.zeros(B)
    value = 0.0
    for d in range(count.shape[0]):
        a = n_dk[d]
        if a == 0:
            continue
        b = pattern[d]
        log_integral, m1, m2 = _cell_integral(count[d], m[b], tau, log_tau, nodes, h, centre, 8)
        value += a * (log_integral + const - log_fact[d])
        g_b[b] += a * tau * m1
        h_b[b] += a * (tau * tau * (m2 - m1 * m1) - tau)
    grad = basis_t @ g_b
    hess = (basis_t * h_b) @ basis
    return value, grad, hess


@numba.njit(cache=True)
def _allocated_log_likelihood(tau, location, allocation, pairs, half_width):  # pragma: no cover
    """``sum_{d,k} N_kd log p(c_d | m_{k b_d}, tau)``: the likelihood given the allocations."""
    count, pattern, log_fact, nodes = pairs.count, pairs.pattern, pairs.log_fact, pairs.nodes
    K, D = allocation.shape
    h = 2.0 * half_width / (nodes - 1)
    centre = 0.5 * (nodes - 1)
    const = 0.5 * math.log(tau / (2.0 * math.pi)) + math.log(h)
    log_tau = math.log(tau)
    value = 0.0
    for d in range(D):
        for k in range(K):
            a = allocation[k, d]
            if a == 0:
                continue
            log_integral, _, _ = _cell_integral(count[d], location[k, pattern[d]], tau, log_tau, nodes, h, centre, 8)
            value += a * (log_integral + const - log_fact[d])
    return value


@numba.njit(cache=True)
def _covariance_log_density(covariance, statistics, prior):  # pragma: no cover
    """``log p(sigma, cpc) + sum_k log N(y_k | 0, Sigma)`` up to a constant, ``scatter = sum_k y_k y_k'``.

    ``Sigma = diag(sigma) L L' diag(sigma)`` with ``L`` from the partial correlations (:mod:`.lkj`), ``sigma`` and
    ``cpc`` read from ``covariance`` (a :class:`Covariance`), ``scatter`` and ``n`` from ``statistics`` (a
    :class:`Scatter`); the prior (a :class:`CovariancePrior`) is half-t(``nu``, ``scale``) on each standard
    deviation and ``2 Beta(b_j, b_j) - 1`` on each partial correlation, as densities of ``sigma`` and ``cpc``.
    """
    sigma, cpc = covariance.sigma, covariance.cpc
    scatter, n = statistics.scatter, statistics.n
    nu, scale, b = prior.nu, prior.scale, prior.cpc_b
    R = sigma.shape[0]
    total = 0.0
    for i in range(R):
        if sigma[i] <= 0.0:
            return -np.inf
        total += -0.5 * (nu + 1.0) * math.log1p((sigma[i] / scale) ** 2 / nu)
    for j in range(cpc.shape[0]):
        if not -1.0 < cpc[j] < 1.0:
            return -np.inf
        total += (b[j] - 1.0) * math.log1p(-cpc[j] * cpc[j])
    chol = _covariance_factor(sigma, cpc)
    for i in range(R):
        if not chol[i, i] > 0.0:
            return -np.inf
    if n == 0:
        return total
    log_det = 0.0
    for i in range(R):
        log_det += math.log(chol[i, i])
    # M = chol^-1 by forward substitution; trace(M scatter M')
    inverse = np.zeros((R, R))
    for col in range(R):
        for i in range(col, R):
            acc = 1.0 if i == col else 0.0
            for j in range(col, i):
                acc -= chol[i, j] * inverse[j, col]
            inverse[i, col] = acc / chol[i, i]
    product = inverse @ scatter
    trace = 0.0
    for i in range(R):
        for j in range(R):
            trace += product[i, j] * inverse[i, j]
    return total - n * log_det - 0.5 * trace


@numba.njit(cache=True)
def slice_covariance(rng, covariance, statistics, prior):  # pragma: no cover
    """One sweep of coordinate-wise slice sampling (Neal 2003) of ``Sigma_phi`` given the scatter of ``n`` draws.

    Each ``log sigma_i`` by stepping out and shrinkage (Jacobian included), each partial correlation by
    shrinkage on ``(-1, 1)``, under the density of :func:`_covariance_log_density`.

    Parameters
    ----------
    rng
        numpy ``Generator``.
    covariance
        :class:`~bayessdc.models.dp_areal.records.Covariance`: ``sigma`` and ``cpc``, updated in place.
    statistics
        :class:`~bayessdc.models.dp_areal.records.Scatter`: ``scatter = sum_k y_k y_k'`` of ``n`` draws.
    prior
        :class:`~bayessdc.models.dp_areal.records.CovariancePrior`.
    """
    sigma, cpc = covariance.sigma, covariance.cpc
    for i in range(sigma.shape[0]):
        u0 = math.log(sigma[i])
        level = _covariance_log_density(covariance, statistics, prior) + u0 + math.log(rng.random())
        left = u0 - rng.random()
        right = left + 1.0
        for _ in range(60):
            sigma[i] = math.exp(left)
            if _covariance_log_density(covariance, statistics, prior) + left <= level:
                break
            left -= 1.0
        for _ in range(60):
            sigma[i] = math.exp(right)
            if _covariance_log_density(covariance, statistics, prior) + right <= level:
                break
            right += 1.0
        new = u0
        for _ in range(500):
            u = left + (right - left) * rng.random()
            sigma[i] = math.exp(u)
            if _covariance_log_density(covariance, statistics, prior) + u > level:
                new = u
                break
            if u < u0:
                left = u
            else:
                right = u
        sigma[i] = math.exp(new)
    for j in range(cpc.shape[0]):
        y0 = cpc[j]
        level = _covariance_log_density(covariance, statistics, prior) + math.log(rng.random())
        left, right = -1.0, 1.0
        new = y0
        for _ in range(500):
            y = left + (right - left) * rng.random()
            cpc[j] = y
            if _covariance_log_density(covariance, statistics, prior) > level:
                new = y
                break
            if y < y0:
                left = y
            else:
                right = y
        cpc[j] = new


def covariance_matrix(sigma: np.ndarray, cpc: np.ndarray) -> np.ndarray:
    """``Sigma_phi = diag(sigma) L L' diag(sigma)`` from its standard deviations and partial correlations."""
    from .lkj import cholesky_from_partial_correlations

    R = sigma.shape[0]
    factor = cholesky_from_partial_correlations(cpc, R) if R > 1 else np.ones((1, 1))
    chol = sigma[:, None] * factor
    return chol @ chol.T


@numba.njit(cache=True)
def _covariance_factor(sigma, cpc):  # pragma: no cover
    """The Cholesky factor ``diag(sigma) L`` of ``Sigma_phi``, ``L`` from the partial correlations row by row
    (:func:`bayessdc.models.dp_areal.lkj.cholesky_from_partial_correlations`)."""
    R = sigma.shape[0]
    chol = np.zeros((R, R))
    k = 0
    for i in range(R):
        remaining = 1.0
        for j in range(i):
            entry = cpc[k] * math.sqrt(max(remaining, 0.0))
            chol[i, j] = entry * sigma[i]
            remaining -= entry * entry
            k += 1
        chol[i, i] = math.sqrt(max(remaining, 0.0)) * sigma[i]
    return chol


@numba.njit(cache=True)
def _covariance(sigma, cpc):  # pragma: no cover
    """:func:`covariance_matrix` in compiled code."""
    chol = _covariance_factor(sigma, cpc)
    return chol @ chol.T


@numba.njit(cache=True)
def _slice_log_tau(rng, tau, location, allocation, pairs, a, b):  # pragma: no cover
    """One slice-sampling update of ``log tau_lambda`` (stepping out, shrinkage; Jacobian included) given the
    allocations and the locations: prior Gamma(``a``, ``b``) times :func:`_allocated_log_likelihood`. A second
    update with the labels summed out was measured and not taken (``bench/dp_areal_gibbs.py``: less ESS per second).
    """
    u0 = math.log(tau)
    width = 0.5
    args = (location, allocation, pairs, HALF_WIDTH)
    level = a * u0 - b * tau + _allocated_log_likelihood(tau, *args) + math.log(rng.random())
    left = u0 - width * rng.random()
    right = left + width
    for _ in range(100):
        if a * left - b * math.exp(left) + _allocated_log_likelihood(math.exp(left), *args) <= level:
            break
        left -= width
    for _ in range(100):
        if a * right - b * math.exp(right) + _allocated_log_likelihood(math.exp(right), *args) <= level:
            break
        right += width
    for _ in range(500):
        u = left + (right - left) * rng.random()
        x = math.exp(u)
        if a * u - b * x + _allocated_log_likelihood(x, *args) > level:
            return x
        if u < u0:
            left = u
        else:
            right = u
    return tau


@numba.njit(cache=True)
def _component_target(w, mean_w, precision, n_dk, tau, pairs, design):  # pragma: no cover
    """Log density of ``w_k`` given everything else (up to a constant), its gradient and Hessian."""
    value, grad, hess = _component_terms(w, n_dk, tau, pairs, design, HALF_WIDTH)
    dev = w - mean_w
    pdev = precision @ dev
    return value - 0.5 * (dev @ pdev), grad - pdev, hess - precision


@numba.njit(cache=True)
def _conditional_mode(n_dk, start, mean_w, precision, tau, pairs, design):  # pragma: no cover
    """The mode of ``w``'s conditional given the cells ``n_dk`` and the Cholesky factor of the inverse curvature
    there: Newton's method with backtracking. The target is strictly log-concave (a Gaussian prior times
    Poisson-lognormal terms, each log-concave in the location), so the mode found to the tolerance does not depend
    on ``start``, and a proposal built on it is an independence proposal."""
    w = start.copy()
    value, grad, hess = _component_target(w, mean_w, precision, n_dk, tau, pairs, design)
    for _ in range(100):
        step = np.linalg.solve(-hess, grad)
        t = 1.0
        trial = w + step
        trial_value, trial_grad, trial_hess = value, grad, hess
        for _ in range(40):
            trial = w + t * step
            trial_value, trial_grad, trial_hess = _component_target(trial, mean_w, precision, n_dk, tau, pairs, design)
            if trial_value >= value - 1e-12:
                break
            t *= 0.5
        w, value, grad, hess = trial, trial_value, trial_grad, trial_hess
        if np.abs(t * step).max() < 1e-10:
            break
    scale = np.linalg.inv(-hess)
    return w, np.linalg.cholesky(0.5 * (scale + scale.T))


@numba.njit(cache=True)
def _draw_t(rng, centre, chol):  # pragma: no cover
    """A multivariate t draw (``PROPOSAL_DF`` degrees of freedom) with scale ``chol chol'``."""
    r = centre.shape[0]
    z = np.empty(r)
    for i in range(r):
        z[i] = rng.standard_normal()
    return centre + (chol @ z) / math.sqrt(rng.chisquare(PROPOSAL_DF) / PROPOSAL_DF)


@numba.njit(cache=True)
def _whitened(x, centre, chol):  # pragma: no cover
    """``|chol^-1 (x - centre)|^2`` and ``log det chol``."""
    z = np.linalg.solve(chol, x - centre)
    log_det = 0.0
    for i in range(x.shape[0]):
        log_det += math.log(chol[i, i])
    return z @ z, log_det


@numba.njit(cache=True)
def _log_t_density(x, centre, chol):  # pragma: no cover
    """Normalised log density at ``x`` of the t of :func:`_draw_t`."""
    r = x.shape[0]
    square, log_det = _whitened(x, centre, chol)
    df = PROPOSAL_DF
    return (math.lgamma(0.5 * (df + r)) - math.lgamma(0.5 * df) - 0.5 * r * math.log(df * math.pi) - log_det
            - 0.5 * (df + r) * math.log1p(square / df))  # fmt: skip


@numba.njit(cache=True)
def _log_normal_density(x, centre, chol):  # pragma: no cover
    """Normalised log density of ``N(centre, chol chol')`` at ``x``."""
    square, log_det = _whitened(x, centre, chol)
    return -0.5 * x.shape[0] * math.log(2.0 * math.pi) - log_det - 0.5 * square


@numba.njit(cache=True)
def _matheron(rng, w, prior, design, C):  # pragma: no cover
    """``beta | w``: a draw from the prior ``N(mean, S0)`` (a :class:`CoefficientPrior`) corrected to ``V' beta =
    w`` (Matheron's rule), ``V`` of the :class:`Design` and ``C = V' S0 V`` the prior covariance of ``w``."""
    mean, S0, chol_S0, V, V_t = prior.mean, prior.S0, prior.chol_S0, design.V, design.V_t
    R1 = mean.shape[0]
    e = np.empty(R1)
    for i in range(R1):
        e[i] = rng.standard_normal()
    free = mean + chol_S0 @ e
    return free + (S0 @ V) @ np.linalg.solve(C, w - V_t @ free)


@numba.njit(cache=True)
def _update_component(rng, k, state, prior, tau, pairs, design):  # pragma: no cover
    """Step 3 for component ``k``: ``w_k`` by independence MH with a t proposal at the mode of its conditional
    (:func:`_conditional_mode`), then ``beta_k | w_k`` (:func:`_matheron`); ``state`` (a :class:`ChainState`) is
    updated in place, ``prior`` is the :class:`CoefficientPrior` around ``state.mean``."""
    allocation, beta, counters = state.allocation, state.beta, state.counters
    mean, S0, V, V_t = prior.mean, prior.S0, design.V, design.V_t
    mean_w = V_t @ mean
    C = V_t @ (S0 @ V)
    precision = np.linalg.inv(C)
    n_dk = allocation[k]
    current = V_t @ beta[k]
    mode, chol = _conditional_mode(n_dk, current, mean_w, precision, tau, pairs, design)
    proposal = _draw_t(rng, mode, chol)
    proposed_value = _component_target(proposal, mean_w, precision, n_dk, tau, pairs, design)[0]
    current_value = _component_target(current, mean_w, precision, n_dk, tau, pairs, design)[0]
    log_ratio = proposed_value - current_value
    log_ratio += _log_t_density(current, mode, chol) - _log_t_density(proposal, mode, chol)
    counters[1] += 1
    new_w = current
    if math.log(rng.random()) < log_ratio:
        new_w = proposal
        counters[0] += 1
    beta[k] = _matheron(rng, new_w, prior, design, C)


@numba.njit(cache=True)
def _pair_log_terms(w, tau, pairs, design):  # pragma: no cover
    """``log p(c_d | basis_{b_d} w, tau)`` of every distinct pair ``d``."""
    count, pattern, log_fact, nodes = pairs.count, pairs.pattern, pairs.log_fact, pairs.nodes
    basis = design.basis
    h = 2.0 * HALF_WIDTH / (nodes - 1)
    centre = 0.5 * (nodes - 1)
    const = 0.5 * math.log(tau / (2.0 * math.pi)) + math.log(h)
    log_tau = math.log(tau)
    m = basis @ w
    out = np.empty(count.shape[0])
    for d in range(count.shape[0]):
        log_integral, _, _ = _cell_integral(count[d], m[pattern[d]], tau, log_tau, nodes, h, centre, 8)
        out[d] = log_integral + const - log_fact[d]
    return out


@numba.njit(cache=True)
def _split_log_ratio(proposal, alpha, mean_w, chol_C):  # pragma: no cover
    """``log`` of the acceptance ratio of the split of a merged component (cells ``n_j + n_l``, coefficients
    ``w_m``) into ``(n_j, w_j)`` and ``(n_l, w_l)``; the merge's is its negative. Target: allocations with the
    sticks integrated out (:func:`bayessdc.models.dpmpm.moves.log_allocation_prob`), ``w``'s prior, the
    likelihood; proposals: the split's ``w_j, w_l ~ N(w_m, C)`` and binomial allocations, the merge's t at the
    merged conditional's mode (the binomial coefficients cancel the multinomial ones of the state). ``proposal`` is
    a :class:`SplitProposal`."""
    n_j, n_l, w_j, w_l, w_m = proposal.n_j, proposal.n_l, proposal.w_j, proposal.w_l, proposal.w_m
    counts_split, counts_merged = proposal.counts_split, proposal.counts_merged
    mode, chol_t, L_j, L_l, L_m = proposal.mode, proposal.chol_t, proposal.L_j, proposal.L_l, proposal.L_m
    log_pi_l, log_pi_j = proposal.log_pi_l, proposal.log_pi_j
    value = log_allocation_prob(counts_split, alpha, 1.0) - log_allocation_prob(counts_merged, alpha, 1.0)
    value += (_log_normal_density(w_j, mean_w, chol_C) + _log_normal_density(w_l, mean_w, chol_C)
              - _log_normal_density(w_m, mean_w, chol_C))  # fmt: skip
    for d in range(n_j.shape[0]):
        if n_j[d] + n_l[d] > 0:
            value += n_j[d] * (L_j[d] - log_pi_j[d]) + n_l[d] * (L_l[d] - log_pi_l[d]) - (n_j[d] + n_l[d]) * L_m[d]
    value += _log_t_density(w_m, mode, chol_t)
    value -= _log_normal_density(w_j, w_m, chol_C) + _log_normal_density(w_l, w_m, chol_C)
    return value


@numba.njit(cache=True)
def _split_shares(L_j, L_l):  # pragma: no cover
    """``log pi_l`` and ``log pi_j = log (1 - pi_l)`` of every pair, ``pi_l = p_l / (p_j + p_l)``."""
    D = L_j.shape[0]
    log_pi_l = np.empty(D)
    log_pi_j = np.empty(D)
    for d in range(D):
        top = max(L_j[d], L_l[d])
        norm = top + math.log(math.exp(L_j[d] - top) + math.exp(L_l[d] - top))
        log_pi_l[d] = L_l[d] - norm
        log_pi_j[d] = L_j[d] - norm
    return log_pi_l, log_pi_j


@numba.njit(cache=True)
def split_merge(rng, state, counts, alpha, tau, prior, pairs, design):  # pragma: no cover
    """One split-merge Metropolis-Hastings move (after Jain & Neal 2004), in place; returns whether accepted.

    An ordered pair ``(j, l)`` of components is drawn uniformly. Both occupied: propose merging ``l``'s cells into
    ``j``, ``w_j`` drawn from the t at the merged conditional's mode, ``beta_l`` from its prior (empty).
    ``j`` occupied and ``l`` empty: propose ``w_j, w_l ~ N(w_j, C)`` (``C`` the prior covariance of ``w``), and
    every pair's cells of ``j`` sent to ``l`` by a binomial draw with ``p_l / (p_j + p_l)``; a split that leaves
    either empty is rejected. The two are each other's reverse under the same pair. ``counts`` (the components'
    cell totals) is updated with the allocations, ``state`` (a :class:`ChainState`) in place; ``prior`` is the
    :class:`CoefficientPrior` around ``state.mean``, ``alpha`` and ``tau`` (``tau_lambda``) the sweep's current
    values.
    """
    allocation, beta, counters = state.allocation, state.beta, state.counters
    mean, S0, chol_S0, V, V_t = prior.mean, prior.S0, prior.chol_S0, design.V, design.V_t
    K, D = allocation.shape
    j = uniform_index(rng, K)
    l = uniform_index(rng, K - 1)
    if l >= j:
        l += 1
    if counts[j] == 0:
        return False
    mean_w = V_t @ mean
    C = V_t @ (S0 @ V)
    chol_C = np.linalg.cholesky(C)
    precision = np.linalg.inv(C)
    r = C.shape[0]
    merged_counts = counts.copy()
    split_counts = counts.copy()
    if counts[l] > 0:  # merge l into j
        n_j = allocation[j].copy()
        n_l = allocation[l].copy()
        n_m = n_j + n_l
        merged_counts[j] = counts[j] + counts[l]
        merged_counts[l] = 0.0
        w_j = V_t @ beta[j]
        w_l = V_t @ beta[l]
        mode, chol_t = _conditional_mode(n_m, w_j, mean_w, precision, tau, pairs, design)
        w_m = _draw_t(rng, mode, chol_t)
        L_j = _pair_log_terms(w_j, tau, pairs, design)
        L_l = _pair_log_terms(w_l, tau, pairs, design)
        L_m = _pair_log_terms(w_m, tau, pairs, design)
        log_pi_l, log_pi_j = _split_shares(L_j, L_l)
        proposal = SplitProposal(n_j, n_l, w_j, w_l, w_m, split_counts, merged_counts, mode, chol_t, L_j, L_l, L_m,
                                 log_pi_l, log_pi_j)  # fmt: skip
        log_ratio = -_split_log_ratio(proposal, alpha, mean_w, chol_C)
        if not math.log(rng.random()) < log_ratio:
            return False
        allocation[j] = n_m
        allocation[l] = 0
        counts[j], counts[l] = merged_counts[j], 0.0
        beta[j] = _matheron(rng, w_m, prior, design, C)
        e = np.empty(mean.shape[0])
        for i in range(e.shape[0]):
            e[i] = rng.standard_normal()
        beta[l] = mean + chol_S0 @ e
        counters[3] += 1
        return True
    # split j into j and the empty l
    n_m = allocation[j].copy()
    w_m = V_t @ beta[j]
    z = np.empty(r)
    for i in range(r):
        z[i] = rng.standard_normal()
    w_j = w_m + chol_C @ z
    for i in range(r):
        z[i] = rng.standard_normal()
    w_l = w_m + chol_C @ z
    L_j = _pair_log_terms(w_j, tau, pairs, design)
    L_l = _pair_log_terms(w_l, tau, pairs, design)
    log_pi_l, log_pi_j = _split_shares(L_j, L_l)
    n_j = n_m.copy()
    n_l = np.zeros_like(n_m)
    for d in range(D):
        if n_m[d] > 0:
            n_l[d] = binomial(rng, n_m[d], math.exp(log_pi_l[d]))
            n_j[d] = n_m[d] - n_l[d]
    total_l = n_l.sum()
    if total_l == 0 or total_l == n_m.sum():
        return False
    split_counts[j] = counts[j] - total_l
    split_counts[l] = float(total_l)
    mode, chol_t = _conditional_mode(n_m, w_m, mean_w, precision, tau, pairs, design)
    L_m = _pair_log_terms(w_m, tau, pairs, design)
    proposal = SplitProposal(n_j, n_l, w_j, w_l, w_m, split_counts, merged_counts, mode, chol_t, L_j, L_l, L_m,
                             log_pi_l, log_pi_j)  # fmt: skip
    log_ratio = _split_log_ratio(proposal, alpha, mean_w, chol_C)
    if not math.log(rng.random()) < log_ratio:
        return False
    allocation[j] = n_j
    allocation[l] = n_l
    counts[j], counts[l] = split_counts[j], split_counts[l]
    beta[j] = _matheron(rng, w_j, prior, design, C)
    beta[l] = _matheron(rng, w_l, prior, design, C)
    counters[3] += 1
    return True


@numba.njit(cache=True)
def _prior_blocks(tau_theta, sigma, cpc):  # pragma: no cover
    """``S_0 = blockdiag(1 / tau_theta, Sigma_phi)``, the prior covariance of ``beta_k`` around ``(mu, mu_phi)``."""
    R = sigma.shape[0]
    S0 = np.zeros((R + 1, R + 1))
    S0[0, 0] = 1.0 / tau_theta
    S0[1:, 1:] = _covariance(sigma, cpc)
    return S0


@numba.njit(cache=True)
def _log_rho(stick):  # pragma: no cover
    K = stick.shape[0] + 1
    out = np.empty(K)
    rest = 0.0
    for k in range(K):
        out[k] = rest + (math.log(stick[k]) if k < K - 1 else 0.0)
        if k < K - 1:
            rest += math.log1p(-stick[k])
    return out


@numba.njit(cache=True, nogil=True)
def _sweep(rng, state, pairs, design, priors, moves):  # pragma: no cover
    """One sweep of steps 1-6 (the module's docstring) on ``state`` (a :class:`ChainState`), in place; the data
    (:class:`PairData`), the design (:class:`Design`), the priors (:class:`PriorValues`) and the moves
    (:class:`Moves`) are read only."""
    allocation, stick, beta, mean = state.allocation, state.stick, state.beta, state.mean
    sigma, cpc, scalars, counters = state.sigma, state.cpc, state.scalars, state.counters
    weight = pairs.weight
    full_t = design.full_t
    swaps, split_merges = moves.swaps, moves.split_merges
    K, D = allocation.shape
    R1 = mean.shape[0]
    R = R1 - 1
    alpha, tau_lambda, tau_theta, tau_phi, tau_mu = scalars[0], scalars[1], scalars[2], scalars[3], scalars[4]
    # 1. allocations
    location = beta @ full_t
    log_rho = _log_rho(stick)
    rule = Quadrature(nodes=pairs.nodes, half_width=HALF_WIDTH, steps=8)
    log_resp, _ = _cell_posterior_kernel(MixtureDraw(location, log_rho, tau_lambda), pairs, rule)
    prob = np.empty(K)
    out = np.empty(K, dtype=np.int64)
    scratch = np.empty(8)
    for d in range(D):
        for k in range(K):
            prob[k] = math.exp(log_resp[k, d])
        multinomial(rng, weight[d], prob, out, scratch, 8)
        for k in range(K):
            allocation[k, d] = out[k]
    counts = np.zeros(K)
    for k in range(K):
        for d in range(D):
            counts[k] += allocation[k, d]
    # 2. label swaps, alpha with the sticks integrated out, the sticks
    for _ in range(K * swaps):
        j = uniform_index(rng, K)
        other = uniform_index(rng, K - 1)
        if other >= j:
            other += 1
        if counts[j] == counts[other]:
            continue
        if math.log(rng.random()) < swap_log_ratio(counts, j, other, alpha, 1.0):
            counts[j], counts[other] = counts[other], counts[j]
            for d in range(D):
                allocation[j, d], allocation[other, d] = allocation[other, d], allocation[j, d]
            for i in range(R1):
                beta[j, i], beta[other, i] = beta[other, i], beta[j, i]
            counters[2] += 1
    # the prior of the coefficients, for the split-merge moves and step 3 (its hyperparameters change in step 5)
    S0 = _prior_blocks(tau_theta, sigma, cpc)
    chol_S0 = np.linalg.cholesky(S0)
    prior = CoefficientPrior(mean, S0, chol_S0)
    if split_merges:
        for _ in range(K * split_merges):
            split_merge(rng, state, counts, alpha, tau_lambda, prior, pairs, design)
    alpha = slice_log_alpha(rng, alpha, counts, priors.a_alpha, priors.b_alpha, 1.0)
    tail = 0.0
    for k in range(K - 1, -1, -1):
        if k < K - 1:
            stick[k] = rng.beta(1.0 + counts[k], alpha + tail)
            stick[k] = min(max(stick[k], 1e-300), 1.0 - 1e-16)
        tail += counts[k]
    # 3. the occupied components' coefficients
    occupied = 0
    for k in range(K):
        if counts[k] > 0:
            occupied += 1
            _update_component(rng, k, state, prior, tau_lambda, pairs, design)
    # 4. tau_lambda
    location = beta @ full_t
    tau_lambda = _slice_log_tau(rng, tau_lambda, location, allocation, pairs, priors.tau_lambda_shape,
                                priors.tau_lambda_rate)  # fmt: skip
    # 5. tau_theta and Sigma_phi given the occupied components (the empty ones integrated out)
    theta_ss = 0.0
    scatter = np.zeros((R, R))
    total = np.zeros(R1)
    for k in range(K):
        if counts[k] > 0:
            own = beta[k] - mean
            theta_ss += own[0] * own[0]
            for i in range(R):
                for j in range(R):
                    scatter[i, j] += own[1 + i] * own[1 + j]
            total += beta[k]
    tau_theta = rng.gamma(priors.tau_theta_shape + 0.5 * occupied, 1.0 / (priors.tau_theta_rate + 0.5 * theta_ss))
    slice_covariance(rng, Covariance(sigma, cpc), Scatter(scatter, occupied), priors.covariance)
    # 6. (mu, mu_phi) given the occupied components, the empty ones from their prior given them, tau_mu, tau_phi
    mu_precision = tau_mu + occupied * tau_theta
    mean[0] = tau_theta * total[0] / mu_precision + rng.standard_normal() / math.sqrt(mu_precision)
    Sigma_inv = np.linalg.inv(_covariance(sigma, cpc))
    phi_precision = occupied * Sigma_inv
    for i in range(R):
        phi_precision[i, i] += tau_phi
    phi_cov = np.linalg.inv(phi_precision)
    phi_chol = np.linalg.cholesky(0.5 * (phi_cov + phi_cov.T))
    e = np.empty(R)
    for i in range(R):
        e[i] = rng.standard_normal()
    mean[1:] = phi_cov @ (Sigma_inv @ np.ascontiguousarray(total[1:])) + phi_chol @ e
    S0 = _prior_blocks(tau_theta, sigma, cpc)
    chol_S0 = np.linalg.cholesky(S0)
    e = np.empty(R1)
    for k in range(K):
        if counts[k] == 0:
            for i in range(R1):
                e[i] = rng.standard_normal()
            beta[k] = mean + chol_S0 @ e
    tau_mu = rng.gamma(priors.tau_mu_shape + 0.5, 1.0 / (priors.tau_mu_rate + 0.5 * mean[0] * mean[0]))
    phi_ss = 0.0
    for i in range(R):
        phi_ss += mean[1 + i] * mean[1 + i]
    tau_phi = rng.gamma(priors.tau_phi_shape + 0.5 * R, 1.0 / (priors.tau_phi_rate + 0.5 * phi_ss))
    scalars[0], scalars[1], scalars[2], scalars[3], scalars[4] = alpha, tau_lambda, tau_theta, tau_phi, tau_mu


@numba.njit(cache=True, nogil=True)
def _sweeps(rng, state, pairs, design, priors, moves, n):  # pragma: no cover
    """``n`` sweeps (:func:`_sweep`) in one call: the records' dispatch from Python (about as long as a tenth of a
    sweep) paid once for them."""
    for _ in range(n):
        _sweep(rng, state, pairs, design, priors, moves)


#: Most sweeps of the burn-in run in one call of :func:`_sweeps` (the progress bar moves between calls).
BURN_CHUNK = 8


def initial_state(rng: np.random.Generator, data: ArealData, problem: _Problem) -> GibbsState:
    """A starting point: every precision 1, ``alpha`` 1, sticks from their prior, the intercepts spread around the
    log mean count (so that chains start apart), the one-hot effects 0, ``Sigma_phi`` the identity."""
    K = problem.K
    R = data.design.shape[1]
    centre = math.log(float(data.counts.mean()) + 0.5)
    beta = np.zeros((K, R + 1))
    beta[:, 0] = centre + rng.normal(0.0, 1.0, K)
    return GibbsState(
        allocation=np.zeros((K, problem.count.size), dtype=np.int64), stick=rng.beta(1.0, 1.0, K - 1), beta=beta,
        mean=np.concatenate([[centre], np.zeros(R)]), sigma=np.ones(R), cpc=np.zeros(R * (R - 1) // 2),
        scalars=np.array([1.0, 1.0, 1.0, 1.0, 1.0]),
    )  # fmt: skip


def run_chain(
    data: ArealData,
    seed: int,
    chain: int,
    *,
    K: int = DEFAULT_K,
    priors: DPArealPriors | None = None,
    settings: DPArealGibbsSettings | None = None,
    nodes: int = 16,
    advance: Any = None,
) -> dict[str, Any]:
    """Run one chain of the sampler; chain ``c`` draws from the stream ``(seed, "chain", c)``.

    Returns
    -------
    dict
        ``alpha``, ``tau_lambda``, ``tau_theta``, ``tau_phi``, ``tau_mu`` (draws), ``stick`` (draws, K - 1),
        ``rho`` (draws, K), ``location`` (draws, K, B), ``acceptance`` (the coefficients' MH acceptance rate)
        and ``swaps`` (label swaps accepted per sweep).
    """
    priors = DPArealPriors() if priors is None else priors
    settings = DPArealGibbsSettings() if settings is None else settings
    problem = _Problem.of(data, K, priors, nodes, settings.label_swaps, settings.split_merges)
    rng = streams.rng(seed, Stream.CHAIN, chain)
    state = initial_state(rng, data, problem)
    draws = settings.draws
    out: dict[str, Any] = {name: np.empty(draws) for name in SCALARS}
    out["stick"] = np.empty((draws, K - 1))
    out["rho"] = np.empty((draws, K))
    out["location"] = np.empty((draws, K, data.n_patterns))
    kept = 0
    sweeps = settings.burn + draws * settings.thin
    records, chain_state = problem.records(), state.record()  # the state's arrays are updated in place
    step = 0  # sweeps done
    while step < sweeps:
        # the sweeps up to the next kept one (in the burn-in, up to BURN_CHUNK of them)
        if step < settings.burn:
            n = min(settings.burn - step, BURN_CHUNK)
        else:
            n = settings.thin - (step - settings.burn) % settings.thin
        _sweeps(rng, chain_state, *records, n)
        step += n
        if advance is not None:
            for _ in range(n):
                advance()
        if step > settings.burn and (step - settings.burn) % settings.thin == 0:
            for i, name in enumerate(SCALARS):
                out[name][kept] = state.scalars[i]
            out["stick"][kept] = state.stick
            out["rho"][kept] = np.exp(state.log_rho())
            out["location"][kept] = state.beta @ problem.full_t
            kept += 1
    out["acceptance"] = float(state.counters[0] / max(state.counters[1], 1))
    out["swaps"] = float(state.counters[2] / sweeps)
    out["split_merges"] = float(state.counters[3] / sweeps)
    return out
