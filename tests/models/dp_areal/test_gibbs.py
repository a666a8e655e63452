"""The DP-areal's Gibbs sampler (``bayessdc.models.dp_areal.gibbs``): every update against its exact distribution.

Each test's tolerance is a number of Monte Carlo standard errors (batch means over the chain), so that no verdict
rests on one seed's draw or on a CPU's last bits.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from bayessdc.models.dp_areal import DPArealPriors, DPArealSynthesizer, prepare_areal, simulate_areal
from bayessdc.models.dp_areal.gibbs import (
    SCALARS,
    DPArealGibbsSettings,
    GibbsState,
    _Problem,
    _update_component,
    covariance_matrix,
    initial_state,
    slice_covariance,
)
from bayessdc.models.dp_areal.lkj import cpc_beta_parameters
from bayessdc.models.dp_areal.marginal import identified_basis
from bayessdc.models.dp_areal.quadrature import log_poisson_lognormal
from bayessdc.models.dp_areal.records import (
    ChainState,
    CoefficientPrior,
    Covariance,
    CovariancePrior,
    Design,
    PairData,
    Scatter,
)


def _z(draws: np.ndarray, expected: float, batches: int = 40) -> float:
    """Standardised difference of the chain's mean from ``expected``, the standard error by batch means."""
    draws = np.asarray(draws, dtype=float)
    means = draws[: len(draws) // batches * batches].reshape(batches, -1).mean(axis=1)
    return float((draws.mean() - expected) / (means.std(ddof=1) / math.sqrt(batches)))


def test_the_covariance_update_with_no_data_keeps_the_lkj_half_t_prior():
    """With no component (n = 0) the slice sampler of Sigma_phi must leave its prior, LKJ(2) x half-t(3, 0, 1),
    invariant: P(sigma_r < its median) = 1/2 (the half-t median is t_3's 75% quantile), E[cpc_j^2] = 1 / (2 b_j +
    1) (a 2 Beta(b_j, b_j) - 1 variable), and every correlation of Omega has E[rho^2] = 1 / (2 (eta - 1 + R / 2)
    + 1), the LKJ marginal (Lewandowski et al. 2009) that checks the Cholesky construction too."""
    R, eta = 4, 2.0
    b = cpc_beta_parameters(R, eta)
    rng = np.random.default_rng(1)
    sigma, cpc = np.ones(R), np.zeros(b.size)
    covariance, no_data, prior = Covariance(sigma, cpc), Scatter(np.zeros((R, R)), 0), CovariancePrior(3.0, 1.0, b)
    draws_sigma, draws_cpc, draws_rho = [], [], []
    for _ in range(6000):
        slice_covariance(rng, covariance, no_data, prior)
        draws_sigma.append(sigma.copy())
        draws_cpc.append(cpc.copy())
        S = covariance_matrix(sigma, cpc)
        omega = S / np.sqrt(np.outer(np.diag(S), np.diag(S)))
        draws_rho.append(omega[np.tril_indices(R, -1)])
    sigma_draws, cpc_draws, rho_draws = map(np.array, (draws_sigma, draws_cpc, draws_rho))
    median = stats.t(3).ppf(0.75)
    for r in range(R):
        assert abs(_z(sigma_draws[:, r] < median, 0.5)) < 4.5, r
    for j in range(b.size):
        assert abs(_z(cpc_draws[:, j] ** 2, 1 / (2 * b[j] + 1))) < 4.5, j
    marginal = eta - 1 + R / 2
    for j in range(rho_draws.shape[1]):
        assert abs(_z(rho_draws[:, j] ** 2, 1 / (2 * marginal + 1))) < 4.5, j


def _empty_problem(K: int, priors: DPArealPriors) -> tuple[_Problem, object]:
    frame, _ = simulate_areal(6, (2, 2), seed=0)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    problem = _Problem.of(data, K, priors, 16)
    return problem, data


def test_a_sweep_with_no_cells_draws_every_parameter_from_its_prior():
    """With every pair's weight 0 the likelihood is flat: every step of the sweep must then leave the prior of
    eq. (9)-(12) invariant. alpha, tau_lambda and the precisions are Gamma(1, 1) (mean 1); the first stick has
    E[v_1] = E[1 / (1 + alpha)] = e E_1(1); mu and mu_phi are symmetric about 0; sigma has the half-t median."""
    priors = DPArealPriors()
    problem, data = _empty_problem(5, priors)
    problem = _Problem(**{**problem.__dict__, "weight": np.zeros_like(problem.weight)})
    rng = np.random.default_rng(2)
    state = initial_state(rng, data, problem)
    rows = []
    for _ in range(8000):
        problem.sweep(rng, state)
        rows.append([*state.scalars, state.stick[0], state.mean[0] < 0, state.mean[1] < 0, state.sigma[0]])
    rows = np.array(rows)
    for i, name in enumerate(SCALARS):
        assert abs(_z(rows[:, i], 1.0)) < 4.5, name
    assert abs(_z(rows[:, 5], math.e * special.exp1(1.0))) < 4.5
    assert abs(_z(rows[:, 6], 0.5)) < 4.5 and abs(_z(rows[:, 7], 0.5)) < 4.5
    assert abs(_z(rows[:, 8] < stats.t(3).ppf(0.75), 0.5)) < 4.5


def test_one_components_coefficients_follow_their_conditional_worked_by_quadrature():
    """One pattern (r = 1): the conditional of w = V' beta given the allocations is the prior N(V' a, V' S_0 V)
    times prod_d p(c_d | basis w, tau)^{n_d}, here on a fine grid with the same quadrature. The independence MH
    draws must match its mean, standard deviation and quartiles; beta's direction that the likelihood does not see
    must keep its prior conditional variance u' S_0 u - u' S_0 V C^-1 V' S_0 u."""
    design = np.array([[1.0]])
    V, basis = identified_basis(design)
    full = np.hstack([np.ones((1, 1)), design])
    count = np.array([0.0, 3.0, 7.0])
    weight = np.array([2, 1, 1])
    tau = 1.7
    mean = np.array([0.4, -0.2])
    S0 = np.array([[0.8, 0.0], [0.0, 0.5]])
    allocation = weight[None, :].astype(np.int64).copy()
    beta = np.zeros((1, 2))
    counters = np.zeros(3, dtype=np.int64)
    rng = np.random.default_rng(3)
    c = np.ascontiguousarray
    state = ChainState(allocation, np.ones(0), beta, mean, np.ones(0), np.zeros(0), np.ones(5), counters)
    prior = CoefficientPrior(mean, S0, np.linalg.cholesky(S0))
    pairs = PairData(count, np.zeros(3, dtype=np.int64), weight.astype(np.int64), special.gammaln(count + 1), 16)
    design = Design(c(full.T), c(V), c(V.T), c(basis), c(basis.T))
    draws = []
    for _ in range(6000):
        _update_component(rng, 0, state, prior, tau, pairs, design)
        draws.append(beta[0].copy())
    draws = np.array(draws)
    w = draws @ V[:, 0]
    C = float(V[:, 0] @ S0 @ V[:, 0])
    grid = np.linspace(-6, 8, 4001)
    log_post = stats.norm(V[:, 0] @ mean, math.sqrt(C)).logpdf(grid)
    for n, y in zip(weight, count, strict=True):
        log_post += n * log_poisson_lognormal(np.full(grid.size, y), basis[0, 0] * grid, tau)
    density = np.exp(log_post - log_post.max())
    density /= density.sum()
    expected_mean = float(density @ grid)
    expected_sd = math.sqrt(float(density @ (grid - expected_mean) ** 2))
    assert abs(_z(w, expected_mean)) < 4.5
    assert abs(_z((w - expected_mean) ** 2, expected_sd**2)) < 4.5
    for q in (0.25, 0.5, 0.75):
        cut = grid[np.searchsorted(np.cumsum(density), q)]
        assert abs(_z(w < cut, q)) < 4.5, q
    assert 0.5 < counters[0] / counters[1] <= 1.0  # the t proposal at the mode is good: most moves accepted
    u = np.array([V[1, 0], -V[0, 0]])  # the direction orthogonal to V
    variance = u @ S0 @ u - (u @ S0 @ V[:, 0]) ** 2 / C
    assert abs(_z((draws @ u - np.mean(draws @ u)) ** 2, variance)) < 4.5
    assert full.shape == (1, 2)


def _simulate_counts(rng, state: GibbsState, problem: _Problem, labels: int) -> np.ndarray:
    """Counts of every (pattern, label) cell drawn from eq. (7)-(9) given the state's parameters."""
    rho = np.exp(state.log_rho())
    location = state.beta @ problem.full_t
    B = location.shape[1]
    z = rng.choice(rho.size, size=(B, labels), p=rho / rho.sum())
    x = rng.normal(location[z, np.arange(B)[:, None]], 1 / math.sqrt(state.scalars[1]))
    return rng.poisson(np.exp(np.minimum(x, 8.0)))


def _problem_of_counts(counts: np.ndarray, template: _Problem) -> _Problem:
    pairs, weight = np.unique(
        np.column_stack([np.repeat(np.arange(counts.shape[0]), counts.shape[1]), counts.ravel()]), axis=0,
        return_counts=True,
    )  # fmt: skip
    count = pairs[:, 1].astype(float)
    return _Problem(**{**template.__dict__, "count": count, "pattern": np.ascontiguousarray(pairs[:, 0]),
                       "weight": weight.astype(np.int64), "log_fact": special.gammaln(count + 1)})  # fmt: skip


@pytest.mark.parametrize("split_merges", [0, 2])
def test_geweke_joint_distribution_test_on_a_tiny_table(split_merges):
    """Geweke (2004): alternating a sweep with counts freshly simulated from the current parameters has the
    prior as its stationary distribution. tau_lambda, alpha, the precisions, mu and sigma must match their priors
    (priors tight enough that the counts stay small: 2 patterns x 20 labels, K = 4), and so must the number of
    components holding a cell, with and without the split-merge moves. (A merge proposal's density left out of
    the split-merge ratio moves alpha's mean by 9.6 standard errors here; with 6 labels, by less than 4.5.)"""
    priors = DPArealPriors(a_alpha=2.0, b_alpha=2.0, tau_theta=(20.0, 10.0), tau_phi=(20.0, 10.0),
                           tau_mu=(20.0, 10.0), tau_lambda=(20.0, 10.0), sigma_scale=0.3)  # fmt: skip
    frame, _ = simulate_areal(20, (2,), seed=0)
    data = prepare_areal(frame, "label", ["v0"])
    template = _Problem.of(data, 4, priors, 16, 1, split_merges)
    rng = np.random.default_rng(split_merges)
    state = initial_state(rng, data, template)
    state.scalars[:] = [1.0, 2.0, 2.0, 2.0, 2.0]
    state.sigma[:] = 0.3
    state.beta[:, 0] = rng.normal(0, 0.5, 4)
    state.mean[0] = 0.0
    rows = []
    for _ in range(20000):
        counts = _simulate_counts(rng, state, template, data.n_labels)
        problem = _problem_of_counts(counts, template)
        state.allocation = np.zeros((4, problem.count.size), dtype=np.int64)
        problem.sweep(rng, state)
        rows.append([*state.scalars, state.mean[0], state.sigma[0], (state.allocation.sum(axis=1) > 0).sum()])
    rows = np.array(rows)[2000:]
    expected = {"alpha": 1.0, "tau_lambda": 2.0, "tau_theta": 2.0, "tau_phi": 2.0, "tau_mu": 2.0}
    for i, name in enumerate(SCALARS):
        assert abs(_z(rows[:, i], expected[name])) < 4.5, name
    assert abs(_z(rows[:, 5] ** 2, 10 / 19)) < 4.5  # E[mu^2] = E[1 / tau_mu] = rate / (shape - 1)
    assert abs(_z(rows[:, 6] < 0.3 * stats.t(3).ppf(0.75), 0.5)) < 4.5
    # the components holding a cell: their prior mean by independent draws of alpha, the sticks and 40 labels
    prior = np.random.default_rng(99)
    alpha = prior.gamma(2.0, 1 / 2.0, 100_000)
    v = prior.beta(1.0, alpha[:, None], (alpha.size, 3))
    rho = np.column_stack([v, np.ones(alpha.size)]) * np.cumprod(np.column_stack([np.ones(alpha.size), 1 - v]), axis=1)
    labels = (prior.random((alpha.size, 40, 1)) > np.cumsum(rho, axis=1)[:, None, :]).sum(axis=2)
    occupied = np.array([np.unique(row).size for row in np.minimum(labels, 3)])
    assert abs(_z(rows[:, 7], occupied.mean())) < 4.5
    assert (state.counters[3] > 500) == (split_merges > 0)  # the moves were made, and accepted often


def test_recovery_on_counts_simulated_from_the_model_and_chains_grown_apart_are_the_same():
    """tau_lambda's 95% interval covers the truth on the 6 x 50 table of the NUTS tests (seed 7); chain 2 fitted
    alone is the chain 2 of a fit of three chains, bit for bit (chains are seeded one by one)."""
    frame, truth = simulate_areal(50, (2, 3), tau_lambda=4.0, seed=7)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    synthesizer = DPArealSynthesizer(K=8, settings=DPArealGibbsSettings(draws=150, burn=200, thin=4, chains=3))
    idata = synthesizer.fit(data, 5)
    tau = idata.posterior["tau_lambda"].to_numpy().ravel()
    assert np.quantile(tau, 0.025) < truth["tau_lambda"] < np.quantile(tau, 0.975)
    alone = synthesizer.fit(data, 5, chains=range(2, 3))
    assert alone.posterior["chain"].to_numpy().tolist() == [2]
    np.testing.assert_array_equal(alone.posterior["location"].isel(chain=0), idata.posterior["location"].isel(chain=2))
    assert int(idata.sample_stats["diverging"].sum()) == 0
