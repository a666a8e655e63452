"""The compiled NUTS (bayessdc.models.nuts) on posteriors whose answers are known exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit
from scipy.special import digamma, polygamma

from bayessdc.models.nuts import ChainDraws, run_chain, sample_chains

SDS = np.array([1.0, 10.0, 0.1, 3.0])
SHAPE = 3.0


@njit
def _known_logp_grad(theta, data):  # noqa: ANN001, ANN202
    """Independent normals with standard deviations ``data[0]``, and in the last coordinate the logarithm of a
    Gamma(shape ``data[1][0]``, rate 1) variable: density ``exp(a t - e^t)``, E = digamma(a), Var = trigamma(a)."""
    sds, shape = data
    grad = np.empty(theta.size)
    logp = 0.0
    for k in range(sds.size):
        logp -= 0.5 * (theta[k] / sds[k]) ** 2
        grad[k] = -theta[k] / sds[k] ** 2
    t = theta[sds.size]
    logp += shape[0] * t - math.exp(t)
    grad[sds.size] = shape[0] - math.exp(t)
    return logp, grad


@njit
def _known_runner(data, q_init, tune, draws, rng, target_accept, max_depth, step_size, inv_metric):  # noqa: ANN001, ANN202
    return run_chain(_known_logp_grad, data, q_init, tune, draws, rng, target_accept, max_depth, step_size, inv_metric)


DATA = (SDS, np.array([SHAPE]))


@pytest.fixture(scope="module")
def known():
    return sample_chains(_known_runner, DATA, SDS.size + 1, chains=4, tune=1000, draws=2000, seed=3)


def test_recovers_the_known_moments(known):
    x = known.position.reshape(-1, SDS.size + 1)
    n = x.shape[0]
    # the normals: mean 0 and sd as given (Monte Carlo error from an ESS of at least a quarter of the draws)
    assert np.all(np.abs(x[:, :4].mean(axis=0)) < 4 * SDS / math.sqrt(n / 4))
    assert np.allclose(x[:, :4].std(axis=0), SDS, rtol=0.06)
    # the log-gamma coordinate: mean digamma(3), variance trigamma(3)
    assert abs(x[:, 4].mean() - digamma(SHAPE)) < 4 * math.sqrt(polygamma(1, SHAPE) / (n / 4))
    assert abs(x[:, 4].var() / polygamma(1, SHAPE) - 1) < 0.08
    assert not known.diverging.any()


def test_adaptation_learns_the_scales_and_the_step_size(known):
    # the diagonal inverse metric estimates the posterior variances; the step size hits about the target 0.8
    ratio = known.inv_metric[:, :4] / SDS**2
    assert np.all((ratio > 0.6) & (ratio < 1.6))
    assert 0.65 < known.accept.mean() < 0.95
    assert known.tree_depth.max() <= 10 and known.n_steps.min() >= 1


def test_same_seed_same_draws_whatever_the_cores(known):
    a = sample_chains(_known_runner, DATA, 5, chains=2, tune=100, draws=50, seed=8, cores=1)
    b = sample_chains(_known_runner, DATA, 5, chains=2, tune=100, draws=50, seed=8, cores=2)
    c = sample_chains(_known_runner, DATA, 5, chains=2, tune=100, draws=50, seed=9, cores=1)
    assert np.array_equal(a.position, b.position)
    assert not np.array_equal(a.position, c.position)
    assert not np.array_equal(a.position[0], a.position[1])  # chains are seeded apart


def test_short_warm_up_uses_stans_proportions():
    # tune < 150: buffers of 15% and 10%, one window between (Stan's rule); the chain still adapts and samples
    draws = sample_chains(_known_runner, DATA, 5, chains=1, tune=60, draws=200, seed=1)
    assert np.all(draws.inv_metric != 1.0)
    assert np.isfinite(draws.position).all()


def test_continued_chains_keep_their_adaptation_and_the_known_moments(known):
    """Chains continued without warm-up start at their last draw with their adapted step size and metric, and
    their new draws have the known moments (the same Markov kernel: as if the chains had run longer)."""
    more = sample_chains(_known_runner, DATA, SDS.size + 1, chains=4, tune=0, draws=2000, seed=4, resume=known)
    np.testing.assert_array_equal(more.step_size, known.step_size)
    np.testing.assert_array_equal(more.inv_metric, known.inv_metric)
    x = more.position.reshape(-1, SDS.size + 1)
    n = x.shape[0]
    assert np.all(np.abs(x[:, :4].mean(axis=0)) < 4 * SDS / math.sqrt(n / 4))
    assert np.allclose(x[:, :4].std(axis=0), SDS, rtol=0.06)
    assert abs(x[:, 4].mean() - digamma(SHAPE)) < 4 * math.sqrt(polygamma(1, SHAPE) / (n / 4))
    assert 0.65 < more.accept.mean() < 0.95 and not more.diverging.any()
    with pytest.raises(ValueError, match="holds 4 chains, not 2"):
        sample_chains(_known_runner, DATA, SDS.size + 1, chains=2, tune=0, draws=10, resume=known)
    with pytest.raises(ValueError, match="6 coordinates per chain"):
        sample_chains(_known_runner, DATA, SDS.size + 2, chains=4, tune=0, draws=10, resume=known)
    broken = ChainDraws.adapted_state(known.position[:, -1], np.array([0.1, np.nan, 0.1, 0.1]), known.inv_metric)
    with pytest.raises(ValueError, match="finite positive"):
        sample_chains(_known_runner, DATA, SDS.size + 1, chains=4, tune=0, draws=10, resume=broken)
