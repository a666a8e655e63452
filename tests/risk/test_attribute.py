import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayessdc.models.base import stack_draws
from bayessdc.risk.attribute import attribute_risk, attribute_risk_summary, exact_attribute_risk, log_weighted_sum
from tests.conjugate import DirichletSynthesizer


def _exact_rho(alpha, observed_others, released, prior=None):
    """rho_c ∝ prior_c prod_l E[theta_{released_l} | Dirichlet(alpha + counts of others + e_c)]."""
    k = len(alpha)
    base = alpha + np.bincount(observed_others, minlength=k)
    rho = np.ones(k) if prior is None else np.asarray(prior, float).copy()
    for c in range(k):
        post = base.copy()
        post[c] += 1
        for value in released:
            rho[c] *= post[value] / post.sum()
    return rho / rho.sum()


def test_importance_sampling_matches_the_closed_form():
    alpha = np.array([1.0, 2.0, 0.5, 1.0])
    data = np.array([2])  # one confidential item: the intruder knows nothing else
    synth = DirichletSynthesizer(alpha=alpha, chains=4, draws=10_000)
    idata = synth.fit(data, seed=1)
    posterior = stack_draws(idata.posterior)
    released = xr.DataArray([[2], [2], [0]], dims=("synthetic", "item"))
    risk = attribute_risk(synth.candidate_log_prob(posterior, data), synth.observed(data), released)
    exact = _exact_rho(alpha, np.array([], dtype=int), [2, 2, 0])
    assert np.allclose(risk["rho"].sel(item=0), exact, atol=0.01)
    assert int(risk["guess"][0]) == int(np.argmax(exact)) == 2
    assert bool(risk["correct"][0])
    assert np.isfinite(risk["max_khat"].item())


def test_intruder_prior_enters_multiplicatively():
    alpha = np.ones(3)
    data = np.array([0])
    synth = DirichletSynthesizer(alpha=alpha, chains=4, draws=10_000)
    posterior = stack_draws(synth.fit(data, seed=2).posterior)
    released = xr.DataArray([[1]], dims=("synthetic", "item"))
    prior = xr.DataArray([0.2, 0.2, 0.6], dims="candidate")
    risk = attribute_risk(synth.candidate_log_prob(posterior, data), synth.observed(data), released, prior)
    assert np.allclose(risk["rho"].sel(item=0), _exact_rho(alpha, [], [1], prior=[0.2, 0.2, 0.6]), atol=0.01)


def test_exact_check_by_refitting_agrees_with_importance_sampling():
    alpha = np.array([1.0, 1.0, 3.0])
    data = np.array([1, 2, 2, 0, 1])
    synth = DirichletSynthesizer(alpha=alpha, chains=4, draws=5000)
    posterior = stack_draws(synth.fit(data, seed=3).posterior)
    released = xr.DataArray(np.array([[1, 2, 2, 2, 1], [0, 2, 1, 0, 1]]), dims=("synthetic", "item"))
    risk = attribute_risk(synth.candidate_log_prob(posterior, data), synth.observed(data), released)

    def refit(t, c):
        replaced = data.copy()
        replaced[t] = c
        draws = stack_draws(synth.fit(replaced, seed=10 + t * 7 + int(c)).posterior)
        return synth.candidate_log_prob(draws, replaced).isel(item=t)

    exact = exact_attribute_risk(refit, [0, 3], [0, 1, 2], released)
    for t in (0, 3):
        others = np.delete(data, t)
        truth = _exact_rho(alpha, others, released.isel(item=t).to_numpy())
        assert np.allclose(exact.sel(item=t), truth, atol=0.02)
        assert np.allclose(risk["rho"].sel(item=t), truth, atol=0.02)


def test_ties_are_not_counted_as_correct():
    # every draw gives equal probabilities: rho is uniform, the maximum is tied, r_t = 0
    lp = xr.DataArray(
        np.log(np.full((50, 2, 3), 1 / 3)), dims=("sample", "item", "candidate"), coords={"candidate": [0, 1, 2]}
    )
    risk = attribute_risk(lp, xr.DataArray([0, 1], dims="item"), xr.DataArray([[0, 1]], dims=("synthetic", "item")))
    assert np.allclose(risk["rho"], 1 / 3)
    assert not risk["correct"].any()


def test_summary_figures_by_hand():
    table = pd.DataFrame(
        {
            "correct": [True, False, True, True],
            "distance": [0, 2, 0, 0],
            "true_probability": [0.5, 0.1, 0.6, 0.7],
            "max_khat": [0.2, 0.9, 0.8, 0.1],
            "relevant_khat": [0.2, 0.9, 0.3, 0.1],
        }
    )
    out = attribute_risk_summary(table, unique=np.array([True, True, False, False]))
    assert out["R_all"] == 0.75
    assert out["R_unq"] == 0.5
    assert out["n_unique"] == 2
    assert out["khat_over_0_7"] == 1
    assert out["khat_over_0_7_any_candidate"] == 2
    assert out["d_t"]["counts"] == {"0": 3, "2": 1}


def test_values_outside_the_candidates_are_refused():
    lp = xr.DataArray(np.zeros((5, 1, 2)), dims=("sample", "item", "candidate"), coords={"candidate": [0, 1]})
    with pytest.raises(ValueError, match="not among the candidate"):
        attribute_risk(lp, xr.DataArray([3], dims="item"), xr.DataArray([[0]], dims=("synthetic", "item")))


def test_a_release_likelihood_constant_in_the_candidate_reproduces_eq_8():
    alpha = np.array([1.0, 1.0, 3.0])
    data = np.array([1, 2, 2, 0, 1])
    synth = DirichletSynthesizer(alpha=alpha, chains=2, draws=2000)
    posterior = stack_draws(synth.fit(data, seed=4).posterior)
    released = xr.DataArray(np.array([[1, 2, 2, 2, 1], [0, 2, 1, 0, 1]]), dims=("synthetic", "item"))
    lp = synth.candidate_log_prob(posterior, data)
    default = attribute_risk(lp, synth.observed(data), released)
    at_released = np.stack([lp.to_numpy()[:, np.arange(5), released[l].to_numpy()] for l in range(2)])
    release = xr.DataArray(
        np.broadcast_to(at_released[..., None], (2, lp.sizes["sample"], 5, 3)),
        dims=("synthetic", "sample", "item", "candidate"),
    )
    explicit = attribute_risk(lp, synth.observed(data), released, release_log_prob=release)
    assert np.allclose(explicit["rho"], default["rho"], rtol=1e-12)
    # a release that reveals the true value exactly: rho is one at the true value whatever the weights
    reveal = np.log(np.where(np.arange(3)[None, None, None, :] == released.to_numpy()[:, None, :, None], 1.0, 1e-12))
    exact = attribute_risk(
        lp,
        synth.observed(data),
        released,
        release_log_prob=xr.DataArray(
            np.broadcast_to(reveal, (2, lp.sizes["sample"], 5, 3)), dims=("synthetic", "sample", "item", "candidate")
        ),
    )
    consistent = (released[0] == released[1]).to_numpy()
    assert np.allclose(exact["rho"].to_numpy()[consistent, released[0].to_numpy()[consistent]], 1.0)


def test_weighted_sum_in_logs_equals_logsumexp_including_underflow():
    """log_weighted_sum is logsumexp(log w + log v) computed as a matrix product: the same to 1e-12, also where
    v spans hundreds of orders of magnitude, is -inf in places, or sits where the weights are not."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(0)
    log_w = rng.normal(0, 3, (40, 9, 500))
    log_w -= logsumexp(log_w, axis=-1, keepdims=True)
    log_v = rng.normal(0, 50, (40, 1, 500))
    log_v[0, 0, :250] = -np.inf
    log_v[1, 0, :] = -np.inf
    # row 2: the weights all on the first half, v there 1e-300 of its maximum (the product underflows)
    log_w[2, :, 250:] = -np.inf
    log_w[2] -= logsumexp(log_w[2], axis=-1, keepdims=True)
    log_v[2, 0, :250] = -700.0
    log_v[2, 0, 250:] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = logsumexp(log_w + log_v, axis=-1)
    got = log_weighted_sum(np.exp(log_w), log_w, log_v)
    assert np.array_equal(np.isneginf(got), np.isneginf(expected)) and np.isneginf(got[1]).all()
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12)
    assert np.all(expected[2] < -690)
    # values that differ by candidate too (the release_log_prob path): the general product
    per_candidate = log_v + rng.normal(0, 5, log_w.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = logsumexp(log_w + per_candidate, axis=-1)
    got = log_weighted_sum(np.exp(log_w), log_w, per_candidate)
    finite = np.isfinite(expected)
    assert np.array_equal(finite, np.isfinite(got))
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12)
    # one row, and values broadcast over two axes
    row = log_w[3, 0]
    assert log_weighted_sum(np.exp(row), row, log_v[3, 0]) == pytest.approx(logsumexp(row + log_v[3, 0]), rel=1e-12)
    np.testing.assert_allclose(
        log_weighted_sum(np.exp(log_w), log_w, log_v[:, :, :1]), logsumexp(log_w + log_v[:, :, :1], axis=-1), rtol=1e-12
    )


def test_release_sums_of_all_synthetic_datasets_at_once_equal_logsumexp():
    """The m release terms in one matrix product per item equal logsumexp(log w + log v) for each dataset,
    also where v is -inf or underflows against the weights."""
    from scipy.special import logsumexp

    from bayessdc.risk.attribute import _log_weighted_sums

    rng = np.random.default_rng(1)
    log_w = rng.normal(0, 3, (30, 9, 400))
    log_w -= logsumexp(log_w, axis=-1, keepdims=True)
    log_v = rng.normal(0, 40, (30, 5, 400))  # (item, synthetic, sample)
    log_v[0, 1] = -np.inf
    log_w[2, :, 200:] = -np.inf
    log_w[2] -= logsumexp(log_w[2], axis=-1, keepdims=True)
    log_v[2, 3, :200] = -700.0
    log_v[2, 3, 200:] = 0.0
    got = _log_weighted_sums(np.exp(log_w), log_w, log_v)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.stack([logsumexp(log_w + log_v[:, None, l], axis=-1) for l in range(5)], axis=-1)
    assert np.isneginf(got[0, :, 1]).all() and np.array_equal(np.isneginf(got), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12)
    assert np.all(expected[2, :, 3] < -690)
