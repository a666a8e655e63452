"""The exact moves of the DPMPM's blocked Gibbs sampler beyond the textbook sweep, in compiled code.

Each one leaves the posterior of eq. (1)-(6) invariant; all are validated against the exact posterior of small
problems by enumeration in ``tests/models/dpmpm/test_gibbs.py``:

* :func:`slice_log_alpha`: ``alpha`` given the allocations with the sticks integrated out (slice sampling);
  followed by the sticks given ``alpha``, a joint draw of ``(alpha, beta) | z``;
* :func:`swap_log_ratio`: label-swap Metropolis moves (Papaspiliopoulos & Roberts 2008), with the sticks
  integrated out (:func:`log_allocation_prob`);
* :func:`level_exchange`: all records with one level of a synthesized variable (or one pattern of the kept
  variables) swap two components, sticks and theta integrated out;
* :func:`split_merge`: split-merge Metropolis-Hastings moves (Jain & Neal 2004) with a sequentially allocated
  launch (Dahl 2003).

They draw from the chain's ``numpy.random.Generator`` (their first argument), made per chain by
:func:`bayessdc.models.dpmpm.gibbs.run_gibbs`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..exact_draws import uniform_index
from .records import Allocations, CellData, MoveWork, Priors

__all__ = ["level_exchange", "log_allocation_prob", "slice_log_alpha", "split_merge", "swap_log_ratio"]


@numba.njit(cache=True, nogil=True, _nrt=False)
def _log_alpha_density(u: float, n_k: np.ndarray, a_alpha: float, b_alpha: float, beta_a: float) -> float:
    """``log p(log alpha = u | z)`` up to a constant: eq. (5) prior, sticks of eq. (3)-(4) integrated out."""
    alpha = np.exp(u)
    K = n_k.shape[0]
    total = a_alpha * u - b_alpha * alpha  # Gamma(a, b) density in log alpha, Jacobian included
    tail = 0.0
    for k in range(K - 1, -1, -1):
        if k < K - 1:
            # log B(a + n_k, alpha + tail_k) - log B(a, alpha)
            total += math.lgamma(alpha + tail) - math.lgamma(beta_a + n_k[k] + alpha + tail)
            total += math.lgamma(beta_a + alpha) - math.lgamma(alpha)
        tail += n_k[k]
    return total


@numba.njit(cache=True, nogil=True, _nrt=False)
def slice_log_alpha(
    rng: np.random.Generator, alpha: float, n_k: np.ndarray, a_alpha: float, b_alpha: float, beta_a: float
) -> float:
    """One slice-sampling update (stepping out, shrinkage; Neal 2003) of ``log alpha`` given the allocations."""
    u0 = np.log(alpha)
    level = _log_alpha_density(u0, n_k, a_alpha, b_alpha, beta_a) + np.log(rng.random())
    width = 1.0
    left = u0 - width * rng.random()
    right = left + width
    for _ in range(50):
        if _log_alpha_density(left, n_k, a_alpha, b_alpha, beta_a) <= level:
            break
        left -= width
    for _ in range(50):
        if _log_alpha_density(right, n_k, a_alpha, b_alpha, beta_a) <= level:
            break
        right += width
    for _ in range(200):
        u = left + (right - left) * rng.random()
        if _log_alpha_density(u, n_k, a_alpha, b_alpha, beta_a) > level:
            return np.exp(u)
        if u < u0:
            left = u
        else:
            right = u
    return alpha


@numba.njit(cache=True, nogil=True, _nrt=False)
def log_allocation_prob(n_k: np.ndarray, alpha: float, beta_a: float) -> float:
    """``log p(z | alpha)`` with the sticks integrated out, up to terms that do not depend on the order.

    ``prod_{k<K} B(a + n_k, alpha + sum_{l>k} n_l) / B(a, alpha)`` (eq. 3-4 with beta_k ~ Beta(a, alpha)).
    """
    K = n_k.shape[0]
    tail = 0.0
    total = 0.0
    for k in range(K - 1, -1, -1):
        if k < K - 1:
            total += (
                math.lgamma(beta_a + n_k[k]) + math.lgamma(alpha + tail) - math.lgamma(beta_a + n_k[k] + alpha + tail)
            )
        tail += n_k[k]
    return total


@numba.njit(cache=True, nogil=True, _nrt=False)
def _resize_log_ratio(n_k: np.ndarray, i: int, new_i: int, j: int, new_j: int, alpha: float, beta_a: float) -> float:
    """Change of :func:`log_allocation_prob` when component ``i`` holds ``new_i`` records and ``j`` ``new_j``.

    Only the factors of the components between the two change (the tail sums above ``max(i, j)`` and below
    ``min(i, j)`` do not, the total being kept), so the cost is O(|i - j|) log-gamma calls rather than O(K).
    """
    K = n_k.shape[0]
    lo, hi = min(i, j), max(i, j)
    tail = 0.0
    for m in range(hi + 1, K):
        tail += n_k[m]
    change = 0.0
    before = tail
    after = tail
    for k in range(hi, lo - 1, -1):
        old = n_k[k]
        new = new_i if k == i else (new_j if k == j else old)
        if k < K - 1:
            change += math.lgamma(beta_a + new) + math.lgamma(alpha + after)
            change -= math.lgamma(beta_a + new + alpha + after)
            change -= math.lgamma(beta_a + old) + math.lgamma(alpha + before)
            change += math.lgamma(beta_a + old + alpha + before)
        before += old
        after += new
    return change


@numba.njit(cache=True, nogil=True, _nrt=False)
def swap_log_ratio(n_k: np.ndarray, j: int, l: int, alpha: float, beta_a: float) -> float:
    """Change of :func:`log_allocation_prob` when the sizes of components ``j`` and ``l`` are swapped."""
    return _resize_log_ratio(n_k, j, n_k[l], l, n_k[j], alpha, beta_a)


@numba.njit(cache=True, nogil=True, _nrt=False)
def level_exchange(
    rng: np.random.Generator,
    cells: np.ndarray,
    i: int,
    j: int,
    data: CellData,
    priors: Priors,
    state: Allocations,
    work: MoveWork,
    alpha: float,
) -> bool:
    """Metropolis exchange of all records of ``cells`` (those with one level of a synthesized variable, or one
    pattern of the kept variables) between components ``i`` and ``j``.

    The exchange is its own reverse and is proposed with the same probability from either state, so the
    acceptance ratio is the ratio of ``p(allocations | alpha)`` with the sticks and theta integrated out
    (truncated stick breaking: :func:`log_allocation_prob`; Dirichlet-multinomial per component and
    variable); the multinomial coefficients of the cells do not change. It moves a level's records from a
    shared component to an empty one (or back) in one step, which the allocation step can only do record by
    record through states of low probability. Returns whether it was accepted (then ``allocation``,
    ``counts`` and ``n_k`` of ``state`` are updated).
    """
    cell_index, cell_counts = data.index, data.counts
    concentration, total_concentration, beta_a = priors.concentration, priors.total_concentration, priors.beta_a
    allocation, counts, n_k, last_choice = state.allocation, state.counts, state.n_k, state.last_choice
    change, touched, seen = work.change, work.touched, work.seen
    p = cell_index.shape[1]
    moved = 0  # records that go from j to i, net
    n_touched = 0
    for c in cells:
        diff = allocation[c, j] - allocation[c, i]
        if diff == 0:
            continue
        moved += diff
        for v in range(p):
            l = cell_index[c, v]
            if not seen[l]:
                seen[l] = True
                touched[n_touched] = l
                n_touched += 1
            change[l] += diff
    if n_touched == 0:
        return False
    log_ratio = 0.0
    new_i, new_j = n_k[i] + moved, n_k[j] - moved
    for v in range(p):
        log_ratio += math.lgamma(total_concentration[i, v] + n_k[i]) - math.lgamma(total_concentration[i, v] + new_i)
        log_ratio += math.lgamma(total_concentration[j, v] + n_k[j]) - math.lgamma(total_concentration[j, v] + new_j)
    for t in range(n_touched):
        l = touched[t]
        d = change[l]
        if d == 0:
            continue
        a_i, a_j = concentration[i, l] + counts[i, l], concentration[j, l] + counts[j, l]
        log_ratio += math.lgamma(a_i + d) - math.lgamma(a_i) + math.lgamma(a_j - d) - math.lgamma(a_j)
    log_ratio += _resize_log_ratio(n_k, i, new_i, j, new_j, alpha, beta_a)
    accept = np.log(rng.random()) < log_ratio
    if accept:
        n_k[i], n_k[j] = new_i, new_j
        for c in cells:
            allocation[c, i], allocation[c, j] = allocation[c, j], allocation[c, i]
            if cell_counts[c] <= last_choice.shape[1]:  # a small cell: its records' components, relabelled
                for r in range(cell_counts[c]):
                    if last_choice[c, r] == i:
                        last_choice[c, r] = j
                    elif last_choice[c, r] == j:
                        last_choice[c, r] = i
        for t in range(n_touched):
            l = touched[t]
            counts[i, l] += change[l]
            counts[j, l] -= change[l]
    for t in range(n_touched):
        change[touched[t]] = 0
        seen[touched[t]] = False
    return accept


@numba.njit(cache=True, nogil=True, _nrt=False)
def _component_log_marginal(
    k: int, level_counts: np.ndarray, size: int, concentration: np.ndarray, total_concentration: np.ndarray
) -> float:
    """``log`` Dirichlet-multinomial probability of a component's records, theta integrated out (eq. 6).

    ``sum_j [lgamma(A_kj) - lgamma(A_kj + n_k) + sum_{l in j} (lgamma(a_kl + n_kl) - lgamma(a_kl))]``.
    """
    total = 0.0
    for v in range(total_concentration.shape[1]):
        total += math.lgamma(total_concentration[k, v]) - math.lgamma(total_concentration[k, v] + size)
    for l in range(level_counts.shape[0]):
        if level_counts[l] > 0:
            total += math.lgamma(concentration[k, l] + level_counts[l]) - math.lgamma(concentration[k, l])
    return total


@numba.njit(cache=True, nogil=True, _nrt=False)
def _predictive_weight(
    c: int, k: int, size: int, level_counts: np.ndarray, cell_index: np.ndarray, concentration: np.ndarray,
    total_concentration: np.ndarray,
) -> float:  # fmt: skip
    """``size * p(x_c | the component's records)``, theta integrated out: the sequential allocation weight."""
    w = float(size)
    for v in range(cell_index.shape[1]):
        l = cell_index[c, v]
        w *= (concentration[k, l] + level_counts[l]) / (total_concentration[k, v] + size)
    return w


@numba.njit(cache=True, nogil=True, _nrt=False)
def _move_record(c: int, level_counts: np.ndarray, cell_index: np.ndarray, step: int) -> None:
    for v in range(cell_index.shape[1]):
        level_counts[cell_index[c, v]] += step


@numba.njit(cache=True, nogil=True)
def split_merge(
    rng: np.random.Generator,
    data: CellData,
    priors: Priors,
    state: Allocations,
    work: MoveWork,
    alpha: float,
    launch_scans: int,
) -> int:
    """One split-merge Metropolis-Hastings move with a restricted-Gibbs launch state (Jain & Neal 2004).

    Two distinct records are drawn uniformly. The other records of their component(s), ``S``, are given a
    launch state over two components that depends on ``S`` only: a sequential allocation (Dahl 2003: cell by
    cell in a random order, one record at a time, with probability proportional to size times the predictive
    probability given the records placed so far, theta integrated out: :func:`_predictive_weight`), then
    ``launch_scans`` restricted Gibbs scans. If the two records share component ``k``, the split is proposed
    by one more restricted Gibbs scan from the launch state, the second record opening an empty component
    ``k'`` drawn uniformly among the ``E`` empty ones. If they sit in different components, the merge into the
    first record's component is proposed, and the reverse split's probability is that of the same final
    scan ending in the current allocation (records of one cell are exchangeable, so which of them sit in each
    component is a uniformly random labelling). The acceptance ratio is the ratio of ``p(allocations | alpha)``
    (sticks and theta integrated out: :func:`log_allocation_prob`, :func:`_component_log_marginal`) times the
    proposal ratio, with ``1 / E`` for choosing ``k'``. Records are distinguishable in this argument (one label
    per record); the cells' counts follow because every labelling with the same counts is equally probable.

    Returns 1 for an accepted split, -1 for an accepted merge, 0 otherwise (``state`` updated in place).
    """
    cell_index, cell_counts, cell_start = data.index, data.counts, data.start
    concentration, total_concentration, beta_a = priors.concentration, priors.total_concentration, priors.beta_a
    allocation, counts, n_k, last_choice = state.allocation, state.counts, state.n_k, state.last_choice
    order, launch, proposed, target = work.order, work.launch, work.proposed, work.target
    first_counts, second_counts = work.first_counts, work.second_counts
    n_cells = cell_counts.shape[0]
    K, L = counts.shape
    n = cell_start[n_cells]
    if n < 2:
        return 0
    # two distinct records, each located by (cell, component): records of a cell are ordered by component
    first = uniform_index(rng, n)
    second = uniform_index(rng, n - 1)
    if second >= first:
        second += 1
    cells = np.zeros(2, dtype=np.int64)
    comps = np.zeros(2, dtype=np.int64)
    for t in range(2):
        record = first if t == 0 else second
        lo, hi = 0, n_cells - 1
        while lo < hi:  # the cell c with cell_start[c] <= record < cell_start[c + 1]
            mid = (lo + hi + 1) // 2
            if cell_start[mid] <= record:
                lo = mid
            else:
                hi = mid - 1
        cells[t] = lo
        offset = record - cell_start[lo]
        for k in range(K):
            offset -= allocation[lo, k]
            if offset < 0:
                comps[t] = k
                break
    c1, c2 = cells[0], cells[1]
    k1 = comps[0]
    split = comps[0] == comps[1]
    empty = 0
    for k in range(K):
        if n_k[k] == 0:
            empty += 1
    if split:
        if empty == 0:
            return 0
        pick = uniform_index(rng, empty)
        k2 = -1
        for k in range(K):
            if n_k[k] == 0:
                if pick == 0:
                    k2 = k
                    break
                pick -= 1
    else:
        k2 = comps[1]
    # the cells holding records of S, in a random order
    m = 0
    for c in range(n_cells):
        if allocation[c, k1] + allocation[c, k2] > 0:
            order[m] = c
            m += 1
    for t in range(m - 1, 0, -1):
        s = uniform_index(rng, t + 1)
        order[t], order[s] = order[s], order[t]
    # launch state: the anchors, then S allocated sequentially
    first_counts[:] = 0
    second_counts[:] = 0
    _move_record(c1, first_counts, cell_index, 1)
    _move_record(c2, second_counts, cell_index, 1)
    size1, size2 = 1, 1
    for t in range(m):
        c = order[t]
        in_s = allocation[c, k1] + allocation[c, k2] - (1 if c == c1 else 0) - (1 if c == c2 else 0)
        stay = 0
        for _ in range(in_s):
            w1 = _predictive_weight(c, k1, size1, first_counts, cell_index, concentration, total_concentration)
            w2 = _predictive_weight(c, k2, size2, second_counts, cell_index, concentration, total_concentration)
            if rng.random() * (w1 + w2) < w1:
                stay += 1
                size1 += 1
                _move_record(c, first_counts, cell_index, 1)
            else:
                size2 += 1
                _move_record(c, second_counts, cell_index, 1)
        launch[t] = stay
    # restricted Gibbs scans: each record of S, in turn, between the two components given all the others;
    # the last one is the proposal (split) or the reverse proposal's probability (merge)
    log_q = 0.0
    for scan in range(launch_scans + 1):
        final = scan == launch_scans
        for t in range(m):
            c = order[t]
            in_s = allocation[c, k1] + allocation[c, k2] - (1 if c == c1 else 0) - (1 if c == c2 else 0)
            if final and not split:  # the current labelling of the cell's records, uniformly random
                left1 = allocation[c, k1] - (1 if c == c1 else 0)
                for r in range(in_s):
                    if rng.random() * (in_s - r) < left1:
                        target[r] = 1
                        left1 -= 1
                    else:
                        target[r] = 0
            now = 0
            for r in range(in_s):
                # the record's launch label: the cell's first launch[t] records are in the first component
                if r < launch[t]:
                    size1 -= 1
                    _move_record(c, first_counts, cell_index, -1)
                else:
                    size2 -= 1
                    _move_record(c, second_counts, cell_index, -1)
                w1 = _predictive_weight(c, k1, size1, first_counts, cell_index, concentration, total_concentration)
                w2 = _predictive_weight(c, k2, size2, second_counts, cell_index, concentration, total_concentration)
                p1 = w1 / (w1 + w2) if w1 + w2 > 0 else 0.5
                if final and not split:
                    to_first = target[r] == 1
                else:
                    to_first = rng.random() < p1
                if final:
                    log_q += math.log(max(p1 if to_first else 1.0 - p1, 1e-300))
                if to_first:
                    now += 1
                    size1 += 1
                    _move_record(c, first_counts, cell_index, 1)
                else:
                    size2 += 1
                    _move_record(c, second_counts, cell_index, 1)
            if final:
                proposed[t] = now
            else:
                launch[t] = now
    if split:
        log_ratio = (
            _component_log_marginal(k1, first_counts, size1, concentration, total_concentration)
            + _component_log_marginal(k2, second_counts, size2, concentration, total_concentration)
            - _component_log_marginal(k1, counts[k1], n_k[k1], concentration, total_concentration)
            + _resize_log_ratio(n_k, k1, size1, k2, size2, alpha, beta_a)
            - log_q
            + math.log(empty)
        )
    else:
        for l in range(L):
            first_counts[l] = counts[k1, l] + counts[k2, l]
        merged = n_k[k1] + n_k[k2]
        log_ratio = (
            _component_log_marginal(k1, first_counts, merged, concentration, total_concentration)
            - _component_log_marginal(k1, counts[k1], n_k[k1], concentration, total_concentration)
            - _component_log_marginal(k2, counts[k2], n_k[k2], concentration, total_concentration)
            + _resize_log_ratio(n_k, k1, merged, k2, 0, alpha, beta_a)
            + log_q
            - math.log(empty + 1)
        )
    if not np.log(rng.random()) < log_ratio:
        return 0
    small = last_choice.shape[1]
    for t in range(m):
        c = order[t]
        total = allocation[c, k1] + allocation[c, k2]
        new1 = proposed[t] + (1 if c == c1 else 0) if split else total
        allocation[c, k1] = new1
        allocation[c, k2] = total - new1
        if cell_counts[c] <= small:  # a small cell: its records' components, rewritten
            given = 0
            for r in range(cell_counts[c]):
                if last_choice[c, r] == k1 or last_choice[c, r] == k2:
                    last_choice[c, r] = k1 if given < new1 else k2
                    given += 1
    if split:
        n_k[k1], n_k[k2] = size1, size2
        for l in range(L):
            counts[k1, l] = first_counts[l]
            counts[k2, l] = second_counts[l]
        return 1
    n_k[k1], n_k[k2] = merged, 0
    for l in range(L):
        counts[k1, l] = first_counts[l]
        counts[k2, l] = 0
    return -1
