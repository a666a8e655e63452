"""The blocked Gibbs sampler and its exact moves (``bayessdc.models.dpmpm.gibbs``, ``.moves``), against the
prior with a flat likelihood and against the exact posterior of small problems by enumeration."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.models.dpmpm import (
    SMALL_CELL,
    DPMPMPriors,
    DPMPMSynthesizer,
    GibbsSettings,
    build_model,
    model_hyperparameters,
    prepare_categorical,
    run_gibbs,
)
from bayessdc.models.dpmpm.moves import log_allocation_prob, swap_log_ratio


@pytest.mark.parametrize("alpha_update", ["collapsed", "conditional"])
def test_with_a_flat_likelihood_the_sampler_returns_the_prior(alpha_update):
    """One level per variable: the posterior of alpha and of the partition is the prior (eq. 2-5)."""
    from scipy import stats

    n, K = 60, 10
    data = prepare_categorical(pd.DataFrame({"a": np.zeros(n, int), "b": np.zeros(n, int)}), ["b"], ["a"])
    hyper = model_hyperparameters(build_model(data, K=K), data)
    settings = GibbsSettings(draws=60_000, burn=1000, chains=2, thin=5, alpha_update=alpha_update)
    draws = run_gibbs(data, hyper, settings, seed=3)
    # prior by direct simulation: alpha ~ Gamma(0.25, rate 0.25), sticks, n categorical draws
    rng = np.random.default_rng(0)
    alpha = rng.gamma(0.25, 4.0, 20_000)
    beta = np.column_stack([rng.beta(1.0, alpha[:, None], (20_000, K - 1)), np.ones(20_000)])
    pi = beta * np.column_stack([np.ones(20_000), np.cumprod(1 - beta[:, :-1], axis=1)])
    cdf = np.cumsum(pi, axis=1)
    z = (rng.random((20_000, n, 1)) * cdf[:, None, -1:] > cdf[:, None, :]).sum(axis=2)
    occupied = np.array([len(np.unique(row)) for row in z])
    # each share of the occupied components within 4 Monte Carlo standard errors of the prior's (from the ESS of
    # the indicator, and the direct simulation's own error): a fixed tolerance of 0.035 held for one random
    # stream and not another, as the alpha | sticks update mixes about three times slower than the collapsed one
    import arviz as az

    for k in (1, 2, K):
        hit = (draws["occupied"] == k).astype(float)
        p = (occupied == k).mean()
        error = np.sqrt(p * (1 - p) / float(az.ess(hit)) + p * (1 - p) / len(occupied))
        assert abs(hit.mean() - p) < 4 * error, (k, hit.mean(), p, error)
    # alpha below the prior's median half of the time, within 4 Monte Carlo standard errors
    below = (draws["alpha"] < stats.gamma(0.25, scale=4.0).median()).astype(float)
    assert abs(below.mean() - 0.5) < 4 * np.sqrt(0.25 / float(az.ess(below)))
    assert np.median(draws["alpha"]) == pytest.approx(stats.gamma(0.25, scale=4.0).median(), rel=0.5)


def test_label_swap_ratio_is_the_change_of_the_allocation_probability():
    rng = np.random.default_rng(4)
    for _ in range(200):
        K = int(rng.integers(2, 12))
        n_k = rng.integers(0, 50, K) * (rng.random(K) < 0.7)
        j, l = rng.choice(K, 2, replace=False)
        alpha = float(rng.gamma(1.0, 2.0))
        swapped = n_k.copy()
        swapped[[j, l]] = swapped[[l, j]]
        full = log_allocation_prob(swapped, alpha, 1.0) - log_allocation_prob(n_k, alpha, 1.0)
        assert swap_log_ratio(n_k, int(j), int(l), alpha, 1.0) == pytest.approx(full, abs=1e-9)


def _occupied_by_enumeration(data, K: int, alpha: float, power: float = 1.0) -> np.ndarray:
    """Posterior of the number of occupied components by summing over all K^n allocations (sticks and theta
    integrated out, flat Dirichlet priors; the likelihood to ``power``: ``Gamma(1 + power c)`` terms)."""
    import itertools

    from scipy.special import betaln, gammaln

    probability = np.zeros(K + 1)
    for z in itertools.product(range(K), repeat=data.n_records):
        z = np.array(z)
        n_k = np.bincount(z, minlength=K)
        tail = n_k[::-1].cumsum()[::-1] - n_k  # records in later components
        log_w = sum(betaln(1 + n_k[k], alpha + tail[k]) - betaln(1, alpha) for k in range(K - 1))
        for j, d in enumerate(data.n_levels):
            for k in range(K):
                c = np.bincount(data.codes[z == k, j], minlength=d)
                log_w += gammaln(d) - gammaln(d + power * c.sum()) + gammaln(1.0 + power * c).sum()
        probability[len(np.unique(z))] += np.exp(log_w)
    return probability / probability.sum()


@pytest.mark.parametrize(
    ("exchange_moves", "label_swaps", "split_merge_moves", "pattern_moves"),
    [(0, True, 0, 0), (2, True, 0, 0), (3, False, 0, 0), (0, False, 20, 0), (0, False, 0, 3)],
)
def test_number_of_occupied_components_matches_the_exact_posterior_by_enumeration(
    exchange_moves, label_swaps, split_merge_moves, pattern_moves
):
    """Seven records, K = 3, alpha pinned near 1 by its prior: the posterior of the partition (sticks and theta
    integrated out) by summing over all 3^7 allocations, against the sampler (allocations, label swaps,
    level exchanges, collapsed alpha, sticks, theta). Dropping the stick factor from the exchange's acceptance
    ratio moves these probabilities by 0.08-0.35; dropping the 1 / E of choosing the empty component from the
    split-merge ratio moves them by up to 0.18 (K = 4). The pattern exchanges are the level exchange on the
    cells of one value of ``a``."""

    frame = pd.DataFrame({"a": [0, 0, 0, 1, 1, 0, 1], "b": [0, 0, 1, 1, 1, 1, 2]})
    data = prepare_categorical(frame, ["b"], ["a"])
    K = 3
    probability = _occupied_by_enumeration(data, K, alpha=1.0)
    priors = DPMPMPriors(a_alpha=20_000.0, b_alpha=20_000.0)
    hyper = model_hyperparameters(build_model(data, K=K, priors=priors), data)
    settings = GibbsSettings(
        draws=300_000,
        burn=1000,
        chains=2,
        thin=1,
        exchange_moves=exchange_moves,
        label_swaps=label_swaps,
        split_merge_moves=split_merge_moves,
        pattern_moves=pattern_moves,
    )
    draws = run_gibbs(data, hyper, settings, seed=8)
    occupied = np.bincount(draws["occupied"].ravel(), minlength=K + 1) / draws["occupied"].size
    assert np.allclose(occupied, probability, atol=0.006), (occupied, probability)


def test_power_posterior_matches_enumeration():
    """The sampler at ``likelihood_power`` 0.4 against the power posterior by enumeration (seven records, K = 3):
    theta integrated out of ``prod theta^(0.4 c)`` gives ``Gamma(1 + 0.4 c)`` terms. At power 1 the same sums
    give other probabilities (checked here too), so a sampler that ignored the power would fail."""

    frame = pd.DataFrame({"a": [0, 0, 0, 1, 1, 0, 1], "b": [0, 0, 1, 1, 1, 1, 2]})
    data = prepare_categorical(frame, ["b"], ["a"])
    K = 3
    tempered = _occupied_by_enumeration(data, K, alpha=1.0, power=0.4)
    assert np.abs(tempered - _occupied_by_enumeration(data, K, alpha=1.0)).max() > 0.05
    hyper = model_hyperparameters(build_model(data, K=K, priors=DPMPMPriors(a_alpha=20_000.0, b_alpha=20_000.0)), data)
    # exchange moves are requested and must be skipped (their ratio is written for power 1)
    settings = GibbsSettings(draws=300_000, burn=1000, chains=2, thin=1, exchange_moves=2, likelihood_power=0.4)
    draws = run_gibbs(data, hyper, settings, seed=3)
    occupied = np.bincount(draws["occupied"].ravel(), minlength=K + 1) / draws["occupied"].size
    assert np.allclose(occupied, tempered, atol=0.006), (occupied, tempered)
    with pytest.raises(ValueError, match="likelihood_power"):
        GibbsSettings(likelihood_power=0.0)
    with pytest.raises(ValueError, match="must not feed a release"):
        DPMPMSynthesizer(settings=GibbsSettings(likelihood_power=0.5))


def test_split_merge_moves_keep_the_exact_posterior_with_a_large_cell():
    """A cell of ten records (above the small-cell threshold: one multinomial draw, the split-merge then
    splits it record by record) and three single records, K = 4: the posterior of the number of occupied
    components by summing over every allocation of the cells' counts (multinomial coefficients included),
    against a sampler driven mainly by split-merge moves (no level exchanges, no label swaps)."""
    frame = pd.DataFrame({"a": [0] * 10 + [1, 1, 0], "b": [0] * 10 + [1, 2, 2]})
    data = prepare_categorical(frame, ["b"], ["a"])
    assert data.cell_counts.max() > SMALL_CELL
    K, alpha = 4, 1.0

    probability = _enumerated_occupied(data, K, alpha)
    priors = DPMPMPriors(a_alpha=20_000.0, b_alpha=20_000.0)
    hyper = model_hyperparameters(build_model(data, K=K, priors=priors), data)
    settings = GibbsSettings(
        draws=200_000, burn=1000, chains=2, thin=1, exchange_moves=0, label_swaps=False, split_merge_moves=10
    )
    draws = run_gibbs(data, hyper, settings, seed=4)
    occupied = np.bincount(draws["occupied"].ravel(), minlength=K + 1) / draws["occupied"].size
    assert np.allclose(occupied, probability, atol=0.006), (occupied, probability)


def test_allocation_of_large_cells_keeps_the_exact_posterior():
    """Cells of 30 and 12 records (above the small-cell threshold: each one sparse multinomial draw by
    conditional binomials, largest first, then single trials) and two single records, K = 3, the default
    moves (label swaps, level exchanges, collapsed alpha): the posterior of the number of occupied components
    by summing over every allocation of the cells' counts, against the sampler."""
    frame = pd.DataFrame({"a": [0] * 30 + [1] * 12 + [1, 0], "b": [0] * 30 + [1] * 12 + [2, 1]})
    data = prepare_categorical(frame, ["b"], ["a"])
    assert sorted(data.cell_counts)[-2] > SMALL_CELL
    K, alpha = 3, 1.0

    probability = _enumerated_occupied(data, K, alpha)
    priors = DPMPMPriors(a_alpha=20_000.0, b_alpha=20_000.0)
    hyper = model_hyperparameters(build_model(data, K=K, priors=priors), data)
    settings = GibbsSettings(draws=200_000, burn=1000, chains=2, thin=1)
    draws = run_gibbs(data, hyper, settings, seed=5)
    occupied = np.bincount(draws["occupied"].ravel(), minlength=K + 1) / draws["occupied"].size
    assert np.allclose(occupied, probability, atol=0.006), (occupied, probability)


def _enumerated_occupied(data, K: int, alpha: float) -> np.ndarray:
    """Exact posterior of the number of occupied components (alpha fixed, theta and the sticks integrated out),
    by summing over every allocation of every cell's count to the K components."""
    import itertools

    from scipy.special import betaln, gammaln

    def compositions(n, k):
        for cut in itertools.combinations(range(n + k - 1), k - 1):
            bounds = (-1, *cut, n + k - 1)
            yield np.array([bounds[i + 1] - bounds[i] - 1 for i in range(k)])

    probability = np.zeros(K + 1)
    for allocation in itertools.product(*[list(compositions(int(n), K)) for n in data.cell_counts]):
        allocation = np.array(allocation)  # (cell, component)
        n_k = allocation.sum(axis=0)
        tail = n_k[::-1].cumsum()[::-1] - n_k
        log_w = sum(betaln(1 + n_k[k], alpha + tail[k]) - betaln(1, alpha) for k in range(K - 1))
        log_w += sum(gammaln(n + 1) - gammaln(a + 1).sum() for n, a in zip(data.cell_counts, allocation, strict=True))
        for j, d in enumerate(data.n_levels):
            for k in range(K):
                c = np.bincount(data.cell_codes[:, j], weights=allocation[:, k], minlength=d)
                log_w += gammaln(d) - gammaln(d + c.sum()) + gammaln(1.0 + c).sum()
        probability[(n_k > 0).sum()] += np.exp(log_w)
    return probability / probability.sum()


@pytest.mark.parametrize("shape", [1.0, 0.04, 0.3, 0.999, 2.5, 40.0])
def test_gamma_draws_of_the_sweep_follow_the_gamma_distribution(shape):
    """The sweep's gamma draws (theta: ``_gamma``, a ziggurat exponential at shape 1; the sticks: ``_log_gamma_draw``
    in logs, exact for small shapes) against scipy's gamma cdf by Kolmogorov-Smirnov over 100,000 draws."""
    import numba

    from bayessdc.models.dpmpm.gibbs import _gamma, _log_gamma_draw

    @numba.njit
    def draws(rng, shape, size):  # noqa: ANN001, ANN202
        out = np.empty((2, size))
        for i in range(size):
            out[0, i] = _gamma(rng, shape)
            out[1, i] = _log_gamma_draw(rng, shape)
        return out

    from scipy import stats

    x, log_y = draws(np.random.default_rng(int(shape * 1000)), shape, 100_000)
    assert stats.kstest(x, stats.gamma(shape).cdf).pvalue > 1e-3
    # log Y against the cdf of log Gamma(shape): P(log Y <= t) = P(Y <= e^t), in logs for tiny shapes
    assert stats.kstest(log_y, lambda t: np.exp(stats.gamma(shape).logcdf(np.exp(t)))).pvalue > 1e-3
    assert np.all(np.isfinite(log_y))
