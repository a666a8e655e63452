"""The DPMPM with the latent classes summed out and the records aggregated into cells: the sampler's form.

With ``z`` summed out of eq. (1)-(2), the likelihood of a record depends on its values only, so records with
the same combination of values (a *cell* of the contingency table) contribute identical factors:

    log p(X | pi, theta) = sum_cells n_cell log sum_k pi_k prod_j theta_k^(j)[x_cell,j],

at a cost proportional to the number of occupied cells, not to ``n``. The priors of eq. (3)-(6) are those
of :func:`bayessdc.models.dpmpm.model.paper_model`. Here are that log density in numpy
(:func:`cell_log_likelihood` plus :func:`log_prior`, what the blocked Gibbs sampler targets) and in PyMC
(:func:`build_model`: the declaration the sampler reads its priors from, :func:`model_hyperparameters`, and
the model NUTS was measured on before the Gibbs sampler was chosen, ``bench/dpmpm.py --nuts``);
``tests/models/dpmpm/test_model.py`` checks that both equal the paper's model with the classes summed out,
at random points.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special

from ..categorical import CategoricalData
from .model import DEFAULT_K, DPMPMPriors, level_dim

__all__ = ["build_model", "cell_log_likelihood", "log_prior", "model_hyperparameters"]


def cell_log_likelihood(pi: np.ndarray, thetas: Sequence[np.ndarray], data: CategoricalData) -> float:
    """``sum_c n_c log sum_k pi_k prod_j theta_k^(j)[x_cj]`` in numpy (eq. 1-2 with ``z`` summed out).

    Parameters
    ----------
    pi
        ``(K,)`` component weights.
    thetas
        One ``(K, d_j)`` array of level probabilities per variable, in the order of ``data.variables``.
    data
        The coded records and their cells.
    """
    log_cell = np.log(pi)[None, :] + sum(np.log(t).T[data.cell_codes[:, j]] for j, t in enumerate(thetas))
    top = log_cell.max(axis=1, keepdims=True)
    return float((data.cell_counts * (top[:, 0] + np.log(np.exp(log_cell - top).sum(axis=1)))).sum())


def log_prior(alpha: float, beta: np.ndarray, thetas: Sequence[np.ndarray], hyperparameters: dict[str, Any]) -> float:
    """``log p(alpha) + sum_k log p(beta_k | alpha) + sum_kj log p(theta_k^(j))`` (eq. 4-6) in numpy.

    Parameters
    ----------
    alpha
        The concentration.
    beta
        ``(K - 1,)`` sticks (``beta_K = 1`` is not a parameter).
    thetas
        One ``(K, d_j)`` array of level probabilities per variable.
    hyperparameters
        From :func:`model_hyperparameters`.
    """
    a, b = hyperparameters["a_alpha"], hyperparameters["b_alpha"]
    total = a * np.log(b) - special.gammaln(a) + (a - 1.0) * np.log(alpha) - b * alpha
    beta = np.asarray(beta, dtype=float)
    beta_a = hyperparameters["beta_a"]
    total += np.sum(-special.betaln(beta_a, alpha) + (beta_a - 1.0) * np.log(beta) + (alpha - 1.0) * np.log1p(-beta))
    for theta, concentration in zip(thetas, hyperparameters["theta_concentration"], strict=True):
        total += np.sum(
            special.gammaln(concentration.sum(axis=1))
            - special.gammaln(concentration).sum(axis=1)
            + ((concentration - 1.0) * np.log(theta)).sum(axis=1)
        )
    return float(total)


def build_model(data: CategoricalData, K: int = DEFAULT_K, priors: DPMPMPriors | None = None) -> Any:
    """Declare the DPMPM of Section 2.1 (eq. 1-6) in PyMC with the latent class summed out, on the cells.

    Parameters
    ----------
    data
        Coded records and their cells.
    K
        Truncation level: number of mixture components.
    priors
        Hyperparameters of eq. (5)-(6) (default: Section 2.3's, :class:`DPMPMPriors`).

    Returns
    -------
    pymc.Model
        Dimensions ``component`` (K), ``stick`` (K - 1), ``cell`` and ``<variable>_level`` for every
        variable; free variables ``alpha``, ``beta`` (stick), ``theta_<variable>`` (component, level);
        deterministic ``pi``; the likelihood is a potential over the occupied cells weighted by their counts.
    """
    import pymc as pm
    import pytensor.tensor as pt

    if K < 2:
        raise ValueError("K must be at least 2")
    priors = DPMPMPriors() if priors is None else priors
    coords: dict[str, Any] = {
        "component": np.arange(K),
        "stick": np.arange(K - 1),
        "cell": np.arange(len(data.cell_counts)),
    }
    for v in data.variables:
        coords[level_dim(v)] = [str(x) for x in data.levels[v]]
    with pm.Model(coords=coords) as model:
        cell_codes = pm.Data("cell_codes", data.cell_codes, dims=("cell", "variable"))
        cell_counts = pm.Data("cell_counts", data.cell_counts, dims="cell")
        # eq. (5): alpha ~ Gamma(a_alpha, b_alpha), shape and rate.
        alpha = pm.Gamma("alpha", alpha=priors.a_alpha, beta=priors.b_alpha)
        # eq. (4): beta_k ~ Beta(1, alpha) for k < K; beta_K = 1.
        beta = pm.Beta("beta", alpha=1.0, beta=alpha, dims="stick")
        # eq. (3): pi_k = beta_k prod_{l<k} (1 - beta_l).
        remaining = pt.concatenate([pt.ones(1), pt.cumprod(1 - beta)])
        pi = pm.Deterministic("pi", pt.concatenate([beta, pt.ones(1)]) * remaining, dims="component")
        # eq. (6): theta_k^(j) ~ Dirichlet(a^(j)), one per component and variable.
        log_cell = pt.log(pi)[None, :]
        for j, v in enumerate(data.variables):
            d = len(data.levels[v])
            theta = pm.Dirichlet(
                f"theta_{v}", a=np.full((K, d), priors.theta_concentration), dims=("component", level_dim(v))
            )
            # eq. (1): the factor theta_k^(j)[x_cj] of every cell c and component k.
            log_cell = log_cell + pt.log(theta).T[cell_codes[:, j]]
        # eq. (2) summed over z_i, records of one cell sharing the factor: sum_c n_c log sum_k (...).
        pm.Potential("cells", (cell_counts * pm.math.logsumexp(log_cell, axis=1).ravel()).sum())
    return model


def model_hyperparameters(model: Any, data: CategoricalData) -> dict[str, Any]:
    """Read the hyperparameters of eq. (4)-(6) back from a declared model (for the Gibbs sampler).

    Parameters
    ----------
    model
        From :func:`build_model` (or :func:`bayessdc.models.dpmpm.model.paper_model`, which declares the same
        priors).
    data
        The coded records the model was built on.

    Returns
    -------
    dict
        ``K``, ``a_alpha``, ``b_alpha`` (shape and rate of alpha's prior), ``beta_a`` (the first Beta
        parameter of the sticks) and ``theta_concentration`` (a list, one ``(K, d_j)`` array per variable).
    """
    import pymc as pm

    alpha_rv = model["alpha"]
    # PyMC's gamma random variable is parameterized by shape and scale = 1 / rate.
    shape, scale = (float(pm.draw(x)) for x in alpha_rv.owner.inputs[-2:])
    beta_rv = model["beta"]
    beta_a = np.asarray(pm.draw(beta_rv.owner.inputs[-2]), dtype=float)
    concentrations = [np.asarray(pm.draw(model[f"theta_{v}"].owner.inputs[-1]), dtype=float) for v in data.variables]
    return {
        "K": int(model.dim_lengths["component"].eval()),
        "a_alpha": shape,
        "b_alpha": 1.0 / scale,
        "beta_a": float(np.broadcast_to(beta_a, (1,))[0]),
        "theta_concentration": concentrations,
    }
