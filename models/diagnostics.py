"""Rank-normalised split r_hat and bulk ESS of many quantities at once: ArviZ's numbers, without its loop.

Why not ArviZ: ``az.rhat`` and ``az.ess(method="bulk")`` (ArviZ 0.23) compute one quantity at a time in Python.
Measured on this project's machine (2 cores, one BLAS thread): 3,000 quantities of 4 chains x 1,000 draws took
6.3 s for ``az.ess`` bulk and 10.4 s for ``rank_r_hat`` (which called ``az.rhat``), so the ~300,000 cell
log-rates a national flow run gates would take about 30 minutes of diagnostics alone.

Why not NumPy alone: a first version vectorised over the quantities with NumPy only (``argsort`` along an axis,
``np.fft`` for every lag) took 800 us per quantity, about 240 s for 300,000: the argsort cost 40 ns per draw, the
FFT 31, the gathers and scatters of the ranks about 60. Here NumPy
only sorts (its SIMD sort of float32 keys: 9 ns per draw) and numba kernels do the rest, one quantity at a time.

Measured (``bench/diagnostics.py``, 2 cores, other work on the machine slowing ArviZ and this code alike): 300,000
quantities of 4 x 1,000 draws in 62.8 s wall, 61 s CPU (209 us per quantity, 51 ns of CPU per draw), one worker,
peak memory of the process 0.64 GB; ArviZ in the same run: 3,000 of them in 17.2 s (``az.rhat`` 10.4 s, ``az.ess``
6.8 s), 29 minutes for 300,000, 27 times longer. Same numbers: r_hat bitwise, the ESS within 1.3e-14 relative. A
second worker (``workers=2``) helps only where a core is free (63 s in that run, where none was).

How (Vehtari et al. 2021, as ``arviz/stats/diagnostics.py`` computes it):

* the draws are split into ``2 * chain`` halves (``draw // 2`` each; the middle draw of an odd count left out);
* the split draws are rank-normalised together: ``z = Phi^-1((rank - 3/8) / (n + 1/4))``, tied values at their
  average rank. The ranks come from one sort per quantity, of keys that carry the draw's position in their low
  bits: float32 of the values centred and scaled to [-1/2, 1/2] (float64 of the values beyond 8,192 split
  draws). Values that share a key may come out of order and are put back by an exact comparison (insertion);
  a quantity with infinite values, or whose values crowd into too few keys (a far outlier), is sorted by value
  instead. ``Phi^-1`` of every possible average rank is tabulated once per draw count (the same arithmetic as
  ArviZ's, so bitwise its z). The tail part ranks the distances from the median: two sorted runs of the sorted
  values, merged;
* r_hat is the larger of the bulk (z) and tail (folded z) ``sqrt((B / W + n - 1) / n)``, summed in ArviZ's order
  (NumPy's pairwise sum for the chain means, the sequential one-pass variance of ArviZ's numba helper), so it
  is bitwise ArviZ's;
* bulk ESS is ArviZ's ``_ess`` of the bulk z, transcribed: Geyer's initial positive and monotone sequences of the
  autocorrelations, the same bias terms, ``tau >= 1 / log10(n)``. ArviZ takes every lag's autocovariance by FFT;
  the sequence of a well-mixing quantity ends after a few lags, so they are summed directly, four at a time,
  while the sequence needs them (up to ``max_direct_lag``), and only a quantity whose sequence runs longer gets
  every lag by FFT. Either way the ESS is ArviZ's to rounding (about 1e-14 relative).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit
from scipy import fft as sp_fft
from scipy import stats

__all__ = ["split_rhat_and_bulk_ess"]

# The numba kernels divide as NumPy does (error_model="numpy"): by zero to inf or NaN, never raising.

#: How a quantity's draws are sorted (:func:`_keys`).
_KEYED = 0  # by NumPy, their keys
_OWN = 1  # by the kernel itself
_MISSING = 2  # not: a draw is NaN

#: Float32 keys (faster to sort) when the positions take at most this many bits, float64 keys otherwise.
_FLOAT32_POSITION_BITS = 13


@functools.lru_cache(maxsize=16)
def _z_table(size: int) -> np.ndarray:
    """``z`` of every average rank of ``size`` values: entry ``k`` is for rank ``k / 2`` (ties average to halves).

    The same arithmetic as ArviZ's ``_backtransform_ranks`` and ``scipy.stats.norm.ppf``, so each entry is
    bitwise the z that ArviZ computes for that rank.
    """
    c = 3 / 8
    rank = np.arange(2 * size + 1, dtype=float) / 2
    with np.errstate(invalid="ignore"):
        table = stats.norm.ppf((rank - c) / (size - 2 * c + 1))
    table.setflags(write=False)
    return table


@njit(nogil=True, cache=True, error_model="numpy")
def _split(x: np.ndarray, half: int, y: np.ndarray) -> None:
    """Split chains of every quantity of ``x`` (chain, draw, quantity) into rows of ``y``.

    ``y[j, t * 2 * chain + c]`` is draw ``t`` of split chain ``c`` of quantity ``j`` (draw-major): split chains
    ``0 .. chain - 1`` are the first halves of the chains, the others their second halves (ArviZ's
    ``_split_chains``).
    """
    n_chain, n_draw, n_quantity = x.shape
    n_split = 2 * n_chain
    for t in range(half):
        for c in range(n_chain):
            first = t * n_split + c
            second = first + n_chain
            for j in range(n_quantity):
                y[j, first] = x[c, t, j]
                y[j, second] = x[c, n_draw - half + t, j]


@njit(nogil=True, cache=True, error_model="numpy")
def _keys(
    y: np.ndarray,
    lowest: np.ndarray,
    highest: np.ndarray,
    bits: int,
    keys: np.ndarray,
    key_bits: np.ndarray,
    mode: np.ndarray,
) -> None:
    """Sort keys of the rows of ``y``, given each row's smallest and largest value (NaN if it holds a NaN).

    ``keys[j, p]`` (``key_bits`` is the same memory as integers) is a float that sorts as the value at ``p`` does,
    its low ``bits`` replaced by ``p`` (by ``~p`` below zero), so that it carries its position: values equal in all
    other bits may come out of order (the kernel puts them back). Float32 keys are the values centred and scaled
    to [-1/2, 1/2] first (float32's sort is the faster), float64 keys the values themselves. ``mode[j]`` is
    ``_KEYED``, ``_OWN`` (infinite values, or a spread that the keys cannot hold: the kernel sorts the quantity
    itself) or ``_MISSING`` (a NaN draw).
    """
    n_quantity, size = y.shape
    low = (np.int64(1) << bits) - 1
    shift = 8 * key_bits.itemsize - 1
    narrow = keys.itemsize == 4
    for j in range(n_quantity):
        row = y[j]
        spread = highest[j] - lowest[j]
        scale = 1.0 / spread if spread > 0 else np.inf
        if np.isnan(spread):
            mode[j] = _MISSING
        elif not (np.isfinite(spread) and np.isfinite(scale)):  # infinite draws, constant, or a tiny spread
            mode[j] = _OWN
        else:
            mode[j] = _KEYED
        if mode[j] != _KEYED:
            keys[j] = 0.0
            continue
        centre = lowest[j] + spread / 2
        for p in range(size):
            if narrow:  # centred and scaled, rounded to float32: still in the values' order
                keys[j, p] = (row[p] - centre) * scale
            else:
                keys[j, p] = row[p]
            v = np.int64(key_bits[j, p])
            key_bits[j, p] = (v & ~low) | (p ^ ((v >> shift) & low))


@njit(nogil=True, cache=True, error_model="numpy")
def _patch_ties(values: np.ndarray, source: np.ndarray, table: np.ndarray, out: np.ndarray) -> int:
    """Give the tied ones of sorted ``values`` their average rank's z in ``out`` (at ``source``).

    ``out[source[p]]`` holds the z of rank ``p + 1``; returns the number of distinct values.
    """
    n = values.shape[0]
    groups = n
    p = 1
    while p < n:
        if values[p] == values[p - 1]:
            first = p - 1
            last = p
            while last + 1 < n and values[last + 1] == values[first]:
                last += 1
            z = table[first + last + 2]  # twice the average rank (first + 1 + last + 1) / 2
            for r in range(first, last + 1):
                out[source[r]] = z
            groups -= last - first
            p = last + 1
        else:
            p += 1
    return groups


@njit(nogil=True, cache=True, error_model="numpy")
def _assign_z(values: np.ndarray, source: np.ndarray, table: np.ndarray, out: np.ndarray) -> int:
    """``out[source[p]] = z`` of sorted position ``p`` of ``values``, tied values at their average rank.

    Returns the number of distinct values.
    """
    for p in range(values.shape[0]):
        out[source[p]] = table[2 * p + 2]
    return _patch_ties(values, source, table, out)


@njit(nogil=True, cache=True, error_model="numpy")
def _insertion_fix(values: np.ndarray, source: np.ndarray) -> None:
    """Sort ``values`` (carrying ``source``) that are in order but for a few short runs: linear when sorted."""
    for p in range(1, values.shape[0]):
        v = values[p]
        if v < values[p - 1]:
            s = source[p]
            r = p
            while r > 0 and values[r - 1] > v:
                values[r] = values[r - 1]
                source[r] = source[r - 1]
                r -= 1
            values[r] = v
            source[r] = s


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def _direct_autocov(centred: np.ndarray, start: int, stop: int, acov: np.ndarray) -> int:
    """``acov[k]`` for ``start <= k < stop``: the chains' mean of ``sum_t c_t c_(t+k) / n`` (ArviZ's ``_autocov``).

    Four lags per pass over the draws (so up to three lags past ``stop``, but none past the last); returns the
    first lag not computed.
    """
    n_split, n = centred.shape
    stop = min(stop, n)
    k = start
    while k < stop:
        if k + 3 < n:
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for c in range(n_split):
                row = centred[c]
                a0 = 0.0
                a1 = 0.0
                a2 = 0.0
                a3 = 0.0
                for t in range(n - k - 3):
                    v = row[t]
                    a0 += v * row[t + k]
                    a1 += v * row[t + k + 1]
                    a2 += v * row[t + k + 2]
                    a3 += v * row[t + k + 3]
                for t in range(n - k - 3, n - k):
                    a0 += row[t] * row[t + k]
                for t in range(n - k - 3, n - k - 1):
                    a1 += row[t] * row[t + k + 1]
                a2 += row[n - k - 3] * row[n - 1]
                s0 += a0 / n
                s1 += a1 / n
                s2 += a2 / n
                s3 += a3 / n
            acov[k] = s0 / n_split
            acov[k + 1] = s1 / n_split
            acov[k + 2] = s2 / n_split
            acov[k + 3] = s3 / n_split
            k += 4
        else:
            total = 0.0
            for c in range(n_split):
                acc = 0.0
                for t in range(n - k):
                    acc += centred[c, t] * centred[c, t + k]
                total += acc / n
            acov[k] = total / n_split
            k += 1
    return k


@njit(nogil=True, cache=True, error_model="numpy")
def _geyer_ess(acov: np.ndarray, known: int, mean_var: float, var_plus: float, size: int, rho: np.ndarray) -> float:
    """ArviZ's ``_ess`` from the chains' mean autocovariance ``acov`` (lags ``0 .. known - 1`` known).

    A line-by-line transcription of ``arviz.stats.diagnostics._ess`` after its autocovariance: Geyer's initial
    positive sequence, its improvement at the end, the initial monotone sequence, ``tau >= 1 / log10(size)``.
    Returns -1 when the positive sequence needs a lag beyond ``known``.
    """
    n_draw = acov.shape[0]
    rho[:known] = 0.0  # ArviZ's rho_hat_t: zero but where written (lags below known)
    rho_even = 1.0
    rho[0] = rho_even
    rho_odd = 1.0 - (mean_var - acov[1]) / var_plus
    rho[1] = rho_odd
    t = 1
    while t < (n_draw - 3) and (rho_even + rho_odd) > 0.0:
        if t + 2 >= known:
            return -1.0
        rho_even = 1.0 - (mean_var - acov[t + 1]) / var_plus
        rho_odd = 1.0 - (mean_var - acov[t + 2]) / var_plus
        if (rho_even + rho_odd) >= 0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    t = 1
    while t <= max_t - 2:
        if (rho[t + 1] + rho[t + 2]) > (rho[t - 1] + rho[t]):
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    total = 0.0
    for k in range(max_t + 1):
        total += rho[k]
    tau = -1.0 + 2.0 * total + rho[max_t + 1]
    tau = max(tau, 1.0 / np.log10(size))
    for k in range(known):
        if np.isnan(rho[k]):
            return np.nan
    return size / tau


@njit(nogil=True, cache=True, error_model="numpy")
def _pairwise_block(a: np.ndarray, start: int, n: int, stride: int) -> float:
    """NumPy's ``pairwise_sum`` of at most 128 values: eight accumulators (fewer than eight values: in order)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[start + i * stride]
        return res
    r0 = a[start]
    r1 = a[start + stride]
    r2 = a[start + 2 * stride]
    r3 = a[start + 3 * stride]
    r4 = a[start + 4 * stride]
    r5 = a[start + 5 * stride]
    r6 = a[start + 6 * stride]
    r7 = a[start + 7 * stride]
    i = 8
    while i < n - (n % 8):
        p = start + i * stride
        r0 += a[p]
        r1 += a[p + stride]
        r2 += a[p + 2 * stride]
        r3 += a[p + 3 * stride]
        r4 += a[p + 4 * stride]
        r5 += a[p + 5 * stride]
        r6 += a[p + 6 * stride]
        r7 += a[p + 7 * stride]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i * stride]
        i += 1
    return res


@njit(nogil=True, cache=True, error_model="numpy")
def _pairwise_sum(a: np.ndarray, start: int, n: int, stride: int) -> float:
    """``a[start + i * stride]`` for ``i < n`` summed as NumPy's ``add.reduce`` sums them, so that a mean is
    bitwise ``np.mean``: ``pairwise_sum`` of ``numpy/_core/src/umath/loops_utils.h.src``, blocks of at most 128
    values (:func:`_pairwise_block`), larger ones halved at a multiple of 8 and the halves' sums added.

    The recursion is unrolled into a stack (numba's cache does not reload recursive functions safely).
    """
    if n <= 128:
        return _pairwise_block(a, start, n, stride)
    starts = np.empty(64, np.int64)  # a halving per level: 64 levels are more than any length
    counts = np.empty(64, np.int64)
    left = np.empty(64)  # the left half's sum, once known
    stage = np.zeros(64, np.int64)  # 0: left half to sum, 1: right half to sum
    starts[0] = start
    counts[0] = n
    top = 1
    value = 0.0
    while top:
        f = top - 1
        count = counts[f]
        if count <= 128:
            value = _pairwise_block(a, starts[f], count, stride)
            top -= 1
            while top:  # hand the value up: a left half waits for its right one, a right half completes
                f = top - 1
                if stage[f] == 0:
                    left[f] = value
                    stage[f] = 1
                    break
                value = left[f] + value
                top -= 1
            continue
        half = count // 2
        half -= half % 8
        if stage[f] == 0:
            starts[top] = starts[f]
            counts[top] = half
        else:
            starts[top] = starts[f] + half * stride
            counts[top] = count - half
        stage[top] = 0
        top += 1
    return value


@njit(nogil=True, cache=True, error_model="numpy")
def _one_pass_variance(values: np.ndarray, ddof: int) -> float:
    """ArviZ's numba ``stats_variance_1d``: ``(sum x^2 / n - (sum x / n)^2) * n / (n - ddof)``, summed in order."""
    n = values.shape[0]
    a = 0.0
    b = 0.0
    for v in values:
        a = a + v
        b = b + v * v
    return (b / n - (a / n) ** 2) * (n / (n - ddof))


@njit(nogil=True, cache=True, error_model="numpy")
def _r_hat_part(
    z: np.ndarray,
    total: np.ndarray,
    square: np.ndarray,
    still: bool,
    groups: int,
    chain_mean: np.ndarray,
    chain_var: np.ndarray,
) -> float:
    """ArviZ's ``_rhat`` of draw-major ``z``, the split chains' sums of z and z^2 (in draw order) given.

    The chain means as ``np.mean`` sums them, the variances as ArviZ's numba helper does, so that the result is
    bitwise ArviZ's. Where every split chain is constant (``still``: ``W = 0``, which ArviZ divides by), 1 if z
    is constant (``groups`` distinct values, one) and inf otherwise (chains stuck at different values).
    """
    n_split = total.shape[0]
    half = z.shape[0] // n_split
    if still:
        return 1.0 if groups == 1 else np.inf
    for c in range(n_split):
        chain_mean[c] = (0.0 + _pairwise_sum(z, c, half, n_split)) / half
        chain_var[c] = (square[c] / half - (total[c] / half) ** 2) * (half / (half - 1))
    between = half * _one_pass_variance(chain_mean, 1)
    within = (0.0 + _pairwise_sum(chain_var, 0, n_split, 1)) / n_split  # np.mean
    return np.sqrt((between / within + half - 1) / half)


@njit(nogil=True, cache=True, error_model="numpy")
def _variance_terms(chain_mean: np.ndarray, n: int, acov0: float) -> tuple[float, float]:
    """ArviZ's ``mean_var`` and ``var_plus`` of split chains of ``n`` draws, their means and lag-0 autocovariance."""
    mean_var = acov0 * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    var_plus += _one_pass_variance(chain_mean, 1)
    return mean_var, var_plus


@njit(nogil=True, cache=True, error_model="numpy")
def _rank_kernel(
    y: np.ndarray,
    key_bits: np.ndarray,
    mode: np.ndarray,
    bits: int,
    table: np.ndarray,
    n_split: int,
    max_lag: int,
    r_hat: np.ndarray,
    ess: np.ndarray,
    long: np.ndarray,
    z_long: np.ndarray,
) -> None:
    """The r_hat and bulk ESS of each quantity, but the ESS of those whose Geyer sequence runs past ``max_lag``.

    ``y`` (quantity, draw-major position) holds the split chains, ``key_bits`` their sorted keys (as integers) and
    ``mode`` how they are to be sorted (:func:`_keys`). A quantity whose ESS needs more lags is marked
    in ``long``, its bulk z left in ``z_long`` (split chain, draw) for the FFT.
    """
    n_quantity, size = y.shape
    half = size // n_split
    mid = size // 2
    low = (np.int64(1) << bits) - 1
    order = np.empty(size, np.int64)
    sorted_values = np.empty(size)
    distance = np.empty(size)
    merged_source = np.empty(size, np.int64)
    merged_values = np.empty(size)
    bulk = np.empty(size)  # z, draw-major
    tail = np.empty(size)
    centred = np.empty((n_split, half))
    acov = np.zeros(half)
    rho = np.zeros(half)
    sum_bulk = np.empty(n_split)
    square_bulk = np.empty(n_split)
    sum_tail = np.empty(n_split)
    square_tail = np.empty(n_split)
    chain_mean = np.empty(n_split)
    chain_var = np.empty(n_split)
    budget = 8 * size  # moves of values that share a key, beyond which the quantity is sorted by value instead
    for j in range(n_quantity):
        row = y[j]
        r_hat[j] = np.nan
        ess[j] = np.nan
        long[j] = False
        if mode[j] == _MISSING:
            continue
        # bulk: the ranks of the values, in the order of the sorted keys but for values sharing a key
        own = mode[j] == _OWN
        tied = False
        if not own:
            key = key_bits[j]
            moves = 0
            for p in range(size):
                k = np.int64(key[p])
                i = (k ^ ((k >> 63) & low)) & low
                v = row[i]
                r = p
                while r > 0 and sorted_values[r - 1] > v:  # insertion: linear while the keys are in order
                    sorted_values[r] = sorted_values[r - 1]
                    order[r] = order[r - 1]
                    bulk[order[r]] = table[2 * r + 2]  # its rank one up
                    r -= 1
                moves += p - r
                sorted_values[r] = v
                order[r] = i
                bulk[i] = table[2 * r + 2]
                tied |= (r > 0 and sorted_values[r - 1] == v) or (r < p and sorted_values[r + 1] == v)
                if moves > budget:  # values too close for their keys (a far outlier, say)
                    own = True
                    break
        if own:
            order[:] = np.argsort(row, kind="mergesort")
            for p in range(size):
                sorted_values[p] = row[order[p]]
                bulk[order[p]] = table[2 * p + 2]
                tied |= p > 0 and sorted_values[p] == sorted_values[p - 1]
        groups = _patch_ties(sorted_values, order, table, bulk) if tied else size
        # tail: the ranks of the distances from the median, two sorted runs of the sorted values, merged
        tail_groups = 0  # none: the median is infinite or NaN (more than half the draws infinite)
        median = (sorted_values[mid - 1] + sorted_values[mid]) / 2.0  # np.median: the mean of the middle two
        if np.isfinite(median):
            for p in range(size):
                distance[p] = abs(sorted_values[p] - median)
            lower = mid - 1
            upper = mid
            tied = False
            inverted = False  # not expected: fl(s - median) is monotone in s
            previous = -1.0
            for k in range(size):
                if upper >= size or (lower >= 0 and distance[lower] <= distance[upper]):
                    d = distance[lower]
                    i = order[lower]
                    lower -= 1
                else:
                    d = distance[upper]
                    i = order[upper]
                    upper += 1
                merged_values[k] = d
                merged_source[k] = i
                tail[i] = table[2 * k + 2]
                tied |= d == previous
                inverted |= d < previous
                previous = d
            tail_groups = size
            if inverted:
                _insertion_fix(merged_values, merged_source)
                tail_groups = _assign_z(merged_values, merged_source, table, tail)
            elif tied:
                tail_groups = _patch_ties(merged_values, merged_source, table, tail)
        # r_hat: ArviZ's one-pass variances (sums in draw order) and np.mean's chain means
        sum_bulk[:] = 0.0
        square_bulk[:] = 0.0
        sum_tail[:] = 0.0
        square_tail[:] = 0.0
        still_bulk = True
        still_tail = True
        for t in range(half):
            base = t * n_split
            for c in range(n_split):
                v = bulk[base + c]
                sum_bulk[c] = sum_bulk[c] + v
                square_bulk[c] = square_bulk[c] + v * v
                w = tail[base + c]
                sum_tail[c] = sum_tail[c] + w
                square_tail[c] = square_tail[c] + w * w
                still_bulk &= v == bulk[c]
                still_tail &= w == tail[c]
        if tail_groups and n_split >= 4:  # two chains at least, as ArviZ's
            r_hat[j] = max(
                _r_hat_part(bulk, sum_bulk, square_bulk, still_bulk, groups, chain_mean, chain_var),
                _r_hat_part(tail, sum_tail, square_tail, still_tail, tail_groups, chain_mean, chain_var),
            )
        # bulk ESS (ArviZ's _ess of the bulk z)
        if groups == 1:
            ess[j] = size  # ArviZ's _ess of a constant z (max - min < resolution): the number of draws
            continue
        for c in range(n_split):
            mean = (0.0 + _pairwise_sum(bulk, c, half, n_split)) / half
            chain_mean[c] = mean
            for t in range(half):
                centred[c, t] = bulk[t * n_split + c] - mean
        known = _direct_autocov(centred, 0, 4, acov)
        mean_var, var_plus = _variance_terms(chain_mean, half, acov[0])
        while True:  # four more lags at a time, as long as Geyer's sequence needs them
            value = _geyer_ess(acov, known, mean_var, var_plus, size, rho)
            if value != -1.0:
                ess[j] = value
                break
            if known >= min(half, max_lag):
                long[j] = True
                for c in range(n_split):
                    for t in range(half):
                        z_long[j, c, t] = bulk[t * n_split + c]
                break
            known = _direct_autocov(centred, known, min(half, known + 4), acov)


@njit(nogil=True, cache=True, error_model="numpy")
def _ess_of_acov(z: np.ndarray, acov: np.ndarray, ess: np.ndarray) -> None:
    """Bulk ESS of quantities ``z`` (quantity, split chain, draw) with every lag of their mean autocovariance."""
    n_quantity, n_split, half = z.shape
    rho = np.zeros(half)
    chain_mean = np.empty(n_split)
    for j in range(n_quantity):
        for c in range(n_split):
            chain_mean[c] = (0.0 + _pairwise_sum(z[j, c], 0, half, 1)) / half
        mean_var, var_plus = _variance_terms(chain_mean, half, acov[j, 0])
        ess[j] = _geyer_ess(acov[j], half, mean_var, var_plus, n_split * half, rho)


@njit(nogil=True, cache=True, error_model="numpy")
def _mean_power(spectrum: np.ndarray) -> np.ndarray:
    """``|spectrum|^2`` averaged over the split chains (axis 1)."""
    n_quantity, n_split, n_frequency = spectrum.shape
    power = np.zeros((n_quantity, n_frequency))
    for j in range(n_quantity):
        for c in range(n_split):
            for f in range(n_frequency):
                v = spectrum[j, c, f]
                power[j, f] += v.real * v.real + v.imag * v.imag
    return power / n_split


def _fft_autocov(z: np.ndarray) -> np.ndarray:
    """The split chains' mean autocovariance at every lag, by FFT (ArviZ's ``_autocov``), of ``z`` (q, chain, draw)."""
    n = z.shape[-1]
    length = sp_fft.next_fast_len(2 * n)
    spectrum = np.fft.rfft(z - z.mean(axis=-1, keepdims=True), n=length, axis=-1)
    # the inverse transform is linear: one per quantity, of the chains' mean power
    return np.fft.irfft(_mean_power(spectrum), n=length, axis=-1)[:, :n] / n


class _Chunks:
    """Working arrays of one thread, and the chunk-by-chunk computation into the caller's outputs."""

    def __init__(self, x: np.ndarray, chunk: int, max_lag: int, r_hat: np.ndarray, ess: np.ndarray) -> None:
        self.x, self.r_hat, self.ess, self.max_lag = x, r_hat, ess, max_lag
        n_chain, n_draw, _ = x.shape
        self.half = n_draw // 2
        self.n_split = 2 * n_chain
        size = self.n_split * self.half
        self.bits = max(1, (size - 1).bit_length())
        self.table = _z_table(size)
        self.y = np.empty((chunk, size))
        narrow = self.bits <= _FLOAT32_POSITION_BITS
        self.keys = np.empty((chunk, size), np.float32 if narrow else np.float64)
        self.key_bits = self.keys.view(np.int32 if narrow else np.int64)
        self.mode = np.empty(chunk, np.int64)
        self.long = np.empty(chunk, np.bool_)
        self.z_long = np.empty((chunk, self.n_split, self.half))  # written for the quantities marked long only

    def run(self, start: int, stop: int) -> None:
        """r_hat and ESS of quantities ``start .. stop - 1`` (at most ``chunk`` of them)."""
        q = stop - start
        part = self.x[:, :, start:stop]
        if part.dtype != np.float64:
            part = part.astype(np.float64)
        y, keys, key_bits, mode = self.y[:q], self.keys[:q], self.key_bits[:q], self.mode[:q]
        _split(part, self.half, y)
        _keys(y, y.min(axis=1), y.max(axis=1), self.bits, keys, key_bits, mode)
        keys.sort(axis=1)  # NumPy's SIMD sort
        r_hat, ess, long = self.r_hat[start:stop], self.ess[start:stop], self.long[:q]
        _rank_kernel(
            y,
            key_bits,
            mode,
            self.bits,
            self.table,
            self.n_split,
            self.max_lag,
            r_hat,
            ess,
            long,
            self.z_long,
        )
        if long.any():
            rows = np.flatnonzero(long)
            z = self.z_long[rows]
            some = np.empty(rows.size)
            _ess_of_acov(z, _fft_autocov(z), some)
            ess[rows] = some
        n_draw = self.x.shape[1]
        if n_draw % 2:  # the middle draw, left out of the split chains: NaN all the same if NaN, as ArviZ's
            missing = np.isnan(np.asarray(self.x[:, n_draw // 2, start:stop], dtype=float)).any(axis=0)
            r_hat[missing] = np.nan
            ess[missing] = np.nan


def split_rhat_and_bulk_ess(
    x: np.ndarray, *, chunk_size: int | None = None, max_direct_lag: int = 32, workers: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalised split r_hat and bulk ESS of every quantity: ``az.rhat`` and ``az.ess(method="bulk")``.

    Parameters
    ----------
    x
        Draws, shape ``(chain, draw, n_quantities)``, any real dtype, computed in float64 a chunk of quantities at
        a time (``x`` may be a memory map). ArviZ computes float32 draws in float32: their tail r_hat may then
        differ from ArviZ's in rounding.
    chunk_size
        Quantities per chunk (default: about 2**20 draws per chunk). The working memory is about 30 bytes per
        draw of a chunk, per worker.
    max_direct_lag
        The ESS's autocovariances are summed directly up to this lag; a quantity whose Geyer sequence runs
        longer gets every lag by FFT, as ArviZ computes them all. The ESS differs only in rounding either way.
    workers
        Threads, each computing its share of the chunks (the numba kernels and NumPy's sort release the GIL).
        One by default: the callers (the pipelines' groups) are themselves run in parallel.

    Returns
    -------
    r_hat : numpy.ndarray
        Per quantity, the larger of the bulk r_hat (rank-normalised split chains) and the tail r_hat (the same of
        the distances from the median): bitwise ``az.rhat(..., method="rank")``, except where ArviZ divides by
        ``W = 0`` (every split chain constant), decided here as :func:`bayessdc.models.sampling.rank_r_hat`
        always did: that part is 1 when the quantity (or its distance from the median) is constant over every
        draw, and inf otherwise (chains stuck at different values). NaN for a quantity with a NaN draw, for fewer
        than 2 chains or 4 draws, and (unlike ArviZ, which then returns the bulk part alone) when more than half
        the draws are infinite, so that the median is too.
    ess_bulk : numpy.ndarray
        Per quantity, ArviZ's bulk ESS (to rounding: about 1e-14 relative): Geyer's initial positive and
        monotone sequences of the rank-normalised split chains. A quantity constant over every split draw has,
        as in ArviZ, the number of split draws, ``chain * 2 * (draw // 2)``. NaN for a NaN draw or fewer than 4
        draws. One chain is enough (it is split in two), as in ArviZ.
    """
    x = np.asarray(x)
    if x.ndim != 3:
        raise ValueError(f"draws must have shape (chain, draw, quantity), not {x.shape}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, not {chunk_size}")
    n_chain, n_draw, n_quantity = x.shape
    r_hat = np.full(n_quantity, np.nan)
    ess = np.full(n_quantity, np.nan)
    if n_quantity == 0 or n_chain == 0 or n_draw < 4:
        return r_hat, ess
    size = 2 * n_chain * (n_draw // 2)
    chunk = min(n_quantity, int(chunk_size) if chunk_size else max(1, 2**20 // size))
    starts = list(range(0, n_quantity, chunk))
    workers = max(1, min(int(workers), len(starts)))

    def share(first: int) -> None:
        chunks = _Chunks(x, chunk, max_direct_lag, r_hat, ess)
        for start in starts[first::workers]:
            chunks.run(start, min(n_quantity, start + chunk))

    if workers == 1:
        share(0)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for done in [pool.submit(share, first) for first in range(workers)]:
                done.result()
    return r_hat, ess
