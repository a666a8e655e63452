"""Exact binomial and multinomial draws in compiled code, from the caller's generator.

numba's own ``np.random.binomial`` (legacy API) is an inversion whose cost grows with ``n p`` and which,
when ``(1 - p)^n`` underflows, splits ``n`` by ``n >>= 2`` and silently drops up to three trials. The
draws below are exact and cost O(1) in ``n``: inversion when ``n min(p, 1 - p) <= 30``, BTPE
(Kachitvichyanukul & Schmeiser 1988, as in numpy) otherwise, with its final acceptance test done with
exact log-factorials instead of Stirling's series. :func:`multinomial` draws by conditional binomials,
largest probability first, then single categorical draws for the last few trials.

They draw from the ``numpy.random.Generator`` passed as their first argument (numba compiles its methods; the
caller's stream, :mod:`bayessdc.synthesis.streams`), never from numba's hidden per-thread state. Used by the
DPMPM's Gibbs sampler and synthesis (:mod:`bayessdc.models.dpmpm`); tested against the binomial and multinomial
distributions in ``tests/models/test_exact_draws.py``.

The draws are compiled without numba's reference counting (``_nrt=False``; none of them allocates). With it,
every call increfs and decrefs each array argument and the generator on entry and exit, one atomic operation
each, about 30 per cell of more than ``SMALL_CELL`` records in the Gibbs sampler's allocation step; without it the
same chain at the same seed gives the same draws, a few percent faster at 1,000,000 records (``bench/dpmpm.py``;
the profile and timings in the README, "Measured choices in the code").
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "binomial",
    "draw_binomials",
    "draw_multinomials",
    "draw_multinomials_cdf",
    "multinomial",
    "multinomial_cdf",
    "uniform_index",
]


_RECIPROCALS = 1.0 / np.maximum(np.arange(256), 1)
_TWO_53 = 2**53
#: The inversion's start (1 - p)^n by repeated squaring up to this n, by exp(n log1p(-p)) above.
_SQUARING_MAX_N = 512


@numba.njit(cache=True, nogil=True, _nrt=False)
def uniform_index(rng: np.random.Generator, n: int) -> int:
    """An exact uniform draw from ``0 .. n - 1`` (``1 <= n <= 2**53``).

    numba's ``Generator.integers`` allocates an array for every scalar draw (numba 0.65), which made the
    predictive kernel's shuffles 28% slower than the hidden generator's ``np.random.randint``. A double from
    ``rng.random()`` is ``k / 2**53`` with ``k`` uniform on ``0 .. 2**53 - 1`` (numpy's ``next_double``); ``k``
    is accepted below the largest multiple of ``n`` and reduced modulo ``n``, so the draw is exactly uniform.
    """
    limit = _TWO_53 - _TWO_53 % n
    while True:
        k = np.int64(rng.random() * _TWO_53)
        if k < limit:
            return k % n


@numba.njit(cache=True, nogil=True, _nrt=False)
def _binomial_inversion(rng: np.random.Generator, n: int, p: float) -> int:
    """Binomial(n, p) by inversion, for ``p <= 0.5`` and ``n p <= 30`` (numpy's algorithm; its start ``(1 - p)^n``
    by repeated squaring up to ``n = 512``, which cut the draw's cost by about a fifth at the sampler's
    sizes)."""
    q = 1.0 - p
    ratio = p / q
    if n <= _SQUARING_MAX_N:
        # q^n by repeated squaring: about a dozen products against the exp and log1p (a third of the draw's
        # cost); relative error at most about n / 2 ulp, 6e-14 at _SQUARING_MAX_N
        qn = 1.0
        power = q
        e = n
        while e > 0:
            if e & 1:
                qn *= power
            power *= power
            e >>= 1
    else:
        qn = np.exp(n * np.log1p(-p))
    bound = min(float(n), n * p + 10.0 * np.sqrt(n * p * q + 1.0))
    x = 0
    px = qn
    u = rng.random()
    while u > px:
        x += 1
        if x > bound:  # beyond 10 sd (or rounding): start again
            x = 0
            px = qn
            u = rng.random()
        else:
            u -= px
            # P(x) / P(x - 1) = (n - x + 1) / x * p / q, with 1 / x from a table (a division per step was
            # most of the cost)
            px *= (n - x + 1) * ratio * (_RECIPROCALS[x] if x < _RECIPROCALS.shape[0] else 1.0 / x)
    return x


@numba.njit(cache=True, nogil=True, _nrt=False)
def _binomial_btpe(rng: np.random.Generator, n: int, r: float) -> int:
    """Binomial(n, r) by BTPE for ``r <= 0.5`` and ``n r > 30``; exact log-factorials in the last test."""
    q = 1.0 - r
    fm = n * r + r
    m = int(np.floor(fm))
    nrq = n * r * q
    p1 = np.floor(2.195 * np.sqrt(nrq) - 4.6 * q) + 0.5
    xm = m + 0.5
    xl = xm - p1
    xr = xm + p1
    c = 0.134 + 20.5 / (15.3 + m)
    a = (fm - xl) / (fm - xl * r)
    laml = a * (1.0 + a / 2.0)
    a = (xr - fm) / (xr * q)
    lamr = a * (1.0 + a / 2.0)
    p2 = p1 * (1.0 + 2.0 * c)
    p3 = p2 + c / laml
    p4 = p3 + c / lamr
    log_fm = np.nan  # log m! (n - m)!, computed when first needed
    while True:
        u = rng.random() * p4
        v = rng.random()
        if u <= p1:  # triangular region: accepted at once
            return int(np.floor(xm - p1 * v + u))
        if u <= p2:  # parallelograms
            x = xl + (u - p1) / c
            v = v * c + 1.0 - abs(m - x + 0.5) / p1
            if v > 1.0:
                continue
            y = int(np.floor(x))
        elif u <= p3:  # left exponential tail
            y = int(np.floor(xl + np.log(v) / laml))
            if y < 0 or v == 0.0:
                continue
            v = v * (u - p2) * laml
        else:  # right exponential tail
            y = int(np.floor(xr - np.log(v) / lamr))
            if y > n or v == 0.0:
                continue
            v = v * (u - p3) * lamr
        k = abs(y - m)
        if k <= 20 or k >= nrq / 2.0 - 1.0:
            # f(y) / f(m) by the recursion of the probabilities
            s = r / q
            a = s * (n + 1)
            f = 1.0
            if m < y:
                for i in range(m + 1, y + 1):
                    f *= a / i - s
            elif m > y:
                for i in range(y + 1, m + 1):
                    f /= a / i - s
            if v <= f:
                return y
            continue
        # squeeze on log f(y) / f(m), then the exact value
        rho = (k / nrq) * ((k * (k / 3.0 + 0.625) + 0.16666666666666666) / nrq + 0.5)
        t = -k * k / (2.0 * nrq)
        log_v = np.log(v)
        if log_v < t - rho:
            return y
        if log_v > t + rho:
            continue
        if np.isnan(log_fm):
            log_fm = math.lgamma(m + 1.0) + math.lgamma(n - m + 1.0)
        if log_v <= log_fm - math.lgamma(y + 1.0) - math.lgamma(n - y + 1.0) + (y - m) * np.log(r / q):
            return y


@numba.njit(cache=True, nogil=True, _nrt=False)
def binomial(rng: np.random.Generator, n: int, p: float) -> int:
    """An exact Binomial(n, p) draw from numba's generator, O(1) expected cost in ``n``."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if p <= 0.5:
        return _binomial_inversion(rng, n, p) if n * p <= 30.0 else _binomial_btpe(rng, n, p)
    q = 1.0 - p
    return n - (_binomial_inversion(rng, n, q) if n * q <= 30.0 else _binomial_btpe(rng, n, q))


@numba.njit(cache=True, nogil=True, _nrt=False)
def multinomial(
    rng: np.random.Generator,
    n: int,
    prob: np.ndarray,
    out: np.ndarray,
    scratch: np.ndarray,
    small: int,
    largest: int = -1,
    total: float = 0.0,
) -> None:
    """``out`` = an exact Multinomial(n, prob / sum(prob)) draw (``prob`` non-negative, not normalised).

    Conditional binomials, largest probability first, while more than ``small`` trials are left; the
    remaining trials are then independent categorical draws over the components not yet drawn (given the
    counts drawn so far, the rest is multinomial over the rest), by ``left`` sorted uniforms and one sweep.
    Cost O(K) per binomial plus O(K + left^2) for the rest, independent of ``n`` when the probabilities are
    concentrated. ``prob`` is overwritten: the entries of the components drawn by binomials are set to zero.
    ``largest`` and ``total``, when given (``largest >= 0``), are the position of the largest probability
    and the sum, known to the caller: the first scan is then skipped.
    """
    K = prob.shape[0]
    for k in range(K):
        out[k] = 0
    left = n
    fallback = -1
    while left > small:
        if largest >= 0:
            best, rest = largest, total
            largest = -1
        else:
            best = 0
            rest = 0.0
            for k in range(K):
                rest += prob[k]
                if prob[k] > prob[best]:
                    best = k
        top = prob[best]
        if not (top > 0.0 and rest > 0.0):
            break
        q = top / rest
        m = left if q >= 1.0 else binomial(rng, left, q)
        out[best] = m
        left -= m
        prob[best] = 0.0  # drawn: out of the rest
        fallback = best
    if left == 0:
        return
    rest = 0.0
    last = -1
    for k in range(K):
        if prob[k] > 0.0:
            rest += prob[k]
            last = k
    if last < 0:  # nothing left with positive probability (cannot happen with a positive total)
        out[max(fallback, 0)] += left
        return
    if left <= scratch.shape[0]:
        for i in range(left):
            u = rng.random() * rest
            h = i
            while h > 0 and scratch[h - 1] > u:
                scratch[h] = scratch[h - 1]
                h -= 1
            scratch[h] = u
        i = 0
        acc = 0.0
        for k in range(last):
            acc += prob[k]
            while i < left and scratch[i] < acc:
                out[k] += 1
                i += 1
            if i == left:
                return
        out[last] += left - i
        return
    for _ in range(left):
        u = rng.random() * rest
        acc = 0.0
        chosen = last
        for k in range(last):
            acc += prob[k]
            if u < acc:
                chosen = k
                break
        out[chosen] += 1


@numba.njit(cache=True, nogil=True, inline="always", _nrt=False)
def _add_trials(comps: np.ndarray, out: np.ndarray, start: int, nnz: int, k: int, m: int) -> int:
    """Add ``m`` trials of component ``k`` to the sparse draw ``comps[:nnz]``, ``out[:nnz]`` (``k`` looked up from
    ``start``); the new ``nnz``."""
    for t in range(start, nnz):
        if comps[t] == k:
            out[t] += m
            return nnz
    comps[nnz] = k
    out[nnz] = m
    return nnz + 1


@numba.njit(cache=True, nogil=True, _nrt=False)
def multinomial_cdf(
    rng: np.random.Generator,
    n: int,
    prob: np.ndarray,
    cdf: np.ndarray,
    largest: np.ndarray,
    n_largest: int,
    small: int,
    comps: np.ndarray,
    out: np.ndarray,
    removed: np.ndarray,
) -> int:
    """An exact Multinomial(n, prob / cdf[-1]) draw, sparse: returns ``nnz``, the draw being ``out[t]`` trials in
    component ``comps[t]`` for ``t < nnz`` (distinct components, every count positive).

    ``cdf`` holds the cumulative sums of ``prob`` (non-negative, not normalised, positive sum) and
    ``largest[:n_largest]`` (at least one) distinct components of positive probability whose binomials come
    first, in that order: the caller's guess of the largest entries in decreasing order (the Gibbs sampler's
    allocation step passes the components that got most of the cell's records in the previous iteration, sorted
    by their probability now), so that the common case needs no scan of ``prob``. Conditional binomials, in
    that order, then the largest probability left (found by a scan), while more than ``small`` trials are left;
    a good guess makes the chain of binomials short. Each remaining
    trial is then one categorical draw over the components not drawn yet (given the counts drawn so far, the
    rest is multinomial over the rest): a uniform over the remaining mass, stepped over the drawn components'
    intervals of ``cdf`` (a few), then located by counting the cumulative sums at or below it (a branch-free
    count that vectorises). A uniform that rounding places on a drawn or empty interval is drawn again (after
    64 such, which does not happen in practice, the trial is drawn by a sweep over ``prob``). Any order of the
    binomials and any ``small`` give the same distribution and only set the cost. ``prob`` is overwritten (zero
    at the components drawn by binomials); ``comps``, ``out`` and ``removed`` need K entries.
    """
    K = prob.shape[0]
    total = cdf[K - 1]
    left = n
    nnz = 0
    n_removed = 0
    removed_mass = 0.0
    last_drawn = largest[0]
    while left > small:
        if n_removed < n_largest:
            b = largest[n_removed]
        else:
            b = 0
            for k in range(1, K):
                if prob[k] > prob[b]:
                    b = k
        top = prob[b]
        if not top > 0.0:  # no mass left (rounding): the remaining trials to the last component drawn
            return _add_trials(comps, out, 0, nnz, last_drawn, left)
        rest = total - removed_mass
        m = left if top >= rest else binomial(rng, left, top / rest)
        if m > 0:
            comps[nnz] = b
            out[nnz] = m
            nnz += 1
            left -= m
        h = n_removed  # the drawn components in increasing order
        while h > 0 and removed[h - 1] > b:
            removed[h] = removed[h - 1]
            h -= 1
        removed[h] = b
        n_removed += 1
        removed_mass += cdf[b] - (cdf[b - 1] if b > 0 else 0.0)
        prob[b] = 0.0
        last_drawn = b
    if left == 0:
        return nnz
    # Each remaining trial: a uniform over the mass left, mapped onto the scale of ``cdf`` by stepping over the
    # drawn components' intervals below it (in increasing order, a few), then located by counting the cumulative
    # sums at or below it.
    rest = total - removed_mass
    first_single = nnz
    for _ in range(left):
        chosen = -1
        for _try in range(64):
            v = rng.random() * rest
            for h in range(n_removed):
                r = removed[h]
                low = cdf[r - 1] if r > 0 else 0.0
                if v < low:
                    break
                v += cdf[r] - low
            k = 0
            for h in range(K):
                k += 1 if cdf[h] <= v else 0
            if k < K and prob[k] > 0.0:
                chosen = k
                break
        if chosen < 0:  # rounding: a sweep over the probabilities left, or the last component drawn
            s = 0.0
            for k in range(K):
                s += prob[k]
            chosen = last_drawn
            if s > 0.0:
                u = rng.random() * s
                acc = 0.0
                for k in range(K):
                    if prob[k] > 0.0:
                        chosen = k
                        acc += prob[k]
                        if u < acc:
                            break
        nnz = _add_trials(comps, out, first_single, nnz, chosen, 1)
    return nnz


@numba.njit(cache=True)
def draw_multinomials_cdf(
    n: int, prob: np.ndarray, size: int, small: int, rng: np.random.Generator, n_largest: int = 3, first=None
) -> np.ndarray:
    """``size`` draws of :func:`multinomial_cdf` (the ``n_largest`` largest given, or the components ``first``
    in that order), from ``rng`` (for tests), as dense rows."""
    K = prob.shape[0]
    out = np.zeros((size, K), dtype=np.int64)
    cdf = np.cumsum(prob)
    if first is None:
        largest = np.argsort(-prob)[:n_largest]
    else:
        largest = first.astype(np.int64)
    work = np.empty(K)
    comps = np.empty(K, dtype=np.int64)
    drawn = np.empty(K, dtype=np.int64)
    removed = np.empty(K, dtype=np.int64)
    for i in range(size):
        work[:] = prob
        nnz = multinomial_cdf(rng, n, work, cdf, largest, largest.shape[0], small, comps, drawn, removed)
        for t in range(nnz):
            out[i, comps[t]] += drawn[t]
    return out


@numba.njit(cache=True)
def draw_binomials(n: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Vectorised :func:`binomial`, from ``rng`` (for tests)."""
    out = np.empty(n.shape[0], dtype=np.int64)
    for i in range(n.shape[0]):
        out[i] = binomial(rng, n[i], p[i])
    return out


@numba.njit(cache=True)
def draw_multinomials(n: int, prob: np.ndarray, size: int, small: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of :func:`multinomial`, from ``rng`` (for tests)."""
    K = prob.shape[0]
    out = np.empty((size, K), dtype=np.int64)
    scratch = np.empty(small, dtype=np.float64)
    work = np.empty(K)
    for i in range(size):
        work[:] = prob
        multinomial(rng, n, work, out[i], scratch, small)
    return out
