"""Exact conditional draws of the labels and log rates (``bayessdc.models.dp_areal.conditionals``)."""

import math

import numpy as np
from scipy import stats

from bayessdc.models.dp_areal import (
    build_model,
    cell_posterior,
    draw_poisson_lognormal_log_rate,
    label_gibbs_step,
    poisson_lognormal_moments,
    prepare_areal,
    simulate_areal,
)


def test_conditional_log_rate_draws_are_exact():
    rng = np.random.default_rng(4)
    for count, location, precision in ((0, 0.5, 1.0), (3, -1.0, 3.0), (60, 1.0, 0.5), (1, 2.0, 20.0)):
        draws = draw_poisson_lognormal_log_rate(np.full(40_000, count), np.full(40_000, location), precision, rng)
        _, mean = poisson_lognormal_moments(np.array([count]), np.array([location]), precision, nodes=40)
        # variance by the same quadrature: E[x^2] - E[x]^2
        grid = np.linspace(mean[0] - 12, mean[0] + 12, 20001)
        log_f = count * grid - np.exp(grid) - 0.5 * precision * (grid - location) ** 2
        f = np.exp(log_f - log_f.max())
        f /= f.sum()
        sd = math.sqrt((f * grid**2).sum() - (f * grid).sum() ** 2)
        assert abs(draws.mean() - mean[0]) < 4 * sd / math.sqrt(draws.size)
        assert abs(draws.std() / sd - 1) < 0.03
        # Kolmogorov-Smirnov against the numerical CDF
        cdf = np.cumsum(f)
        statistic = np.abs(np.searchsorted(np.sort(draws), grid) / draws.size - cdf).max()
        assert statistic < 1.63 / math.sqrt(draws.size) + 1e-3  # 1% level


def test_label_gibbs_step_draws_from_the_full_conditional():
    frame, _ = simulate_areal(30, (2, 2), seed=5)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    K = 4
    model = build_model(data, K, labels="explicit")
    point = model.initial_point(random_seed=2)
    step = label_gibbs_step(model, data, rng=11)
    location, rho, tau = step.parameters(point)
    log_resp, _ = cell_posterior(location, rho, float(tau), data)
    draws = 300
    counts = np.zeros((K, data.n_distinct))
    cell = data.cell_distinct.ravel()
    for _ in range(draws):
        new, step_stats = step.step(point)
        np.add.at(counts, (new["component_label"].ravel(), cell), 1.0)
        assert step_stats[0]["occupied_components"] == np.unique(new["component_label"]).size
    expected = np.exp(log_resp) * data.distinct_weight * draws
    # Pearson's statistic over the (component, pair) cells with enough expected draws
    enough = expected > 20
    chi2 = (((counts - expected) ** 2 / expected)[enough]).sum()
    dof = enough.sum() - enough.any(axis=0).sum()
    assert chi2 < stats.chi2.ppf(0.999, dof)
    # the same seed gives the same labels
    again = label_gibbs_step(model, data, rng=11).step(point)[0]["component_label"]
    first = label_gibbs_step(model, data, rng=11).step(point)[0]["component_label"]
    assert np.array_equal(again, first)
