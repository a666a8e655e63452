"""The records the DP-areal's compiled Gibbs kernels take, grouped by meaning (numba ``NamedTuple`` arguments).

A kernel reads its inputs by field name (``pairs.count``, ``priors.tau_lambda_rate``), never by position, so two
arguments of the same type cannot be swapped silently. The read-only records (:class:`PairData`, :class:`Design`,
:class:`PriorValues` with its :class:`CovariancePrior`, :class:`Moves`) are built in one place, ``_Problem.records``
of :mod:`bayessdc.models.dp_areal.gibbs`, and the chain's state (:class:`ChainState`) by ``GibbsState.record``; the
prior of the coefficients (:class:`CoefficientPrior`), ``Sigma_phi`` and its sufficient statistics
(:class:`Covariance`, :class:`Scatter`), the draw and the rule of the cells' posterior (:class:`MixtureDraw`,
:class:`Quadrature`) and a split's proposal (:class:`SplitProposal`) are made inside the kernels, once a sweep,
from arrays the sweep holds already (a record of arrays is a struct of their references: making one allocates no
array).

Notation as in Hu & Savitsky, Section 2.2 (eq. 7-12) and :mod:`bayessdc.models.dp_areal.marginal`: ``D`` distinct
``(pattern, count)`` pairs, ``B`` patterns, ``R`` columns of the design, ``r`` identified directions of the
coefficients, ``K`` components.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "ChainState",
    "CoefficientPrior",
    "Covariance",
    "CovariancePrior",
    "Design",
    "MixtureDraw",
    "Moves",
    "PairData",
    "PriorValues",
    "Quadrature",
    "Scatter",
    "SplitProposal",
]


class PairData(NamedTuple):
    """The data as the likelihood sees it: the distinct ``(pattern, count)`` pairs ``d`` and how many labels share
    each (:mod:`bayessdc.models.dp_areal.marginal`), and the quadrature that integrates a cell's log rate out."""

    #: ``(D,)`` float: the count ``c_d``.
    count: np.ndarray
    #: ``(D,)`` int64: the pattern ``b_d``.
    pattern: np.ndarray
    #: ``(D,)`` int64: ``n_d``, the labels (cells) sharing the pair.
    weight: np.ndarray
    #: ``(D,)`` float: ``log c_d!``.
    log_fact: np.ndarray
    #: Nodes of the quadrature of every cell's integral (:mod:`bayessdc.models.dp_areal.quadrature`).
    nodes: int


class Design(NamedTuple):
    """The design of the log rates (eq. 8, 10-11) and the directions of ``beta_k`` the likelihood sees
    (:func:`bayessdc.models.dp_areal.marginal.identified_basis`)."""

    #: ``(R + 1, B)``: ``[1, X]'``, so that the locations are ``beta @ full_t``.
    full_t: np.ndarray
    #: ``(R + 1, r)``: ``w_k = V' beta_k``.
    V: np.ndarray
    #: ``(r, R + 1)``: ``V'``.
    V_t: np.ndarray
    #: ``(B, r)``: the locations are ``basis @ w_k``.
    basis: np.ndarray
    #: ``(r, B)``: ``basis'``.
    basis_t: np.ndarray


class CovariancePrior(NamedTuple):
    """The prior of ``Sigma_phi`` (eq. 11): half-t(``nu``, ``scale``) on each standard deviation and the LKJ prior
    as ``2 Beta(b_j, b_j) - 1`` on each canonical partial correlation (:mod:`bayessdc.models.dp_areal.lkj`)."""

    #: Degrees of freedom of the half-t prior of the standard deviations.
    nu: float
    #: Scale of that half-t prior.
    scale: float
    #: ``(R (R - 1) / 2,)``: the Beta parameters ``b_j`` of the canonical partial correlations
    #: (:func:`bayessdc.models.dp_areal.lkj.cpc_beta_parameters`).
    cpc_b: np.ndarray


class PriorValues(NamedTuple):
    """The priors of eq. (9)-(12) (:class:`bayessdc.models.dp_areal.model.DPArealPriors`), as numbers; each
    ``tau`` has a Gamma(shape, rate) prior."""

    a_alpha: float
    b_alpha: float
    tau_theta_shape: float
    tau_theta_rate: float
    tau_phi_shape: float
    tau_phi_rate: float
    tau_mu_shape: float
    tau_mu_rate: float
    tau_lambda_shape: float
    tau_lambda_rate: float
    #: The prior of ``Sigma_phi``.
    covariance: CovariancePrior


class Moves(NamedTuple):
    """The Metropolis moves of one sweep beyond the conditional draws."""

    #: Label-swap moves per sweep, in multiples of ``K``.
    swaps: int
    #: Split-merge moves per sweep, in multiples of ``K``.
    split_merges: int


class ChainState(NamedTuple):
    """One chain's state (``GibbsState``), updated in place by a sweep."""

    #: ``(K, D)`` int64: ``N_kd``, pair ``d``'s cells in component ``k``.
    allocation: np.ndarray
    #: ``(K - 1,)``: the sticks ``v_k``.
    stick: np.ndarray
    #: ``(K, R + 1)``: the coefficients ``(mu + theta*_k, phi*_k)``.
    beta: np.ndarray
    #: ``(R + 1,)``: the shared means ``(mu, mu_phi)``.
    mean: np.ndarray
    #: ``(R,)``: the standard deviations of ``Sigma_phi``.
    sigma: np.ndarray
    #: ``(R (R - 1) / 2,)``: its canonical partial correlations.
    cpc: np.ndarray
    #: ``(alpha, tau_lambda, tau_theta, tau_phi, tau_mu)``.
    scalars: np.ndarray
    #: Coefficient moves accepted and proposed, label swaps accepted, split-merge moves accepted.
    counters: np.ndarray


class CoefficientPrior(NamedTuple):
    """The prior of ``beta_k`` around the shared means: ``N(mean, S0)``, ``S0 = blockdiag(1 / tau_theta,
    Sigma_phi)``."""

    #: ``(R + 1,)``: the shared means ``(mu, mu_phi)`` (the chain state's array).
    mean: np.ndarray
    #: ``(R + 1, R + 1)``: ``S0``.
    S0: np.ndarray
    #: ``(R + 1, R + 1)``: the Cholesky factor of ``S0``.
    chol_S0: np.ndarray


class Covariance(NamedTuple):
    """``Sigma_phi = diag(sigma) L L' diag(sigma)``, ``L`` from the canonical partial correlations
    (:mod:`bayessdc.models.dp_areal.lkj`); the chain state's arrays, updated in place by its slice sampler."""

    #: ``(R,)``: the standard deviations.
    sigma: np.ndarray
    #: ``(R (R - 1) / 2,)``: the canonical partial correlations.
    cpc: np.ndarray


class Scatter(NamedTuple):
    """The sufficient statistics of ``Sigma_phi`` given ``n`` zero-mean Gaussian draws ``y_k``."""

    #: ``(R, R)``: ``sum_k y_k y_k'``.
    scatter: np.ndarray
    #: The number of draws ``n``.
    n: int


class MixtureDraw(NamedTuple):
    """One draw of the mixture of eq. (7)-(9) as the cells' posterior reads it."""

    #: ``(K, B)``: the locations ``m_kb`` of every component and pattern.
    location: np.ndarray
    #: ``(K,)``: ``log rho_k``.
    log_rho: np.ndarray
    #: ``tau_lambda``, the precision of the log rates.
    tau: float


class Quadrature(NamedTuple):
    """The adaptive trapezoid rule of a cell's integral over its log rate
    (:mod:`bayessdc.models.dp_areal.quadrature`)."""

    #: Nodes of the grid.
    nodes: int
    #: Half-width of the grid, in Laplace standard deviations (``HALF_WIDTH``).
    half_width: float
    #: Newton steps of Lambert's W for the mode.
    steps: int


class SplitProposal(NamedTuple):
    """A split of a merged component ``m`` into ``j`` and ``l`` (or the reverse merge): what its acceptance ratio
    reads (``_split_log_ratio``)."""

    #: ``(D,)``: the cells of every pair in ``j`` and in ``l``.
    n_j: np.ndarray
    n_l: np.ndarray
    #: The coefficients ``w`` of ``j``, ``l`` and the merged component.
    w_j: np.ndarray
    w_l: np.ndarray
    w_m: np.ndarray
    #: ``(K,)``: the components' cell totals split and merged.
    counts_split: np.ndarray
    counts_merged: np.ndarray
    #: The mode of the merged conditional and the Cholesky factor of the t proposal there.
    mode: np.ndarray
    chol_t: np.ndarray
    #: ``(D,)``: ``log p(c_d | w)`` of every pair under ``j``, ``l`` and the merged component.
    L_j: np.ndarray
    L_l: np.ndarray
    L_m: np.ndarray
    #: ``(D,)``: ``log`` of the binomial split's shares ``p_l / (p_j + p_l)`` and its complement.
    log_pi_l: np.ndarray
    log_pi_j: np.ndarray
