"""The records the DPMPM's compiled kernels take, grouped by meaning (numba ``NamedTuple`` arguments).

A kernel reads its inputs by field name (``cells.counts``, ``priors.beta_a``), never by position, so two
arguments of the same type cannot be swapped silently. The read-only records (:class:`CellData`,
:class:`Priors`, :class:`Schedule`, :class:`Moves`, :class:`Proposals`) are built in one place,
:func:`bayessdc.models.dpmpm.gibbs.run_gibbs`; the chain's state (:class:`Allocations`) and the moves' scratch
(:class:`MoveWork`) are made inside the chain's kernel and updated in place by the moves of
:mod:`bayessdc.models.dpmpm.moves`.

Notation as in Hu & Savitsky, Section 2.1 (eq. 1-6) and :mod:`bayessdc.models.dpmpm.marginal`: ``C`` cells
(distinct records), ``p`` variables, ``L`` levels of all variables on one flat axis, ``K`` components.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Allocations", "CellData", "MoveWork", "Moves", "Priors", "Proposals", "Schedule"]


class CellData(NamedTuple):
    """The records aggregated into cells: all the likelihood of eq. (1)-(2) sees."""

    #: ``(C, p)`` int64: every cell's level of every variable, as positions on the flat level axis.
    index: np.ndarray
    #: ``(C,)`` int64: the records ``n_c`` of every cell.
    counts: np.ndarray
    #: ``(C + 1,)`` int64: the first record of every cell on a ``0 .. n - 1`` record axis.
    start: np.ndarray
    #: ``(p + 1,)`` int64: where every variable's levels start on the flat level axis.
    var_start: np.ndarray


class Priors(NamedTuple):
    """The priors of eq. (4)-(6), read back from the declared model
    (:func:`bayessdc.models.dpmpm.marginal.model_hyperparameters`)."""

    #: ``(K, L)``: the Dirichlet parameters ``a_kl`` of theta (eq. 6) on the flat level axis.
    concentration: np.ndarray
    #: ``(K, p)``: their sums over every variable's levels.
    total_concentration: np.ndarray
    #: Shape of alpha's Gamma prior (eq. 5).
    a_alpha: float
    #: Rate of alpha's Gamma prior (eq. 5).
    b_alpha: float
    #: First parameter of the sticks' ``Beta(beta_a, alpha)`` (eq. 4; 1 in the paper).
    beta_a: float


class Schedule(NamedTuple):
    """Iterations of one chain."""

    #: Burn-in iterations.
    burn: int
    #: Iterations after burn-in.
    draws: int
    #: Keep every ``thin``-th of them.
    thin: int


class Moves(NamedTuple):
    """What one iteration does beyond the allocation step (:class:`bayessdc.models.dpmpm.gibbs.GibbsSettings`)."""

    #: Label-swap moves per iteration (0: none).
    label_swaps: int
    #: 0: alpha given the allocations, sticks integrated out; 1: alpha given the sticks
    #: (:data:`bayessdc.models.dpmpm.gibbs.ALPHA_UPDATES`).
    alpha_mode: int
    #: Level-exchange moves per iteration.
    level_exchanges: int
    #: Pattern-exchange moves per iteration.
    pattern_exchanges: int
    #: Split-merge moves per iteration.
    split_merges: int
    #: Restricted Gibbs scans of a split-merge move's launch state.
    launch_scans: int
    #: Cells with at most this many records are allocated one record at a time
    #: (:data:`bayessdc.models.dpmpm.gibbs.SMALL_CELL`).
    small_cell: int
    #: The likelihood's power (1: the posterior).
    power: float


class Proposals(NamedTuple):
    """What the exchange moves propose from: the levels and patterns, and the cells holding each."""

    #: Cells grouped by their level of the moved variables (flat level axis).
    level_cells: np.ndarray
    #: ``(L + 1,)``: the cells of flat level ``l`` are ``level_cells[level_cell_start[l]:level_cell_start[l + 1]]``.
    level_cell_start: np.ndarray
    #: Flat levels whose records the level exchanges act on.
    move_levels: np.ndarray
    #: Cumulative proposal probabilities of those levels (in proportion to their records).
    move_cdf: np.ndarray
    #: Cells grouped by their pattern (values of the kept variables).
    pattern_cells: np.ndarray
    #: ``(patterns + 1,)``: the cells of pattern ``g`` are ``pattern_cells[pattern_start[g]:pattern_start[g + 1]]``.
    pattern_start: np.ndarray
    #: Cumulative proposal probabilities of the patterns (in proportion to their records).
    pattern_cdf: np.ndarray


class Allocations(NamedTuple):
    """The chain's allocations ``z`` (eq. 2) as counts, updated in place by the moves."""

    #: ``(C, K)`` int32: the records of every cell in every component.
    allocation: np.ndarray
    #: ``(K, L)`` int64: the records of every component with every level.
    counts: np.ndarray
    #: ``(K,)`` int64: the records of every component.
    n_k: np.ndarray
    #: ``(C, SMALL_CELL)`` int64: the component of every record of the small cells.
    last_choice: np.ndarray


class MoveWork(NamedTuple):
    """Scratch arrays of the exchange and split-merge moves, made once per chain."""

    #: ``(L,)`` int64, zero on entry and on exit: the change of every level's counts in an exchange.
    change: np.ndarray
    #: ``(L,)`` int64: the levels an exchange touches.
    touched: np.ndarray
    #: ``(L,)`` bool, False on entry and on exit.
    seen: np.ndarray
    #: ``(C,)`` int64: the cells of a split-merge move, in its random order.
    order: np.ndarray
    #: ``(C,)`` int64: records of the ordered cells in the first component (launch state).
    launch: np.ndarray
    #: ``(C,)`` int64: the same in the proposed split.
    proposed: np.ndarray
    #: ``(max n_c,)`` int64: one cell's per-record labels (1: first component).
    target: np.ndarray
    #: ``(L,)`` int64: level counts of the first component.
    first_counts: np.ndarray
    #: ``(L,)`` int64: level counts of the second component.
    second_counts: np.ndarray
