"""The compiled flow density (bayessdc.models.flows.compiled) is the PyMC model's, value and gradient."""

from __future__ import annotations

import numpy as np
import pytest

from bayessdc.models.flows import FlowPriors, simulate_group
from bayessdc.models.flows.compiled import (
    TABLE_HIGH,
    TABLE_LOG_Z_TOLERANCE,
    TABLE_LOW,
    TABLE_MEAN_TOLERANCE,
    candidate_log_probabilities,
    flow_data,
    flow_logp_grad,
    interpolated_terms,
    truncated_poisson_table,
    truncated_poisson_terms,
)
from bayessdc.models.flows.marginal import build_model
from bayessdc.models.flows.model import log_factorials, truncated_poisson_log_normaliser_numpy


@pytest.mark.parametrize("upper", [0, 1, 3, 8])
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


@pytest.mark.parametrize("upper", [0, 1, 3, 8, 20])
def test_the_interpolated_terms_are_the_exact_ones_within_their_stated_tolerance(upper):
    table = truncated_poisson_table(upper)
    assert table.shape[0] > 1  # tabulated up to the paper's 8 and beyond
    rng = np.random.default_rng(upper)
    # random points, the nodes themselves and points just inside both ends of the table
    log_rate = np.concatenate(
        [rng.uniform(TABLE_LOW, TABLE_HIGH, 20_000), np.arange(TABLE_LOW, TABLE_HIGH, 0.25), [TABLE_HIGH - 1e-9]]
    )
    for x in log_rate:
        log_z, mean = interpolated_terms(x, table, upper)
        exact_log_z, exact_mean = truncated_poisson_terms(x, upper)
        assert abs(log_z - exact_log_z) <= TABLE_LOG_Z_TOLERANCE + 1e-15 * abs(exact_log_z)
        assert abs(mean - exact_mean) <= TABLE_MEAN_TOLERANCE


def test_the_interpolated_mean_is_the_derivative_of_the_interpolated_log_normaliser():
    # the sampler's gradient must be the derivative of its log density: a five-point difference at the middle of
    # intervals (the interpolant is a quintic there; its error is far below the tolerance)
    table, step = truncated_poisson_table(8), 1e-3

    def log_z(x):
        return interpolated_terms(x, table, 8)[0]

    for x in (np.arange(-6 * 64, 6 * 64, 7) + 0.5) / 64:
        difference = (-log_z(x + 2 * step) + 8 * log_z(x + step) - 8 * log_z(x - step) + log_z(x - 2 * step)) / (
            12 * step
        )
        assert interpolated_terms(x, table, 8)[1] == pytest.approx(difference, abs=1e-9)


@pytest.mark.parametrize("log_rate", [-25.0, 20.0, 35.0, np.nan])
def test_outside_the_table_the_terms_are_exact(log_rate):
    table = truncated_poisson_table(8)
    got, exact = interpolated_terms(log_rate, table, 8), truncated_poisson_terms(log_rate, 8)
    assert got == exact or (np.isnan(got[0]) and np.isnan(exact[0]))


def test_a_bound_too_large_to_tabulate_takes_the_exact_terms_and_cannot_overflow():
    table = truncated_poisson_table(64)
    assert table.shape == (1, 12) and np.isnan(table).all()
    for x in [-3.0, 5.0, 12.0, 25.0, 29.0]:  # lambda^64 overflows from log lambda 11.1 on
        log_z, mean = interpolated_terms(x, table, 64)
        assert np.isfinite(log_z) and 0 <= mean <= 64
        assert log_z == pytest.approx(truncated_poisson_log_normaliser_numpy(np.array([x]), 64)[0], rel=1e-12)
    with pytest.raises(ValueError, match="0..64"):
        truncated_poisson_table(65)


@pytest.mark.parametrize("upper", [0, 1, 8, 40])
def test_candidate_log_probabilities_are_eq_1_at_every_value(upper):
    log_rate = np.random.default_rng(upper).normal(0.0, 3.0, (7, 5))  # cells x draws
    got = candidate_log_probabilities(log_rate, upper)
    assert got.shape == (7, upper + 1, 5)  # cells x values x draws
    r = np.arange(upper + 1)
    log_z = truncated_poisson_log_normaliser_numpy(log_rate, upper)
    expected = log_rate[..., None] * r - log_factorials(upper) - log_z[..., None]
    np.testing.assert_allclose(got, np.moveaxis(expected, -1, 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.exp(got).sum(axis=1), 1.0, rtol=1e-12)
