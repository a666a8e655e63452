import json
import math

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from bayessdc.models.base import SupportsContinuation, stack_draws
from bayessdc.models.flows import (
    FlowDataError,
    FlowPriors,
    FlowSynthesizer,
    build_model,
    draw_precision,
    hierarchical_effect_logp,
    simulate_flow_table,
    simulate_group,
    split_groups,
    truncated_poisson_logp,
    validate_flows,
)
from bayessdc.models.sampling import SamplerSettings, check_convergence


def test_truncated_poisson_matches_scipy_and_is_stable():
    eta = pt.dvector("eta")
    values = pt.dvector("y")
    f = pytensor.function([values, eta], truncated_poisson_logp(values, eta, 8))
    for log_rate in [-30.0, -3.0, -0.01, 0.0, 0.01, 0.7, 2.0, 4.0, 40.0]:
        y = np.arange(9.0)
        got = f(y, np.full(9, log_rate))
        if abs(log_rate) < 10:
            want = stats.poisson.logpmf(y, math.exp(log_rate))
            want -= np.log(stats.poisson.cdf(8, math.exp(log_rate)))
            assert np.allclose(got, want, atol=1e-10), log_rate
        assert np.isfinite(got).all()
        assert np.exp(got).sum() == pytest.approx(1.0, abs=1e-10)


def test_marginal_effect_prior_is_the_multivariate_t():
    priors = FlowPriors()
    b = np.array([0.3, -1.2, 2.0])
    nu, scale = 2 * priors.phi_shape, priors.phi_rate / priors.phi_shape
    want = pm.logp(pm.MvStudentT.dist(nu=nu, mu=np.zeros(3), scale=scale * np.eye(3)), b).eval()
    got = hierarchical_effect_logp(pt.as_tensor(b), np.array([True, True, True]), priors).eval()
    assert got == pytest.approx(want, rel=1e-10)
    # effects outside the family do not enter
    mixed = np.array([0.3, 5.0, -1.2, 2.0])
    got_mixed = hierarchical_effect_logp(pt.as_tensor(mixed), np.array([1, 0, 1, 1], bool), priors).eval()
    assert got_mixed == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("parameterization", ["marginal", "centred", "noncentred"])
# PyTensor's sparse rewrite local_usmm probes for a C BLAS in every mode (pymc-devs/pytensor#1625) and warns on a
# pip install; the log densities here are compiled in numba, which does not use it.
@pytest.mark.filterwarnings("ignore:PyTensor could not link to a BLAS installation:UserWarning")
def test_padding_adds_only_independent_standard_normals(parameterization):
    group, _ = simulate_group(3, 4, 8, seed=1)
    plain = build_model(group, parameterization=parameterization)
    padded = build_model(group, padded_effects=10, parameterization=parameterization)
    rng = np.random.default_rng(0)
    point = {k: v + rng.normal(0, 0.3, np.shape(v)) for k, v in plain.initial_point().items()}
    name = "effect_raw" if parameterization == "noncentred" else "effect"
    pad_values = rng.normal(0, 1, 3)
    padded_point = {**point, name: np.concatenate([point[name], pad_values])}
    logp_plain = plain.compile_logp(mode="NUMBA")(point)
    logp_padded = padded.compile_logp(mode="NUMBA")(padded_point)
    assert logp_padded == pytest.approx(logp_plain + stats.norm.logpdf(pad_values).sum(), rel=1e-9)


def test_draw_precision_is_the_conjugate_gamma():
    rng = np.random.default_rng(0)
    effects = np.tile([0.5, -0.5, 1.0], (200_000, 1))
    draws = draw_precision(effects, FlowPriors(), rng)
    shape, rate = 0.01 + 1.5, 0.01 + 0.5 * 1.5
    assert draws.mean() == pytest.approx(shape / rate, rel=0.01)


def _table():
    return pd.DataFrame(
        {
            "origin": ["a1", "a1", "a2", "b1", "b1", "a2"],
            "destination": ["b1", "b2", "b1", "a1", "a2", "b2"],
            "origin_group": ["A", "A", "A", "B", "B", "A"],
            "destination_group": ["B", "B", "B", "A", "A", "B"],
            "count": [3, 12, 1, 40, 55, 9],
        }
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: t.drop(columns="count"), "missing column.*'count'"),
        (lambda t: t.assign(count=[3, -1, 1, 40, 55, 9]), "negative counts at data row 2"),
        (lambda t: t.assign(count=[3, 1.5, 1, 40, 55, 9]), "non-integer counts at data row 2"),
        (lambda t: t.assign(count=["3", "x", 1, 40, 55, 9]), "not numeric at data row 2"),
        (lambda t: t.assign(origin=["a1", "a1", "a1", "b1", "b1", "a2"]), "more than once.*data rows 1, 3"),
        (lambda t: t.assign(origin=[None, "a1", "a2", "b1", "b1", "a2"]), "'origin' has missing values at data row 1"),
        (lambda t: t.assign(origin_group=["A", "A", "C", "B", "B", "A"]), "a2.*more than one origin_group"),
    ],
)
def test_bad_input_is_named(change, message):
    with pytest.raises(FlowDataError, match=message):
        validate_flows(change(_table()))


def test_split_groups_shifts_counts_and_skips_groups_without_sensitive_cells():
    groups, skipped = split_groups(validate_flows(_table()))
    assert skipped == [("B", "A")]
    (group,) = groups
    assert group.key == ("A", "B")
    assert list(group.y) == [2, 0, 8]  # counts 3, 1, 9 minus 1; 12 is not sensitive
    assert list(group.rows) == [0, 2, 5]
    assert list(group.origins) == ["a1", "a2"] and list(group.destinations) == ["b1", "b2"]


def test_example_table_looks_like_migration_data():
    table = simulate_flow_table(n_states=4, counties_per_state=12, seed=3)
    validate_flows(table)
    share_small = (table["count"] <= 9).mean()
    assert 0.5 < share_small < 0.95  # most listed pairs are small, as in the IRS-based tables
    assert (table["origin"] != table["destination"]).all()
    assert table["origin_group"].nunique() == 4


@pytest.fixture(scope="module")
def recovered():
    group, truth = simulate_group(14, 14, 120, mu=0.8, beta_sd=0.7, gamma_sd=0.5, seed=11)
    synth = FlowSynthesizer(settings=SamplerSettings(draws=1000, tune=1000, chains=4, low_rank_mass_matrix=True))
    idata = synth.fit(group, seed=5)
    return synth, group, truth, idata


def test_parameter_recovery_on_data_simulated_from_the_model(recovered):
    synth, group, truth, idata = recovered
    report = check_convergence(idata, var_names=[], derived=synth.convergence_quantities(idata, group))
    assert report.passed, report.problems()
    log_lambda = synth.log_rate(idata.posterior, group)
    lower = log_lambda.quantile(0.05, dim=("chain", "draw")).to_numpy()
    upper = log_lambda.quantile(0.95, dim=("chain", "draw")).to_numpy()
    coverage = ((truth["log_lambda"] >= lower) & (truth["log_lambda"] <= upper)).mean()
    assert coverage >= 0.8  # nominal 0.9
    mean = log_lambda.mean(("chain", "draw")).to_numpy()
    assert np.corrcoef(mean, truth["log_lambda"])[0, 1] > 0.8
    # the precisions: the truth lies inside the central 95% posterior interval
    for name in ("phi_beta", "phi_gamma"):
        lo, hi = np.quantile(idata.posterior[name].to_numpy(), [0.025, 0.975])
        assert lo < truth[name] < hi, name
    # origin effects are recovered up to the shift between mu and the effects
    beta = idata.posterior["beta_effect"].mean(("chain", "draw")).to_numpy()
    assert np.corrcoef(beta, truth["beta_effect"])[0, 1] > 0.8
    assert idata.posterior["beta_effect"].sizes["origin"] == 14  # padding removed
    assert list(idata.posterior["origin"].to_numpy()) == list(group.origins)


def test_same_seed_same_posterior_and_synthetic_values(recovered):
    synth, group, _, idata = recovered
    again = synth.fit(group, seed=5)
    assert np.array_equal(again.posterior["mu"].to_numpy(), idata.posterior["mu"].to_numpy())
    posterior = stack_draws(idata.posterior).isel(sample=[0, 500, 1000])
    a = synth.posterior_predictive(posterior, group, np.random.default_rng(1))
    b = synth.posterior_predictive(posterior, group, np.random.default_rng(1))
    assert np.array_equal(a, b)
    assert a.min() >= 0 and a.max() <= 8


def test_posterior_predictive_follows_the_truncated_poisson(recovered):
    synth, group, _, idata = recovered
    posterior = stack_draws(idata.posterior).isel(sample=[7])
    log_p = synth.candidate_log_prob(posterior, group).isel(sample=0).to_numpy()
    draws = np.stack(
        [synth.posterior_predictive(posterior, group, np.random.default_rng(s)).to_numpy()[0] for s in range(400)]
    )
    expected_mean = (np.exp(log_p) * np.arange(9)).sum(axis=1)
    assert np.abs(draws.mean(axis=0) - expected_mean).max() < 0.6
    assert abs(draws.mean() - expected_mean.mean()) < 0.05


def test_pymc_backend_gives_the_same_posterior(recovered):
    synth, group, _, idata = recovered
    small, _ = simulate_group(4, 5, 12, seed=2)
    nutpie_fit = synth.fit(small, seed=1)
    pymc_synth = FlowSynthesizer(settings=SamplerSettings(draws=500, tune=500, chains=2, backend="pymc"))
    pymc_fit = pymc_synth.fit(small, seed=1)
    a = synth.log_rate(nutpie_fit.posterior, small)
    b = synth.log_rate(pymc_fit.posterior, small)
    sd = a.std(("chain", "draw")).to_numpy()
    # posterior medians agree to a fraction of a posterior standard deviation (Monte Carlo error)
    difference = np.abs(a.median(("chain", "draw")) - b.median(("chain", "draw"))).to_numpy()
    assert (difference < 0.35 * sd).all()
    assert pymc_fit.attrs["sampler_backend"] == "pymc"


def test_groups_with_every_count_at_the_lower_bound_sample_closer_to_acceptance_one():
    """Such a group's likelihood is flat as its rates go to 0 (a funnel): it starts at target_accept 0.95 (from
    0.8) and samples without divergences; other groups keep the settings as given."""
    group, _ = simulate_group(6, 7, 30, seed=4)
    floor = group.with_values(np.zeros_like(group.y))
    synth = FlowSynthesizer()
    assert synth.settings_for(group) is synth.settings
    assert synth.settings_for(floor).target_accept == pytest.approx(0.95)
    # the runner's refit after divergences (0.8 -> 0.9) moves it on, to 0.975
    refit = FlowSynthesizer(settings=SamplerSettings(target_accept=0.9))
    assert refit.settings_for(floor).target_accept == pytest.approx(0.975)
    assert FlowSynthesizer(lower_bound_acceptance_factor=1).settings_for(floor).target_accept == 0.8
    with pytest.raises(ValueError, match="at least 1"):
        FlowSynthesizer(lower_bound_acceptance_factor=0.5)
    for seed in (1, 2):
        idata = synth.fit(floor, seed=seed)
        assert json.loads(idata.attrs["sampler_settings"])["target_accept"] == 0.95  # JSON, not a Python repr
        assert int(idata.sample_stats["diverging"].sum()) == 0
        assert check_convergence(idata, var_names=[], derived=synth.convergence_quantities(idata, floor)).passed
    assert synth.describe()["sampler"]["target_accept_when_all_counts_at_lower_bound"] == 0.95


def test_continued_chains_start_where_they_stopped_and_keep_their_adaptation():
    """continue_fit: each chain's state is read back from the fit in the sampler's own order (mu, origin effects,
    destination effects), the old draws are kept as they were and the new ones follow without a new warm-up."""
    group, truth = simulate_group(5, 6, 24, seed=6)
    synth = FlowSynthesizer(settings=SamplerSettings(draws=300, tune=300, chains=4, cores=1))
    assert isinstance(synth, SupportsContinuation)
    raw = synth._fit_compiled(group, 3, synth.settings)
    position = np.concatenate([raw.posterior["mu"].to_numpy()[..., None], raw.posterior["effect"].to_numpy()], axis=-1)
    fit = synth._finish(raw, group, 3)
    state = synth.adapted_state(fit)
    np.testing.assert_array_equal(state.position[:, 0], position[:, -1])
    np.testing.assert_array_equal(state.inv_metric, fit.sample_stats["inv_metric"].to_numpy())
    longer = synth.continue_fit(fit, group, 500, seed=4)
    assert longer.posterior.sizes["draw"] == 800 and "500 draws per chain added to 300" in longer.attrs["continued"]
    np.testing.assert_array_equal(longer.posterior["mu"].to_numpy()[:, :300], fit.posterior["mu"].to_numpy())
    steps = longer.sample_stats["step_size"].to_numpy()
    assert (steps == steps[:, :1]).all()  # one step size per chain throughout: no new warm-up
    # the longer chains cover the simulated log rates as a fit does (90% intervals, most cells)
    rates = synth.log_rate(longer.posterior, group).to_numpy().reshape(-1, group.n_cells)
    low, high = np.quantile(rates, [0.05, 0.95], axis=0)
    assert np.mean((low < truth["log_lambda"]) & (truth["log_lambda"] < high)) > 0.75
    assert int(longer.sample_stats["diverging"].sum()) == 0
