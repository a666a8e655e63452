"""``split_rhat_and_bulk_ess``: ArviZ's rank-normalised split r_hat and bulk ESS, vectorised over quantities.

Compared with ``az.rhat`` and ``az.ess(method="bulk")`` (ArviZ 0.23) on AR(1) chains of several shapes, on ties,
infinite and near-equal values, and on the degenerate cases whose r_hat ArviZ leaves NaN (decided as
``rank_r_hat`` always did). No timing here: ``bench/diagnostics.py`` measures it.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

from bayessdc.models.diagnostics import split_rhat_and_bulk_ess
from bayessdc.models.sampling import check_convergence

RTOL = 1e-8


def _arviz(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``az.rhat`` and ``az.ess(method="bulk")`` of each quantity of ``x`` (chain, draw, quantity)."""
    data = xr.Dataset({"v": (("chain", "draw", "q"), x)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's own warnings on the cases it leaves NaN
        r_hat = az.rhat(data)["v"].to_numpy()
        ess = az.ess(data, method="bulk")["v"].to_numpy()
    return r_hat, ess


def _ar1(rng: np.random.Generator, chains: int, draws: int, quantities: int, phi) -> np.ndarray:
    """Stationary AR(1) chains, ``phi`` per quantity (a scalar or one per quantity)."""
    phi = np.broadcast_to(np.asarray(phi, dtype=float), (quantities,))
    noise = rng.standard_normal((chains, draws, quantities))
    x = np.empty_like(noise)
    x[:, 0] = noise[:, 0]
    scale = np.sqrt(1.0 - phi**2)
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + scale * noise[:, t]
    return x


def _assert_as_arviz(x: np.ndarray, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning of ours
        r_hat, ess = split_rhat_and_bulk_ess(x, **kwargs)
    expected_r_hat, expected_ess = _arviz(x)
    np.testing.assert_allclose(r_hat, expected_r_hat, rtol=RTOL, atol=0)
    np.testing.assert_allclose(ess, expected_ess, rtol=RTOL, atol=0)
    return r_hat, ess


@pytest.mark.parametrize(
    "chains, draws, quantities, phi",
    [
        (4, 1000, 40, 0.5),
        (4, 1000, 40, -0.3),  # antithetic, as NUTS often draws
        (2, 101, 60, 0.9),  # two chains, an odd number of draws: the middle one is left out of the split
        (3, 57, 60, 0.0),
        (4, 8, 30, 0.3),  # a handful of draws
        (4, 7, 30, 0.3),
        (6, 400, 30, 0.99),  # slowly mixing: Geyer's sequence runs long, every lag by FFT
    ],
)
def test_agrees_with_arviz_on_ar1_chains(chains, draws, quantities, phi):
    _assert_as_arviz(_ar1(np.random.default_rng(chains * draws), chains, draws, quantities, phi))


def test_agrees_with_arviz_on_a_few_thousand_mixed_quantities():
    rng = np.random.default_rng(3)
    quantities = 2500
    phi = rng.uniform(-0.4, 0.97, quantities)
    x = _ar1(rng, 4, 100, quantities, phi)
    x[:, :, ::7] += np.array([0.0, 0.0, 0.5, 1.0])[:, None, None]  # chains with different means
    x[:, :, 1::11] = rng.standard_t(1.5, size=(4, 100, x[:, :, 1::11].shape[2]))  # heavy tails
    x[:, :, 2::13] *= 1e6
    r_hat, ess = _assert_as_arviz(x, chunk_size=333)
    assert np.median(r_hat[::7]) > 1.05 > np.median(r_hat[3::7])  # the chains apart are seen


def test_r_hat_is_bitwise_arviz():
    """The chain means and variances are summed in ArviZ's order, so that the r_hat is ArviZ's to the last bit."""
    x = _ar1(np.random.default_rng(4), 4, 300, 50, 0.6)
    x[2, :, :10] += 0.4
    np.testing.assert_array_equal(split_rhat_and_bulk_ess(x)[0], _arviz(x)[0])


@pytest.mark.parametrize("max_direct_lag", [0, 4, 10_000])
def test_direct_and_fft_autocovariances_give_the_same_ess(max_direct_lag):
    x = _ar1(np.random.default_rng(5), 4, 500, 30, np.linspace(0.0, 0.98, 30))
    _assert_as_arviz(x, max_direct_lag=max_direct_lag)


def test_chunks_and_workers_give_the_same_numbers():
    x = _ar1(np.random.default_rng(6), 4, 200, 101, 0.4)
    whole = split_rhat_and_bulk_ess(x)
    for kwargs in ({"chunk_size": 1}, {"chunk_size": 7}, {"chunk_size": 10, "workers": 3}):
        for ours, expected in zip(split_rhat_and_bulk_ess(x, **kwargs), whole, strict=True):
            np.testing.assert_array_equal(ours, expected)


def test_ties_agree_with_arviz():
    rng = np.random.default_rng(7)
    x = rng.poisson(rng.uniform(0.2, 20, 80), size=(4, 300, 80)).astype(float)  # many ties, at every rank
    x[:, :, :5] = rng.integers(0, 2, size=(4, 300, 5))  # 0/1 quantities
    u = rng.random((4, 300))
    x[:, :, 6] = np.where(u < 0.3, -0.0, np.where(u < 0.6, 0.0, 1.0))  # -0 and +0 are equal
    _assert_as_arviz(x)


def test_values_equal_in_all_but_their_last_bits_agree_with_arviz():
    """The sort keys drop the last bits of the values: the exact comparison that follows puts them in order."""
    rng = np.random.default_rng(8)
    x = 1.0 + rng.integers(0, 2**13, size=(4, 500, 20)) * np.finfo(float).eps  # 1 + k ulp
    x[:, :, 10:] = -x[:, :, 10:]
    x[:, :, 15] = rng.integers(0, 3, size=(4, 500)) * 5e-324  # subnormals and zero
    _assert_as_arviz(x)


def test_a_far_outlier_and_many_draws_agree_with_arviz():
    """A far outlier leaves the others too close for their sort keys (the quantity is sorted by value instead);
    more than 8,192 split draws get float64 keys rather than float32 ones."""
    rng = np.random.default_rng(15)
    x = rng.standard_normal((4, 300, 4))
    x[2, 17, 0] = 1e300
    x[0, 3, 1] = -1e-300 * rng.standard_normal()
    x[1, 200, 1] = 1e-300
    x[:, :, 2] += 1e8  # a large offset: centred before the keys are made
    _assert_as_arviz(x)
    _assert_as_arviz(_ar1(rng, 4, 2100, 5, 0.4))


def test_infinite_draws_agree_with_arviz_while_the_median_is_finite():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 200, 6))
    x[:, :20, 0] = np.inf
    x[:, 50:70, 1] = -np.inf
    x[1, :, 2] = np.inf  # a chain: split chains constant, the others not
    x[:, ::3, 3] = np.inf
    x[:, 1::3, 3] = -np.inf
    _assert_as_arviz(x)


def test_a_median_that_is_infinite_gives_nan_r_hat_and_arviz_ess():
    """ArviZ then returns its bulk r_hat alone (its tail one is NaN); here the quantity's r_hat is NaN."""
    x = np.random.default_rng(10).standard_normal((4, 100, 2))
    x[:, :60, 0] = np.inf
    x[:, :60, 1] = -np.inf
    r_hat, ess = split_rhat_and_bulk_ess(x)
    assert np.isnan(r_hat).all()
    np.testing.assert_allclose(ess, _arviz(x)[1], rtol=RTOL)


def test_degenerate_quantities_are_decided_without_a_warning():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 101, 5))
    x[:, :, 0] = 3.0  # constant: r_hat 1, ESS the number of split draws (ArviZ's)
    x[:, :, 1] = np.repeat([[1.0], [1.0], [1.0], [2.0]], 101, axis=1)  # chains stuck apart: inf
    x[:, :, 2] = np.tile([0.0, 1.0], 51)[:101]  # 0/1 as often: the tail part is constant, 1
    x[3, 40, 3] = np.nan
    x[1, 50, 4] = np.nan  # the middle draw, left out of the split chains: NaN all the same, as ArviZ's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r_hat, ess = split_rhat_and_bulk_ess(x)
    expected_r_hat, expected_ess = _arviz(x)
    assert r_hat[0] == 1.0 and ess[0] == 4 * 2 * 50 == expected_ess[0]
    assert r_hat[1] == np.inf
    np.testing.assert_allclose(ess[1], expected_ess[1], rtol=RTOL)
    bulk = az.rhat(xr.Dataset({"v": (("chain", "draw"), x[:, :, 2])}), method="z_scale")["v"].item()
    assert r_hat[2] == max(bulk, 1.0)
    np.testing.assert_allclose(ess[2], expected_ess[2], rtol=RTOL)
    assert np.isnan(r_hat[3:]).all() and np.isnan(ess[3:]).all()
    assert np.isnan(expected_r_hat[3:]).all() and np.isnan(expected_ess[3:]).all()


def test_one_chain_has_an_ess_but_no_r_hat_and_three_draws_neither():
    x = _ar1(np.random.default_rng(12), 1, 200, 5, 0.3)
    r_hat, ess = split_rhat_and_bulk_ess(x)
    assert np.isnan(r_hat).all()
    np.testing.assert_allclose(ess, _arviz(x)[1], rtol=RTOL)
    r_hat, ess = split_rhat_and_bulk_ess(np.ones((4, 3, 2)))
    assert np.isnan(r_hat).all() and np.isnan(ess).all()


def test_other_dtypes_are_computed_in_float64():
    rng = np.random.default_rng(13)
    counts = rng.poisson(3.0, size=(4, 200, 10))
    for x in (counts, counts.astype(np.float32) + np.float32(0.25)):
        ours = split_rhat_and_bulk_ess(x)
        for value, expected in zip(ours, _arviz(x.astype(float)), strict=True):
            np.testing.assert_allclose(value, expected, rtol=RTOL)


def test_shapes():
    r_hat, ess = split_rhat_and_bulk_ess(np.zeros((4, 100, 0)))
    assert r_hat.shape == ess.shape == (0,)
    with pytest.raises(ValueError, match="chain, draw, quantity"):
        split_rhat_and_bulk_ess(np.zeros((4, 100)))
    with pytest.raises(ValueError, match="chunk_size"):
        split_rhat_and_bulk_ess(np.zeros((4, 100, 3)), chunk_size=0)


def test_check_convergence_reports_arviz_figures():
    rng = np.random.default_rng(14)
    a = _ar1(rng, 4, 400, 6, 0.7)
    a[3, :, 2] += 0.5
    b = _ar1(rng, 4, 400, 3, 0.95)
    idata = az.from_dict(
        posterior={"a": a.reshape(4, 400, 2, 3), "b": b},
        sample_stats={"diverging": np.zeros((4, 400), dtype=bool)},
    )
    report = check_convergence(idata)
    r_hat, ess = _arviz(np.concatenate([a, b], axis=2))
    assert report.max_r_hat == r_hat.max()
    assert report.worst_r_hat == ("a" if r_hat[:6].max() > r_hat[6:].max() else "b")
    assert report.min_ess_bulk == pytest.approx(ess.min(), rel=RTOL)
    assert report.worst_ess_bulk == ("a" if ess[:6].min() < ess[6:].min() else "b")
