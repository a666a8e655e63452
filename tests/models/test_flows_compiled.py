"""The compiled flow density (bayessdc.models.flows.compiled) is the PyMC model's, value and gradient."""

from __future__ import annotations

import numpy as np
import pytest

from bayessdc.models.flows import FlowPriors, simulate_group
from bayessdc.models.flows.compiled import flow_data, flow_logp_grad, truncated_poisson_terms
from bayessdc.models.flows.marginal import build_model
from bayessdc.models.flows.model import truncated_poisson_log_normaliser_numpy


@pytest.mark.parametrize("upper", [1, 3, 8])
def test_truncated_poisson_terms_are_the_log_normaliser_and_its_derivative(upper):
    for log_rate in [-30.0, -3.0, -0.2, 0.0, 0.2, 2.5, 7.0, 29.9, 30.1, 40.0, 300.0]:
        log_z, mean = truncated_poisson_terms(log_rate, upper)
        assert log_z == pytest.approx(truncated_poisson_log_normaliser_numpy(np.array([log_rate]), upper)[0], rel=1e-12)
        r = np.arange(upper + 1)
        w = np.exp(log_rate * r - truncated_poisson_log_normaliser_numpy(np.array([log_rate]), upper)[0])
        w /= np.exp(np.cumsum(np.log(np.maximum(r, 1))))  # 1 / r!
        assert mean == pytest.approx((r * w).sum() / w.sum(), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize(
    ("shape", "rate", "seed", "scale"), [(0.01, 0.01, 0, 1.0), (1.0, 1.0, 1, 1.0), (2.0, 0.5, 2, 4.0)]
)
def test_log_density_and_gradient_equal_the_pymc_models(shape, rate, seed, scale):
    group, _ = simulate_group(9, 7, 40, seed=seed)
    priors = FlowPriors(phi_shape=shape, phi_rate=rate)
    data, dim = flow_data(group, priors)
    model = build_model(group, priors)
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    rng = np.random.default_rng(seed)
    for _ in range(5):
        theta = rng.normal(0, scale, dim)  # scale 4 reaches rates far on both sides of 1
        point = {"mu": theta[0], "effect": theta[1:]}
        value, gradient = flow_logp_grad(theta, data)
        assert value == pytest.approx(float(logp(point)), rel=1e-11)
        assert np.allclose(gradient, dlogp(point), rtol=1e-9, atol=1e-9)
