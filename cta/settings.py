"""The settings of an adjustment: the problem solved (:class:`AdjustmentSettings`) and the solver that solves it
(:class:`SolverSettings`), taken by :func:`bayessdc.cta.adjust_table` and :func:`bayessdc.adjust`.

Both are frozen and checked when made: a bad choice is refused with a ``ValueError`` naming the field, before
anything is built or solved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_ADJUSTMENT",
    "DEFAULT_CAPACITY",
    "DEFAULT_SOLVER",
    "METHODS",
    "OBJECTIVES",
    "AdjustmentSettings",
    "SolverSettings",
    "check_settings",
]

OBJECTIVES = ("l1", "relative", "weighted", "variance", "compromise", "max_l")
METHODS = ("milp", "heuristic")

#: Default capacity of a non-sensitive cell, as a fraction of its value.
DEFAULT_CAPACITY = 0.2


@dataclass(frozen=True)
class AdjustmentSettings:
    """The adjustment problem: what is minimised, how the directions are chosen, how far cells may move.

    Parameters
    ----------
    objective
        ``"l1"`` (minimise ``sum |y_i|``), ``"relative"``, ``"weighted"`` (with costs), ``"variance"``,
        ``"compromise"`` or ``"max_l"``; see :mod:`bayessdc.cta.problem`.
    method
        ``"milp"`` lets the solver choose every direction (Cox's MILP); ``"heuristic"`` fixes them with
        :func:`~bayessdc.cta.heuristic.balanced_directions` and solves an LP (an integer program for counts).
    capacity
        Capacity of the non-sensitive cells: a fraction of each cell's value, or absolute capacities, one per
        cell (kept as a tuple). A table's ``capacity`` column, where given, takes precedence.
    widen
        Upper bound factor ``q_i = widen * p_i``, at least 1; by default 1.5 with mean or L constraints or a
        statistical objective, else 1.
    preserve_mean
        Keep the net adjustment of the sensitive cells at zero.
    zero_l
        Constrain ``L(y) = 0``.
    integer
        Integer adjustments; by default those of a count table are, those of a magnitude table are not.
    tie_break
        For the statistical objectives, a second solve minimising ``sum |y|`` at the optimum.
    strengthen
        Add valid inequalities that tighten the MILP (see :mod:`bayessdc.cta.problem`); they never cut off a
        feasible adjustment.

    Raises
    ------
    ValueError
        An objective or method not among the choices, a negative capacity or a widening below 1.
    """

    objective: str = "l1"
    method: str = "milp"
    capacity: float | Sequence[float] = DEFAULT_CAPACITY
    widen: float | None = None
    preserve_mean: bool = False
    zero_l: bool = False
    integer: bool | None = None
    tie_break: bool = True
    strengthen: bool = True

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, not {self.objective!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, not {self.method!r}")
        if np.isscalar(self.capacity):
            if self.capacity < 0:
                raise ValueError("capacity must be >= 0")
        else:  # per-cell capacities: held as a tuple, so that the settings stay immutable and comparable
            object.__setattr__(self, "capacity", tuple(np.asarray(self.capacity, dtype=float).tolist()))
        if self.widen is not None and self.widen < 1:
            raise ValueError("widen must be >= 1 (q_i >= p_i)")


@dataclass(frozen=True)
class SolverSettings:
    """The solver of an adjustment and its limits.

    Parameters
    ----------
    solver
        Any cvxpy solver that handles (mixed-integer) linear programs.
    time_limit
        Seconds the solver may take for each solve (HiGHS's ``time_limit``); no limit by default.
    mip_gap
        Relative MIP gap at which the solver stops (HiGHS's ``mip_rel_gap``); the solver's own by default.
    solver_options
        Further options passed to the solver through cvxpy (e.g. HiGHS option names).
    verbose
        Show the solver's log.

    Raises
    ------
    ValueError
        A negative time limit or MIP gap.
    """

    solver: str = "HIGHS"
    time_limit: float | None = None
    mip_gap: float | None = None
    solver_options: dict | None = None
    verbose: bool = False

    def __post_init__(self) -> None:
        for name in ("time_limit", "mip_gap"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"{name} must be a number >= 0, not {value!r}")


#: The settings a function takes when given none (frozen: one instance serves every call).
DEFAULT_ADJUSTMENT = AdjustmentSettings()
DEFAULT_SOLVER = SolverSettings()


def check_settings(settings: object, solver: object) -> None:
    """Refuse settings of another type (``solver="HIGHS"`` where a :class:`SolverSettings` is meant) with a
    ``TypeError`` naming the parameter, before anything is built or solved."""
    for name, value, expected in (("settings", settings, AdjustmentSettings), ("solver", solver, SolverSettings)):
        if not isinstance(value, expected):
            raise TypeError(f"{name}= takes {expected.__name__}(...), not {type(value).__name__} {value!r}")
