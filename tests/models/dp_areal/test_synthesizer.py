"""The DP-areal synthesizer (``bayessdc.models.dp_areal.synthesizer``): recovery, the gate, synthesis."""

import numpy as np
import pytest
import xarray as xr

from bayessdc.models.base import stack_draws
from bayessdc.models.dp_areal import (
    DPArealSynthesizer,
    cell_posterior,
    draw_labels_and_log_rates,
    prepare_areal,
    simulate_areal,
)
from bayessdc.models.sampling import SamplerSettings, check_convergence
from bayessdc.synthesis.datasets import draw_synthetic

#: The settings at which the release gate passes with zero divergences on this table (seeds 0, 1, 3 measured,
#: 2026-11-24: 4 chains x (500 + 250) at target_accept 0.99, 130-180 s on 2 busy cores). At 0.95 the same
#: fits had 3 divergences in 2,000 draws; the former 2 chains x (500 + 1,000) at 0.9 had 2-19. Since the
#: scale-free covariance (2026-11-28): zero divergences for seeds 0-3, 134-170 leapfrog steps per draw, 24-50 s
#: of sampling beside another session's work.
SETTINGS = SamplerSettings(draws=250, tune=500, chains=4, target_accept=0.99)


@pytest.fixture(scope="module")
def fitted():
    import bayessdc as bsd

    frame, truth = simulate_areal(50, (2, 3), tau_lambda=4.0, seed=7)
    data = prepare_areal(frame, "label", ["v0", "v1"])
    recipe = bsd.DPAreal(K=8, settings=SETTINGS, repetitions=10)
    # the release gate decides: no allow_unconverged; a refusal fails the fixture
    release = bsd.synthesize(frame, recipe, synthesize="label", keep=["v0", "v1"], m=3, seed=3, progress=False)
    idata = release.diagnostics.posteriors["all"]
    return frame, truth, data, recipe.synthesizer(), idata, release


def test_parameter_recovery_on_counts_simulated_from_the_model(fitted):
    """Recovery of what the synthesis uses: tau_lambda, every cell's log rate, the pattern totals; and the
    release gate (issue 19) passed with zero divergences at the fixture's settings.

    r_hat of the label-invariant quantities is a diagnostic here, not a criterion: on this mixture the
    configuration of the components mixes slowly (issue 5), and the former bounds (r_hat <= 1.03, divergences
    <= 1.5%) had been loosened step by step to what was measured. The release gate judges what is released.
    """
    frame, truth, data, synthesizer, idata, release = fitted
    gate = release.diagnostics["release_gate"]
    assert gate["passed"] and gate["chains"] == 4 and gate["divergences"] == 0, gate
    assert int(idata.sample_stats["diverging"].sum()) == 0
    assert all(f["between_chain_se"] <= f["tolerance"] for f in gate["figures"].values() if f["passed"] is not None)
    tau = idata.posterior["tau_lambda"].to_numpy().ravel()
    assert np.quantile(tau, 0.025) < truth["tau_lambda"] < np.quantile(tau, 0.975)
    # Log rates drawn exactly from their conditional posterior cover the simulated ones.
    assert data.n_labels == truth["counts"].shape[1]
    posterior = stack_draws(idata.posterior)
    rng = np.random.default_rng(0)
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
    _, _, data, synthesizer, idata, _ = fitted
    posterior = stack_draws(idata.posterior).isel(sample=5)
    log_resp, mean = cell_posterior(
        posterior["location"].to_numpy(), posterior["rho"].to_numpy(), float(posterior["tau_lambda"]), data
    )
    assert np.allclose(np.exp(log_resp).sum(axis=0), 1.0)
    assert np.allclose((np.exp(log_resp) * mean).sum(axis=0), posterior["expected_log_rate"].to_numpy())
    assert 1.0 <= float(posterior["occupied"]) <= synthesizer.K


def test_synthesis_keeps_patterns_and_is_reproducible(fitted):
    _, _, data, synthesizer, idata, _ = fitted
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


def test_the_gate_monitors_the_convergence_quantities(fitted):
    """One return type for the gate's quantities: what the group runner passes as ``derived`` gives the
    synthesizer's own verdict, with the same figures as the posterior variables monitored by name."""
    _, _, data, synthesizer, idata, _ = fitted
    quantities = synthesizer.convergence_quantities(idata, data)
    assert list(quantities) == ["alpha", "tau_lambda", "occupied", "expected_log_rate"]
    assert all(isinstance(q, xr.DataArray) and {"chain", "draw"} <= set(q.dims) for q in quantities.values())
    report = synthesizer.check(idata, data)
    assert check_convergence(idata, synthesizer.criteria, var_names=[], derived=quantities) == report
    assert check_convergence(idata, synthesizer.criteria, var_names=list(quantities)) == report


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
    assert idata.attrs["centred_components"] == 0  # none below K = 20
    assert np.isfinite(idata.posterior["expected_log_rate"]).all()
    assert np.allclose(idata.posterior["rho"].sum("component"), 1.0)
    assert "within Gibbs" in synthesizer.describe()["computation"]["sampler"]
    with pytest.raises(ValueError, match="labels must be"):
        DPArealSynthesizer(labels="sampled")


def test_chains_fitted_apart_are_labelled_by_their_own_indices_and_stack(fitted):
    """The stopping rule's added chains (``fit(..., chains=range(a, b))``): labelled a .. b - 1, drawn from their
    own stream (reproducible, not copies of the first chains), stacked with the first ones by ``concat_chains``.
    The fixture's model (same table and K) is compiled already."""
    from bayessdc.models.base import concat_chains

    _, _, data, _, _, _ = fitted
    synthesizer = DPArealSynthesizer(K=8, settings=SamplerSettings(draws=20, tune=30, chains=4, target_accept=0.9))
    first = synthesizer.fit(data, 1, chains=range(0, 2))
    added = synthesizer.fit(data, 1, chains=range(2, 4))
    assert added.posterior["chain"].to_numpy().tolist() == [2, 3]
    assert added.sample_stats["chain"].to_numpy().tolist() == [2, 3]
    again = synthesizer.fit(data, 1, chains=range(2, 4))
    np.testing.assert_array_equal(again.posterior["alpha"].to_numpy(), added.posterior["alpha"].to_numpy())
    assert not np.array_equal(first.posterior["alpha"].to_numpy(), added.posterior["alpha"].to_numpy())
    stacked = concat_chains([added, first])  # in chain order whatever the order given
    assert stacked.posterior["chain"].to_numpy().tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(stacked.posterior["alpha"].sel(chain=3), added.posterior["alpha"].sel(chain=3))
    assert stacked.sample_stats.sizes["chain"] == 4  # divergences counted over every chain
