"""The truncated-Poisson model of Hawala, Reiter & Wang as the paper writes it (eq. 1 and Section 2.1).

For the sensitive cells ``ij`` of one (origin group, destination group) pair, with ``y_ij = n_ij - 1``:

* eq. (1): ``Pr(y_ij = y | 0 <= y_ij <= 8) = lambda_ij^y / (y! sum_{r=0}^{8} lambda_ij^r / r!)``;
* Section 2.1: ``log lambda_ij = beta_i + gamma_j``, ``beta_i ~ N(mu_beta, phi_beta)``,
  ``gamma_j ~ N(mu_gamma, phi_gamma)``, ``mu_beta, mu_gamma ~ N(0, 1/25)``,
  ``phi_beta, phi_gamma ~ Gamma(0.01, 0.01)``; "interpret phi_beta, phi_gamma and 1/25 as a precision".

:func:`paper_model` declares exactly this. The sampler uses the equivalent of
:mod:`bayessdc.models.flows.marginal` (``mu_beta - mu_gamma`` and the precisions integrated out, effects padded
to a size class); ``tests/models/test_flows_model.py`` checks that the two log densities agree at random
points.

References
----------
.. [1] Hawala, S., Reiter, J. P., & Wang, Q. *Synthesizing truncated count data for confidentiality*. U.S. Census
    Bureau and Duke University, manuscript (undated; its latest reference is of 2010).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .data import FlowGroup

__all__ = [
    "PAPER_PRIORS",
    "FlowPriors",
    "log_factorials",
    "paper_model",
    "truncated_poisson_log_normaliser",
    "truncated_poisson_log_normaliser_numpy",
    "truncated_poisson_logp",
]


@dataclass(frozen=True)
class FlowPriors:
    """Hyperparameters of Section 2.1 (the paper's values are the defaults).

    Parameters
    ----------
    mu_precision
        Precision of the normal priors of ``mu_beta`` and ``mu_gamma`` (1/25).
    phi_shape, phi_rate
        Shape and rate of the gamma priors of the precisions ``phi_beta`` and ``phi_gamma`` (0.01, 0.01).
    """

    mu_precision: float = 1 / 25
    phi_shape: float = 0.01
    phi_rate: float = 0.01

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not value > 0:
                raise ValueError(f"prior hyperparameter {name} must be positive, got {value}")


#: Section 2.1's hyperparameters.
PAPER_PRIORS = FlowPriors()

#: The default: Gamma(1, 1) on each precision (shape 1, rate 1), the rest as the paper. With the precision
#: integrated out the effects of a family are a multivariate Student t with 2 degrees of freedom and scale 1
#: (log-rate effects of order 1), where the paper's Gamma(0.01, 0.01) gives 0.02 degrees of freedom, a
#: nearly improper prior (Gelman 2006) under which state pairs with few units and counts mostly at the lower
#: bound have no proper posterior to sample. Chosen by measurement (README, "Choosing the flow model's
#: precision prior"; ``bench/flows.py --part priors``).
WEAKLY_INFORMATIVE_PRIORS = FlowPriors(phi_shape=1.0, phi_rate=1.0)

#: The priors that ``--phi-prior`` and :func:`named_priors` know by name.
NAMED_PRIORS = {"weakly-informative": WEAKLY_INFORMATIVE_PRIORS, "paper": PAPER_PRIORS}


def named_priors(text: str) -> FlowPriors:
    """The priors named by ``text``: ``"weakly-informative"`` (the default), ``"paper"`` or ``"SHAPE,RATE"``.

    Raises
    ------
    ValueError
        Anything else, naming the choices.
    """
    if text in NAMED_PRIORS:
        return NAMED_PRIORS[text]
    try:
        shape, rate = (float(v) for v in text.split(","))
    except ValueError:
        raise ValueError(
            f"the precision prior is one of {', '.join(NAMED_PRIORS)} or SHAPE,RATE (two numbers), got {text!r}"
        ) from None
    return FlowPriors(mu_precision=PAPER_PRIORS.mu_precision, phi_shape=shape, phi_rate=rate)


def describe_priors(priors: FlowPriors) -> str:
    """Which precision prior ``priors`` is and why, in words (for ``release/model.json`` and the report)."""
    gamma = f"Gamma({priors.phi_shape:g}, {priors.phi_rate:g}) (shape, rate) on phi_beta and phi_gamma"
    if priors == WEAKLY_INFORMATIVE_PRIORS:
        return (
            f"weakly informative {gamma}, the bayessdc default: the paper's Gamma(0.01, 0.01) leaves state pairs "
            "with few origins or destinations and counts mostly at the lower bound with a nearly improper "
            "posterior that no sampler mixes on; Gamma(1, 1) lets every pair of the bundled airport data and of a "
            "simulated national table converge (effects of order 1 on the log scale)"
        )
    if priors == PAPER_PRIORS:
        return f"the paper's {gamma} (Section 2.1), chosen by the user"
    return f"{gamma}, given by the user"


def truncated_poisson_log_normaliser(log_rate: Any, upper: int) -> Any:
    """``log sum_{r=0}^{upper} lambda^r / r!`` as a PyTensor expression of ``log lambda``.

    The denominator of eq. (1). Evaluated by Horner's rule, in powers of ``lambda`` when
    ``lambda <= 1`` and in powers of ``1 / lambda`` otherwise, so it neither overflows nor loses accuracy
    for any rate; one exponential per cell instead of ``upper + 1``.
    """
    import pytensor.tensor as pt

    rate = pt.exp(log_rate)
    small = 1.0 + rate / upper
    for k in range(upper - 1, 0, -1):
        small = 1.0 + small * rate / k
    inverse = pt.exp(-log_rate)
    # lambda^u/u! * sum_{k=0}^{u} u!/(u-k)! lambda^-k, by Horner in 1/lambda.
    large = 1.0 + inverse
    for k in range(upper - 1, 0, -1):
        large = 1.0 + (upper - k + 1) * inverse * large
    log_large = upper * log_rate - math.lgamma(upper + 1) + pt.log(large)
    return pt.switch(log_rate <= 0, pt.log(small), log_large)


def truncated_poisson_logp(value: Any, log_rate: Any, upper: int) -> Any:
    """Log of eq. (1): ``y log lambda - log y! - log sum_{r=0}^{upper} lambda^r/r!``."""
    import pytensor.tensor as pt

    return value * log_rate - pt.gammaln(value + 1.0) - truncated_poisson_log_normaliser(log_rate, upper)


def log_factorials(upper: int) -> np.ndarray:
    """``log r!`` for ``r = 0..upper``."""
    return np.array([math.lgamma(r + 1) for r in range(upper + 1)])


def truncated_poisson_log_normaliser_numpy(log_rate: np.ndarray, upper: int) -> np.ndarray:
    """The denominator of eq. (1) in NumPy, ``log sum_{r=0}^{upper} lambda^r / r!`` (log-sum-exp)."""
    r = np.arange(upper + 1)
    terms = log_rate[..., None] * r - log_factorials(upper)
    top = terms.max(axis=-1, keepdims=True)
    return (top + np.log(np.exp(terms - top).sum(axis=-1, keepdims=True)))[..., 0]


def paper_model(
    group: FlowGroup, *, mu_precision: float = 1 / 25, phi_shape: float = 0.01, phi_rate: float = 0.01
) -> Any:
    """Declare eq. (1) and Section 2.1 for one group pair, as written (every precision is a precision).

    PyMC declares a parent before its child, so Section 2.1 is read from its last lines up: hyperpriors,
    effects, ``log lambda``, then the likelihood of eq. (1). Sampled as written, ``mu_beta - mu_gamma`` is
    identified only by its prior and NUTS does not mix; :mod:`bayessdc.models.flows.marginal` is what the sampler
    runs instead.

    Parameters
    ----------
    group
        The sensitive cells of one (origin group, destination group) pair.
    mu_precision, phi_shape, phi_rate
        Section 2.1's ``1/25`` and ``Gamma(0.01, 0.01)`` (shape, rate), the defaults.

    Returns
    -------
    pymc.Model
        Dimensions ``origin``, ``destination`` and ``cell``; free ``mu_beta``, ``mu_gamma``, ``phi_beta``,
        ``phi_gamma``, ``beta`` (origin), ``gamma`` (destination); deterministic ``log_lambda`` (cell);
        observed ``y`` (cell).
    """
    import pymc as pm

    coords = {"origin": group.origins, "destination": group.destinations, "cell": np.arange(group.n_cells)}
    with pm.Model(coords=coords) as model:
        mu_beta = pm.Normal("mu_beta", mu=0.0, tau=mu_precision)  # Section 2.1: mu_beta ~ N(0, 1/25)
        mu_gamma = pm.Normal("mu_gamma", mu=0.0, tau=mu_precision)  # mu_gamma ~ N(0, 1/25)
        phi_beta = pm.Gamma("phi_beta", alpha=phi_shape, beta=phi_rate)  # phi_beta ~ Gamma(.01, .01)
        phi_gamma = pm.Gamma("phi_gamma", alpha=phi_shape, beta=phi_rate)  # phi_gamma ~ Gamma(.01, .01)
        beta = pm.Normal("beta", mu=mu_beta, tau=phi_beta, dims="origin")  # beta_i ~ N(mu_beta, phi_beta)
        gamma = pm.Normal("gamma", mu=mu_gamma, tau=phi_gamma, dims="destination")  # gamma_j ~ N(mu_gamma, phi_gamma)
        log_lambda = pm.Deterministic(  # log(lambda_ij) = beta_i + gamma_j
            "log_lambda", beta[group.origin_index] + gamma[group.destination_index], dims="cell"
        )
        pm.CustomDist(  # eq. (1): y_ij ~ Poisson(lambda_ij) truncated to 0..8
            "y",
            log_lambda,
            logp=lambda value, log_rate: truncated_poisson_logp(value, log_rate, group.upper),
            observed=group.y,
            dims="cell",
        )
    return model
