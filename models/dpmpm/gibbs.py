"""The DPMPM's blocked Gibbs sampler on the cell counts, compiled with numba: the sampler behind ``fit``.

It samples the posterior of eq. (1)-(6) in the form of :mod:`bayessdc.models.dpmpm.marginal` (records
aggregated into cells), with the priors read back from the declared model
(:func:`bayessdc.models.dpmpm.marginal.model_hyperparameters`). The blocked Gibbs sampler of Ishwaran & James
(2001) allocates the ``n_cell`` records of a cell to components with one multinomial draw: records of one
cell are exchangeable, so the multinomial draw of the allocation counts is the same conditional as drawing
each record's ``z_i`` separately. The theta and stick updates need only the counts per (component, variable,
level), sums over cells of those allocation counts. The alternative, NUTS on the marginalised PyMC model,
was measured on the CE-like data (``bench/dpmpm.py --nuts``) and was two to three orders of magnitude
slower in ESS per second (:data:`SAMPLER_DECISION`).

Cost per iteration. The multinomial is drawn by conditional binomials, largest component first, until a few
records are left, then one categorical draw for each of those (:func:`bayessdc.models.exact_draws.multinomial`);
the binomials are exact and O(1) in ``n`` (:func:`bayessdc.models.exact_draws.binomial`: inversion or BTPE;
numba's own ``np.random.binomial`` is an inversion costing O(n p), which made the allocation step grow with the
records). Nothing in an iteration grows with ``n`` then, only with the number of occupied cells and how many
components share each cell's records: on the CE-like simulator 1,993 cells at n = 6,208 (mostly 1-3 records,
one draw each) against 4,919 at n = 1,000,000 (about 200 records, 2.6 binomials and 5 single draws each), and
all 40 components occupied at n = 1,000,000. Figures in ``bench/dpmpm.py``.

Where the time goes at n = 1,000,000 (``bench/dpmpm.py``; per iteration, each step timed apart in a scratch copy
of this kernel): the allocation step 3.2 ms of 3.65 (theta 0.33, level exchanges 0.09, label swaps 0.025, alpha and
sticks 0.02); at n = 6,208 0.22 ms of 0.46. Within the allocation at 1,000,000 (4,373 cells above
``SMALL_CELL``, 2.5 binomials and 5 single trials each): about 0.85 ms in the binomials themselves (75 ns each,
a third of it in the exp/log1p of the inversion), 0.4-0.6 ms in the scans for the next largest component and
the dense bookkeeping over K, about 1 ms in the single trials (30-40 ns each) and 0.5 ms in the rest (products,
counts). Now the pass that computes the probabilities also keeps their cumulative sums and the three largest,
and the cell's draw is :func:`bayessdc.models.exact_draws.multinomial_cdf` (sparse: only the components that get
records are touched; no scan for the first three binomials; the single trials located in the cumulative sums
without a pass over K). Same process, before / after, 2,000 iterations at 1,000,000 and 4,000 at 6,208, load
average 4.4-4.7 on 2 cores (another session running; ``/tmp`` scratch script timing ``run_gibbs``): 3.69-3.73
/ 3.31-3.40 s per 1,000 iterations at 1,000,000; 0.44-0.45 / 0.41-0.42 at 6,208. ``bench/dpmpm.py
--reference --reference-iterations 4000 --collapsed-sweeps 0`` (load 4.9): NPBayesImputeCat 121 s per 1,000,
this sampler 3.25 s, ratio 37 (target 50, about 2.4 s per 1,000, not met). The random stream of the allocation
of cells above ``SMALL_CELL`` records changed with this (same seed, same chain; a different chain than before).

Profile of 2026-11-27 at n = 1,000,000 (one chain, cores=1; the kernel's steps timed with the CPU's cycle counter
in a scratch copy, 1,000 iterations, about 2.4 ms each, load 4-5 on 2 cores): the allocation step 88%, theta 5%,
level exchanges 2.5%, label swaps, alpha and sticks about 1%. Within the allocation, per iteration: the binomials
0.92 ms (9,900 by inversion at about 80 ns, 2,000 by BTPE at about 115 ns; 2.7 per cell above ``SMALL_CELL``),
the single trials 0.36 ms (22,300, about 16 ns each), the cumulative sums and three largest 0.36 ms (80 ns a
cell; a branch-free version was 11% faster in isolation, not taken), the cumulative sums less the drawn
components 0.2 ms, the products and counts 0.2 ms. Before it, numba's reference counting of the draws' array
arguments took 14% of the time (now off: :mod:`bayessdc.models.exact_draws`). The rest of the levers measured
and not taken are listed in ``bench/dpmpm.py``.

Speed-ups of 2026-12-01 (issue 35, item 2; all draws exact, each kernel tested against its distribution): the
inversion binomial's start by repeated squaring; each larger cell's binomials first for the components its draw
gave records in the previous iteration (``guess``, relabelled through the label swaps), sorted by their
probability now, instead of finding the three largest in the pass of the cumulative sums (that search was 57 of
the pass's 79 ns a cell; without following the label swaps the stale guesses made the chain slower); the single
trials of large cells stepped over the drawn components' intervals, those of small cells located by a branch-free
count; ziggurat exponentials for theta's shape-1 gammas and the sticks' ``log U``; the counts of all variables but
the last summed per pattern; the tracked allocations int32; the last variable's product fused with the cumulative
sums. At n = 1,000,000: 2.44-2.49 s of CPU per 1,000 iterations before, about 2.0 after (alternating runs, load
2-4); ``bench/dpmpm.py`` has the side-by-side figures and the levers not taken.

Random numbers: each chain draws from its own ``numpy.random.Generator`` (``bayessdc.synthesis.streams.rng(seed,
"chain", c)``), passed into the compiled sweep and every move, instead of numba's hidden per-thread state seeded
by ``np.random.seed``. Measured first (2026-11-27; ``/tmp`` scratch script timing ``run_gibbs``, one chain, cores=1,
``simulate_ce_like(n, seed=1)``, county synthesized, K = 40; the old and the new code run alternately, same
invocation; load 5-6 on 2 cores, another session's tests running): at n = 100,000, 5 x 2,000 iterations per run,
hidden state 1.19-1.26 s per 1,000 iterations, generator 1.05-1.09 (12% faster: numpy's gamma draws of theta
beat numba's legacy ones); at n = 1,000,000, 3 x 1,000, 2.64-2.80 against 2.53-2.61 in two pairs of runs at
load 3 (4% faster), within the noise in two pairs at load 5. Bounded integers come from
:func:`bayessdc.models.exact_draws.uniform_index` (numba's ``Generator.integers`` allocates an array per draw: 28%
slower in the predictive kernel).

Three additions to the textbook sweep, all exact (:mod:`bayessdc.models.dpmpm.moves`): (i) ``alpha`` is drawn
given the allocations with the sticks integrated out (slice sampling), then the sticks given ``alpha``, a joint
draw of ``(alpha, beta) | z`` (about twice the ESS of alpha of the textbook ``Gamma(a + K - 1, b - sum log(1 -
beta_k))`` given the sticks, which stays selectable: ``GibbsSettings(alpha_update="conditional")``);
(ii) label-swap Metropolis moves (Papaspiliopoulos & Roberts 2008) let large components move to the front of
the stick order. Without them ``alpha`` and the number of occupied components mix very slowly, and a chain
started with every component occupied stays near 30-40 occupied components on the CE-like data for thousands
of iterations where the posterior puts 13-22; (iii) level-exchange Metropolis moves: all records with one level
of a synthesized variable swap two components, sticks and theta integrated out. The allocation step moves
records one cell at a time, so a large level whose records can sit in a component of their own or share one
(for example one of the largest counties) switched between the two configurations only rarely: its marginal
probability mixed at 2-12 ESS/s in two of six chains on the CE-like data. The exchange moves it in one step
(no chain stuck in six). Two further exact moves are selectable, off by default because they did not help on
the CE-like data: pattern exchanges (the same exchange for all records of one pattern of the kept variables)
and split-merge moves (Jain & Neal 2004 with a sequentially allocated launch). All moves are validated against
the exact posterior of small problems by enumeration in the tests. The sticks are drawn in logs: clipping
``1 - beta`` away from 0 biased ``alpha`` upwards (caught by the flat-likelihood prior check in the tests).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from typing import Any

import numba
import numpy as np

import bayessdc.synthesis.streams as streams
from bayessdc import progress

from ..categorical import CategoricalData
from ..exact_draws import multinomial_cdf, uniform_index
from .moves import level_exchange, slice_log_alpha, split_merge, swap_log_ratio

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
    cell_index: np.ndarray,  # (C, p) positions in the flat level axis
    cell_counts: np.ndarray,  # (C,)
    var_start: np.ndarray,  # (p + 1,) start of every variable's levels on the flat axis
    concentration: np.ndarray,  # (K, L) Dirichlet parameters, flat level axis
    a_alpha: float,
    b_alpha: float,
    beta_a: float,
    burn: int,
    draws: int,
    thin: int,
    rng: np.random.Generator,  # the chain's generator (stream (seed, "chain", c))
    swap_moves: int,
    small_cell: int,
    alpha_mode: int,
    level_cells: np.ndarray,  # cells grouped by their level of the moved variables (flat level axis)
    level_cell_start: np.ndarray,  # (L + 1,) cells of flat level l: level_cells[start[l]:start[l + 1]]
    move_levels: np.ndarray,  # flat levels whose records the exchange moves act on
    move_cdf: np.ndarray,  # cumulative proposal probabilities of those levels
    pattern_cells: np.ndarray,  # cells grouped by their pattern (values of the kept variables)
    pattern_start: np.ndarray,  # (patterns + 1,) cells of pattern g: pattern_cells[start[g]:start[g + 1]]
    pattern_cdf: np.ndarray,  # cumulative proposal probabilities of the patterns (their records)
    pattern_moves: int,
    exchange_moves: int,
    split_merge_moves: int,
    launch_scans: int,
    power: float,  # the likelihood's power (1: the posterior)
    done: np.ndarray,  # (1,) iterations finished, written as the chain runs (read by the progress bar)
):
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
    cell_start = np.zeros(n_cells + 1, dtype=np.int64)
    for c in range(n_cells):
        cell_start[c + 1] = cell_start[c] + cell_counts[c]
    order = np.empty(n_cells, dtype=np.int64)
    launch = np.empty(n_cells, dtype=np.int64)
    proposed = np.empty(n_cells, dtype=np.int64)
    target = np.empty(max(1, cell_counts.max()), dtype=np.int64)
    first_counts = np.zeros(L, dtype=np.int64)
    second_counts = np.zeros(L, dtype=np.int64)
    change = np.zeros(L, dtype=np.int64)
    touched = np.zeros(L, dtype=np.int64)
    seen = np.zeros(L, dtype=np.bool_)
    total_concentration = np.zeros((K, p))
    for k in range(K):
        for j in range(p):
            for l in range(var_start[j], var_start[j + 1]):
                total_concentration[k, j] += concentration[k, l]
    prefix = np.empty((p + 1, K))
    previous = np.empty(p, dtype=np.int64)
    n_k = np.zeros(K, dtype=np.int64)
    pattern_counts = np.zeros(K, dtype=np.int64)
    counts = np.zeros((K, L), dtype=np.int64)
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
            cells = level_cells[level_cell_start[level] : level_cell_start[level + 1]]
            level_exchange(
                rng, level, i, j, allocation, cells, cell_index, concentration, total_concentration,
                counts, n_k, alpha, beta_a, change, touched, seen, cell_counts, last_choice,
            )  # fmt: skip
        # Pattern-exchange moves: the same exchange for all records of one pattern (one combination of the
        # kept variables), so whole patterns move between components and the grouping of the patterns into
        # components can change without passing through splits and merges of large components.
        for _ in range(pattern_moves if power == 1.0 else 0):
            pattern = _weighted_index(rng, pattern_cdf)
            i, j = _component_pair(rng, K)
            cells = pattern_cells[pattern_start[pattern] : pattern_start[pattern + 1]]
            level_exchange(
                rng, -1, i, j, allocation, cells, cell_index, concentration, total_concentration,
                counts, n_k, alpha, beta_a, change, touched, seen, cell_counts, last_choice,
            )  # fmt: skip
        # Split-merge moves (sticks and theta integrated out; see split_merge): they open and close whole
        # components in one step, which the allocation step does only one record at a time.
        for _ in range(split_merge_moves if power == 1.0 else 0):
            split_merge(
                rng, allocation, cell_index, cell_counts, cell_start, concentration, total_concentration, counts, n_k,
                alpha, beta_a, last_choice, launch_scans, order, launch, proposed, target, first_counts,
                second_counts,
            )  # fmt: skip
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

    def one_chain(chain: int) -> tuple[np.ndarray, ...]:
        return _gibbs_chain(
            cell_index,
            data.cell_counts,
            var_start,
            concentration,
            float(hyperparameters["a_alpha"]),
            float(hyperparameters["b_alpha"]),
            float(hyperparameters["beta_a"]),
            settings.burn,
            settings.draws,
            settings.thin,
            streams.rng(seed, "chain", chain),
            hyperparameters["K"] if settings.label_swaps else 0,
            SMALL_CELL,
            ALPHA_UPDATES.index(settings.alpha_update),
            level_cells,
            level_cell_start,
            move_levels,
            move_cdf,
            pattern_cells,
            pattern_start,
            pattern_cdf,
            pattern_moves,
            exchanges,
            settings.split_merge_moves,
            settings.launch_scans,
            float(settings.likelihood_power),
            done[chain],
        )

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
