"""The DP-areal model of Hu & Savitsky, Section 2.2, declared in PyMC as the paper writes it.

Hu & Savitsky, *Bayesian Data Synthesis and Disclosure Risk Quantification: An Application to the Consumer
Expenditure Surveys*, Section 2.2
(eq. 7-12) with the settings of Section 2.3.

This declaration has a label and a log rate for every pattern x label cell, which NUTS cannot sample (the
labels are discrete) and which would be slow if it could. The sampler uses the equivalent form of
:mod:`bayessdc.models.dp_areal.marginal` (labels summed out, log rates integrated out by quadrature);
``tests/models/dp_areal/test_model.py`` checks that the two log densities agree at random points.

References
----------
.. [1] Hu, J., & Savitsky, T. D. *Bayesian data synthesis and disclosure risk quantification: an application to
    the Consumer Expenditure Surveys*. Vassar College and U.S. Bureau of Labor Statistics, manuscript.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .data import ArealData

__all__ = ["DEFAULT_K", "DPArealPriors", "paper_model"]

#: The truncation level K (mixture components) by default: the one value the model, the recipe and the command
#: line share (the fit reports whether it was large enough: ``occupied_components.K_large_enough``).
DEFAULT_K = 50


@dataclass(frozen=True)
class DPArealPriors:
    """Hyperparameters of eq. (9)-(12) (Section 2.3's settings are the defaults).

    Parameters
    ----------
    a_alpha, b_alpha
        Shape and rate of the gamma prior of the stick-breaking concentration ``alpha``.
    tau_theta, tau_phi, tau_mu, tau_lambda
        ``(shape, rate)`` of the gamma priors of the precisions of ``theta*`` (eq. 10), of ``mu_phi``
        (eq. 11), of ``mu`` (eq. 12) and of the log rates (eq. 8).
    lkj_eta
        LKJ parameter of the correlation matrix ``Omega`` of ``phi*`` (2 in the paper).
    sigma_nu, sigma_scale
        Degrees of freedom and scale of the half-t priors of the standard deviations ``sigma`` of ``phi*``.
    """

    a_alpha: float = 1.0
    b_alpha: float = 1.0
    tau_theta: tuple[float, float] = (1.0, 1.0)
    tau_phi: tuple[float, float] = (1.0, 1.0)
    tau_mu: tuple[float, float] = (1.0, 1.0)
    tau_lambda: tuple[float, float] = (1.0, 1.0)
    lkj_eta: float = 2.0
    sigma_nu: float = 3.0
    sigma_scale: float = 1.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            values = value if isinstance(value, tuple | list) else (value,)
            if len(values) not in (1, 2) or not all(float(v) > 0 for v in values):
                raise ValueError(f"prior hyperparameter {name} must be positive, got {value}")


def paper_model(data: ArealData, K: int = DEFAULT_K, priors: DPArealPriors = DPArealPriors()) -> Any:
    """Declare the DP-areal model of Section 2.2 in PyMC, every cell's label and log rate explicit.

    A *pattern* ``b`` is a combination of the kept variables and ``c_i^(b)`` the number of records of pattern
    ``b`` with label ``i`` (the county), zeros included; ``X^(b)`` is the pattern's one-hot design, ``R`` the
    total number of levels of the kept variables.

    * eq. (7): ``c_i^(b) ~ Poisson(lambda_i^(b))``;
    * eq. (8): ``log lambda_i^(b) ~ Normal(mu + theta*_z + sum_r phi*_{z r} X_r^(b), 1 / tau_lambda)`` with
      ``z = z_i^(b)``;
    * eq. (9): ``z_i^(b) | rho ~ Multinomial(1; rho_1, ..., rho_K)``, ``rho`` by truncated stick breaking,
      ``rho_k = v_k prod_{l<k} (1 - v_l)``, ``v_k ~ Beta(1, alpha)`` for ``k < K``, ``v_K = 1``;
    * eq. (10): ``theta*_k ~ Normal(0, 1 / tau_theta)``;
    * eq. (11): ``(phi*_k1, ..., phi*_kR) ~ MVN_R(mu_phi, Sigma_phi)``, ``Sigma_phi = diag(sigma) Omega
      diag(sigma)``, ``Omega ~ LKJ(2)``, ``sigma_r ~ half-t(3, 0, 1)``, and ``mu_phi ~ MVN_R(0, I / tau_phi)``
      (the paper lists ``tau_phi`` among the Gamma(1, 1) precisions without printing its role; this is the
      reading here);
    * eq. (12): ``mu ~ Normal(0, 1 / tau_mu)``; Section 2.3: ``alpha ~ Gamma(1, 1)`` and Gamma(1, 1) priors
      on every precision.

    PyMC needs a variable's parents first, so the code declares them from the top of the hierarchy down:
    the weights of eq. (9), eq. (10), (11), (12), the labels of eq. (9), eq. (8), (7).

    Parameters
    ----------
    data
        The label counts of every pattern.
    K
        Truncation level of the stick breaking (50 in Section 2.3).
    priors
        Hyperparameters of eq. (9)-(12).

    Returns
    -------
    pymc.Model
        Dimensions ``component`` (K), ``break`` (K - 1), ``term`` (R), ``pattern`` (B) and ``label`` (G);
        free ``alpha``, ``stick``, ``tau_theta``, ``theta``, ``tau_phi``, ``mu_phi``, ``chol_phi``, ``phi``,
        ``tau_mu``, ``mu``, ``z`` (pattern, label), ``tau_lambda``, ``log_lambda`` (pattern, label);
        deterministic ``rho``; observed ``counts`` (pattern, label).
    """
    import pymc as pm
    import pytensor.tensor as pt

    if K < 2:
        raise ValueError("K must be at least 2")
    R = data.design.shape[1]
    coords = {
        "component": np.arange(K),
        "break": np.arange(K - 1),
        "term": list(data.terms),
        "pattern": data.pattern_labels,
        "label": [str(level) for level in data.label_levels],
    }
    with pm.Model(coords=coords) as model:
        X = pm.Data("design", data.design, dims=("pattern", "term"))
        alpha = pm.Gamma("alpha", alpha=priors.a_alpha, beta=priors.b_alpha)  # eq. (9)
        stick = pm.Beta("stick", alpha=1.0, beta=alpha, dims="break")  # eq. (9): v_k, v_K = 1 below
        remaining = pt.concatenate([pt.ones(1), pt.cumprod(1 - stick)])  # prod_{l<k} (1 - v_l)
        rho = pm.Deterministic("rho", pt.concatenate([stick, pt.ones(1)]) * remaining, dims="component")
        tau_theta = pm.Gamma("tau_theta", alpha=priors.tau_theta[0], beta=priors.tau_theta[1])
        theta = pm.Normal("theta", 0.0, tau=tau_theta, dims="component")  # eq. (10)
        tau_phi = pm.Gamma("tau_phi", alpha=priors.tau_phi[0], beta=priors.tau_phi[1])
        mu_phi = pm.Normal("mu_phi", 0.0, tau=tau_phi, dims="term")  # eq. (11)
        sigma = pm.HalfStudentT.dist(nu=priors.sigma_nu, sigma=priors.sigma_scale, shape=R)  # eq. (11)
        chol, _, _ = pm.LKJCholeskyCov("chol_phi", n=R, eta=priors.lkj_eta, sd_dist=sigma, compute_corr=True)
        phi = pm.MvNormal("phi", mu=mu_phi, chol=chol, dims=("component", "term"))  # eq. (11)
        tau_mu = pm.Gamma("tau_mu", alpha=priors.tau_mu[0], beta=priors.tau_mu[1])
        mu = pm.Normal("mu", 0.0, tau=tau_mu)  # eq. (12)
        z = pm.Categorical("z", p=rho, dims=("pattern", "label"))  # eq. (9)
        tau_lambda = pm.Gamma("tau_lambda", alpha=priors.tau_lambda[0], beta=priors.tau_lambda[1])
        mean = mu + theta[z] + (phi[z] * X[:, None, :]).sum(axis=-1)  # eq. (8)
        log_lambda = pm.Normal("log_lambda", mean, tau=tau_lambda, dims=("pattern", "label"))  # eq. (8)
        pm.Poisson("counts", mu=pt.exp(log_lambda), observed=data.counts, dims=("pattern", "label"))  # eq. (7)
    return model
