import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from bayessdc.models.sampling import SamplerSettings, check_convergence
from bayessdc.models.spatial import (
    Restriction,
    SpatialDataError,
    SpatialPriors,
    SpatialSynthesizer,
    build_model,
    draw_beta_and_phi,
    exponential_correlation,
    fit_two_stage,
    gamma_from_smoothing,
    outlier_threshold,
    prepare_spatial_data,
    risk_weights,
    rotate,
    simulate_spatial,
    smoothing_diagonal,
)

SETTINGS = SamplerSettings(draws=2000, tune=1000, chains=4, target_accept=0.95)
COVARIATES = ("d1", "d2")
TRUE_BETA = np.array([11.0, 0.25, 0.25])  # the mean of eq. (8)


def _interval(values, level=0.95):
    return np.quantile(np.asarray(values).ravel(), [(1 - level) / 2, (1 + level) / 2])


# -- geometry, weights, smoothing ---------------------------------------------------------------------


def test_risk_weights_and_smoothing_by_hand():
    coords = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.05], [1.0, 1.0]])
    phi = 12.0
    m = outlier_threshold(phi)  # -log(0.2)/12 = 0.1341
    assert m == pytest.approx(-math.log(0.2) / 12)
    # nearest-neighbour distances: 0.05, 0.1, 0.05, sqrt(0.9^2 + 1) = 1.345
    assert risk_weights(coords, phi).tolist() == [0, 0, 0, 1]
    continuous = risk_weights(coords, phi, "continuous")
    assert continuous == pytest.approx(1 - np.exp(-phi * np.array([0.05, 0.1, 0.05, math.hypot(0.9, 1.0)])))
    assert smoothing_diagonal(np.array([0, 1.0]), math.inf).tolist() == [1.0, 0.0]
    assert smoothing_diagonal(np.array([0, 0.5]), 6.0) == pytest.approx([1.0, 1 / 2])


def test_gamma_from_smoothing_level_eq5():
    # alpha = 1/2 gives gamma = sigma^2/tau^2 - 1 (Section 3.2)
    assert gamma_from_smoothing(0.5, 4.0, 0.0625) == pytest.approx(63.0)
    gamma = gamma_from_smoothing(0.2, 4.0, 0.25)
    assert (4 / (1 + gamma)) / (0.25 + 4 / (1 + gamma)) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="alpha"):
        gamma_from_smoothing(0.99, 4.0, 0.25)


def _likelihood(model, point):
    (graph,) = model.replace_rvs_by_values([model["marginal_likelihood"]])
    return model.compile_fn(graph, inputs=model.value_vars, on_unused_input="ignore")(point)


POINT = {"log_sd_offset": np.zeros(2)}
PRIORS = SpatialPriors(beta_sd=3.0)


def _marginal(data, sigma, tau, phi, scale=None, beta_sd=3.0):
    """log N(y | 0, beta_sd^2 X X' + sigma^2 A R A + tau^2 I): beta and w integrated out, directly."""
    a = np.ones(data.n) if scale is None else scale
    corr = a[:, None] * exponential_correlation(data.coords, None, phi) * a[None, :]
    cov = beta_sd**2 * data.X @ data.X.T + sigma**2 * corr + tau**2 * np.eye(data.n)
    return stats.multivariate_normal(np.zeros(data.n), cov).logpdf(data.y)


def test_rotated_likelihood_is_the_marginal_gp_likelihood():
    """The eigenbasis likelihood equals the GP marginal likelihood with beta integrated out, both stages."""
    frame, _ = simulate_spatial(30, seed=4)
    data = prepare_spatial_data(frame, "response", ("x", "y"), COVARIATES)
    data = data.with_response(data.y - 11)  # keep beta small relative to beta_sd
    sigma, tau, phi = 1.7, 0.4, 9.0
    weights = risk_weights(data.coords, phi)
    assert weights.sum() >= 1  # the outlier
    for scale in (None, smoothing_diagonal(weights, math.inf), smoothing_diagonal(weights, 5.0)):
        rotated = rotate(data, np.array([phi]), scale)
        model = build_model(rotated, PRIORS, (1.0, 1.0), data.covariate_names, {"sigma": sigma, "tau": tau})
        assert float(_likelihood(model, POINT)) == pytest.approx(_marginal(data, sigma, tau, phi, scale), rel=1e-9)


def test_grid_likelihood_sums_phi_out():
    frame, _ = simulate_spatial(25, seed=5)
    data = prepare_spatial_data(frame, "response", ("x", "y"))
    data = data.with_response(data.y - 11)
    sigma, tau = 1.5, 0.3
    grid = np.array([5.0, 10.0, 20.0])
    model = build_model(rotate(data, grid), PRIORS, (1.0, 1.0), ["intercept"], {"sigma": sigma, "tau": tau})
    each = [_marginal(data, sigma, tau, p) for p in grid]
    assert float(_likelihood(model, POINT)) == pytest.approx(np.logaddexp.reduce(each) - math.log(3), rel=1e-9)


def test_beta_and_phi_draws_follow_their_conditionals():
    frame, _ = simulate_spatial(30, seed=8)
    data = prepare_spatial_data(frame, "response", ("x", "y"), COVARIATES)
    sigma_sq, tau_sq, beta_sd = 2.0, 0.2, 100.0
    grid = np.array([4.0, 12.0])
    rotated = rotate(data, grid)
    n = 20000
    index, beta = draw_beta_and_phi(
        rotated, np.full(n, sigma_sq), np.full(n, tau_sq), beta_sd, np.random.default_rng(1)
    )
    # phi: proportional to the marginal likelihoods at the two grid values
    logs = [_marginal(data, math.sqrt(sigma_sq), math.sqrt(tau_sq), p, beta_sd=beta_sd) for p in grid]
    p_second = 1 / (1 + math.exp(logs[0] - logs[1]))
    assert index.mean() == pytest.approx(p_second, abs=4 * math.sqrt(p_second * (1 - p_second) / n) + 1e-9)
    # beta given phi: N((X'S^-1X + I/s^2)^-1 X'S^-1 y, (X'S^-1X + I/s^2)^-1) (generalised least squares)
    g = int(np.bincount(index, minlength=2).argmax())
    cov_y = sigma_sq * exponential_correlation(data.coords, None, grid[g]) + tau_sq * np.eye(data.n)
    precision = data.X.T @ np.linalg.solve(cov_y, data.X) + np.eye(3) / beta_sd**2
    cov_beta = np.linalg.inv(precision)
    mean = cov_beta @ data.X.T @ np.linalg.solve(cov_y, data.y)
    chosen = beta[index == g]
    assert np.abs(chosen.mean(0) - mean).max() < 5 * np.sqrt(cov_beta.diagonal().max() / len(chosen))
    sd = np.sqrt(cov_beta.diagonal())
    monte_carlo_sd = np.sqrt((np.outer(sd, sd) ** 2 + cov_beta**2) / len(chosen))
    assert (np.abs(np.cov(chosen.T) - cov_beta) < 4 * monte_carlo_sd).all()


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


def test_latent_draws_follow_the_full_conditional_eq2_and_are_zero_at_smoothed_outliers():
    frame, _ = simulate_spatial(30, seed=6)
    data = prepare_spatial_data(frame, "response", ("x", "y"))
    beta, sigma_sq, tau_sq, phi = np.array([11.0]), 2.0, 0.3, 10.0
    posterior = _posterior(20000, beta, sigma_sq, tau_sq, phi)
    rng = np.random.default_rng(0)
    draws = SpatialSynthesizer().draw_latent(posterior, data, rng).to_numpy()
    sigma_w = sigma_sq * exponential_correlation(data.coords, None, phi)
    precision = np.linalg.inv(sigma_w) + np.eye(data.n) / tau_sq
    cov = np.linalg.inv(precision)
    mean = cov @ (data.y - 11.0) / tau_sq
    assert np.abs(draws.mean(0) - mean).max() < 5 * np.sqrt(cov.diagonal().max() / 20000)
    assert np.allclose(np.cov(draws.T), cov, atol=0.03)

    weights = risk_weights(data.coords, phi)
    outliers = weights > 0
    # by hand: the points whose nearest neighbour is at least M = -log(0.2) / phi away
    distance = np.hypot(*(data.coords[:, None, :] - data.coords[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(distance, np.inf)
    assert np.array_equal(outliers, distance.min(1) >= -math.log(0.2) / phi)
    assert np.flatnonzero(outliers).tolist() == [4, 11, 24, 29]
    restriction = Restriction(phi, weights, math.inf, smoothing_diagonal(weights, math.inf), outlier_threshold(phi))
    restricted = SpatialSynthesizer(restriction=restriction)
    w_star = restricted.draw_latent(posterior.isel(sample=slice(0, 2000)), data, np.random.default_rng(7)).to_numpy()
    assert (w_star[:, outliers] == 0).all()  # gamma = inf: w* = A w is exactly 0 at outliers
    process = restricted.draw_synthetic_process(posterior.isel(sample=slice(0, 2000)), data, np.random.default_rng(7))
    process = process.to_numpy()
    assert (process[:, ~outliers] == w_star[:, ~outliers]).all()
    # at an isolated outlier the synthetic w comes from its conditional prior: variance close to sigma^2
    far = np.flatnonzero(outliers)[
        np.argmax(exponential_correlation(data.coords[outliers], data.coords[~outliers], phi).max(1) * -1)
    ]
    assert np.var(process[:, far]) == pytest.approx(sigma_sq, rel=0.15)


# -- bad input ------------------------------------------------------------------------------------------


def test_bad_input_is_refused_with_the_rows():
    frame, _ = simulate_spatial(40, seed=1)
    with pytest.raises(SpatialDataError, match="'lon'"):
        prepare_spatial_data(frame, "response", ("lon", "y"))
    bad = frame.copy()
    bad.loc[3, "x"] = np.nan
    with pytest.raises(SpatialDataError, match="missing values at data row 4"):
        prepare_spatial_data(bad, "response", ("x", "y"))
    bad = frame.astype({"response": object})
    bad.loc[5, "response"] = "n/a"
    with pytest.raises(SpatialDataError, match="not numeric at data row 6"):
        prepare_spatial_data(bad, "response", ("x", "y"))
    bad = frame.copy()
    bad.loc[2, "response"] = -1.0
    with pytest.raises(SpatialDataError, match="non-positive values at data row 3"):
        prepare_spatial_data(bad, "response", ("x", "y"), log_response=True)
    dup = frame.copy()
    dup.loc[7, ["x", "y"]] = dup.loc[2, ["x", "y"]].to_numpy()
    with pytest.raises(SpatialDataError, match="jitter=DIST"):
        prepare_spatial_data(dup, "response", ("x", "y"))
    jittered = prepare_spatial_data(dup, "response", ("x", "y"), jitter=0.001, seed=3)
    assert jittered.n_jittered == 2 and len(np.unique(jittered.coords, axis=0)) == 40
    assert np.abs(jittered.coords - dup[["x", "y"]].to_numpy()).max() <= 0.001
    with pytest.raises(SpatialDataError, match="too few"):
        prepare_spatial_data(frame.head(5), "response", ("x", "y"))


# -- parameter recovery, both stages -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_stage():
    frame, truth = simulate_spatial(100, seed=11)
    data = prepare_spatial_data(frame, "response", ("x", "y"), COVARIATES)
    fit = fit_two_stage(data, settings=SETTINGS, seed=2)
    return data, truth, fit


def test_stage1_recovers_the_parameters_and_converges(two_stage):
    data, truth, fit = two_stage
    post = fit.unrestricted_idata.posterior
    report = check_convergence(fit.unrestricted_idata, var_names=fit.unrestricted.convergence_variables())
    assert report.passed, report.problems()
    for name in ("sigma_sq", "tau_sq", "phi"):
        lo, hi = _interval(post[name])
        assert lo <= truth[name] <= hi, (name, lo, hi, truth[name])
    for k, value in enumerate(TRUE_BETA):
        lo, hi = _interval(post["beta"].isel(coefficient=k))
        assert lo <= value <= hi, (k, lo, hi)


def test_restriction_flags_isolated_points_and_stage2_converges(two_stage):
    data, truth, fit = two_stage
    r = fit.restriction
    assert r.phi_hat == pytest.approx(float(fit.unrestricted_idata.posterior["phi"].median()))
    assert r.at_risk[truth["outlier_index"]]  # the planted outlier at (0.51, 0.01)
    from bayessdc.models.spatial import nearest_neighbour_distance

    assert (nearest_neighbour_distance(data.coords)[r.at_risk] >= r.threshold).all()
    report = check_convergence(fit.restricted_idata, var_names=fit.restricted.convergence_variables())
    assert report.passed, report.problems()
    assert (fit.restricted_idata.posterior["phi"] == r.phi_hat).all()


def test_stage2_recovers_the_parameters_of_the_restricted_model():
    """Data simulated from eq. (7) itself (phi known, outliers without spatial effect) are recovered."""
    phi = 12.7
    frame, truth = simulate_spatial(100, seed=12)
    data = prepare_spatial_data(frame, "response", ("x", "y"), COVARIATES)
    weights = risk_weights(data.coords, phi)
    smoothing = smoothing_diagonal(weights, math.inf)
    rng = np.random.default_rng(5)
    y = data.X @ TRUE_BETA + smoothing * truth["w"] + rng.normal(0, math.sqrt(truth["tau_sq"]), data.n)
    data = data.with_response(y)
    restriction = Restriction(
        phi,
        weights,
        math.inf,
        smoothing,
        outlier_threshold(phi),
        initial={"sigma": 1.0, "tau": 1.0},
    )
    synthesizer = SpatialSynthesizer(settings=SETTINGS, restriction=restriction)
    idata = synthesizer.fit(data, seed=3)
    report = check_convergence(idata, var_names=synthesizer.convergence_variables())
    assert report.passed, report.problems()
    post = idata.posterior
    for name in ("sigma_sq", "tau_sq"):
        lo, hi = _interval(post[name])
        assert lo <= truth[name] <= hi, (name, lo, hi)
    for k, value in enumerate(TRUE_BETA):
        lo, hi = _interval(post["beta"].isel(coefficient=k))
        assert lo <= value <= hi, (k, lo, hi)


def test_synthesis_protects_the_outlier(two_stage):
    from bayessdc.synthesis.datasets import draw_synthetic

    data, truth, fit = two_stage
    k = truth["outlier_index"]
    rng = np.random.default_rng(1)
    unrestricted = draw_synthetic(fit.unrestricted, fit.unrestricted_idata, data, 200, rng).to_numpy()
    restricted = draw_synthetic(fit.restricted, fit.restricted_idata, data, 200, rng).to_numpy()
    err_u = np.abs(unrestricted[:, k] - data.y[k]).mean()
    err_r = np.abs(restricted[:, k] - data.y[k]).mean()
    assert err_r > err_u
    # the other records keep their fit: mean absolute error grows far less than at the outlier
    others = ~fit.restriction.at_risk
    assert (
        np.abs(restricted[:, others] - data.y[others]).mean()
        < 2 * np.abs(unrestricted[:, others] - data.y[others]).mean()
    )
    # the draws are the records' own posterior predictive: 200 finite datasets of the 100 records, whose means
    # track the data record by record (records shuffled would not), with 90% intervals covering the data
    assert unrestricted.shape == (200, data.n) and np.isfinite(unrestricted).all()
    assert np.corrcoef(unrestricted.mean(0), data.y)[0, 1] > 0.95
    lo, hi = np.quantile(unrestricted, [0.05, 0.95], axis=0)
    assert ((lo <= data.y) & (data.y <= hi)).mean() >= 0.85
    # and the measurement error is in them: var(y*) = var(X beta + w | y) + E[tau^2] > E[tau^2]
    assert unrestricted.var(0).mean() > float(fit.unrestricted_idata.posterior["tau_sq"].mean())


def test_make_restriction_options_from_a_posterior():
    import arviz as az

    from bayessdc.models.spatial import make_restriction, nearest_neighbour_distance

    frame, _ = simulate_spatial(40, seed=9)
    data = prepare_spatial_data(frame, "response", ("x", "y"))
    rng = np.random.default_rng(0)
    shape = (2, 50)
    posterior = {
        "phi": np.full(shape, 10.0),
        "sigma_sq": np.full(shape, 4.0),
        "tau_sq": np.full(shape, 0.25),
        "sigma": np.full(shape, 2.0),
        "tau": np.full(shape, 0.5),
        "beta": rng.normal(11, 0.1, (*shape, 1)),
    }
    idata = az.from_dict(posterior=posterior)
    binary = make_restriction(data, idata)
    nn = nearest_neighbour_distance(data.coords)
    assert binary.threshold == pytest.approx(-math.log(0.2) / 10)
    assert (binary.at_risk == (nn >= binary.threshold)).all()
    assert binary.initial == {"sigma": 2.0, "tau": 0.5}
    # alpha = 1/2 at sigma^2 = 4, tau^2 = 0.25: gamma = 4/0.25 - 1 = 15 (eq. 5)
    halfway = make_restriction(data, idata, alpha=0.5)
    assert halfway.gamma == pytest.approx(15.0)
    assert halfway.smoothing[binary.at_risk] == pytest.approx(0.25)  # 1/sqrt(1 + 15)
    continuous = make_restriction(data, idata, kind="continuous", gamma=3.0)
    assert continuous.smoothing == pytest.approx(1 / np.sqrt(1 + 3 * (1 - np.exp(-10 * nn))))
    assert (continuous.at_risk == binary.at_risk).all()
    with pytest.raises(ValueError, match="finite gamma"):
        make_restriction(data, idata, kind="continuous")


def test_pymc_marginal_gp_with_matern12_is_the_papers_exponential_covariance():
    """sigma^2 exp(-phi d) is ``sigma**2 * Matern12(2, ls=1/phi)`` (not ``Exponential``, which is exp(-d/(2 ls)))."""
    import pymc as pm

    frame, _ = simulate_spatial(20, seed=10)
    data = prepare_spatial_data(frame, "response", ("x", "y"))
    beta0, sigma, tau, phi = 11.0, 1.5, 0.3, 12.7
    with pm.Model() as model:
        gp = pm.gp.Marginal(mean_func=pm.gp.mean.Constant(beta0), cov_func=sigma**2 * pm.gp.cov.Matern12(2, ls=1 / phi))
        gp.marginal_likelihood("y", X=data.coords, y=data.y, sigma=tau, jitter=0.0)
    got = float(model.compile_logp()({}))
    cov = sigma**2 * exponential_correlation(data.coords, None, phi) + tau**2 * np.eye(data.n)
    # PyMC's distances are sqrt(d^2 + 1e-12): agreement to about 1e-7
    assert got == pytest.approx(stats.multivariate_normal(np.full(data.n, beta0), cov).logpdf(data.y), rel=1e-6)
