"""The leave-one-out reference of the intruder's attribute risk (bayessdc.risk.unlearned), against answers worked
exactly: a beta-binomial model whose leave-one-out posterior and intruder are known in closed form, and the flow
model refitted without the cell judged."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import xarray as xr
from scipy.special import betaln, gammaln

from bayessdc.risk.attribute import guessed_correctly, unlearned_share
from bayessdc.risk.unlearned import unlearned_attribute_risk

K = 4  # each item is Binomial(K, pi): candidates 0..K
Y = np.array([0, 1, 2, 4, 3, 1, 0, 2])
M = 3


def _binomial_log(c: np.ndarray, pi: np.ndarray) -> np.ndarray:
    return gammaln(K + 1) - gammaln(c + 1) - gammaln(K - c + 1) + c * np.log(pi) + (K - c) * np.log1p(-pi)


def _beta_binomial_log(v: np.ndarray, a: float, b: float) -> np.ndarray:
    return gammaln(K + 1) - gammaln(v + 1) - gammaln(K - v + 1) + betaln(v + a, K - v + b) - betaln(a, b)


def _exact(t: int) -> tuple[np.ndarray, float]:
    """Item t's leave-one-out predictive and its probability of being guessed, by enumeration: pi ~ Beta(1, 1),
    the intruder's posterior of candidate c is prod_l BB(v_l | D_t^c), the released v_l iid from BB(. | Y_-t)."""
    rest = Y.sum() - Y[t]
    a, b = 1 + rest, 1 + (len(Y) - 1) * K - rest
    values = np.arange(K + 1)
    loo = np.exp(_beta_binomial_log(values, a, b))
    correct = 0.0
    for release in itertools.product(values, repeat=M):
        log_rho = np.array([sum(_beta_binomial_log(v, a + c, b + K - c) for v in release) for c in values])
        if guessed_correctly(np.exp(log_rho - log_rho.max())[None, :], np.array([Y[t]]))[0]:
            correct += float(np.prod(loo[list(release)]))
    return loo, correct


@pytest.fixture(scope="module")
def beta_binomial():
    rng = np.random.default_rng(3)
    pi = rng.beta(1 + Y.sum(), 1 + len(Y) * K - Y.sum(), 40_000)  # exact posterior draws
    values = np.arange(K + 1)
    log_prob = xr.DataArray(
        np.broadcast_to(_binomial_log(values[None, None, :], pi[:, None, None]), (len(pi), len(Y), K + 1)),
        dims=("sample", "item", "candidate"),
        coords={"candidate": values},
    )
    replicates = 20_000
    result = unlearned_attribute_risk(
        log_prob, xr.DataArray(Y, dims="item"), M, np.random.default_rng(4), replicates=replicates
    )
    return result, replicates


def test_leave_one_out_predictive_is_the_beta_binomial_without_the_item(beta_binomial):
    result, _ = beta_binomial
    for t in range(len(Y)):
        loo, _ = _exact(t)
        assert 0.5 * np.abs(result["loo_predictive"].isel(item=t).to_numpy() - loo).sum() < 0.01
    assert (result["loo_khat"].to_numpy() < 0.5).all()


def test_probability_of_a_correct_guess_is_the_enumerated_one(beta_binomial):
    result, replicates = beta_binomial
    estimated = result["unlearned_correct"].to_numpy()
    exact = np.array([_exact(t)[1] for t in range(len(Y))])
    assert exact.min() > 0.05 and exact.max() < 0.95  # the guesses are neither always right nor always wrong
    se = np.sqrt(exact * (1 - exact) / replicates)
    np.testing.assert_array_less(np.abs(estimated - exact), 4 * se + 0.01)


def test_the_share_of_a_release_is_the_mean_and_its_range_the_binomial_spread():
    p = np.array([0.2, 0.5, 0.9, 0.4])
    share = unlearned_share(p)
    assert share["mean"] == pytest.approx(0.5)
    sd = np.sqrt(0.16 + 0.25 + 0.09 + 0.24) / 4
    assert share["sd"] == pytest.approx(sd)
    assert share["range"] == pytest.approx(0.5 + 1.959963984540054 * sd)


def test_a_release_that_saw_nothing_of_any_item_has_guesses_no_better_than_its_reference():
    """With every draw the same (a posterior that learned nothing), every candidate's intruder posterior is the
    same: every guess is a tie, and the reference is zero."""
    values = np.arange(K + 1)
    log_prob = xr.DataArray(
        np.broadcast_to(_binomial_log(values, np.full(1, 0.4))[None, None, :], (50, len(Y), K + 1)),
        dims=("sample", "item", "candidate"),
        coords={"candidate": values},
    )
    result = unlearned_attribute_risk(log_prob, xr.DataArray(Y, dims="item"), M, np.random.default_rng(0))
    assert (result["unlearned_correct"].to_numpy() == 0).all()


def test_the_flow_model_refitted_without_the_cell_gives_the_same_predictive():
    """The exact check on a small table: PSIS leave-one-out against the flow model fitted without the cell."""
    from bayessdc.models.base import stack_draws
    from bayessdc.models.flows import FlowSynthesizer, simulate_group
    from bayessdc.models.sampling import SamplerSettings

    group, _ = simulate_group(5, 6, 30, seed=2)  # every origin in 6 cells, every destination in 5
    synthesizer = FlowSynthesizer(settings=SamplerSettings(tune=500, draws=1000, chains=2))
    posterior = stack_draws(synthesizer.fit(group, seed=1).posterior)
    result = unlearned_attribute_risk(
        synthesizer.candidate_log_prob(posterior, group), synthesizer.observed(group), 5, np.random.default_rng(0)
    )
    assert (result["loo_khat"].to_numpy() < 0.7).all()
    distances, moved = [], []
    for t in (0, 7, 19):
        refit = stack_draws(synthesizer.fit(group.without(t), seed=2).posterior)
        log_prob = synthesizer.candidate_log_prob(refit, group).isel(item=t)  # cell t's rate under the refit
        exact = np.exp(log_prob.to_numpy()).mean(axis=-1)
        full = np.exp(synthesizer.candidate_log_prob(posterior, group).isel(item=t).to_numpy()).mean(axis=-1)
        loo = result["loo_predictive"].isel(item=t).to_numpy()
        distances.append(0.5 * np.abs(loo - exact).sum())
        moved.append(0.5 * np.abs(full - exact).sum())
    # the leave-one-out predictive is the refit's, to within the Monte Carlo error of two fits, and much nearer
    # to it than the posterior that saw the cell
    assert max(distances) < 0.03
    assert np.mean(distances) < 0.5 * np.mean(moved)
