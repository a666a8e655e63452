"""The sampler's form of the flow model (:mod:`bayessdc.models.flows.marginal`) as a compiled log density.

The same density as :func:`bayessdc.models.flows.marginal.build_model` with ``parameterization="marginal"``
(Hawala, Reiter & Wang, eq. 1 and Section 2.1; ``mu_beta - mu_gamma`` and the precisions integrated out),
written out with its gradient for :mod:`bayessdc.models.nuts`:

* ``theta = (mu, b_1..b_I, g_1..g_J)``; ``log lambda_ij = mu + b_i + g_j`` (Section 2.1);
* eq. (1): ``log p(y | lambda) = y log lambda - log y! - log Z(lambda)``, ``Z = sum_{r=0}^{U} lambda^r / r!``,
  whose derivative in ``log lambda`` is ``y - E[y | lambda]``, the truncated Poisson mean;
* ``mu ~ N(0, precision mu_precision / 2)`` (``mu = mu_beta + mu_gamma``);
* each family of effects ``b`` (and ``g``) with its precision integrated out against ``Gamma(a, r)``:
  ``log p(b) = log G(a + n/2) - log G(a) + a log r - (n/2) log(2 pi) - (a + n/2) log(r + sum b^2 / 2)``.

``tests/models/test_flows_compiled.py`` checks the log density and gradient against PyTensor's for the PyMC
model at random points. The gradient costs one exponential, one logarithm and a short loop per cell.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..nuts import run_chain
from .data import FlowGroup
from .model import FlowPriors

__all__ = ["flow_data", "flow_logp_grad", "run_flow_chain", "truncated_poisson_terms"]


#: ``1 / r`` for r = 0..64 (index 0 unused): a multiplication instead of a division per term.
_RECIPROCALS = tuple([0.0] + [1.0 / r for r in range(1, 65)])


@njit(nogil=True, cache=True)
def truncated_poisson_terms(log_rate: float, upper: int) -> tuple[float, float]:
    """``log Z`` and ``E[y]`` of the Poisson truncated to ``0..upper`` (at most 64) at ``log lambda = log_rate``.

    ``Z = sum_{r<=U} lambda^r / r!`` and ``E[y] = lambda sum_{r<U} lambda^r / r! / Z`` by Horner's rule in
    ``lambda`` (all terms positive: no cancellation) while ``lambda^U`` cannot overflow (``log lambda <= 30``);
    beyond, in powers of ``1 / lambda`` from the top term. One branch that is nearly always taken the same way:
    a test of the sign of ``log lambda`` instead made the gradient 1.2 times slower (62 against 51 us on a
    1,009-cell pair).
    """
    if log_rate <= 30.0:
        rate = math.exp(log_rate)
        total, below = 1.0, 1.0
        for r in range(upper, 0, -1):
            step = rate * _RECIPROCALS[r]
            total = 1.0 + step * total
            if r < upper:
                below = 1.0 + step * below
        return math.log(total), rate * below / total
    inverse = math.exp(-log_rate)
    term, total, first = 1.0, 1.0, float(upper)
    for r in range(upper, 0, -1):  # term_{r-1} = term_r * r / lambda
        term *= r * inverse
        total += term
        first += (r - 1) * term
    return upper * log_rate - math.lgamma(upper + 1.0) + math.log(total), first / total


@njit(nogil=True, cache=True)
def _family(theta, start, stop, shape, rate, grad):  # noqa: ANN001, ANN202
    n = stop - start
    if n == 0:
        return 0.0
    sum_sq = 0.0
    for k in range(start, stop):
        sum_sq += theta[k] * theta[k]
    scale = rate + 0.5 * sum_sq
    power = shape + 0.5 * n
    for k in range(start, stop):
        grad[k] -= power * theta[k] / scale
    return (
        math.lgamma(power) - math.lgamma(shape) + shape * math.log(rate) - 0.5 * n * math.log(2 * math.pi)
        - power * math.log(scale)
    )  # fmt: skip


@njit(nogil=True, cache=True)
def flow_logp_grad(theta, data):  # noqa: ANN001, ANN201
    """Log density of the marginal flow model and its gradient (see the module docstring).

    ``data = (origin, destination, y, log_y_factorial, sizes, priors)``: each cell's position of its origin and
    destination effect in ``theta`` (1-based, destinations after origins), its modelled value, ``log y!``,
    ``sizes = (n_origins, n_destinations, upper)`` and ``priors = (mu_precision, phi_shape, phi_rate)``.
    """
    origin, destination, y, log_y_factorial, sizes, priors = data
    n_origins, n_destinations, upper = sizes[0], sizes[1], sizes[2]
    mu_precision, shape, rate = priors[0], priors[1], priors[2]
    grad = np.zeros(theta.size)
    mu = theta[0]
    logp = 0.0
    for c in range(y.size):
        i, j = origin[c], destination[c]
        log_rate = mu + theta[i] + theta[j]
        log_z, mean = truncated_poisson_terms(log_rate, upper)
        logp += y[c] * log_rate - log_y_factorial[c] - log_z
        d = y[c] - mean
        grad[0] += d
        grad[i] += d
        grad[j] += d
    tau = 0.5 * mu_precision  # mu = mu_beta + mu_gamma
    logp += 0.5 * math.log(tau / (2 * math.pi)) - 0.5 * tau * mu * mu
    grad[0] -= tau * mu
    logp += _family(theta, 1, 1 + n_origins, shape, rate, grad)
    logp += _family(theta, 1 + n_origins, 1 + n_origins + n_destinations, shape, rate, grad)
    return logp, grad


def flow_data(group: FlowGroup, priors: FlowPriors) -> tuple[tuple[np.ndarray, ...], int]:
    """The ``data`` tuple of :func:`flow_logp_grad` for one group pair, and the length of ``theta``."""
    n_origins, n_destinations = len(group.origins), len(group.destinations)
    y = np.asarray(group.y, dtype=np.float64)
    data = (
        np.ascontiguousarray(group.origin_index, dtype=np.int64) + 1,
        np.ascontiguousarray(group.destination_index, dtype=np.int64) + 1 + n_origins,
        y,
        np.array([math.lgamma(v + 1.0) for v in y]),
        np.array([n_origins, n_destinations, group.upper], dtype=np.int64),
        np.array([priors.mu_precision, priors.phi_shape, priors.phi_rate], dtype=np.float64),
    )
    return data, 1 + n_origins + n_destinations


@njit(nogil=True)
def run_flow_chain(data, q_init, tune, draws, seed, target_accept, max_depth, step_size, inv_metric):  # noqa: ANN001, ANN201
    """One NUTS chain (:func:`bayessdc.models.nuts.run_chain`) on :func:`flow_logp_grad`.

    Compiled once per process (about 20 s): numba cannot cache on disk a function that takes another compiled
    function as an argument, as the generic sampler does."""
    return run_chain(flow_logp_grad, data, q_init, tune, draws, seed, target_accept, max_depth, step_size, inv_metric)
