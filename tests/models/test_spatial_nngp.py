"""The nearest-neighbour (Vecchia) approximation of the spatial synthesizer (``approximation="nngp"``)."""

import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from bayessdc.models.sampling import SamplerSettings, check_convergence
from bayessdc.models.spatial import (
    AUTO_EXACT_LIMIT,
    Restriction,
    SpatialPriors,
    SpatialSynthesizer,
    exponential_correlation,
    fit_two_stage,
    outlier_threshold,
    prepare_spatial_data,
    resolve_approximation,
    risk_weights,
    simulate_spatial,
    smoothing_diagonal,
)
from bayessdc.models.spatial.nngp import (
    integrated_log_likelihood,
    nearest_earlier_neighbours,
    neighbour_basis,
    neighbour_geometry,
    nngp_log_likelihood,
    vecchia_statistics,
)
from bayessdc.synthesis.datasets import draw_synthetic

COVARIATES = ("d1", "d2")
TRUE_BETA = np.array([11.0, 0.25, 0.25])  # the mean of eq. (8)
SETTINGS = SamplerSettings(draws=500, chains=4)  # 2,000 independent draws


def _interval(values, level=0.95):
    return np.quantile(np.asarray(values).ravel(), [(1 - level) / 2, (1 + level) / 2])


def _data(n, seed, covariates=COVARIATES, **kwargs):
    frame, truth = simulate_spatial(n, seed=seed, **kwargs)
    return prepare_spatial_data(frame, "response", ("x", "y"), list(covariates)), truth


# -- neighbour sets and the likelihood -----------------------------------------------------------------


def test_neighbour_sets_are_the_nearest_earlier_locations():
    data, _ = _data(300, 1)
    m = 10
    nbr = nearest_earlier_neighbours(data.coords, m)
    order = np.lexsort((data.coords[:, 1], data.coords[:, 0]))
    rank = np.empty(data.n, int)
    rank[order] = np.arange(data.n)
    for i in range(data.n):
        earlier = np.flatnonzero(rank < rank[i])
        d = np.hypot(*(data.coords[earlier] - data.coords[i]).T)
        expected = earlier[np.argsort(d, kind="stable")[:m]]
        got = nbr[i][nbr[i] >= 0]
        assert len(got) == min(m, rank[i])
        assert set(got) == set(expected), i
    # excluded locations have no neighbours and are nobody's neighbour
    include = np.ones(data.n, bool)
    include[[5, 17]] = False
    nbr = nearest_earlier_neighbours(data.coords, m, include)
    assert (nbr[[5, 17]] == -1).all() and not np.isin([5, 17], nbr).any()


def test_nngp_likelihood_with_all_earlier_neighbours_is_the_exact_density():
    """With m = N - 1 the Vecchia product is the multivariate normal density (stage 1, finite and infinite gamma)."""
    data, _ = _data(60, 3)
    beta, sigma_sq, tau_sq, phi = TRUE_BETA, 2.0, 0.1, 9.0
    weights = risk_weights(data.coords, phi)
    assert weights.sum() >= 1
    for scale in (None, smoothing_diagonal(weights, 4.0), smoothing_diagonal(weights, math.inf)):
        a = np.ones(data.n) if scale is None else scale
        cov = sigma_sq * a[:, None] * exponential_correlation(data.coords, None, phi) * a[None, :]
        exact = stats.multivariate_normal(data.X @ beta, cov + tau_sq * np.eye(data.n)).logpdf(data.y)
        got = nngp_log_likelihood(data.y, data.X, beta, data.coords, sigma_sq, tau_sq, phi, data.n - 1, scale)
        assert got == pytest.approx(exact, abs=1e-8)
    # fewer neighbours: an approximation, close but not equal
    approx = nngp_log_likelihood(data.y, data.X, beta, data.coords, sigma_sq, tau_sq, phi, 15)
    exact = stats.multivariate_normal(
        data.X @ beta, sigma_sq * exponential_correlation(data.coords, None, phi) + tau_sq * np.eye(data.n)
    ).logpdf(data.y)
    assert approx != pytest.approx(exact, abs=1e-8) and abs(approx - exact) < 0.01 * abs(exact)


def test_integrated_likelihood_is_the_marginal_with_beta_integrated_out():
    data, _ = _data(50, 4)
    y = data.y - 11  # keep beta small relative to beta_sd
    sigma_sq, tau_sq, phi, beta_sd = 1.7, 0.2, 9.0, 3.0
    nbr = nearest_earlier_neighbours(data.coords, data.n - 1)
    geometry = neighbour_geometry(data.coords, y, data.X, nbr)
    log_det, q, r, G = vecchia_statistics(neighbour_basis(geometry, phi), geometry, tau_sq / sigma_sq)
    got = integrated_log_likelihood(log_det, q, r, G, data.n, np.array([sigma_sq]), beta_sd)[0]
    cov = (
        beta_sd**2 * data.X @ data.X.T
        + sigma_sq * exponential_correlation(data.coords, None, phi)
        + tau_sq * np.eye(data.n)
    )
    assert got == pytest.approx(stats.multivariate_normal(np.zeros(data.n), cov).logpdf(y), abs=1e-8)


def test_approximation_is_resolved_and_checked():
    assert resolve_approximation("auto", AUTO_EXACT_LIMIT) == "exact"
    assert resolve_approximation("auto", AUTO_EXACT_LIMIT + 1) == "nngp"
    assert resolve_approximation("nngp", 50) == "nngp"
    with pytest.raises(ValueError, match="approximation"):
        SpatialSynthesizer(approximation="vecchia")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="neighbours"):
        SpatialSynthesizer(approximation="nngp", neighbours=0)


# -- parameter recovery, both stages ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_stage():
    data, truth = _data(400, 11, outlier_latent=-4.0)
    fit = fit_two_stage(data, settings=SETTINGS, seed=2, approximation="nngp")
    return data, truth, fit


def test_nngp_stage1_recovers_the_parameters(two_stage):
    data, truth, fit = two_stage
    assert fit.unrestricted.describe()["approximation"] == "nngp"
    assert "nearest-neighbour (Vecchia)" in fit.unrestricted.describe()["model"]["process"]
    report = check_convergence(fit.unrestricted_idata, var_names=fit.unrestricted.convergence_variables())
    assert report.passed, report.problems()
    post = fit.unrestricted_idata.posterior
    assert post.sizes == {"chain": 4, "draw": 500, "coefficient": 3}
    for name in ("sigma_sq", "tau_sq", "phi"):
        lo, hi = _interval(post[name])
        assert lo <= truth[name] <= hi, (name, lo, hi, truth[name])
    for k, value in enumerate(TRUE_BETA):
        lo, hi = _interval(post["beta"].isel(coefficient=k))
        assert lo <= value <= hi, (k, lo, hi)


def test_nngp_stage2_recovers_the_parameters_of_the_restricted_model():
    """Data simulated from eq. (7) (phi known, the outliers without spatial effect) are recovered under the NNGP."""
    phi = 12.7
    data, truth = _data(400, 12)
    weights = risk_weights(data.coords, phi)
    smoothing = smoothing_diagonal(weights, math.inf)
    rng = np.random.default_rng(5)
    y = data.X @ TRUE_BETA + smoothing * truth["w"] + rng.normal(0, math.sqrt(truth["tau_sq"]), data.n)
    data = data.with_response(y)
    restriction = Restriction(phi, weights, math.inf, smoothing, outlier_threshold(phi))
    synthesizer = SpatialSynthesizer(settings=SETTINGS, restriction=restriction, approximation="nngp")
    idata = synthesizer.fit(data, seed=3)
    assert (idata.posterior["phi"] == phi).all()
    report = check_convergence(idata, var_names=synthesizer.convergence_variables())
    assert report.passed, report.problems()
    for name in ("sigma_sq", "tau_sq"):
        lo, hi = _interval(idata.posterior[name])
        assert lo <= truth[name] <= hi, (name, lo, hi)
    for k, value in enumerate(TRUE_BETA):
        lo, hi = _interval(idata.posterior["beta"].isel(coefficient=k))
        assert lo <= value <= hi, (k, lo, hi)


# -- the latent process --------------------------------------------------------------------------------------


def _posterior(n_samples, beta, sigma_sq, tau_sq, phi):
    return xr.Dataset(
        {
            "beta": (("sample", "coefficient"), np.tile(beta, (n_samples, 1))),
            "sigma_sq": ("sample", np.full(n_samples, sigma_sq)),
            "tau_sq": ("sample", np.full(n_samples, tau_sq)),
            "phi": ("sample", np.full(n_samples, phi)),
        },
        coords={"sample": np.arange(n_samples), "coefficient": ["intercept"]},
    )


def test_nngp_latent_draws_follow_the_full_conditional_with_all_earlier_neighbours():
    """With m = N - 1 the latent NNGP is the GP: the draws of w | y follow eq. (2)."""
    data, _ = _data(30, 6, covariates=())
    sigma_sq, tau_sq, phi, n_draws = 2.0, 0.3, 10.0, 4000
    posterior = _posterior(n_draws, np.array([11.0]), sigma_sq, tau_sq, phi)
    synthesizer = SpatialSynthesizer(approximation="nngp", neighbours=data.n - 1)
    draws = synthesizer.draw_latent(posterior, data, np.random.default_rng(0)).to_numpy()
    sigma_w = sigma_sq * exponential_correlation(data.coords, None, phi)
    cov = np.linalg.inv(np.linalg.inv(sigma_w) + np.eye(data.n) / tau_sq)
    mean = cov @ (data.y - 11.0) / tau_sq
    assert np.abs(draws.mean(0) - mean).max() < 5 * np.sqrt(cov.diagonal().max() / n_draws)
    assert np.allclose(np.cov(draws.T), cov, atol=0.04)


def test_nngp_restricted_stage_zeroes_outliers_and_draws_them_from_the_conditional_prior():
    data, _ = _data(300, 6, covariates=())
    beta, sigma_sq, tau_sq, phi = np.array([11.0]), 2.0, 0.3, 10.0
    weights = risk_weights(data.coords, phi)
    outliers = weights > 0
    # by hand: the outliers are the points whose nearest neighbour is at least M = -log(0.2) / phi away (two here)
    distance = np.hypot(*(data.coords[:, None, :] - data.coords[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(distance, np.inf)
    assert np.array_equal(outliers, distance.min(1) >= -math.log(0.2) / phi) and outliers.sum() == 2
    restriction = Restriction(phi, weights, math.inf, smoothing_diagonal(weights, math.inf), outlier_threshold(phi))
    restricted = SpatialSynthesizer(restriction=restriction, approximation="nngp", neighbours=10)
    posterior = _posterior(1000, beta, sigma_sq, tau_sq, phi)
    w_star = restricted.draw_latent(posterior, data, np.random.default_rng(7)).to_numpy()
    assert (w_star[:, outliers] == 0).all()  # gamma = inf: w* = A w is exactly 0 at outliers
    # the other points keep their spatial effect: posterior SDs those of the exact GP on them (y at the outliers
    # says nothing about w* there), up to Monte Carlo error (about 2% per point) and the NNGP approximation
    others = ~outliers
    gp = sigma_sq * exponential_correlation(data.coords[others], None, phi)
    gp_sd = np.sqrt(np.diag(np.linalg.inv(np.linalg.inv(gp) + np.eye(others.sum()) / tau_sq)))
    sd = w_star[:, others].std(0)
    assert np.abs(sd / gp_sd - 1).max() < 0.15 and abs(sd.mean() / gp_sd.mean() - 1) < 0.02
    process = restricted.draw_synthetic_process(posterior, data, np.random.default_rng(7)).to_numpy()
    assert (process[:, ~outliers] == w_star[:, ~outliers]).all()
    # each outlier: w ~ N(b'w_N, sigma^2 (1 - r'R^-1 r)) given its 10 nearest non-outliers (conditional prior)
    inside = np.flatnonzero(~outliers)
    for k in np.flatnonzero(outliers)[:3]:
        d = np.hypot(*(data.coords[inside] - data.coords[k]).T)
        nbr = inside[np.argsort(d)[:10]]
        R = exponential_correlation(data.coords[nbr], None, phi)
        r = exponential_correlation(data.coords[[k]], data.coords[nbr], phi)[0]
        b = np.linalg.solve(R, r)
        resid = process[:, k] - process[:, nbr] @ b
        assert np.var(resid) == pytest.approx(sigma_sq * (1 - r @ b), rel=0.15)
        assert abs(resid.mean()) < 5 * math.sqrt(sigma_sq / len(resid))


# -- reproducibility and synthesis --------------------------------------------------------------------------


def test_same_seed_same_output(two_stage):
    data, _, fit = two_stage
    again = SpatialSynthesizer(SpatialPriors(), SETTINGS, approximation="nngp").fit(data, 2)
    for name in ("beta", "sigma_sq", "tau_sq", "phi"):
        np.testing.assert_array_equal(again.posterior[name], fit.unrestricted_idata.posterior[name])
    first = draw_synthetic(fit.restricted, fit.restricted_idata, data, 3, np.random.default_rng(4))
    second = draw_synthetic(fit.restricted, fit.restricted_idata, data, 3, np.random.default_rng(4))
    np.testing.assert_array_equal(first.to_numpy(), second.to_numpy())
    other = SpatialSynthesizer(SpatialPriors(), SETTINGS, approximation="nngp").fit(data, 3)
    assert not np.array_equal(other.posterior["sigma_sq"], fit.unrestricted_idata.posterior["sigma_sq"])


def test_nngp_synthesis_protects_the_outlier(two_stage):
    data, truth, fit = two_stage
    k = truth["outlier_index"]
    assert fit.restriction.at_risk[k]
    rng = np.random.default_rng(1)
    unrestricted = draw_synthetic(fit.unrestricted, fit.unrestricted_idata, data, 100, rng).to_numpy()
    restricted = draw_synthetic(fit.restricted, fit.restricted_idata, data, 100, rng).to_numpy()
    assert np.abs(restricted[:, k] - data.y[k]).mean() > np.abs(unrestricted[:, k] - data.y[k]).mean()
    surface = fit.restricted.predict_surface(
        fit.restricted_idata.posterior.stack(sample=("chain", "draw")).isel(sample=slice(0, 20)),
        data,
        np.array([[0.2, 0.5], [0.9, 0.9]]),
        np.random.default_rng(0),
    )
    assert surface.shape == (2,) and np.isfinite(surface).all()
