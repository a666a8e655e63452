"""The spatial model as the paper writes it (``model.paper_model``) and as NUTS runs it (``marginal.build_model``).

The paper's model has ``beta``, ``sigma``, ``tau``, ``phi`` (on a grid, equal weights) and ``w``; the sampler's
has only ``(log sigma, log tau)``: ``w`` and ``beta`` integrated out (Gaussian), ``phi`` summed over its grid.
Given ``(sigma, tau, phi)``, ``(beta, w) | y`` is Gaussian with precision
``P = blockdiag(I / beta_sd^2, R(phi)^-1 / sigma^2) + Z'Z / tau^2`` and mean ``P^-1 Z'y / tau^2``,
``Z = [X, diag(A)]``, so the marginal follows from the paper's joint at *any* ``(beta, w)`` by
``log p(sigma, tau, phi, y) = log p(beta, w, sigma, tau, phi, y) - log p(beta, w | sigma, tau, phi, y)``.
Summing ``phi`` over the grid:

``log p_marginal(log sigma, log tau, y) = logsumexp_g [log p_paper(beta, log sigma, log tau, phi_g, w, y)
- log p(beta, w | sigma, tau, phi_g, y)]``,

both on the log scale of ``sigma`` and ``tau`` (with PyMC's Jacobians). Checked at random points for the
unrestricted model (eq. 6, a grid of ``phi``) and the restricted one (eq. 7, ``phi`` fixed; ``gamma`` infinite,
which zeroes ``A_ii`` at the outliers, and finite).
"""

import math

import numpy as np
import pytest
from scipy.linalg import block_diag, cho_factor, cho_solve

from bayessdc.models.spatial import (
    SpatialPriors,
    build_model,
    exponential_correlation,
    paper_model,
    prepare_spatial_data,
    risk_weights,
    rotate,
    simulate_spatial,
    smoothing_diagonal,
)


def _conditional_logpdf(data, beta, w, sigma, tau, phi, a, beta_sd):
    """log p(beta, w | sigma, tau, phi, y): the Gaussian full conditional, computed directly (dense)."""
    prior_precision = block_diag(
        np.eye(len(beta)) / beta_sd**2, np.linalg.inv(sigma**2 * exponential_correlation(data.coords, None, phi))
    )
    z = np.hstack([data.X, np.diag(a)])
    precision = prior_precision + z.T @ z / tau**2
    factor = cho_factor(precision)
    mean = cho_solve(factor, z.T @ data.y / tau**2)
    d = np.concatenate([beta, w]) - mean
    log_det = 2 * np.log(np.diag(factor[0])).sum()
    return 0.5 * log_det - 0.5 * len(d) * math.log(2 * math.pi) - 0.5 * d @ precision @ d


@pytest.mark.parametrize("stage", ["unrestricted", "restricted, gamma = inf", "restricted, gamma = 5"])
def test_paper_model_and_the_sampled_form_have_the_same_log_density(stage):
    frame, _ = simulate_spatial(25, seed=4)
    data = prepare_spatial_data(frame, "response", ("x", "y"), ("d1", "d2"))
    priors = SpatialPriors(beta_sd=10.0)
    if stage == "unrestricted":
        grid, smoothing = np.array([4.0, 9.0, 20.0]), None
    else:
        weights = risk_weights(data.coords, 9.0)
        assert weights.sum() >= 1  # the outlier
        grid, smoothing = np.array([9.0]), smoothing_diagonal(weights, math.inf if "inf" in stage else 5.0)
    a = np.ones(data.n) if smoothing is None else smoothing
    scales = priors.scales(data)
    paper = paper_model(data, priors, phi_grid=grid, smoothing=smoothing)
    start = {"sigma": 1.0, "tau": 1.0}
    marginal = build_model(rotate(data, grid, smoothing), priors, scales, data.covariate_names, start)
    paper_logp, marginal_logp = paper.compile_logp(), marginal.compile_logp()
    rng = np.random.default_rng(11)
    for _ in range(4):
        sigma, tau = np.exp(rng.normal([0.3, -1.0], 0.5))
        beta = np.array([11.0, 0.3, 0.3]) + rng.normal(0, 0.5, 3)
        terms = []
        for g, phi in enumerate(grid):
            w = rng.normal(0, sigma, data.n)  # any (beta, w): the identity holds at every point
            point = {
                "beta": beta,
                "sigma_log__": math.log(sigma),
                "tau_log__": math.log(tau),
                "phi_index": g,
                "w": w,
            }
            conditional = _conditional_logpdf(data, beta, w, sigma, tau, phi, a, priors.beta_sd)
            terms.append(float(paper_logp(point)) - conditional)
        want = np.logaddexp.reduce(terms)
        got = float(marginal_logp({"log_sd_offset": np.log([sigma, tau])}))
        assert got == pytest.approx(want, rel=1e-8), stage


def test_paper_model_has_named_dims():
    frame, _ = simulate_spatial(15, seed=2)
    data = prepare_spatial_data(frame, "response", ("x", "y"), ("d1",))
    model = paper_model(data, phi_grid=[5.0, 10.0])
    assert model.named_vars_to_dims["w"] == ("record",)
    assert model.named_vars_to_dims["y"] == ("record",)
    assert list(model.coords["coefficient"]) == ["intercept", "d1"]
