import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, special, stats

from bayessdc.models.base import stack_draws
from bayessdc.models.dp_areal import (
    DPArealSynthesizer,
    PoissonLognormalMixture,
    build_model,
    cell_posterior,
    draw_poisson_lognormal_log_rate,
    log_poisson_lognormal,
    poisson_lognormal_moments,
    prepare_areal,
    simulate_areal,
)
from bayessdc.models.dpmpm import CategoricalDataError
from bayessdc.models.sampling import SamplerSettings
from bayessdc.synthesis.datasets import draw_synthetic


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


def test_identified_parametrization_is_the_same_prior_for_what_the_likelihood_sees():
    """Prior draws of the log-rate means agree in distribution with the equations as printed.

    Quantiles, not moments: the half-t and gamma hyperpriors give heavy tails. Compared are a cell mean, a
    contrast between two patterns of one component and a contrast between two components.
    """
    import pymc as pm

    frame, _ = simulate_areal(20, (2, 3), seed=5)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    levels = [0.1, 0.25, 0.5, 0.75, 0.9]
    summaries = {}
    for parametrization in ("identified", "centred"):
        model = build_model(data, K=3, parametrization=parametrization)
        draws = pm.draw(model["location"], draws=40_000, random_seed=11)  # (draw, component, pattern)
        summaries[parametrization] = np.array(
            [
                np.quantile(draws[:, 0, 0], levels),
                np.quantile(draws[:, 0, 0] - draws[:, 0, 4], levels),
                np.quantile(draws[:, 0, 2] - draws[:, 1, 2], levels),
            ]
        )
    assert np.allclose(summaries["identified"], summaries["centred"], atol=0.15)


# ---------------------------------------------------------------------------------------------------
# Input checks


def test_counts_and_sufficient_statistics():
    frame, truth = simulate_areal(30, (2, 2), seed=2)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    assert data.counts.sum() == len(frame)
    assert np.all(np.bincount(data.distinct_pattern, weights=data.distinct_weight) == data.n_labels)
    # every cell's distinct pair has the cell's pattern and count
    b = np.repeat(np.arange(data.n_patterns), data.n_labels)
    assert np.all(data.distinct_pattern[data.cell_distinct.ravel()] == b)
    assert np.all(data.distinct_count[data.cell_distinct.ravel()] == data.counts.ravel())
    assert data.design.shape == (4, 4) and np.all(data.design.sum(axis=1) == 2)


def test_bad_input_is_refused_before_sampling():
    frame = pd.DataFrame({"a": [1, 2, 1, 2], "b": [1, 1, 2, 2], "county": [1, 2, 3, 4]})
    with pytest.raises(CategoricalDataError, match="one label column"):
        prepare_areal(frame, ["county", "b"], ["a"])
    with pytest.raises(CategoricalDataError, match="at least one kept column"):
        prepare_areal(frame, "county", [])
    with pytest.raises(CategoricalDataError, match="more than 10.*DPMPM"):
        prepare_areal(frame, "county", ["a", "b"], max_cells=10)
    with pytest.raises(CategoricalDataError, match="missing"):
        prepare_areal(frame.assign(county=[1, None, 3, 4]), "county", ["a"])
    notices: list[str] = []
    categorical = frame.assign(a=pd.Categorical(frame["a"], categories=[1, 2, 3]))
    data = prepare_areal(categorical, "county", ["a"], notices=notices)
    assert data.n_patterns == 2 and "no record" in notices[0] and "'a'" in notices[0]


# ---------------------------------------------------------------------------------------------------
# Fit, recovery, synthesis


@pytest.fixture(scope="module")
def fitted():
    frame, truth = simulate_areal(50, (2, 3), tau_lambda=4.0, seed=7)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    settings = SamplerSettings(draws=1000, tune=500, chains=2, target_accept=0.9)
    synthesizer = DPArealSynthesizer(K=8, settings=settings)
    idata = synthesizer.fit(data, seed=3)
    return frame, truth, data, synthesizer, idata


def test_parameter_recovery_on_counts_simulated_from_the_model(fitted):
    """Recovery of what the synthesis uses: tau_lambda, every cell's log rate, the pattern totals.

    The convergence bounds are what the sampler achieves here, looser than the gate's: on this mixture the
    configuration of the components mixes slowly (issue 5). Measured over seeds 0-5 (2026-11-24, 2 x (500 +
    1,000) draws): max r_hat 1.004-1.019, divergences 2-19 of 2,000 (0.1-0.95%). With 2 x 500 draws the max
    r_hat ranged 1.015-1.050, so the former bound of 1.03 at 500 draws held for some seeds and package
    versions only (seed 3 gave 1.035 after a fresh install). These bounds catch a sampler that is far off;
    the likelihood's accuracy, whose old quadrature error gave about 0.5% divergences here, is tested
    directly (``test_quadrature_stays_exact_far_from_the_counts``).
    """
    frame, truth, data, synthesizer, idata = fitted
    report = synthesizer.check(idata, data)
    draws = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
    assert report.divergences <= 0.015 * draws, report
    assert report.max_r_hat <= 1.03, report
    tau = idata.posterior["tau_lambda"].to_numpy().ravel()
    assert np.quantile(tau, 0.025) < truth["tau_lambda"] < np.quantile(tau, 0.975)
    # Log rates drawn exactly from their conditional posterior cover the simulated ones.
    assert data.n_labels == truth["counts"].shape[1]
    posterior = stack_draws(idata.posterior)
    rng = np.random.default_rng(0)
    from bayessdc.models.dp_areal import draw_labels_and_log_rates

    picks = np.linspace(0, posterior.sizes["sample"] - 1, 200).astype(int)
    rates = np.stack(
        [
            draw_labels_and_log_rates(
                posterior["location"].isel(sample=s).to_numpy(),
                posterior["rho"].isel(sample=s).to_numpy(),
                float(posterior["tau_lambda"].isel(sample=s)),
                data,
                rng,
            )[1]
            for s in picks
        ]
    )
    lo, hi = np.quantile(rates, [0.05, 0.95], axis=0)
    covered = (lo <= truth["log_rate"]) & (truth["log_rate"] <= hi)
    assert covered.mean() > 0.82
    # The pattern totals' rates: posterior means close to the simulated ones.
    total = np.log(np.exp(rates).sum(axis=2)).mean(axis=0)
    assert np.allclose(total, np.log(np.exp(truth["log_rate"]).sum(axis=1)), atol=0.35)


def test_expected_log_rate_summary_agrees_with_exact_draws(fitted):
    _, _, data, synthesizer, idata = fitted
    posterior = stack_draws(idata.posterior).isel(sample=5)
    log_resp, mean = cell_posterior(
        posterior["location"].to_numpy(), posterior["rho"].to_numpy(), float(posterior["tau_lambda"]), data
    )
    assert np.allclose(np.exp(log_resp).sum(axis=0), 1.0)
    assert np.allclose((np.exp(log_resp) * mean).sum(axis=0), posterior["expected_log_rate"].to_numpy())
    assert 1.0 <= float(posterior["occupied"]) <= synthesizer.K


def test_synthesis_keeps_patterns_and_is_reproducible(fitted):
    _, _, data, synthesizer, idata = fitted
    first = draw_synthetic(synthesizer, idata, data, 3, np.random.default_rng(9))
    again = draw_synthetic(synthesizer, idata, data, 3, np.random.default_rng(9))
    assert np.array_equal(first.to_numpy(), again.to_numpy())
    release = synthesizer.release_frame(data, first)
    original = data.records.frame()
    for k in (1, 2, 3):
        one = release[release["synthetic"] == k].reset_index(drop=True)
        assert one[["v0", "v1"]].equals(original[["v0", "v1"]])
    # Labels follow the counts: the synthetic label totals track the observed ones.
    observed = np.bincount(data.records.joint_code(), minlength=data.n_labels)
    synthetic = np.bincount(first.isel(synthetic=0).to_numpy(), minlength=data.n_labels)
    assert np.corrcoef(observed, synthetic)[0, 1] > 0.8


# ---------------------------------------------------------------------------------------------------
# Explicit labels: the likelihood given the labels and the exact Gibbs step of the labels


def test_the_likelihood_given_labels_sums_the_cells_integrals_and_has_their_gradient():
    import pytensor
    import pytensor.tensor as pt

    from bayessdc.models.dp_areal import PoissonLognormalGivenLabels

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


def test_label_gibbs_step_draws_from_the_full_conditional():
    from bayessdc.models.dp_areal import label_gibbs_step

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


def test_explicit_label_sampler_runs_end_to_end_with_the_pymc_sampler(tmp_path):
    """NUTS within Gibbs (labels by :func:`label_gibbs_step`, the rest by NUTS): its conditionals are tested above;
    here the wiring (PyMC backend, kept variables, summaries, description). It mixes worse than the default
    (``bench/dp_areal.py --labels explicit``), so no recovery is asserted from a short run."""
    frame, _ = simulate_areal(30, (2, 2), seed=7)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    settings = SamplerSettings(draws=20, tune=20, chains=1, cores=1)
    synthesizer = DPArealSynthesizer(K=4, settings=settings, labels="explicit")
    idata = synthesizer.fit(data, seed=3)
    assert idata.attrs["sampler_backend"] == "pymc" and idata.attrs["labels"] == "explicit"
    assert "component_label" not in idata.posterior  # the labels are redrawn exactly, never stored
    idata.to_netcdf(tmp_path / "posterior.nc")  # every attribute is one netCDF can hold
    assert idata.attrs["centred_components"] == 2  # min(10, K // 2)
    assert np.isfinite(idata.posterior["expected_log_rate"]).all()
    assert np.allclose(idata.posterior["rho"].sum("component"), 1.0)
    assert "within Gibbs" in synthesizer.describe()["computation"]["sampler"]
    with pytest.raises(ValueError, match="labels must be"):
        DPArealSynthesizer(labels="sampled")
