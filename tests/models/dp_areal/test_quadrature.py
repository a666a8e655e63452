"""The Poisson-lognormal integral and the compiled likelihood Ops (``bayessdc.models.dp_areal.quadrature``)."""

import math

import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

from bayessdc.models.dp_areal import (
    PoissonLognormalGivenLabels,
    PoissonLognormalMixture,
    log_poisson_lognormal,
    prepare_areal,
    simulate_areal,
)


def _exact_log_marginal(count: int, location: float, precision: float) -> float:
    """``log int Poisson(c | e^x) N(x | m, 1/tau) dx`` by adaptive scipy quadrature around the mode."""
    sd = 1.0 / math.sqrt(precision)

    def log_f(x):
        return stats.poisson.logpmf(count, math.exp(x)) + stats.norm.logpdf(x, location, sd)

    lo = min(location, math.log(count + 0.5)) - 12 * sd - 5
    hi = max(location, math.log(count + 0.5)) + 12 * sd + 5
    top = optimize.minimize_scalar(lambda x: -log_f(x), bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    value, _ = integrate.quad(lambda x: math.exp(log_f(x) + top.fun), lo, hi, points=[top.x], limit=500, epsrel=1e-12)
    return math.log(value) - top.fun


# ---------------------------------------------------------------------------------------------------
# The Poisson-lognormal integral and the exact conditional draws


def test_quadrature_matches_adaptive_integration_over_the_range_that_matters():
    worst_wide, worst_tight = 0.0, 0.0
    for count in (0, 1, 2, 5, 20, 245):
        for location in (-6.0, -2.0, 0.0, 2.0, 5.0):
            for precision in (0.2, 0.5, 1.0, 3.0, 10.0, 50.0):
                got = log_poisson_lognormal(np.array([count]), np.array([location]), precision)[0]
                error = abs(got - _exact_log_marginal(count, location, precision))
                worst_wide = max(worst_wide, error)
                if precision >= 1.0:
                    worst_tight = max(worst_tight, error)
    assert worst_tight < 1e-6
    assert worst_wide < 5e-4


def test_quadrature_stays_exact_far_from_the_counts():
    # NUTS trajectories visit locations far above small counts (an empty component wandering off). The grid
    # must still sit on the mass: Newton's method on the mode moved by one unit per step from the right, and
    # four steps left (0, 17.7, 1.86) off by 17,000 nats, a source of divergences.
    for count in (0, 1, 3):
        for location in (8.0, 12.0, 17.7, 30.0, -25.0):
            for precision in (1.0, 1.86, 3.0, 20.0):
                got = log_poisson_lognormal(np.array([count]), np.array([location]), precision)[0]
                assert got == pytest.approx(_exact_log_marginal(count, location, precision), abs=1e-6)


def test_the_likelihood_op_has_the_quadrature_value_and_the_gradient_of_its_value():
    import pytensor
    import pytensor.tensor as pt

    frame, _ = simulate_areal(40, (2, 3), seed=3)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    rng = np.random.default_rng(0)
    K = 6
    location = rng.normal(0.0, 1.5, (K, data.n_patterns))
    location[4] += 16.0  # far above the counts: the compiled rule must match there too
    log_rho = np.log(rng.dirichlet(np.ones(K)))
    tau = 2.5
    loc_t, rho_t, tau_t = pt.dmatrix(), pt.dvector(), pt.dscalar()
    value, *_ = PoissonLognormalMixture(nodes=16)(
        loc_t,
        rho_t,
        tau_t,
        data.distinct_count.astype(float),
        data.distinct_pattern,
        data.distinct_weight.astype(float),
        special.gammaln(data.distinct_count + 1.0),
    )
    f = pytensor.function([loc_t, rho_t, tau_t], [value, *pytensor.grad(value, [loc_t, rho_t, tau_t])])
    got, g_loc, g_rho, g_tau = f(location, log_rho, tau)
    per_cell = log_poisson_lognormal(data.distinct_count[None, :], location[:, data.distinct_pattern], tau)
    expected = (data.distinct_weight * special.logsumexp(log_rho[:, None] + per_cell, axis=0)).sum()
    assert got == pytest.approx(expected, rel=1e-12)
    h = 1e-6
    for k, b in ((0, 0), (2, 3), (5, 5)):
        bumped = location.copy()
        bumped[k, b] += h
        assert g_loc[k, b] == pytest.approx((f(bumped, log_rho, tau)[0] - got) / h, rel=1e-4, abs=1e-5)
    bumped = log_rho.copy()
    bumped[1] += h
    assert g_rho[1] == pytest.approx((f(location, bumped, tau)[0] - got) / h, rel=1e-4)
    assert g_tau == pytest.approx((f(location, log_rho, tau + h)[0] - got) / h, rel=1e-4)


def test_the_likelihood_given_labels_sums_the_cells_integrals_and_has_their_gradient():
    import pytensor
    import pytensor.tensor as pt

    frame, _ = simulate_areal(40, (2, 3), seed=3)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    rng = np.random.default_rng(1)
    K = 5
    location = rng.normal(0.0, 1.5, (K, data.n_patterns))
    label = rng.integers(0, K, data.counts.shape)
    label[:, 0] = 4
    location[4] += 12.0  # a component far above the counts
    loc_t, tau_t = pt.dmatrix(), pt.dscalar()
    value, *_ = PoissonLognormalGivenLabels(nodes=16)(
        loc_t,
        tau_t,
        label,
        data.cell_distinct.ravel(),
        data.distinct_count.astype(float),
        data.distinct_pattern,
        special.gammaln(data.distinct_count + 1.0),
    )
    f = pytensor.function([loc_t, tau_t], [value, *pytensor.grad(value, [loc_t, tau_t])])
    tau = 1.7
    got, g_loc, g_tau = f(location, tau)
    patterns = np.repeat(np.arange(data.n_patterns), data.n_labels)
    per_cell = log_poisson_lognormal(data.counts.ravel(), location[label.ravel(), patterns], tau)
    assert got == pytest.approx(per_cell.sum(), rel=1e-12)
    # a check by hand on one cell: the adaptive scipy integral
    assert per_cell[7] == pytest.approx(
        _exact_log_marginal(int(data.counts.ravel()[7]), location[label.ravel()[7], 0], tau), abs=1e-6
    )
    h = 1e-6
    for k, b in ((4, 2), (int(label[1, 3]), 1)):
        bumped = location.copy()
        bumped[k, b] += h
        assert g_loc[k, b] == pytest.approx((f(bumped, tau)[0] - got) / h, rel=1e-4, abs=1e-5)
    unused = [k for k in range(K) if not (label[0] == k).any()]
    assert all(g_loc[k, 0] == 0.0 for k in unused)  # no cell of pattern 0 in these components
    assert g_tau == pytest.approx((f(location, tau + h)[0] - got) / h, rel=1e-4)
