"""The optimisation problems of controlled tabular adjustment (Cox 2000; Cox 2003), solved with cvxpy.

Every cell ``i`` gets an adjustment ``y_i = y_i^+ - y_i^-`` with ``T y = 0`` (the table stays additive) and
``a_i + y_i >= 0``. A sensitive cell moves up by ``y_i^+`` in ``[p_i I_i, q_i I_i]`` or down by ``y_i^-`` in
``[p_i (1 - I_i), q_i (1 - I_i)]`` with ``I_i`` binary (the MILP); with the directions fixed beforehand
(``method="heuristic"`` or given directions) the problem is a linear program. Other cells move at most their
capacity ``e_i``. Objectives:

``l1``
    minimise ``sum |y_i|`` (all cells, totals included);
``relative``
    minimise ``sum |y_i| / max(a_i, 1)``;
``weighted``
    minimise ``sum c_i |y_i|`` with user costs;
``compromise``
    minimise ``|L(y)|`` where ``L(y) = Cov(a, y)/Var(a)`` over the statistics cells (by default the sensitive
    cells): this keeps the regression slope of adjusted on original at ``1 + L``, the correlation and the
    variance (Cox's compromise solution);
``variance``
    minimise ``|2 L(y) + Var(y)/Var(a)|``, the relative change of the variance, with ``Var(y)`` replaced by
    its secant over each cell's bounds (exact at the bounds, an upper bound between);
``max_l``
    maximise ``L(y)`` (Cox's "max L" column, for studies).

The statistical objectives are solved lexicographically: after the optimum is found, a second solve keeps it
(to a relative tolerance of ``1e-6``) and minimises ``sum |y_i|`` so that no cell moves needlessly.
``zero_l=True``
adds the constraint ``L(y) = 0``; ``preserve_mean=True`` adds ``sum_{sensitive} y_i = 0``; ``mean_subsets``
adds the same for any given sets of cells. These need room, so by default the bounds are widened to
``q_i = 1.5 p_i`` when any of them is used (``q_i = p_i`` otherwise).

The objective, the method, the capacity, the widening and these constraints are fields of
:class:`~bayessdc.cta.settings.AdjustmentSettings`, the solver and its limits those of
:class:`~bayessdc.cta.settings.SolverSettings`; :func:`adjust_table` takes both, and what names cells
(``mean_subsets``, the statistics cells, fixed cells, directions, costs) as its own parameters.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .heuristic import balanced_directions
from .rules import Protection, protection_from_table
from .settings import DEFAULT_ADJUSTMENT, DEFAULT_SOLVER, AdjustmentSettings, SolverSettings, check_settings
from .table import Table

STATISTICAL_OBJECTIVES = ("variance", "compromise", "max_l")

#: Default widening q_i = WIDEN * p_i when mean or L constraints or statistical objectives are used.
DEFAULT_WIDEN = 1.5
_TIE_TOLERANCE = 1e-6


#: Rounds of direction repair when heuristic directions make the LP infeasible.
HEURISTIC_REPAIRS = 10


class _Infeasible(Exception):
    """Raised inside the solve when the solver reports infeasibility."""


class InfeasibleError(ValueError):
    """The adjustment problem has no solution; the message says which cells and what to relax.

    Attributes
    ----------
    unprotectable : list of dict
        The sensitive cells that cannot be protected (cell, required, achievable, totals), possibly empty
        when the statistical constraints are the cause.
    """

    def __init__(self, message: str, unprotectable: list[dict] | None = None):
        super().__init__(message)
        self.unprotectable = unprotectable or []


@dataclass
class Adjustment:
    """An adjusted table and how it was obtained.

    Attributes
    ----------
    table : Table
    protection : Protection
    adjustment : numpy.ndarray
        ``y``, the change of every cell (totals included).
    directions : numpy.ndarray
        +1 / -1 for sensitive cells moved up / down, 0 for the others.
    statistics_cells : numpy.ndarray
        Boolean mask of the cells over which L(y) and the mean were taken.
    objective, method, solver, status : str
    optimality_gap : float or None
        Relative MIP gap reported by the solver (0 for an LP solved to optimality).
    objective_value : float
    solve_seconds : float
        Wall time of building and solving (all stages).
    settings : dict
        The options used (capacity, widen, preserve_mean, ...).
    """

    table: Table
    protection: Protection
    adjustment: np.ndarray
    directions: np.ndarray
    statistics_cells: np.ndarray
    objective: str
    method: str
    solver: str
    status: str
    optimality_gap: float | None
    objective_value: float
    solve_seconds: float
    settings: dict = field(default_factory=dict)

    @property
    def original(self) -> np.ndarray:
        """The original cell values."""
        return self.table.values

    @property
    def adjusted(self) -> np.ndarray:
        """The adjusted cell values."""
        return self.table.values + self.adjustment

    @property
    def sensitive(self) -> np.ndarray:
        """Boolean mask of the sensitive cells."""
        return self.protection.sensitive

    @property
    def required_move(self) -> np.ndarray:
        """The protection that applies in the chosen direction (0 for non-sensitive cells)."""
        return np.where(self.directions > 0, self.protection.upper,
                        np.where(self.directions < 0, self.protection.lower, 0.0))

    def to_frame(self) -> pd.DataFrame:
        """Return every cell and total in long form.

        Columns: the dimension columns, ``original``, ``adjusted``, ``adjustment``, ``sensitive``,
        ``protection`` (the required move in the chosen direction).
        """
        frame = self.table.cells[self.table.label_columns].copy()
        frame["original"] = self.original
        frame["adjusted"] = self.adjusted
        frame["adjustment"] = self.adjustment
        frame["sensitive"] = self.sensitive
        frame["protection"] = self.required_move
        return frame


@dataclass
class _Bounds:
    lb_up: np.ndarray
    ub_up: np.ndarray
    lb_down: np.ndarray
    ub_down: np.ndarray
    free: np.ndarray  # sensitive cells whose direction the MILP chooses
    p_up: np.ndarray
    q_up: np.ndarray
    p_down: np.ndarray
    q_down: np.ndarray
    directions: np.ndarray
    capacity: np.ndarray


def _capacity(table: Table, capacity: float | np.ndarray | Sequence[float]) -> np.ndarray:
    values = table.values
    if np.isscalar(capacity):
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        result = float(capacity) * np.abs(values)
    else:
        result = np.asarray(capacity, dtype=float)
        if result.shape != values.shape:
            raise ValueError(f"capacity needs one value per cell ({table.n_cells})")
    if "capacity" in table.cells:
        given = table.cells["capacity"].to_numpy(dtype=float)
        result = np.where(np.isnan(given), result, given)
    if np.isnan(result).any() or (result < 0).any():
        raise ValueError("capacities must be non-negative numbers")
    return result


def _bounds(
    table: Table,
    protection: Protection,
    capacity: np.ndarray,
    widen: float,
    integer: bool,
    fixed: np.ndarray,
    directions: np.ndarray | None,
) -> _Bounds:
    a = table.values
    sensitive = protection.sensitive
    p_up, p_down = protection.upper.copy(), protection.lower.copy()
    q_up = widen * p_up
    floor_at_zero = a >= 0
    q_down = np.where(floor_at_zero, np.minimum(widen * p_down, np.maximum(a, 0)), widen * p_down)
    if integer:
        p_up, p_down = np.ceil(p_up - 1e-9), np.ceil(p_down - 1e-9)
        q_up, q_down = np.floor(q_up + 1e-9), np.floor(q_down + 1e-9)
        capacity = np.floor(capacity + 1e-9)
    can_down = ~sensitive | (p_down <= q_down)
    can_up = ~sensitive | (p_up <= q_up)
    if table.kind == "count":
        too_large = np.flatnonzero(sensitive & (protection.lower > a))
        if len(too_large):
            named = "; ".join(
                f"{table.describe_cell(i)} (value {a[i]:.12g}, protection {protection.lower[i]:.12g})"
                for i in too_large[:10]
            )
            raise ValueError(f"protection larger than the cell in a count table: {named}")
    stuck = np.flatnonzero(sensitive & ~can_down & ~can_up)
    if len(stuck):
        raise ValueError(
            "sensitive cells that can move neither up nor down: "
            + "; ".join(table.describe_cell(i) for i in stuck[:10])
        )
    blocked = np.flatnonzero(sensitive & fixed)
    if len(blocked):
        raise ValueError(
            "sensitive cells cannot be fixed: " + "; ".join(table.describe_cell(i) for i in blocked[:10])
        )

    fixed_dir = np.zeros(len(a), dtype=np.int64)
    fixed_dir[sensitive & ~can_down] = 1
    fixed_dir[sensitive & ~can_up] = -1
    if directions is not None:
        given = np.asarray(directions).astype(np.int64)
        if given.shape != a.shape:
            raise ValueError(f"directions need one entry per cell ({table.n_cells})")
        missing = np.flatnonzero(sensitive & (given == 0))
        if len(missing):
            named = "; ".join(table.describe_cell(i) for i in missing[:10])
            raise ValueError(f"no direction given for {named}")
        conflict = np.flatnonzero(sensitive & (fixed_dir != 0) & (np.sign(given) != fixed_dir))
        if len(conflict):
            raise ValueError(
                "these cells cannot move in the given direction (the cell would become negative): "
                + "; ".join(table.describe_cell(i) for i in conflict[:10])
            )
        fixed_dir = np.where(sensitive, np.sign(given), 0)
    free = sensitive & (fixed_dir == 0)

    ub_up = np.where(fixed, 0.0, capacity)
    ub_down = np.where(fixed, 0.0, np.where(floor_at_zero, np.minimum(capacity, np.maximum(a, 0)), capacity))
    lb_up = np.zeros(len(a))
    lb_down = np.zeros(len(a))
    ub_up[sensitive] = q_up[sensitive]
    ub_down[sensitive] = q_down[sensitive]
    up = fixed_dir > 0
    down = fixed_dir < 0
    lb_up[up], ub_down[up] = p_up[up], 0.0
    lb_down[down], ub_up[down] = p_down[down], 0.0
    return _Bounds(lb_up, ub_up, lb_down, ub_down, free, p_up, q_up, p_down, q_down, fixed_dir, capacity)


def _scaled_bounds(bounds: _Bounds, unit: float) -> _Bounds:
    """The bounds expressed in multiples of ``unit``."""
    if unit == 1.0:
        return bounds
    scaled = {name: getattr(bounds, name) / unit for name in
              ("lb_up", "ub_up", "lb_down", "ub_down", "p_up", "q_up", "p_down", "q_down", "capacity")}
    return _Bounds(free=bounds.free, directions=bounds.directions, **scaled)


@contextlib.contextmanager
def _native_stdout_silenced() -> Iterator[None]:
    """The process's standard output (file descriptor 1) sent to the null device while the solver runs.

    highspy 1.16 prints its banner ("Running HiGHS 1.16.0 ... Copyright ...") from C++ when cvxpy constructs
    the first ``Highs`` object, whatever ``verbose`` says; the command line and a notebook would show it. The C
    library's buffers are flushed before the descriptor is restored, so nothing printed inside leaks out after.
    Where the C library cannot be loaded (not a POSIX system) nothing is silenced.
    """
    import ctypes
    import os
    import sys

    try:
        libc = ctypes.CDLL(None)
        sys.stdout.flush()
        saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    except (OSError, AttributeError, ValueError):  # no C library or no descriptor 1 (an embedded interpreter)
        yield
        return
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _solve(problem, solver: str, time_limit: float | None, mip_gap: float | None, verbose: bool,
           solver_options: dict | None = None):
    import cvxpy as cp

    options: dict = dict(solver_options or {})
    if solver.upper() == "HIGHS":
        if time_limit is not None:
            options["time_limit"] = float(time_limit)
        if mip_gap is not None:
            options["mip_rel_gap"] = float(mip_gap)
        options["threads"] = 1
        if not problem.is_mixed_integer() and sum(v.size for v in problem.variables()) > 10_000:
            # Large LPs: the interior point method (with crossover to a vertex) is several times faster
            # than dual simplex on these degenerate problems.
            highs_options = dict(options.get("highs_options", {}))
            highs_options.setdefault("solver", "ipm")
            options["highs_options"] = highs_options
    try:
        with warnings.catch_warnings(), (contextlib.nullcontext() if verbose else _native_stdout_silenced()):
            # A time-limited solve is reported through the status and the gap, not as a warning.
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            problem.solve(solver=solver.upper(), verbose=verbose, **options)
    except cp.error.SolverError as err:
        if "no solution" in str(err).lower() or "time" in str(err).lower():
            return "no_solution", None
        raise ValueError(f"solver {solver} failed: {err}") from err
    gap = None
    if solver.upper() == "HIGHS":
        info = problem.solver_stats.extra_stats
        if problem.status == "user_limit" and getattr(info, "primal_solution_status", 2) != 2:
            return "no_solution", None  # stopped before any feasible point was found
        is_mip = bool(problem.is_mixed_integer())
        gap = float(getattr(info, "mip_gap", 0.0)) if is_mip else 0.0
        if not np.isfinite(gap):
            gap = None
    return problem.status, gap


def _statistics_weights(a: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, float]:
    """z-scores over the statistics cells (0 elsewhere) and the standard deviation there."""
    m = int(mask.sum())
    if m < 2:
        raise ValueError("L(y) needs at least two statistics cells (sensitive cells by default)")
    mean = a[mask].mean()
    sd = a[mask].std()
    if sd == 0:
        raise ValueError("L(y) is undefined: the statistics cells all have the same value")
    return np.where(mask, (a - mean) / sd, 0.0), float(sd)


def adjust_table(
    table: Table,
    protection: Protection | None = None,
    *,
    mean_subsets: Sequence[np.ndarray] = (),
    statistics_cells: np.ndarray | None = None,
    cost: np.ndarray | Sequence[float] | None = None,
    fixed_cells: np.ndarray | None = None,
    directions: np.ndarray | None = None,
    settings: AdjustmentSettings = DEFAULT_ADJUSTMENT,
    solver: SolverSettings = DEFAULT_SOLVER,
) -> Adjustment:
    """Adjust a table so that every sensitive cell moves by at least its protection and all totals add up.

    Parameters
    ----------
    table : Table
        The table (or linked tables).
    protection : Protection, optional
        Protection levels; by default the table's ``protection`` column.
    mean_subsets : sequence of boolean masks
        Further cell sets whose net adjustment must be zero.
    statistics_cells : boolean mask, optional
        Cells over which L(y) is taken (default: the sensitive cells).
    cost : array, optional
        Per-cell costs for ``objective="weighted"`` (default: the table's ``cost`` column).
    fixed_cells : boolean mask, optional
        Cells that must not change (e.g. the grand total).
    directions : array, optional
        +1/-1 per cell fixing the direction of each sensitive cell (then the problem is an LP).
    settings : AdjustmentSettings
        The problem: objective, method, capacity, widening, mean and L constraints, integrality (the defaults
        of :class:`AdjustmentSettings`: min ``sum |y|`` by the MILP, capacity 0.2).
    solver : SolverSettings
        The solver and its limits (the defaults of :class:`SolverSettings`: HiGHS, no limits).

    Returns
    -------
    Adjustment

    Raises
    ------
    InfeasibleError
        With an explanation of which sensitive cells cannot be protected and what to relax.
    ValueError
        For bad options or input.

    Examples
    --------
    >>> from bayessdc import cta
    >>> table = cta.table_from_long(cta.cox_4x9_frame(), "row,column", "value", protection="protection")
    >>> result = cta.adjust_table(table, settings=cta.AdjustmentSettings(objective="compromise", integer=True),
    ...                           solver=cta.SolverSettings(time_limit=60))
    >>> result.objective, result.status
    ('compromise', 'optimal')
    """
    import cvxpy as cp

    check_settings(settings, solver)
    objective, method, capacity = settings.objective, settings.method, settings.capacity
    widen, preserve_mean, zero_l, integer = settings.widen, settings.preserve_mean, settings.zero_l, settings.integer
    tie_break, strengthen = settings.tie_break, settings.strengthen
    solver_name, time_limit, mip_gap = solver.solver, solver.time_limit, solver.mip_gap
    verbose, solver_options = solver.verbose, solver.solver_options
    if protection is None:
        protection = protection_from_table(table)
    n = table.n_cells
    if protection.lower.shape != (n,):
        raise ValueError(f"protection needs one level per cell ({n}), got {protection.lower.shape[0]}")
    sensitive = protection.sensitive
    if not sensitive.any():
        raise ValueError("no sensitive cells: nothing to protect")
    uses_statistics = objective in STATISTICAL_OBJECTIVES or zero_l or preserve_mean or bool(mean_subsets)
    if widen is None:
        widen = DEFAULT_WIDEN if uses_statistics else 1.0
    if integer is None:
        integer = table.kind == "count"
    fixed = np.zeros(n, dtype=bool) if fixed_cells is None else np.asarray(fixed_cells, dtype=bool)
    a = table.values
    caps = _capacity(table, capacity)
    started = time.perf_counter()

    if method == "heuristic" and directions is None:
        pre = _bounds(table, protection, caps, widen, integer, fixed, None)
        balance = [sensitive] if preserve_mean else []
        balance += [np.asarray(m, dtype=bool) for m in mean_subsets]
        directions = balanced_directions(
            table.additivity, pre.p_down * sensitive, pre.p_up * sensitive,
            can_go_down=pre.directions >= 0, can_go_up=pre.directions <= 0, balance_sets=balance,
        )
    b = _bounds(table, protection, caps, widen, integer, fixed, directions)
    method_used = "milp" if b.free.any() else ("heuristic+lp" if method == "heuristic" else "lp")

    stats_mask = sensitive.copy() if statistics_cells is None else np.asarray(statistics_cells, dtype=bool)
    if objective == "weighted":
        if cost is None:
            if "cost" not in table.cells:
                raise ValueError("objective 'weighted' needs costs (a cost column or the cost argument)")
            cost = table.cells["cost"].to_numpy(dtype=float)
        weights = np.asarray(cost, dtype=float)
        if weights.shape != (n,) or np.isnan(weights).any() or (weights < 0).any():
            raise ValueError(f"costs must be {n} non-negative numbers")
    elif objective == "relative":
        weights = 1.0 / np.maximum(np.abs(a), 1.0)
    else:
        weights = np.ones(n)

    recorded = {  # the options used, as Adjustment.settings reports them
        "capacity": capacity if np.isscalar(capacity) else "per cell",
        "widen": widen,
        "preserve_mean": preserve_mean,
        "mean_subsets": len(mean_subsets),
        "zero_l": zero_l,
        "integer": integer,
        "time_limit": time_limit,
        "mip_gap": mip_gap,
    }
    # Continuous problems are solved in units that bring the largest cell to about 1e4..1e5: HiGHS's
    # tolerances are absolute, and tables of incomes in euros reach 1e11.
    unit = 1.0 if integer else 10.0 ** max(0, int(np.floor(np.log10(max(float(np.abs(a).max()), 1.0)))) - 4)
    bs = _scaled_bounds(b, unit)

    def run(integer_vars: bool) -> tuple:
        """Build and solve the model (both stages); integer_vars makes the adjustments integer variables."""
        y_up = cp.Variable(n, integer=integer_vars, bounds=[bs.lb_up, bs.ub_up], name="y_up")
        y_down = cp.Variable(n, integer=integer_vars, bounds=[bs.lb_down, bs.ub_down], name="y_down")
        y = y_up - y_down
        constraints = [sp.csr_matrix(table.additivity) @ y == 0]
        free = np.flatnonzero(bs.free)
        if len(free):
            ind = cp.Variable(len(free), boolean=True, name="up")
            constraints += [
                y_up[free] >= cp.multiply(bs.p_up[free], ind),
                y_up[free] <= cp.multiply(bs.q_up[free], ind),
                y_down[free] >= cp.multiply(bs.p_down[free], 1 - ind),
                y_down[free] <= cp.multiply(bs.q_down[free], 1 - ind),
            ]
        if strengthen and len(free):
            # Valid inequalities that tighten the MILP's relaxation (which otherwise lets a sensitive cell
            # split into y+ = y- and stay put): in every equation the other cells move at least as much
            # as the sensitive cell, sum_{j != i} (y_j^+ + y_j^-) >= y_i^+ + y_i^-.
            cover = _cover_matrix(table.additivity, free)
            constraints.append(cover @ (y_up + y_down) >= 0)
        if preserve_mean:
            constraints.append(cp.sum(y[np.flatnonzero(sensitive)]) == 0)
        for mask in mean_subsets:
            constraints.append(cp.sum(y[np.flatnonzero(np.asarray(mask, dtype=bool))]) == 0)

        l_scaled = None  # m * sd * L(y)
        if objective in STATISTICAL_OBJECTIVES or zero_l:
            z, sd = _statistics_weights(a / unit, stats_mask)
            l_scaled = z @ y
            if zero_l:
                constraints.append(l_scaled == 0)

        l1 = weights @ (y_up + y_down)
        primary = None
        if objective == "compromise":
            primary = cp.abs(l_scaled)
        elif objective == "max_l":
            primary = -l_scaled
        elif objective == "variance":
            # (m Var(a) / sd) * (2 L + Var_lin(y) / Var(a)) = 2 z.y + sum_i v_i(y) / sd,
            # v_i the secant of y_i^2.
            lo_up = np.where(sensitive, bs.p_up, 0.0)
            lo_down = np.where(sensitive, bs.p_down, 0.0)
            slope_up = np.where(stats_mask, lo_up + bs.ub_up, 0.0) / sd
            slope_down = np.where(stats_mask, lo_down + bs.ub_down, 0.0) / sd
            intercept_up = np.where(stats_mask & sensitive, bs.p_up * bs.q_up, 0.0) / sd
            intercept_down = np.where(stats_mask & sensitive, bs.p_down * bs.q_down, 0.0) / sd
            fixed_part = float(intercept_up[bs.directions > 0].sum()
                               + intercept_down[bs.directions < 0].sum())
            v_lin = slope_up @ y_up + slope_down @ y_down - fixed_part
            if len(free):
                v_lin = v_lin - intercept_up[free] @ ind - intercept_down[free] @ (1 - ind)
            primary = cp.abs(2 * l_scaled + v_lin)

        problem = cp.Problem(cp.Minimize(l1 if primary is None else primary), constraints)
        status, gap = _solve(problem, solver_name, time_limit, mip_gap, verbose, solver_options)
        if status in ("infeasible", "infeasible_or_unbounded"):
            raise _Infeasible()
        if status == "no_solution" or y_up.value is None:
            raise ValueError(
                f"the solver found no feasible adjustment (status {status}) within the limits; "
                "raise time_limit= or use the heuristic method"
            )
        objective_value = float(problem.value)
        up_value, down_value = np.asarray(y_up.value), np.asarray(y_down.value)
        if primary is not None and tie_break and status in ("optimal", "optimal_inaccurate"):
            best = float(primary.value)
            second = cp.Problem(cp.Minimize(weights @ (y_up + y_down)),
                                constraints + [primary <= best + _TIE_TOLERANCE * max(1.0, abs(best))])
            status2, gap2 = _solve(second, solver_name, time_limit, mip_gap, verbose, solver_options)
            if y_up.value is not None and status2 in ("optimal", "optimal_inaccurate", "user_limit"):
                status, gap = status2, gap2
                up_value, down_value = np.asarray(y_up.value), np.asarray(y_down.value)
        return status, gap, objective_value * unit, up_value * unit, down_value * unit

    def run_all() -> tuple:
        if not integer:
            return run(False)
        # With integer data the LP vertex is often integral already (always for two-way tables, whose
        # equations are a network matrix): try the continuous adjustments first, and only if they are
        # fractional solve with integer variables (which is much slower with large bounds).
        outcome = run(False)
        y_try = outcome[3] - outcome[4]
        return outcome if np.allclose(y_try, np.round(y_try), rtol=0, atol=1e-6) else run(True)

    from .infeasibility import _shortfalls, explain_infeasibility

    for repair in range(HEURISTIC_REPAIRS + 1):
        try:
            status, gap, objective_value, up_value, down_value = run_all()
            break
        except _Infeasible:
            flip = np.zeros(n, dtype=bool)
            if method_used == "heuristic+lp" and repair < HEURISTIC_REPAIRS:
                # Heuristic directions can contradict each other (e.g. a total and all its parts sensitive):
                # flip the cells that the elastic problem leaves short, and try again.
                short = _shortfalls(table, b, solver_name, time_limit)
                if short is not None:
                    flip = _cells_to_flip(table, b, short, tolerance=1e-6 * max(1.0, float(np.abs(a).max())))
            if not flip.any():
                raise explain_infeasibility(
                    table, b, widen=widen, capacity=capacity, method=method_used,
                    statistical=_statistical_names(preserve_mean, mean_subsets, zero_l),
                    solver=solver_name, time_limit=time_limit) from None
            directions = np.where(flip, -b.directions, b.directions)
            b = _bounds(table, protection, caps, widen, integer, fixed, directions)
            bs = _scaled_bounds(b, unit)
    elapsed = time.perf_counter() - started

    adjustment = _clean(up_value - down_value, table, integer)
    chosen = np.where(sensitive, np.where(adjustment > 0, 1, -1), 0)
    status_name = {"optimal": "optimal", "optimal_inaccurate": "optimal_inaccurate",
                   "user_limit": "time_limit"}.get(status, status)
    return Adjustment(
        table=table,
        protection=protection,
        adjustment=adjustment,
        directions=chosen,
        statistics_cells=stats_mask,
        objective=objective,
        method=method_used,
        solver=solver_name.upper(),
        status=status_name,
        optimality_gap=gap,
        objective_value=objective_value,
        solve_seconds=elapsed,
        settings=recorded,
    )


def _cells_to_flip(table: Table, bounds: _Bounds, shortfall: np.ndarray, tolerance: float) -> np.ndarray:
    """Short cells to flip, largest shortfall first, at most one per equation (flipping every cell of a
    contradictory group would only reverse the contradiction)."""
    T = sp.csc_matrix(table.additivity)
    can_flip = np.where(bounds.directions > 0, bounds.p_down <= bounds.q_down, bounds.p_up <= bounds.q_up)
    candidates = np.flatnonzero((shortfall > tolerance) & (bounds.directions != 0) & can_flip)
    flip = np.zeros(table.n_cells, dtype=bool)
    touched: set[int] = set()
    for i in candidates[np.argsort(-shortfall[candidates], kind="stable")]:
        equations = set(T.indices[T.indptr[i] : T.indptr[i + 1]].tolist())
        if equations & touched:
            continue
        flip[i] = True
        touched |= equations
    return flip


def _cover_matrix(additivity: sp.spmatrix, cells: np.ndarray) -> sp.csr_matrix:
    """Rows |T_e| - 2 e_i for every cell i in ``cells`` and every equation e containing it."""
    T = sp.csr_matrix(abs(additivity))
    T.data[:] = 1.0
    columns = sp.csc_matrix(T)[:, cells]
    rows_of = [columns.indices[columns.indptr[k] : columns.indptr[k + 1]] for k in range(len(cells))]
    equation = np.concatenate(rows_of) if rows_of else np.zeros(0, dtype=np.int64)
    owner = np.repeat(cells, [len(r) for r in rows_of])
    block = T[equation]
    twice_own = sp.csr_matrix((np.full(len(owner), 2.0), (np.arange(len(owner)), owner)), shape=block.shape)
    block = block - twice_own
    return sp.csr_matrix(block)


def _statistical_names(preserve_mean: bool, mean_subsets: Sequence, zero_l: bool) -> list[str]:
    names = []
    if preserve_mean:
        names.append("mean preservation over the sensitive cells (preserve_mean=)")
    if mean_subsets:
        names.append(f"mean preservation over {len(mean_subsets)} given subset(s)")
    if zero_l:
        names.append("the constraint L(y) = 0")
    return names


def _clean(adjustment: np.ndarray, table: Table, integer: bool) -> np.ndarray:
    """Remove solver noise so that the totals add up to floating-point precision."""
    if integer:
        return np.round(adjustment)
    scale = max(1.0, float(np.abs(table.values).max()))
    y = np.where(np.abs(adjustment) < 1e-9 * scale, 0.0, adjustment)
    residual = table.additivity @ y
    if np.abs(residual).max(initial=0.0) > 0:
        # Spread the residual over the cells that moved (least-norm correction): zeros stay zeros.
        from scipy.sparse.linalg import lsqr

        moved = np.flatnonzero(y != 0)
        if len(moved):
            sub = sp.csr_matrix(table.additivity)[:, moved]
            correction = lsqr(sub, residual, atol=1e-15, btol=1e-15, iter_lim=10 * len(moved))[0]
            candidate = y.copy()
            candidate[moved] -= correction
            if np.abs(table.additivity @ candidate).max() < np.abs(residual).max():
                y = candidate
    return y
