"""The truncated-Poisson model in the form the sampler uses: ``mu_beta - mu_gamma`` integrated out, padded.

The same posterior of every ``lambda`` as :func:`bayessdc.models.flows.model.paper_model` (Hawala, Reiter &
Wang, eq. 1 and Section 2.1), in a parameterization NUTS can sample, and with a size that one compiled
model can share across groups.

Parameterization. ``log lambda`` is unchanged when a constant moves from ``gamma`` to ``beta`` and from
``mu_gamma`` to ``mu_beta``, so ``mu_beta - mu_gamma`` is not identified by the data (sampled as written its
chains never mix: r_hat above 2 in every sampler). Writing ``beta_i = mu_beta + b_i`` and
``gamma_j = mu_gamma + g_j`` is a shift with unit Jacobian, and because ``mu_beta`` and ``mu_gamma`` are
independent ``N(0, variance 25)``, their sum ``mu = mu_beta + mu_gamma ~ N(0, variance 50)`` and their
difference ``delta ~ N(0, variance 50)`` are independent too (the map ``(mu_beta, mu_gamma) -> (mu, delta)``
has Jacobian 2). The likelihood involves only ``mu + b_i + g_j``, so ``delta`` has posterior equal to its
prior and is integrated out exactly. The model sampled here is therefore the paper's model, with the same
prior on every ``lambda``:

``log lambda_ij = mu + b_i + g_j``, ``mu ~ N(0, precision 1/50)``, ``b_i ~ N(0, phi_beta)``,
``g_j ~ N(0, phi_gamma)``, ``phi ~ Gamma(0.01, 0.01)``.

With the default ``"marginal"`` parameterization the precisions are integrated out too (conjugate: the
effects of one family are a multivariate Student t) and drawn afterwards from their full conditional
(:func:`draw_precision`). Hence, at any point,

``log p_paper(mu_beta, mu_gamma, phi, beta, gamma, y) = log p_marginal(mu, b, g, y)
+ log p(phi_beta | b) + log p(phi_gamma | g) + log N(delta; 0, variance 50) + log 2``,

the identity ``tests/models/test_flows_model.py`` checks. Every sampled quantity is identified, so the
convergence gate applies to all of them (and to every ``log lambda``). The paper's ``beta_i`` and
``gamma_j`` follow, if wanted, by drawing ``delta`` from its prior.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .data import FlowGroup
from .model import PAPER_PRIORS, FlowPriors, truncated_poisson_logp

__all__ = [
    "DESTINATION",
    "ORIGIN",
    "PARAMETERIZATIONS",
    "UNUSED",
    "build_model",
    "draw_precision",
    "effect_layout",
    "hierarchical_effect_logp",
    "padded_size",
    "unused_effect_logp",
]


def padded_size(n: int, minimum: int = 16, factor: float = 1.5) -> int:
    """The smallest size ``minimum * factor**k`` (rounded up) that holds ``n``: few compiled models, little waste."""
    size = minimum
    while size < n:
        size = math.ceil(size * factor)
    return size


def build_model(
    group: FlowGroup,
    priors: FlowPriors = PAPER_PRIORS,
    *,
    padded_effects: int | None = None,
    parameterization: str = "marginal",
) -> Any:
    """Declare the truncated-Poisson model of one group pair in the sampler's form (see the module docstring).

    The origin effects ``beta_i`` and the destination effects ``gamma_j`` are held in one vector ``effect``
    (origins first, then destinations), each family with its own hierarchical prior, so that the model's
    size is one number: this lets one compiled model serve every group of similar size.

    Parameters
    ----------
    group
        The sensitive cells of one (origin group, destination group) pair.
    priors
        Hyperparameters; the paper's values by default.
    padded_effects
        Declare this many effects, the surplus ones being independent standard normals that no cell uses
        and that do not enter the hierarchical priors: their posterior is exactly N(0, 1) and the others' is
        unchanged. The data are ``pm.Data`` containers that can be swapped for another group's.
    parameterization
        ``"marginal"`` (default: the precisions integrated out analytically, see the module docstring),
        ``"centred"`` (effects and precisions sampled as written) or ``"noncentred"`` (effects as standard
        normals times ``phi**-0.5``). The same model every way; they differ in how well NUTS samples it.

    Returns
    -------
    pymc.Model
        Dimensions ``unit`` (the origins, then the destinations, then any padding) and ``cell``; free
        variables ``mu`` (= mu_beta + mu_gamma) and ``effect``
        (``beta_i - mu_beta`` for the origins, ``gamma_j - mu_gamma`` for the destinations), plus
        ``phi_beta`` and ``phi_gamma`` unless marginal; observed ``y``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    n_effects = len(group.origins) + len(group.destinations)
    size = padded_effects or n_effects
    if parameterization not in PARAMETERIZATIONS:
        raise ValueError(f"parameterization must be one of {PARAMETERIZATIONS}, got {parameterization!r}")
    if size < n_effects:
        raise ValueError("padding cannot be smaller than the group")
    labels = (
        [f"origin {o}" for o in group.origins]
        + [f"destination {d}" for d in group.destinations]
        + [f"<unused {k}>" for k in range(size - n_effects)]
    )
    coords = {"unit": labels, "cell": np.arange(group.n_cells)}
    family, origin_position, destination_position = effect_layout(group, size)
    upper = group.upper
    with pm.Model(coords=coords) as model:
        origin_index = pm.Data("origin_index", origin_position, dims="cell")
        destination_index = pm.Data("destination_index", destination_position, dims="cell")
        effect_family = pm.Data("effect_family", family, dims="unit")
        y_observed = pm.Data("y_observed", group.y, dims="cell")
        is_origin, is_destination = pt.eq(effect_family, ORIGIN), pt.eq(effect_family, DESTINATION)

        # Section 2.1: mu_beta, mu_gamma ~ N(0, precision 1/25), so mu = mu_beta + mu_gamma has precision 1/50.
        mu = pm.Normal("mu", mu=0.0, tau=priors.mu_precision / 2)
        if parameterization == "marginal":
            # Section 2.1 with phi integrated out: b ~ N(0, precision phi), phi ~ Gamma(a, r) gives
            # p(b) ∝ (r + sum b_i^2 / 2)^-(a + B/2), a multivariate Student t (nu = 2a, scale^2 = r/a).
            effect = pm.Flat("effect", dims="unit")
            pm.Potential("beta_effect_prior", hierarchical_effect_logp(effect, is_origin, priors))
            pm.Potential("gamma_effect_prior", hierarchical_effect_logp(effect, is_destination, priors))
            pm.Potential("unused_effect_prior", unused_effect_logp(effect, pt.eq(effect_family, UNUSED)))
        else:
            # Section 2.1: phi_beta, phi_gamma ~ Gamma(0.01, 0.01), precisions.
            phi_beta = pm.Gamma("phi_beta", alpha=priors.phi_shape, beta=priors.phi_rate)
            phi_gamma = pm.Gamma("phi_gamma", alpha=priors.phi_shape, beta=priors.phi_rate)
            precision = pt.switch(is_origin, phi_beta, pt.switch(is_destination, phi_gamma, 1.0))
            # Section 2.1: beta_i - mu_beta ~ N(0, phi_beta), gamma_j - mu_gamma ~ N(0, phi_gamma).
            if parameterization == "centred":
                effect = pm.Normal("effect", mu=0.0, tau=precision, dims="unit")
            else:  # the same distribution: standard normals times the standard deviation
                effect_raw = pm.Normal("effect_raw", mu=0.0, sigma=1.0, dims="unit")
                effect = pm.Deterministic("effect", effect_raw * precision**-0.5, dims="unit")
        # Section 2.1: log lambda_ij = beta_i + gamma_j.
        log_lambda = mu + effect[origin_index] + effect[destination_index]
        # Eq. (1): y_ij ~ Poisson(lambda_ij) truncated to 0..upper.
        pm.CustomDist(
            "y",
            log_lambda,
            logp=lambda value, log_rate: truncated_poisson_logp(value, log_rate, upper),
            observed=y_observed,
            dims="cell",
        )
    return model


ORIGIN, DESTINATION, UNUSED = 0, 1, 2


def effect_layout(group: FlowGroup, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Family of each effect (origin, destination, unused) and each cell's two positions in ``effect``."""
    n_origins, n_destinations = len(group.origins), len(group.destinations)
    family = np.full(size, UNUSED, dtype=np.int64)
    family[:n_origins] = ORIGIN
    family[n_origins : n_origins + n_destinations] = DESTINATION
    return family, group.origin_index, group.destination_index + n_origins


def unused_effect_logp(effect: Any, unused: Any) -> Any:
    """Independent standard normal log density of the padding effects flagged in ``unused``."""
    import pytensor.tensor as pt

    unused = pt.cast(unused, "float64")
    return pt.sum(unused * (-0.5 * effect**2 - 0.5 * math.log(2 * math.pi)))


PARAMETERIZATIONS = ("marginal", "centred", "noncentred")


def hierarchical_effect_logp(effect: Any, member: Any, priors: FlowPriors) -> Any:
    """Log density of effects ``b ~ N(0, precision phi)``, ``phi ~ Gamma(a, r)``, with ``phi`` integrated out.

    ``log p(b) = log G(a + n/2) - log G(a) + a log r - (n/2) log(2 pi) - (a + n/2) log(r + sum b^2 / 2)``
    over the ``n`` effects flagged in ``member`` (``G`` the gamma function); the others do not enter.
    """
    import pytensor.tensor as pt

    a, r = priors.phi_shape, priors.phi_rate
    member = pt.cast(member, "float64")
    n = pt.sum(member)
    sum_sq = pt.sum(member * effect**2)
    return (
        pt.gammaln(a + n / 2)
        - math.lgamma(a)
        + a * math.log(r)
        - n / 2 * math.log(2 * math.pi)
        - (a + n / 2) * pt.log(r + sum_sq / 2)
    )


def draw_precision(effects: np.ndarray, priors: FlowPriors, rng: np.random.Generator) -> np.ndarray:
    """Draws of ``phi`` from its full conditional ``Gamma(a + n/2, rate r + sum b^2/2)``, one per row of effects.

    With the ``marginal`` parameterization this turns draws of the effects into exact posterior draws of
    the precision (the conditional is conjugate; Section 2.1's Gibbs steps 5 and 6).
    """
    effects = np.asarray(effects, dtype=float)
    n = effects.shape[-1]
    rate = priors.phi_rate + 0.5 * (effects**2).sum(axis=-1)
    return rng.gamma(priors.phi_shape + n / 2, 1.0 / rate)
