"""The DPMPM's posterior-predictive draws in compiled code: synthetic values of every record, one draw.

Synthesis works like the sampler's allocation step: class counts per cell (one multinomial draw of the cell's
records), values of every synthesized variable per (cell, class) group (eq. 1), then a random
assignment to the records of the cell. Records of one cell are exchangeable, so this is the same distribution
as a class and values drawn per record, at a cost that grows with the records only through the assignment.

The draws come from the generator the synthesizer is given (the datasets' stream), passed into the compiled code;
the shuffles draw their indices by :func:`bayessdc.models.exact_draws.uniform_index`, faster than numba's hidden
state and than ``Generator.integers`` (README, "Measured choices in the code").
"""

from __future__ import annotations

import numba
import numpy as np

from ..exact_draws import binomial, multinomial, uniform_index

__all__ = ["synthesize_cell_counts", "synthesize_cells"]


@numba.njit(cache=True, nogil=True)
def _level_draws(
    rng: np.random.Generator, m: int, cdf: np.ndarray, start: int, stop: int, out: np.ndarray, column: int, first: int,
    tally: np.ndarray,
) -> bool:  # fmt: skip
    """``m`` independent draws of a level (codes ``0 .. stop - start - 1``) with cumulative probabilities
    ``cdf[start:stop]`` into ``out[first:first + m, column]``, or, when ``tally`` is not empty, added to the
    level counts ``tally`` instead (the same draws). Few draws: one binary search each; many: the level counts
    by conditional binomials, written in level order (then the caller shuffles them). Returns whether the values
    were written in level order.
    """
    counting = tally.shape[0] > 0
    d = stop - start
    total = cdf[stop - 1]
    if m <= 8 * d:
        for i in range(m):
            u = rng.random() * total
            lo, hi = start, stop - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if u < cdf[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            if counting:
                tally[lo - start] += 1
            else:
                out[first + i, column] = lo - start
        return False
    left = m
    position = first
    below = 0.0
    for l in range(start, stop):
        if left == 0:
            break
        rest = total - below
        mass = cdf[l] - below
        below = cdf[l]
        if l == stop - 1 or mass >= rest:
            count = left
        else:
            count = binomial(rng, left, mass / rest) if rest > 0.0 else 0
        if counting:
            tally[l - start] += count
        else:
            for _ in range(count):
                out[position, column] = l - start
                position += 1
        left -= count
    return True


@numba.njit(cache=True, nogil=True)
def _cell_values(
    rng: np.random.Generator, n_c: int, weights: np.ndarray, theta_cdf: np.ndarray, syn_start: np.ndarray,
    drawn: np.ndarray, scratch: np.ndarray, small: int, slots: np.ndarray, tally: np.ndarray,
) -> None:  # fmt: skip
    """The synthesized values of one cell's ``n_c`` records into ``slots[:n_c]``, grouped by class: the class
    counts (one multinomial over ``weights``), then per (cell, class) group the values of every synthesized
    variable, shuffled within the group when drawn in level order and more than one variable is synthesized.
    With one synthesized variable and ``tally`` not empty, the values are added to the level counts ``tally``
    instead (the same draws: with one variable there is no shuffle)."""
    K = weights.shape[0]
    J = syn_start.shape[0] - 1
    multinomial(rng, n_c, weights, drawn, scratch, small)
    position = 0
    for k in range(K):
        m = drawn[k]
        if m == 0:
            continue
        for r in range(J):
            in_order = _level_draws(rng, m, theta_cdf[k], syn_start[r], syn_start[r + 1], slots, r, position, tally)
            if in_order and J > 1:
                # values of different variables are independent given the class: shuffle within the group
                for i in range(m - 1, 0, -1):
                    h = uniform_index(rng, i + 1)
                    slots[position + i, r], slots[position + h, r] = slots[position + h, r], slots[position + i, r]
        position += m


@numba.njit(cache=True, nogil=True)
def synthesize_cells(
    order: np.ndarray,  # (n,) records grouped by cell
    cell_start: np.ndarray,  # (C + 1,)
    class_weights: np.ndarray,  # (C, K) p(z = k | the conditioning values of the cell), not necessarily normalised
    theta_cdf: np.ndarray,  # (K, L) cumulative theta of every synthesized variable along its own block of levels
    syn_start: np.ndarray,  # (J + 1,) blocks of the synthesized variables on the level axis of theta_cdf
    rng: np.random.Generator,
    small: int,
) -> np.ndarray:
    """Synthesized level codes ``(n, J)``: per cell, the class counts of its records (one multinomial), per
    (cell, class) group the values of every synthesized variable, then a random assignment to the records.

    The records of a cell are exchangeable (equal in every modelled variable), so this is the same
    distribution as a class and values drawn per record, at a cost that grows with the records only through
    the final assignment. Every draw comes from ``rng``, the generator the synthesizer was given (the datasets'
    stream, :mod:`bayessdc.synthesis.streams`).
    """
    n_cells, K = class_weights.shape
    J = syn_start.shape[0] - 1
    out = np.empty((order.shape[0], J), dtype=np.int64)
    drawn = np.zeros(K, dtype=np.int64)
    weights = np.empty(K)
    scratch = np.empty(small, dtype=np.float64)
    largest = 0
    for c in range(n_cells):
        largest = max(largest, cell_start[c + 1] - cell_start[c])
    slots = np.empty((largest, J), dtype=np.int64)
    no_tally = np.empty(0, dtype=np.int64)
    for c in range(n_cells):
        first = cell_start[c]
        n_c = cell_start[c + 1] - first
        weights[:] = class_weights[c]
        _cell_values(rng, n_c, weights, theta_cdf, syn_start, drawn, scratch, small, slots, no_tally)
        # a uniformly random assignment of the cell's synthesized rows to its records
        for i in range(n_c - 1, -1, -1):
            h = uniform_index(rng, i + 1) if i > 0 else 0
            record = order[first + i]
            for r in range(J):
                out[record, r] = slots[h, r]
                slots[h, r] = slots[i, r]
    return out


@numba.njit(cache=True, nogil=True)
def synthesize_cell_counts(
    cell_start: np.ndarray,  # (C + 1,)
    class_weights: np.ndarray,  # (C, K)
    theta_cdf: np.ndarray,  # (K, L)
    syn_start: np.ndarray,  # (J + 1,)
    rng: np.random.Generator,
    small: int,
    out: np.ndarray,  # (C, V) counts, V the product of the synthesized variables' levels
) -> None:
    """How many of each cell's records take each joint value of the synthesized variables (C order, the last
    variable fastest, as ``np.ravel_multi_index``), written to ``out``: :func:`synthesize_cells` without the
    assignment to records. For what does not depend on which record of a cell got which values (every release
    figure: the cell's records are exchangeable) it is the same distribution; drawn from the same generator state
    it gives exactly the counts of :func:`synthesize_cells`' values for a dataset of one cell (tested). Its cost
    grows with the (cell, value) pairs rather than the records (README, "Measured choices in the code").
    """
    n_cells, K = class_weights.shape
    J = syn_start.shape[0] - 1
    stride = np.ones(J, dtype=np.int64)
    for r in range(J - 2, -1, -1):
        stride[r] = stride[r + 1] * (syn_start[r + 2] - syn_start[r + 1])
    drawn = np.zeros(K, dtype=np.int64)
    weights = np.empty(K)
    scratch = np.empty(small, dtype=np.float64)
    largest = 0
    for c in range(n_cells):
        largest = max(largest, cell_start[c + 1] - cell_start[c])
    slots = np.empty((largest if J > 1 else 0, J), dtype=np.int64)
    no_tally = np.empty(0, dtype=np.int64)
    out[:] = 0
    for c in range(n_cells):
        n_c = cell_start[c + 1] - cell_start[c]
        weights[:] = class_weights[c]
        if J == 1:  # the levels counted as they are drawn: _cell_values' draws, written out with the block's
            # bounds as 0 and L, which the compiler folds into the inlined search (README, "Measured choices")
            multinomial(rng, n_c, weights, drawn, scratch, small)
            tally = out[c]
            for k in range(K):
                if drawn[k]:
                    _level_draws(rng, drawn[k], theta_cdf[k], 0, theta_cdf.shape[1], slots, 0, 0, tally)
            continue
        _cell_values(rng, n_c, weights, theta_cdf, syn_start, drawn, scratch, small, slots, no_tally)
        for i in range(n_c):
            value = 0
            for r in range(J):
                value += slots[i, r] * stride[r]
            out[c, value] += 1
