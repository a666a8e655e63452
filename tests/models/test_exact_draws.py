"""The exact binomial and multinomial draws in compiled code (``bayessdc.models.exact_draws``)."""

import numba
import numpy as np
import pytest
from scipy import stats

from bayessdc.models.exact_draws import draw_binomials, draw_multinomials, uniform_index


@pytest.mark.parametrize(
    "n, p",
    [
        (7, 0.3), (40, 0.5), (200, 0.3), (200, 0.85), (5000, 0.4), (100_003, 0.01), (18_000, 0.9995), (1, 0.5),
        (512, 0.05), (513, 0.05), (255, 0.9), (97, 0.3), (60, 0.45),
    ],
)  # fmt: skip
def test_binomial_draws_follow_the_binomial_distribution(n, p):
    """Inversion (n min(p, 1-p) <= 30; its start (1 - p)^n by repeated squaring up to n = 512, by exp and log1p
    above) and BTPE (above, every region of its envelope) against the pmf."""
    size = 200_000
    x = draw_binomials(np.full(size, n, dtype=np.int64), np.full(size, p), np.random.default_rng(17))
    sd = np.sqrt(n * p * (1 - p))
    assert abs(x.mean() - n * p) < 4 * sd / np.sqrt(size)
    assert x.var() / sd**2 == pytest.approx(1.0, abs=0.02)
    values, observed = np.unique(x, return_counts=True)
    expected = stats.binom.pmf(values, n, p) * size
    keep = expected > 10
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3
    assert observed[~keep].sum() < 10 + 4 * np.sqrt(expected[~keep].sum() + 1) + expected[~keep].sum()


@pytest.mark.parametrize("n", [1, 5, 8, 9, 60, 3000])
def test_multinomial_draws_have_the_multinomial_mean_and_covariance(n):
    """Conditional binomials largest-first, then single draws for the last few trials: exact, any n."""
    weights = np.array([0.0, 3.0, 0.02, 1.0, 0.3, 0.3, 0.004, 2.0, 0.0, 0.5])  # not normalised, some zero
    p = weights / weights.sum()
    size = 100_000
    x = draw_multinomials(n, weights, size, 8, np.random.default_rng(5))
    assert np.all(x.sum(axis=1) == n) and np.all(x[:, weights == 0] == 0)
    cov = n * (np.diag(p) - np.outer(p, p))
    se = np.sqrt(np.maximum(np.diag(cov), 1e-12) / size)
    assert np.all(np.abs(x.mean(axis=0) - n * p) < 4.5 * se)
    # every covariance within 5 of its Monte Carlo standard errors (estimated from the products themselves)
    centred = x - x.mean(axis=0)
    products = centred[:, :, None] * centred[:, None, :]
    se_cov = products.std(axis=0) / np.sqrt(size)
    positive = np.ix_(weights > 0, weights > 0)
    assert np.all(np.abs(products.mean(axis=0) - cov)[positive] < 5 * se_cov[positive] + 1e-12)


def _assert_multinomial(x, n, p, label):
    """Every row of ``x`` sums to ``n`` and never draws a zero-probability component, and the outcomes' counts fit
    Multinomial(n, p) by a chi-square test over the outcomes expected more than 10 times."""
    assert np.all(x.sum(axis=1) == n) and np.all(x[:, p == 0] == 0)
    outcomes, observed = np.unique(x, axis=0, return_counts=True)
    expected = stats.multinomial.pmf(outcomes, n, p) * len(x)
    keep = expected > 10
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3, label


def test_multinomial_draws_have_the_multinomial_distribution():
    """Every outcome of Multinomial(12, p) over 3 components at its pmf (the tail path and the head path)."""
    p = np.array([0.5, 0.3, 0.2])
    size = 200_000
    for small in (1, 4, 20):
        x = draw_multinomials(12, p, size, small, np.random.default_rng(9))
        outcomes, observed = np.unique(x, axis=0, return_counts=True)
        expected = stats.multinomial.pmf(outcomes, 12, p) * size
        keep = expected > 10
        chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
        assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3, small


@pytest.mark.parametrize("n_largest", [1, 3])
def test_sparse_multinomial_from_the_cumulative_sums_has_the_multinomial_distribution(n_largest):
    """``multinomial_cdf`` (the Gibbs sampler's allocation of a cell): every outcome of Multinomial(12, p) at its
    pmf, through the binomial path, the single-trial path (stepping over drawn components) and both; a zero
    weight never drawn."""
    from bayessdc.models.exact_draws import draw_multinomials_cdf

    weights = np.array([0.3, 0.0, 2.0, 0.5, 1.2])
    p = weights / weights.sum()
    size = 200_000
    for small in (0, 2, 5, 20):
        x = draw_multinomials_cdf(12, weights, size, small, np.random.default_rng(21), n_largest)
        _assert_multinomial(x, 12, p, small)


@pytest.mark.parametrize("first", [[0], [4, 0], [0, 3, 2], [3, 4, 0, 2]])
def test_sparse_multinomial_with_any_first_components_has_the_multinomial_distribution(first):
    """The binomials first for a guess of the largest components (the Gibbs sampler's: last iteration's), here
    wrong on purpose (small ones first, some in increasing order): every outcome of Multinomial(12, p) at its pmf."""
    from bayessdc.models.exact_draws import draw_multinomials_cdf

    weights = np.array([0.3, 0.0, 2.0, 0.5, 1.2])
    p = weights / weights.sum()
    size = 200_000
    for small in (0, 2, 5):
        x = draw_multinomials_cdf(12, weights, size, small, np.random.default_rng(23), 3, np.array(first))
        _assert_multinomial(x, 12, p, small)


@pytest.mark.parametrize("n", [9, 60, 3000, 250_000])
def test_sparse_multinomial_for_large_counts_has_the_multinomial_mean_and_marginals(n):
    """Large counts (binomials by inversion and BTPE, then single trials), forty components of very unequal
    weight as in the sampler: means within 4.5 standard errors and each component's marginal against the
    binomial pmf by a chi-square test."""
    from bayessdc.models.exact_draws import draw_multinomials_cdf

    rng = np.random.default_rng(3)
    weights = rng.gamma(0.3, 1.0, 40) * (rng.random(40) < 0.9)
    p = weights / weights.sum()
    size = 40_000
    x = draw_multinomials_cdf(n, weights, size, 8, np.random.default_rng(13))
    assert np.all(x.sum(axis=1) == n) and np.all(x[:, weights == 0] == 0)
    se = np.sqrt(np.maximum(n * p * (1 - p), 1e-12) / size)
    assert np.all(np.abs(x.mean(axis=0) - n * p) < 4.5 * se + 1e-9)
    for k in np.argsort(p)[::-1][:6]:
        values, observed = np.unique(x[:, k], return_counts=True)
        expected = stats.binom.pmf(values, n, p[k]) * size
        keep = expected > 10
        if keep.sum() < 2:
            continue
        chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
        assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4, k


@numba.njit
def _uniform_indices(rng, n, size):  # noqa: ANN001, ANN202
    out = np.empty(size, dtype=np.int64)
    for i in range(size):
        out[i] = uniform_index(rng, n)
    return out


@pytest.mark.parametrize("n", [1, 2, 7, 40, 1000, 3 * 2**50])
def test_uniform_index_is_uniform_on_0_to_n_minus_1(n):
    """The kernels' bounded integers (``uniform_index``: a double's 53 bits, rejection above the largest multiple
    of n): in range, every value of a small range at its probability, and a large range evenly over 40 bins
    (n = 3 * 2**50 rejects a quarter of the doubles)."""
    size = 120_000
    x = _uniform_indices(np.random.default_rng(n), n, size)
    assert x.min() >= 0 and x.max() < n
    bins = min(n, 40)
    observed = np.bincount(x * bins // n if n > bins else x, minlength=bins)
    expected = size / bins
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert n == 1 or stats.chi2.sf(chi2, bins - 1) > 1e-3
