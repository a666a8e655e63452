"""The DPMPM's blocked Gibbs sampler on the cell counts, compiled with numba: the sampler behind ``fit``.

It samples the posterior of eq. (1)-(6) in the form of :mod:`bayessdc.models.dpmpm.marginal` (records
aggregated into cells), with the priors read back from the declared model
(:func:`bayessdc.models.dpmpm.marginal.model_hyperparameters`). One iteration, each step an exact draw from a
conditional of the joint posterior (truncated stick breaking, Ishwaran & James 2001):

1. ``z | pi, theta, X`` (eq. 1-2): the ``n_c`` records of cell ``c`` are exchangeable, so their allocation
   counts are one ``Multinomial(n_c; r_c.)`` draw, ``r_ck ∝ pi_k prod_j theta_k^(j)[x_cj]``, the same conditional
   as drawing each record's ``z_i``; only the counts per (component, variable, level) are kept;
2. the exact moves of :mod:`bayessdc.models.dpmpm.moves` on the allocations (sticks and theta integrated out):
   level exchanges, pattern exchanges and split-merge moves (Jain & Neal 2004; Dahl 2003), then label swaps
   (Papaspiliopoulos & Roberts 2008);
3. ``(alpha, beta) | z``: ``alpha`` given the allocations with the sticks integrated out (slice sampling, Neal
   2003), then ``beta_k | z, alpha ~ Beta(beta_a + n_k, alpha + sum_{l>k} n_l)`` (eq. 4), drawn in logs as ``X /
   (X + Y)`` with Gamma ``X, Y``: clipping ``1 - beta`` away from 0 biased ``alpha`` upwards; or, selectable, the
   textbook ``alpha | beta ~ Gamma(a_alpha + K - 1, b_alpha - sum_{k<K} log(1 - beta_k))`` (eq. 5);
4. ``pi`` by eq. (3), in logs;
5. ``theta_k^(j) | z, X ~ Dirichlet(a + counts_kj)`` (eq. 6).

The multinomial of step 1 is drawn by conditional binomials, largest component first, until a few records are
left, then one categorical draw for each of those (:func:`bayessdc.models.exact_draws.multinomial_cdf`); the
binomials are exact and O(1) in ``n`` (:func:`bayessdc.models.exact_draws.binomial`: inversion or BTPE). Nothing
in an iteration grows with ``n`` then, only with the number of occupied cells and how many components share each
cell's records. Cells of at most :data:`SMALL_CELL` records get one categorical draw per record.

Why the additions to the textbook sweep: without the label swaps ``alpha`` and the number of occupied
components mix very slowly (a chain started with every component occupied stays far above the posterior's
number for thousands of iterations); the collapsed ``alpha`` update gives about twice the ESS of ``alpha`` of
the textbook one; the allocation step moves records one cell at a time, so a large level whose records can sit in
a component of their own or share one switches between the two only rarely, which a level exchange does in one
step. Pattern exchanges and split-merge moves are selectable and off by default: they did not help on the
CE-like data. All moves are validated against the exact posterior of small problems by enumeration
(``tests/models/dpmpm/test_gibbs.py``).

Random numbers: chain ``c`` draws from its own ``numpy.random.Generator``, ``bayessdc.synthesis.streams.rng(seed,
Stream.CHAIN, c)``, passed into the compiled chain and every move (never numba's hidden per-thread state), so a
chain's draws do not depend on the threads or on the other chains. The kernels take their inputs as records
(:mod:`bayessdc.models.dpmpm.records`), built in :func:`run_gibbs` only.

Measured by ``bench/dpmpm.py`` (ESS per second, seconds per 1,000 iterations, the levers taken and not taken,
the profiles of the allocation step, the regimes of the CE-like posterior; the choice against NUTS:
:data:`SAMPLER_DECISION`); the figures, dated, are in its docstring and output and in the README's DPMPM section.

References
----------
.. [1] Hu, J., & Savitsky, T. D. *Bayesian data synthesis and disclosure risk quantification: an application to
    the Consumer Expenditure Surveys*, Section 2.1.
.. [2] Ishwaran, H., & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors. *JASA*, 96, 161-173.
.. [3] Papaspiliopoulos, O., & Roberts, G. O. (2008). Retrospective Markov chain Monte Carlo methods for Dirichlet
    process hierarchical models. *Biometrika*, 95(1), 169-186.
.. [4] Jain, S., & Neal, R. M. (2004). A split-merge Markov chain Monte Carlo procedure for the Dirichlet process
    mixture model. *JCGS*, 13(1), 158-182.
.. [5] Dahl, D. B. (2003). An improved merge-split sampler for conjugate Dirichlet process mixture models.
    Technical report 1086, University of Wisconsin.
.. [6] Neal, R. M. (2003). Slice sampling. *Annals of Statistics*, 31(3), 705-767.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from typing import Any

import numba
import numpy as np

import bayessdc.models.progress as progress
import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from ..categorical import CategoricalData
from ..exact_draws import multinomial_cdf, uniform_index
from .moves import level_exchange, slice_log_alpha, split_merge, swap_log_ratio
from .records import Allocations, CellData, Moves, MoveWork, Priors, Proposals, Schedule

__all__ = ["ALPHA_UPDATES", "SAMPLER_DECISION", "SMALL_CELL", "GibbsSettings", "run_gibbs"]

#: Measured choice of sampler (see ``bench/dpmpm.py --nuts``); recorded in every posterior's attributes.
SAMPLER_DECISION = (
    "blocked Gibbs on cell counts (numba), chosen by measurement on the CE-like data (n = 6,208, K = 40, "
    "bench/dpmpm.py --nuts): NUTS (nutpie) on the marginalised model needed 251 s to compile and 0.85 s per draw "
    "(mean tree depth 7.4, up to 10), giving 0.6 ESS/s for alpha and 0.6-1.2 ESS/s for the largest counties' "
    "probabilities; the Gibbs sampler runs 0.5-0.65 s per 1,000 iterations with 175-220 ESS/s for alpha and "
    "526-980 ESS/s for the six largest counties' probabilities (bench/dpmpm.py, 2 cores)"
)


#: Updates of alpha: ``"collapsed"`` draws alpha given the allocations with the sticks integrated out (slice
#: sampling), ``"conditional"`` the textbook Gamma(a + K - 1, b - sum log(1 - beta_k)) given the sticks.
ALPHA_UPDATES: tuple[str, ...] = ("collapsed", "conditional")

#: Cells (or groups) with at most this many records are allocated one record at a time; larger ones by
#: conditional binomials, largest component first, until this many records are left
#: (:func:`bayessdc.models.exact_draws.multinomial`).
SMALL_CELL = 8


@dataclass(frozen=True)
class GibbsSettings:
    """Settings of the blocked Gibbs sampler.

    Parameters
    ----------
    draws
        Iterations kept per chain after burn-in (before thinning).
    burn
        Burn-in iterations per chain.
    chains
        Independent chains (run at once in threads, or apart: ``DPMPMSynthesizer.fit(..., chains=[c])``; r_hat
        needs at least 2). Default 8: the release gate pools the chains and judges the between-chain standard
        error of the release's figures, which 8 chains bring within its tolerances on the bundled CE-like data.
    thin
        Keep every ``thin``-th iteration (bounds the memory of the stored ``theta``).
    label_swaps
        K label-swap Metropolis moves per iteration (Papaspiliopoulos & Roberts 2008). Without them the
        sampler keeps the correct target but the stick order, alpha and the number of occupied components
        mix very slowly (kept switchable for that comparison).
    alpha_update
        ``"collapsed"`` (default): alpha given the allocations with the sticks integrated out, by slice
        sampling; ``"conditional"``: alpha given the sticks, Gamma(a_alpha + K - 1, b_alpha - sum log(1 -
        beta_k)). Both exact; kept switchable for the measured comparison in ``bench/dpmpm.py``.
    exchange_moves
        Level-exchange Metropolis moves per iteration, in multiples of K (0: none): all records with one level
        of a synthesized variable swap components ``i`` and ``j``
        (:func:`bayessdc.models.dpmpm.moves.level_exchange`; the level drawn in proportion to its records), so a
        large level can move between a component of its own and a shared one in one step. Measured on the
        CE-like data (six seeds, one chain of 10,000 iterations each): without them the smallest ESS/s over the
        county probabilities was 2 and 12 in two of the six chains (one of the largest counties stuck in one
        configuration), 469-685 in the others; with K moves 120-595 in all six, for 10-25% more time per
        iteration.
    pattern_moves
        Pattern-exchange Metropolis moves per iteration, in multiples of K (0: none, the default): the same
        exchange for all records of one pattern of the kept variables, so the grouping of the patterns into
        components can change in one step. On the CE-like data the posterior has regimes with 11, 12 or 13
        large components (groupings of the 40 patterns). Four chains of 60,000 iterations changed regime 12
        times without these moves and 9 times with them, at about 10% more time per iteration (``bench/dpmpm.py``).
    split_merge_moves
        Split-merge Metropolis-Hastings moves per iteration (:func:`bayessdc.models.dpmpm.moves.split_merge`;
        Jain & Neal 2004 with a sequentially allocated launch, Dahl 2003), default off: on the CE-like data
        10 of them per iteration made each iteration three to five times slower, and the regime changes did
        not become more frequent.
    launch_scans
        Restricted Gibbs scans that build a split-merge move's launch state.
    likelihood_power
        Sample the power posterior, prior times likelihood to this power (1, the default: the posterior). A
        diagnostic of the posterior's geometry, not for synthesis: the allocation uses ``theta^power`` and
        theta is drawn from ``Dirichlet(a + power * counts)``; the exchange and split-merge moves, whose
        ratios are written for power 1, are skipped below 1. On the CE-like data (``bench/dpmpm.py --powers``)
        flattening the likelihood does not dissolve the regimes of the posterior, it merges components: at
        0.97 the chain changes regime a few times more often than at 1, at 0.9 and below it sits in fewer,
        equally stuck components; so parallel tempering is not the remedy for their slow mixing.
    """

    draws: int = 4000
    burn: int = 1000
    chains: int = 8
    thin: int = 4
    label_swaps: bool = True
    alpha_update: str = "collapsed"
    exchange_moves: int = 1
    pattern_moves: int = 0
    split_merge_moves: int = 0
    launch_scans: int = 2
    likelihood_power: float = 1.0

    def __post_init__(self) -> None:
        for name in ("draws", "burn", "chains", "thin"):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < (0 if name == "burn" else 1):
                raise ValueError(f"Gibbs setting {name!r} must be a positive integer, got {value!r}")
        if self.draws // self.thin < 1:
            raise ValueError("draws / thin must leave at least one stored draw")
        if not isinstance(self.exchange_moves, int | np.integer) or self.exchange_moves < 0:
            raise ValueError(f"exchange_moves must be a non-negative integer, got {self.exchange_moves!r}")
        if not isinstance(self.split_merge_moves, int | np.integer) or self.split_merge_moves < 0:
            raise ValueError(f"split_merge_moves must be a non-negative integer, got {self.split_merge_moves!r}")
        if not isinstance(self.pattern_moves, int | np.integer) or self.pattern_moves < 0:
            raise ValueError(f"pattern_moves must be a non-negative integer, got {self.pattern_moves!r}")
        if not isinstance(self.launch_scans, int | np.integer) or self.launch_scans < 0:
            raise ValueError(f"launch_scans must be a non-negative integer, got {self.launch_scans!r}")
        if not (isinstance(self.likelihood_power, int | float) and 0.0 < self.likelihood_power <= 1.0):
            raise ValueError(f"likelihood_power must be in (0, 1], got {self.likelihood_power!r}")
        if self.alpha_update not in ALPHA_UPDATES:
            raise ValueError(f"alpha_update must be one of {ALPHA_UPDATES}, got {self.alpha_update!r}")

    @property
    def stored(self) -> int:
        """Stored draws per chain."""
        return self.draws // self.thin

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dictionary."""
        return asdict(self)


@numba.njit(cache=True, nogil=True, _nrt=False)
def _gamma(rng: np.random.Generator, shape: float) -> float:
    """A Gamma(shape, 1) draw; shape 1 (an empty level under the Dirichlet(1, ..., 1) prior) a standard
    exponential by the ziggurat (exact; numpy's and numba's ``standard_exponential``), cheaper than -log U."""
    if shape == 1.0:
        return rng.standard_exponential()
    return rng.gamma(shape, 1.0)


@numba.njit(cache=True, nogil=True, _nrt=False)
def _log_gamma_draw(rng: np.random.Generator, shape: float) -> float:
    """``log X`` for ``X ~ Gamma(shape, 1)``, exact for small shapes (``X = Gamma(shape + 1) U^(1/shape)``, ``log U``
    drawn as minus a standard exponential, by the ziggurat)."""
    if shape < 1.0:
        return np.log(rng.gamma(shape + 1.0, 1.0)) - rng.standard_exponential() / shape
    return np.log(rng.gamma(shape, 1.0))


@numba.njit(cache=True, nogil=True, _nrt=False)
def _weighted_index(rng: np.random.Generator, cdf: np.ndarray) -> int:
    """An index drawn with probabilities proportional to the increments of the cumulative ``cdf``."""
    u = rng.random() * cdf[-1]
    lo, hi = 0, cdf.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if u < cdf[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True, nogil=True, _nrt=False)
def _component_pair(rng: np.random.Generator, K: int) -> tuple[int, int]:
    """Two distinct components, uniformly."""
    i = uniform_index(rng, K)
    j = uniform_index(rng, K - 1)
    if j >= i:
        j += 1
    return i, j


@numba.njit(cache=True, nogil=True, _nrt=False)
def _cumulate_top3(weights: np.ndarray, prob: np.ndarray, cdf: np.ndarray, largest: np.ndarray) -> None:
    """``prob`` = ``weights``, ``cdf`` their cumulative sums and ``largest`` the positions of the three largest
    (fewer if K < 3: the first ``min(3, K)`` entries), in decreasing order: one pass."""
    K = weights.shape[0]
    total = 0.0
    b1, b2, b3 = 0, min(1, K - 1), min(2, K - 1)
    v1, v2, v3 = -1.0, -1.0, -1.0
    for k in range(K):
        w = weights[k]
        prob[k] = w
        total += w
        cdf[k] = total
        if w > v3:
            if w > v2:
                b3, v3 = b2, v2
                if w > v1:
                    b2, v2 = b1, v1
                    b1, v1 = k, w
                else:
                    b2, v2 = k, w
            else:
                b3, v3 = k, w
    largest[0], largest[1], largest[2] = b1, b2, b3


@numba.njit(cache=True, nogil=True)
def _gibbs_chain(
    rng: np.random.Generator,
    cells: CellData,
    priors: Priors,
    schedule: Schedule,
    moves: Moves,
    proposals: Proposals,
    done: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One chain of the blocked Gibbs sampler (the module's docstring), drawing from ``rng`` (the stream ``(seed,
    "chain", c)``); ``done[0]`` holds the iterations finished, written as the chain runs (read by the progress bar).

    Returns the stored ``alpha`` (draw,), ``pi`` (draw, K), ``theta`` (draw, K, L) and the occupied components
    (draw,).
    """
    cell_index, cell_counts, var_start = cells.index, cells.counts, cells.var_start
    concentration, a_alpha, b_alpha, beta_a = priors.concentration, priors.a_alpha, priors.b_alpha, priors.beta_a
    burn, draws, thin = schedule.burn, schedule.draws, schedule.thin
    swap_moves, alpha_mode, small_cell, power = moves.label_swaps, moves.alpha_mode, moves.small_cell, moves.power
    exchange_moves, pattern_moves = moves.level_exchanges, moves.pattern_exchanges
    split_merge_moves, launch_scans = moves.split_merges, moves.launch_scans
    level_cells, level_cell_start = proposals.level_cells, proposals.level_cell_start
    move_levels, move_cdf = proposals.move_levels, proposals.move_cdf
    pattern_cells, pattern_start, pattern_cdf = proposals.pattern_cells, proposals.pattern_start, proposals.pattern_cdf
    n_cells, p = cell_index.shape
    K, L = concentration.shape
    stored = draws // thin
    alpha_out = np.empty(stored)
    pi_out = np.empty((stored, K))
    theta_out = np.empty((stored, K, L))
    occupied_out = np.empty(stored, dtype=np.int64)

    # Initial state: alpha = 1, equal weights, theta from its prior.
    alpha = 1.0
    pi = np.full(K, 1.0 / K)
    theta = np.empty((K, L))
    for k in range(K):
        for j in range(p):
            s = 0.0
            for l in range(var_start[j], var_start[j + 1]):
                theta[k, l] = rng.gamma(concentration[k, l], 1.0)
                s += theta[k, l]
            for l in range(var_start[j], var_start[j + 1]):
                theta[k, l] /= s
    log_w = np.empty(K)
    prob = np.empty(K)
    cdf = np.empty(K)
    drawn = np.zeros(K, dtype=np.int64)
    drawn_k = np.zeros(K, dtype=np.int64)
    removed = np.zeros(K, dtype=np.int64)
    n_largest = min(3, K)
    largest = np.zeros(3, dtype=np.int64)
    guess = np.full((n_cells, n_largest), -1, dtype=np.int64)  # per cell, see the allocation step
    # the component now labelled relabel[k] was labelled k when the guesses were written (label swaps since);
    # label_of is its inverse
    relabel = np.arange(K)
    label_of = np.arange(K)
    # keep every cell's allocation between the steps
    track = exchange_moves > 0 or split_merge_moves > 0 or pattern_moves > 0
    allocation = np.zeros((n_cells if track else 0, K), dtype=np.int32)  # half the memory traffic of int64
    last_choice = np.zeros((n_cells if track else 0, small_cell), dtype=np.int64)
    order = np.empty(n_cells, dtype=np.int64)
    launch = np.empty(n_cells, dtype=np.int64)
    proposed = np.empty(n_cells, dtype=np.int64)
    target = np.empty(max(1, cell_counts.max()), dtype=np.int64)
    first_counts = np.zeros(L, dtype=np.int64)
    second_counts = np.zeros(L, dtype=np.int64)
    change = np.zeros(L, dtype=np.int64)
    touched = np.zeros(L, dtype=np.int64)
    seen = np.zeros(L, dtype=np.bool_)
    prefix = np.empty((p + 1, K))
    previous = np.empty(p, dtype=np.int64)
    n_k = np.zeros(K, dtype=np.int64)
    pattern_counts = np.zeros(K, dtype=np.int64)
    counts = np.zeros((K, L), dtype=np.int64)
    state = Allocations(allocation, counts, n_k, last_choice)
    work = MoveWork(change, touched, seen, order, launch, proposed, target, first_counts, second_counts)
    log_beta = np.empty(K)
    log_one_minus = np.empty(K)
    kept = 0
    theta_t = np.empty((L, K))  # theta transposed: a level's values over components are contiguous
    for it in range(burn + draws):
        for k in range(K):
            for l in range(L):
                theta_t[l, k] = theta[k, l] if power == 1.0 else theta[k, l] ** power
        n_k[:] = 0
        counts[:, :] = 0
        for k in range(K):
            prefix[0, k] = pi[k]
        # z | pi, theta, X: allocate each cell's records to components (eq. 1-2). Records of a cell are
        # exchangeable, so their allocation counts are one Multinomial(n_c, p(z = k | cell)) draw; only the
        # counts per (component, level) are kept, which is all the theta and stick updates need.
        # prefix[j] = pi * prod_{i<j} theta^(i)[x_ci]: consecutive cells (sorted) share leading values,
        # so only the products from the first differing variable on are recomputed.
        for j in range(p):
            previous[j] = -1
        # The counts of every variable but the last are summed over the cells of one pattern of the others
        # (consecutive when sorted) in pattern_counts, and added to counts when the pattern ends: for each
        # component a cell's draw gives records, three updates instead of p + 1.
        pattern_counts[:] = 0
        for c in range(n_cells + 1):
            if c == n_cells:
                for j in range(p - 1):  # the last pattern
                    for k in range(K):
                        counts[k, previous[j]] += pattern_counts[k]
                break
            n_c = cell_counts[c]
            first = p
            for j in range(p):
                if cell_index[c, j] != previous[j]:
                    first = j
                    break
            if first < p - 1 and c > 0:  # a new pattern of the variables but the last
                for j in range(p - 1):
                    for k in range(K):
                        counts[k, previous[j]] += pattern_counts[k]
                pattern_counts[:] = 0
            for j in range(first, p - 1):
                row = cell_index[c, j]
                previous[j] = row
                for k in range(K):
                    prefix[j + 1, k] = prefix[j, k] * theta_t[row, k]
            # the last variable's product (it changes with every cell) and the cumulative sums in one pass
            row = cell_index[c, p - 1]
            previous[p - 1] = row
            total = 0.0
            for k in range(K):
                prob[k] = prefix[p - 1, k] * theta_t[row, k]
                total += prob[k]
                cdf[k] = total
            if n_c > small_cell and guess[c, 0] < 0:  # no guess yet (the first iteration): the three largest
                _cumulate_top3(prob, prob, cdf, largest)
                n_first = n_largest
            elif n_c > small_cell:
                # the binomials first for the components this cell's draw gave most records last iteration (a
                # guess of its largest probabilities, far cheaper than finding them), in decreasing order of
                # their probability now; those with none now are left out
                n_first = 0
                for g in range(n_largest):
                    b = guess[c, g]
                    if b < 0:
                        break
                    b = relabel[b]
                    w = prob[b]
                    if not w > 0.0:
                        continue
                    h = n_first
                    while h > 0 and prob[largest[h - 1]] < w:
                        largest[h] = largest[h - 1]
                        h -= 1
                    largest[h] = b
                    n_first += 1
            if not (total > 1e-280 and total < np.inf):
                # Underflow with many variables: redo this cell in logs.
                top = -np.inf
                for k in range(K):
                    v = np.log(pi[k])
                    for j in range(p):
                        v += np.log(theta_t[cell_index[c, j], k])
                    log_w[k] = v
                    top = max(top, v)
                for k in range(K):
                    log_w[k] = np.exp(log_w[k] - top)
                _cumulate_top3(log_w, prob, cdf, largest)
                total = cdf[K - 1]
                n_first = n_largest
            if n_c <= small_cell:
                # A few records: one categorical draw each.
                if track:
                    for r in range(n_c):  # clear last iteration's entries of this cell (cheaper than K)
                        allocation[c, last_choice[c, r]] = 0
                for r in range(n_c):
                    u = rng.random() * total
                    # the first k with u < cdf[k]: the count of the cumulative sums at or below u (branch-free,
                    # vectorised), K - 1 if rounding puts u at the total
                    chosen = 0
                    for k in range(K):
                        chosen += 1 if cdf[k] <= u else 0
                    chosen = min(chosen, K - 1)
                    n_k[chosen] += 1
                    if track:
                        allocation[c, chosen] += 1
                        last_choice[c, r] = chosen
                    pattern_counts[chosen] += 1
                    counts[chosen, cell_index[c, p - 1]] += 1
                continue
            # A larger cell: one multinomial draw, sparse (the components that get records).
            if n_first == 0:  # no guess with mass now: the largest by a scan
                b = 0
                for k in range(1, K):
                    if prob[k] > prob[b]:
                        b = k
                largest[0] = b
                n_first = 1
            nnz = multinomial_cdf(rng, n_c, prob, cdf, largest, n_first, small_cell, drawn_k, drawn, removed)
            for g in range(n_largest):  # the guess for the next iteration: the first components drawn
                guess[c, g] = drawn_k[g] if g < nnz else -1
            if track:
                for k in range(K):
                    allocation[c, k] = 0
            for t in range(nnz):
                k = drawn_k[t]
                m = drawn[t]
                if track:
                    allocation[c, k] = m
                n_k[k] += m
                pattern_counts[k] += m
                counts[k, cell_index[c, p - 1]] += m
        for k in range(K):  # the guesses are in the current labels
            relabel[k] = k
            label_of[k] = k
        # Level-exchange moves (theta and the sticks integrated out; see level_exchange), right after the
        # allocations (the per-cell allocations are not kept up to date by the label swaps). Theta is stale
        # from here until its draw below: the label swaps carry it along without using it.
        for _ in range(exchange_moves if power == 1.0 else 0):
            # a level drawn in proportion to its records (a fixed choice, the same from either state)
            level = move_levels[_weighted_index(rng, move_cdf)]
            i, j = _component_pair(rng, K)
            if counts[i, level] == 0 and counts[j, level] == 0:
                continue
            group = level_cells[level_cell_start[level] : level_cell_start[level + 1]]
            level_exchange(rng, group, i, j, cells, priors, state, work, alpha)
        # Pattern-exchange moves: the same exchange for all records of one pattern (one combination of the
        # kept variables), so whole patterns move between components and the grouping of the patterns into
        # components can change without passing through splits and merges of large components.
        for _ in range(pattern_moves if power == 1.0 else 0):
            pattern = _weighted_index(rng, pattern_cdf)
            i, j = _component_pair(rng, K)
            group = pattern_cells[pattern_start[pattern] : pattern_start[pattern + 1]]
            level_exchange(rng, group, i, j, cells, priors, state, work, alpha)
        # Split-merge moves (sticks and theta integrated out; see split_merge): they open and close whole
        # components in one step, which the allocation step does only one record at a time.
        for _ in range(split_merge_moves if power == 1.0 else 0):
            split_merge(rng, cells, priors, state, work, alpha, launch_scans)
        # Label-swap moves (Papaspiliopoulos & Roberts 2008): relabel components j <-> l (allocations and
        # theta together) with pi integrated out; see moves.log_allocation_prob. Without them the stick order, and
        # with it alpha, mixes only as fast as large components change places, which they almost never do.
        for move in range(swap_moves):
            j = uniform_index(rng, K)
            if move % 2 == 0:
                l = uniform_index(rng, K - 1)
                if l >= j:
                    l += 1
            else:
                l = j + 1 if j < K - 1 else j - 1
            if n_k[j] == n_k[l]:
                continue
            log_ratio = swap_log_ratio(n_k, j, l, alpha, beta_a)
            if np.log(rng.random()) < log_ratio:
                n_k[j], n_k[l] = n_k[l], n_k[j]
                x, y = label_of[j], label_of[l]  # the guesses' labels follow the components
                relabel[x], relabel[y] = l, j
                label_of[j], label_of[l] = y, x
                for col in range(L):
                    counts[j, col], counts[l, col] = counts[l, col], counts[j, col]
                    theta[j, col], theta[l, col] = theta[l, col], theta[j, col]
        if alpha_mode == 0:
            # alpha | z with the sticks integrated out (slice sampling on log alpha), then beta | z, alpha
            # below: together an exact draw of (alpha, beta) | z, which mixes alpha about twice as well
            # as alpha | beta (measured: bench/dpmpm.py --configs collapsed,1 conditional,1).
            alpha = slice_log_alpha(rng, alpha, n_k, a_alpha, b_alpha, beta_a)
        # beta | z, alpha (eq. 4): Beta(a + n_k, alpha + sum_{l>k} n_l), drawn in logs as X / (X + Y) with
        # gamma X, Y: for small alpha, 1 - beta underflows and clipping it would bias alpha upwards.
        tail = 0
        for k in range(K - 1, -1, -1):
            if k < K - 1:
                log_x = _log_gamma_draw(rng, beta_a + n_k[k])
                log_y = _log_gamma_draw(rng, alpha + tail)
                top = max(log_x, log_y)
                norm = top + np.log(np.exp(log_x - top) + np.exp(log_y - top))
                log_beta[k] = log_x - norm
                log_one_minus[k] = log_y - norm
            tail += n_k[k]
        if alpha_mode == 1:
            # alpha | beta (eq. 4-5): Gamma(a_alpha + K - 1, rate b_alpha - sum_{k<K} log(1 - beta_k)).
            rate = b_alpha
            for k in range(K - 1):
                rate -= log_one_minus[k]
            alpha = rng.gamma(a_alpha + K - 1, 1.0 / rate)
        # pi by eq. (3), in logs.
        running = 0.0
        for k in range(K):
            if k < K - 1:
                pi[k] = max(np.exp(log_beta[k] + running), 1e-300)
                running += log_one_minus[k]
            else:
                pi[k] = max(np.exp(running), 1e-300)
        # theta_k^(j) | z, X (eq. 6): Dirichlet(a + counts) (a + power * counts under a power of the likelihood).
        for k in range(K):
            for j in range(p):
                s = 0.0
                for l in range(var_start[j], var_start[j + 1]):
                    g = _gamma(rng, concentration[k, l] + power * counts[k, l])
                    theta[k, l] = g
                    s += g
                for l in range(var_start[j], var_start[j + 1]):
                    theta[k, l] = max(theta[k, l] / s, 1e-300)
        if it >= burn and (it - burn) % thin == thin - 1 and kept < stored:
            alpha_out[kept] = alpha
            pi_out[kept] = pi
            theta_out[kept] = theta
            occ = 0
            for k in range(K):
                if n_k[k] > 0:
                    occ += 1
            occupied_out[kept] = occ
            kept += 1
        done[0] = it + 1
    return alpha_out, pi_out, theta_out, occupied_out


def run_gibbs(
    data: CategoricalData,
    hyperparameters: dict[str, Any],
    settings: GibbsSettings,
    seed: int,
    cores: int | None = None,
    chains: Sequence[int] | None = None,
) -> dict[str, np.ndarray]:
    """Run the blocked Gibbs sampler; arrays with leading ``(chain, draw)`` axes.

    Parameters
    ----------
    data
        Coded records and cells.
    hyperparameters
        From :func:`bayessdc.models.dpmpm.marginal.model_hyperparameters`.
    settings
        Iterations, chains and thinning.
    seed
        Seed of the run: chain ``c`` draws from ``bayessdc.synthesis.streams.rng(seed, "chain", c)``.
    cores
        Chains run at once in threads (default: as many as there are cores and chains).
    chains
        Which of the ``settings.chains`` chains to run (default: all), in this order. Chain ``c`` gives the
        same draws whether it runs alone or with the others, so chains can be fitted apart (for example on
        the workers of a dask cluster) and stacked.

    Returns
    -------
    dict
        ``alpha`` (chain, draw), ``pi`` (chain, draw, component), ``theta`` (chain, draw, component,
        flat level), ``occupied`` (chain, draw) and ``var_start`` (offsets of the variables on the flat
        level axis).
    """
    n_levels = data.n_levels
    var_start = np.concatenate([[0], np.cumsum(n_levels)]).astype(np.int64)
    cell_index = np.ascontiguousarray(data.cell_codes + var_start[:-1][None, :])
    concentration = np.ascontiguousarray(np.concatenate(hyperparameters["theta_concentration"], axis=1))
    chosen = list(range(settings.chains)) if chains is None else [int(c) for c in chains]
    if not chosen or any(not 0 <= c < settings.chains for c in chosen):
        raise ValueError(f"chains must be chosen from 0..{settings.chains - 1}, got {chains!r}")
    # cells grouped by their level of every synthesized variable, for the level-exchange moves
    move_levels = np.concatenate(
        [np.arange(var_start[j], var_start[j + 1]) for j in data.synthesize_index] or [np.zeros(0, np.int64)]
    ).astype(np.int64)
    flat = cell_index[:, data.synthesize_index]  # (C, J)
    owner = np.repeat(np.arange(len(cell_index)), flat.shape[1])
    order = np.argsort(flat.ravel(), kind="stable")
    level_cells = np.ascontiguousarray(owner[order]).astype(np.int64)
    level_cell_start = np.concatenate([[0], np.cumsum(np.bincount(flat.ravel(), minlength=int(var_start[-1])))])
    level_cell_start = level_cell_start.astype(np.int64)
    exchanges = settings.exchange_moves * hyperparameters["K"] if len(move_levels) else 0
    level_records = np.zeros(int(var_start[-1]))
    for j in data.synthesize_index:
        np.add.at(level_records, cell_index[:, j], data.cell_counts)
    # levels proposed in proportion to their records: the large levels are the slowly mixing ones
    move_cdf = np.cumsum(level_records[move_levels]) if len(move_levels) else np.ones(1)
    # cells grouped by pattern (their values of the kept variables), for the pattern-exchange moves
    if len(data.keep_index):
        _, pattern_of = np.unique(data.cell_codes[:, data.keep_index], axis=0, return_inverse=True)
        pattern_of = pattern_of.ravel()
    else:
        pattern_of = np.zeros(len(cell_index), dtype=np.int64)
    pattern_cells = np.argsort(pattern_of, kind="stable").astype(np.int64)
    pattern_start = np.concatenate([[0], np.cumsum(np.bincount(pattern_of))]).astype(np.int64)
    pattern_cdf = np.cumsum(np.bincount(pattern_of, weights=data.cell_counts)).astype(np.float64)
    pattern_moves = settings.pattern_moves * hyperparameters["K"] if len(data.keep_index) else 0

    done = np.zeros((settings.chains, 1), dtype=np.int64)  # iterations finished by each chain

    # the kernel's records, built here only
    cells = CellData(
        index=cell_index,
        counts=np.ascontiguousarray(data.cell_counts, dtype=np.int64),
        start=np.concatenate([[0], np.cumsum(data.cell_counts)]).astype(np.int64),
        var_start=var_start,
    )
    total_concentration = np.zeros((concentration.shape[0], len(n_levels)))
    for j in range(len(n_levels)):  # summed level by level, in order (as the kernel always has)
        for level in range(var_start[j], var_start[j + 1]):
            total_concentration[:, j] += concentration[:, level]
    priors = Priors(
        concentration=concentration,
        total_concentration=total_concentration,
        a_alpha=float(hyperparameters["a_alpha"]),
        b_alpha=float(hyperparameters["b_alpha"]),
        beta_a=float(hyperparameters["beta_a"]),
    )
    schedule = Schedule(burn=int(settings.burn), draws=int(settings.draws), thin=int(settings.thin))
    moves = Moves(
        label_swaps=int(hyperparameters["K"]) if settings.label_swaps else 0,
        alpha_mode=ALPHA_UPDATES.index(settings.alpha_update),
        level_exchanges=int(exchanges),
        pattern_exchanges=int(pattern_moves),
        split_merges=int(settings.split_merge_moves),
        launch_scans=int(settings.launch_scans),
        small_cell=SMALL_CELL,
        power=float(settings.likelihood_power),
    )
    proposals = Proposals(
        level_cells=level_cells,
        level_cell_start=level_cell_start,
        move_levels=move_levels,
        move_cdf=np.asarray(move_cdf, dtype=np.float64),
        pattern_cells=pattern_cells,
        pattern_start=pattern_start,
        pattern_cdf=pattern_cdf,
    )

    def one_chain(chain: int) -> tuple[np.ndarray, ...]:
        rng = streams.rng(seed, Stream.CHAIN, chain)
        return _gibbs_chain(rng, cells, priors, schedule, moves, proposals, done[chain])

    # Chains run in threads (the compiled sweep releases the GIL; each chain draws from its own generator, so the
    # draws do not depend on the number of threads).
    workers = max(1, min(len(chosen), cores if cores is not None else (os.cpu_count() or 1)))
    iterations = settings.burn + settings.draws
    with progress.bar(len(chosen) * iterations, f"Gibbs, {len(chosen)} chain(s)") as bar:
        if bar.shown:  # the chains run in threads while this one reads their counters into the bar
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(one_chain, c) for c in chosen]
                while wait(futures, timeout=0.25).not_done:
                    bar.update(completed=int(done.sum()))
                bar.update(completed=int(done.sum()))
                runs = [future.result() for future in futures]
        elif workers == 1:
            runs = [one_chain(c) for c in chosen]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                runs = list(pool.map(one_chain, chosen))
    out = {key: [run[i] for run in runs] for i, key in enumerate(("alpha", "pi", "theta", "occupied"))}
    result = {key: np.stack(values) for key, values in out.items()}
    result["var_start"] = var_start
    return result
