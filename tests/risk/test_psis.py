"""Tests for bayessdc.risk.psis: agreement with arviz.psislw and basic properties."""

import warnings

import numpy as np
import pytest

from bayessdc.risk.psis import pareto_smoothed_log_weights

az = pytest.importorskip("arviz")

RTOL = 1e-10
ATOL = 1e-10


def _arviz(log_weights, r_eff=1.0, normalize=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lw, k = az.psislw(np.array(log_weights, dtype=np.float64), reff=r_eff, normalize=normalize)
    return np.asarray(lw), np.asarray(k)


def _assert_matches(log_weights, r_eff=1.0, normalize=True, chunk_size=None):
    expected_lw, expected_k = _arviz(log_weights, r_eff, normalize)
    lw, k = pareto_smoothed_log_weights(log_weights, r_eff=r_eff, normalize=normalize, chunk_size=chunk_size)
    assert lw.shape == np.shape(log_weights)
    assert k.shape == np.shape(log_weights)[:-1]
    assert lw.dtype == np.float64
    assert k.dtype == np.float64
    np.testing.assert_allclose(k, expected_k, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(lw, expected_lw, rtol=RTOL, atol=ATOL)
    return lw, k


@pytest.mark.parametrize("n_draws", [100, 400, 1000, 4000])
@pytest.mark.parametrize("normalize", [True, False])
def test_matches_arviz_normal_log_weights(n_draws, normalize):
    rng = np.random.default_rng(n_draws)
    # spreads from tiny (k-hat < 0) to large (k-hat > 1)
    spreads = np.array([0.02, 0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 30.0])
    n_rows = 24 if n_draws < 4000 else 8
    sd = np.resize(spreads, n_rows)[:, None]
    x = rng.normal(size=(n_rows, n_draws)) * sd + rng.normal(scale=50, size=(n_rows, 1))
    x[0] = np.log(rng.uniform(size=n_draws))  # bounded weights: k-hat clearly negative
    _, k = _assert_matches(x, normalize=normalize)
    assert k.min() < 0
    assert k.max() > 1


@pytest.mark.parametrize("r_eff", [0.3, 0.77, 1.0, 2.5])
def test_matches_arviz_r_eff(r_eff):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(12, 400)) * rng.uniform(0.1, 3.0, size=(12, 1))
    _assert_matches(x, r_eff=r_eff)
    _assert_matches(x, r_eff=r_eff, normalize=False)


def test_matches_arviz_heavy_tailed():
    rng = np.random.default_rng(11)
    rows = [
        np.log(rng.pareto(0.5, size=1000) + 1e-12),  # ratio with infinite mean
        np.log(rng.pareto(1.5, size=1000) + 1e-12),
        np.log(rng.pareto(3.0, size=1000) + 1e-12),
        rng.standard_t(1, size=1000),  # Cauchy log weights
        rng.standard_t(3, size=1000) * 5,
        rng.standard_cauchy(size=1000) * 50,
        rng.lognormal(1.0, 1.0, size=1000),
        -rng.lognormal(1.0, 1.5, size=1000),
    ]
    _, k = _assert_matches(np.stack(rows))
    assert np.all(np.isfinite(k[:5]))
    assert k[:5].max() > 1
    # Cauchy * 50: most weights fall below log(tiny), leaving a degenerate tail (k = inf in ArviZ too)
    assert np.isinf(k[5])


def test_matches_arviz_three_dimensional():
    rng = np.random.default_rng(3)
    sd = rng.uniform(0.1, 5.0, size=(4, 9, 1))
    x = rng.normal(size=(4, 9, 1000)) * sd
    lw, k = _assert_matches(x, r_eff=0.8)
    assert k.shape == (4, 9)
    _assert_matches(x, normalize=False, chunk_size=5)


def test_one_dimensional_input():
    rng = np.random.default_rng(5)
    x = rng.normal(size=500) * 2
    lw, k = _assert_matches(x)
    assert lw.shape == (500,)
    assert k.shape == ()


def test_chunk_size_does_not_change_result():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(3, 7, 300)) * rng.uniform(0.1, 4.0, size=(3, 7, 1))
    ref_lw, ref_k = pareto_smoothed_log_weights(x)
    for chunk_size in (1, 2, 5, 21, 1000):
        lw, k = pareto_smoothed_log_weights(x, chunk_size=chunk_size)
        np.testing.assert_array_equal(lw, ref_lw)
        np.testing.assert_array_equal(k, ref_k)


def test_constant_row_matches_arviz():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 200))
    x[1] = 4.2  # degenerate tail: no draw above the cutoff
    lw, k = _assert_matches(x)
    assert np.isinf(k[1]) and k[1] > 0
    np.testing.assert_allclose(lw[1], -np.log(200), rtol=1e-14)
    assert np.all(np.isfinite(k[[0, 2]]))
    lw, k = _assert_matches(x, normalize=False)
    np.testing.assert_array_equal(lw[1], x[1])


def test_ties_and_short_tails_match_arviz():
    rng = np.random.default_rng(4)
    # coarse rounding makes ties at the cutoff, so tails of different lengths
    x = np.round(rng.normal(size=(30, 400)) * rng.uniform(0.5, 3.0, size=(30, 1)), 1)
    x[0, :] = np.repeat([0.0, 1.0], 200)  # tail empty: k = inf
    x[1, :] = 0.0
    x[1, -3:] = 5.0  # only 3 draws above the cutoff: k = inf
    x[2, -40:] = x[2].max() + 1.0  # 40 tied draws inside the 60-draw tail
    x[3, :] = 0.0
    x[3, -30:] = rng.normal(size=30)  # short tail made of the positive values
    _, k = _assert_matches(x)
    assert np.isinf(k[0]) and np.isinf(k[1])
    _assert_matches(x, normalize=False)


def test_few_draws_give_infinite_khat_like_arviz():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(4, 20))
    lw, k = _assert_matches(x)
    assert np.all(np.isinf(k))


def test_neg_inf_weights_match_arviz():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(5, 400)) * 2
    x[0, :10] = -np.inf
    x[1, :390] = -np.inf  # tail cutoff raised to log(tiny): short tail
    x[2, ::2] = -np.inf
    x[3, :] = rng.normal(size=400) * 1000  # many weights below log(tiny) after rescaling
    lw, k = _assert_matches(x)
    assert np.all(np.isneginf(lw[0, :10]))
    _assert_matches(x, normalize=False)


def test_all_neg_inf_row_gives_nan_like_arviz():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(2, 100))
    x[1] = -np.inf
    lw, k = _assert_matches(x)
    assert np.all(np.isnan(lw[1]))
    assert np.isinf(k[1])
    assert np.all(np.isfinite(lw[0]))


def test_normalized_rows_log_sum_exp_to_zero():
    rng = np.random.default_rng(12)
    x = rng.normal(size=(6, 5, 800)) * rng.uniform(0.05, 10.0, size=(6, 5, 1)) + 100.0
    lw, _ = pareto_smoothed_log_weights(x, r_eff=0.6)
    row_max = lw.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(lw - row_max).sum(axis=-1)) + row_max[..., 0]
    np.testing.assert_allclose(lse, 0.0, atol=1e-12)


def test_float32_input_computed_in_float64():
    rng = np.random.default_rng(13)
    x32 = (rng.normal(size=(10, 400)) * 2).astype(np.float32)
    lw, k = pareto_smoothed_log_weights(x32)
    assert lw.dtype == np.float64
    assert k.dtype == np.float64
    expected_lw, expected_k = _arviz(x32.astype(np.float64))
    np.testing.assert_allclose(lw, expected_lw, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(k, expected_k, rtol=RTOL, atol=ATOL)


def test_input_not_modified():
    rng = np.random.default_rng(14)
    x = rng.normal(size=(4, 300)) * 3
    x_copy = x.copy()
    pareto_smoothed_log_weights(x)
    np.testing.assert_array_equal(x, x_copy)


def test_empty_leading_axis():
    lw, k = pareto_smoothed_log_weights(np.zeros((0, 3, 100)))
    assert lw.shape == (0, 3, 100)
    assert k.shape == (0, 3)


@pytest.mark.parametrize("n_draws", [0, 1, 4])
def test_too_few_draws_raise(n_draws):
    with pytest.raises(ValueError, match="at least 5 draws"):
        pareto_smoothed_log_weights(np.zeros((3, n_draws)))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_pos_inf_raise(bad):
    x = np.zeros((3, 100))
    x[2, 17] = bad
    with pytest.raises(ValueError, match="NaN or \\+inf"):
        pareto_smoothed_log_weights(x)


@pytest.mark.parametrize("r_eff", [0.0, -1.0, np.nan, np.inf])
def test_bad_r_eff_raises(r_eff):
    with pytest.raises(ValueError, match="r_eff"):
        pareto_smoothed_log_weights(np.zeros((2, 100)), r_eff=r_eff)


@pytest.mark.parametrize("chunk_size", [0, -3, 2.5])
def test_bad_chunk_size_raises(chunk_size):
    with pytest.raises(ValueError, match="chunk_size"):
        pareto_smoothed_log_weights(np.zeros((2, 100)), chunk_size=chunk_size)


def test_scalar_and_complex_input_raise():
    with pytest.raises(ValueError, match="at least one dimension"):
        pareto_smoothed_log_weights(np.float64(1.0))
    with pytest.raises(ValueError, match="real-valued"):
        pareto_smoothed_log_weights(np.zeros((2, 100), dtype=complex))


def test_rows_without_ties_are_smoothed_by_the_compiled_pass_and_the_others_by_numpy():
    from bayessdc.risk import psis

    rng = np.random.default_rng(7)
    x = rng.standard_t(3, size=(6, 1000))
    x[4] = np.round(x[4], 1)  # ties in the tail: left to the numpy blocks
    x[5] = -np.inf  # every weight zero: left to the numpy blocks
    out, khat, redo = np.empty_like(x), np.empty(6), np.zeros(6, dtype=bool)
    psis._psis_rows(x, psis._tail_length(1000, 1.0), True, 3.0, 10.0, out, khat, redo, np.empty((0, 0)))
    assert redo.tolist() == [False, False, False, False, True, True]
    _assert_matches(x[:5])
    lw, k = pareto_smoothed_log_weights(x)
    assert np.isnan(lw[5]).all() and np.isinf(k[5])


def test_returned_weights_are_the_exponentials_of_the_smoothed_log_weights():
    """The weights taken from the normalisation's exponentials are exp(smoothed), rows summing to 1, on the
    compiled rows and on the rows left to the numpy blocks (ties, every weight zero) alike."""
    rng = np.random.default_rng(8)
    x = rng.standard_t(3, size=(3, 4, 1000)) * np.array([0.1, 1.0, 3.0, 10.0])[:, None]
    x[1, 2] = np.round(x[1, 2], 1)  # ties in the tail: the numpy blocks
    lw, k, w = pareto_smoothed_log_weights(x, return_weights=True)
    ref_lw, ref_k = pareto_smoothed_log_weights(x)
    assert np.array_equal(lw, ref_lw) and np.array_equal(k, ref_k)
    np.testing.assert_allclose(w, np.exp(lw), rtol=1e-13, atol=0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-13)
    with pytest.raises(ValueError, match="normalize"):
        pareto_smoothed_log_weights(x, normalize=False, return_weights=True)


def test_rows_sharing_their_tail_draws_give_what_each_row_gives_alone():
    """Rows whose largest draws are the previous row's (the flow model's candidates, log w = k log lambda)
    reuse that row's cutoff and order; the result is bit for bit what the row gives on its own, and ArviZ's,
    also when the same draws come in another order, when a tie appears, or when the tail changes."""
    rng = np.random.default_rng(9)
    ell = rng.normal(0.0, 0.4, 1000)
    rows = [k * ell for k in (1.0, 2.0, 3.0, 5.0, 8.0)]  # the same tail, the same order
    shuffled = ell.copy()
    top = np.argsort(ell)[-95:]
    shuffled[top] = ell[top][::-1]  # the same tail draws, in reverse order
    tied = 2.0 * ell
    tied[top[-1]] = tied[top[-2]]  # the same tail with a tie: left to the numpy blocks
    rows += [shuffled, 4.0 * shuffled, tied, -3.0 * ell, -1.0 * ell, 0.001 * ell - 800.0]
    x = np.array(rows)
    lw, k = pareto_smoothed_log_weights(x)
    for r in range(len(x)):
        alone_lw, alone_k = pareto_smoothed_log_weights(x[r : r + 1])
        assert np.array_equal(lw[r], alone_lw[0]) and (k[r] == alone_k[0] or np.isnan(k[r]) and np.isnan(alone_k[0]))
    _assert_matches(x)
