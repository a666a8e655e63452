"""The intruder who knows no confidential value (bayessdc.risk.no_knowledge), against its posterior worked exactly
for a beta-binomial model: each released dataset taken as the other values, the m posteriors averaged."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import xarray as xr
from scipy.special import betaln, gammaln

from bayessdc.risk.no_knowledge import no_knowledge_attribute_risk

K = 4
Y = np.array([0, 1, 2, 4, 3, 1, 0, 2, 3, 1])


def _log_binomial(c, pi):
    return gammaln(K + 1) - gammaln(c + 1) - gammaln(K - c + 1) + c * np.log(pi) + (K - c) * np.log1p(-pi)


def _log_beta_binomial(v, a, b):
    return gammaln(K + 1) - gammaln(v + 1) - gammaln(K - v + 1) + betaln(v + a, K - v + b) - betaln(a, b)


class BetaBinomial:
    """Items iid Binomial(K, pi), pi ~ Beta(1, 1): the contract hooks, the posterior drawn exactly."""

    def fit(self, data, seed):
        rng = np.random.default_rng(seed)
        draws = rng.beta(1 + data.sum(), 1 + len(data) * K - data.sum(), (2, 20_000))
        return SimpleNamespace(posterior=xr.Dataset({"pi": (("chain", "draw"), draws)}))

    def candidates(self, data):
        return xr.DataArray(np.arange(K + 1), dims="candidate", coords={"candidate": np.arange(K + 1)})

    def observed(self, data):
        return xr.DataArray(data, dims="item")

    def candidate_log_prob(self, posterior, data):
        pi = posterior["pi"].transpose("sample").to_numpy()
        values = np.arange(K + 1)
        lp = np.broadcast_to(_log_binomial(values[None, :, None], pi[None, None, :]), (len(data), K + 1, len(pi)))
        return xr.DataArray(lp, dims=("item", "candidate", "sample"), coords={"candidate": values})

    def replace_values(self, data, values):
        return np.asarray(values, dtype=np.int64)


def test_the_no_knowledge_intruder_averages_the_posteriors_given_each_released_dataset():
    rng = np.random.default_rng(1)
    released = rng.binomial(K, 0.4, (3, len(Y)))  # three released datasets
    result = no_knowledge_attribute_risk(
        BetaBinomial(), Y, xr.DataArray(released, dims=("synthetic", "item")), seed=5, n_draws=40_000
    )
    values = np.arange(K + 1)
    exact = np.zeros((len(Y), K + 1))
    for t in range(len(Y)):
        for row in released:
            rest = row.sum() - row[t]  # the other values: this released dataset's
            a, b = 1 + rest, 1 + (len(Y) - 1) * K - rest
            log_rho = np.array([sum(_log_beta_binomial(v, a + c, b + K - c) for v in released[:, t]) for c in values])
            rho = np.exp(log_rho - log_rho.max())
            exact[t] += rho / rho.sum() / len(released)
    np.testing.assert_allclose(result["rho"].to_numpy(), exact, atol=0.01)
    guess = exact.argmax(axis=1)
    decided = np.sort(exact, axis=1)[:, -1] - np.sort(exact, axis=1)[:, -2] > 0.02  # no near-tie to flip
    assert decided.sum() >= 5
    np.testing.assert_array_equal(result["correct"].to_numpy()[decided], (guess == Y)[decided])
    # the intruder reads the released values, not the confidential ones: a different truth, the same posterior
    other = no_knowledge_attribute_risk(
        BetaBinomial(), (Y + 1) % (K + 1), xr.DataArray(released, dims=("synthetic", "item")), seed=5, n_draws=40_000
    )
    np.testing.assert_allclose(other["rho"].to_numpy(), result["rho"].to_numpy())
