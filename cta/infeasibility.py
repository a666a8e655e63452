"""Explaining an infeasible adjustment problem.

An elastic version of the problem lets each sensitive cell fall short of its protection at a cost (the
shortfall relative to the protection), keeping the additivity equations, the capacities and the fixed
directions but dropping the statistical constraints. Cells left short at the optimum cannot be protected
within the capacities of the cells they share totals with; if none is short, the statistical constraints
(mean preservation, L(y) = 0) are the cause.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .table import Table


def _shortfalls(table: Table, bounds, solver: str, time_limit: float | None) -> np.ndarray | None:
    """Minimal relative shortfall of each cell's protection (None if the elastic problem fails too)."""
    import cvxpy as cp

    from .problem import _solve

    n = table.n_cells
    sensitive = bounds.free | (bounds.directions != 0)
    s = np.flatnonzero(sensitive)
    up = cp.Variable(n, bounds=[np.zeros(n), bounds.ub_up])
    down = cp.Variable(n, bounds=[np.zeros(n), bounds.ub_down])
    short_up = cp.Variable(len(s), nonneg=True)
    short_down = cp.Variable(len(s), nonneg=True)
    constraints = [sp.csr_matrix(table.additivity) @ (up - down) == 0]
    free_pos = np.flatnonzero(bounds.free[s])
    fixed_up = np.flatnonzero(bounds.directions[s] > 0)
    fixed_down = np.flatnonzero(bounds.directions[s] < 0)
    if len(free_pos):
        cells = s[free_pos]
        ind = cp.Variable(len(cells), boolean=True)
        constraints += [
            up[cells] + short_up[free_pos] >= cp.multiply(bounds.p_up[cells], ind),
            up[cells] <= cp.multiply(bounds.q_up[cells], ind),
            down[cells] + short_down[free_pos] >= cp.multiply(bounds.p_down[cells], 1 - ind),
            down[cells] <= cp.multiply(bounds.q_down[cells], 1 - ind),
        ]
    if len(fixed_up):
        constraints.append(up[s[fixed_up]] + short_up[fixed_up] >= bounds.p_up[s[fixed_up]])
    if len(fixed_down):
        constraints.append(down[s[fixed_down]] + short_down[fixed_down] >= bounds.p_down[s[fixed_down]])
    scale = 1.0 / np.maximum(np.maximum(bounds.p_up[s], bounds.p_down[s]), 1e-12)
    problem = cp.Problem(cp.Minimize(scale @ (short_up + short_down)), constraints)
    status, _ = _solve(problem, solver, time_limit, None, False)
    if short_up.value is None:
        return None
    result = np.zeros(n)
    result[s] = np.maximum(short_up.value, short_down.value)
    return result


def explain_infeasibility(
    table: Table,
    bounds,
    *,
    widen: float,
    capacity,
    method: str,
    statistical: list[str],
    solver: str = "HIGHS",
    time_limit: float | None = None,
):
    """Build an :class:`~bayessdc.cta.problem.InfeasibleError` explaining why no adjustment exists.

    Parameters
    ----------
    table : Table
    bounds : the problem's internal bounds
    widen : float
        The widening factor used.
    capacity : float or array
        The capacity setting used.
    method : str
        ``"milp"``, ``"lp"`` or ``"heuristic+lp"``.
    statistical : list of str
        Names of the statistical constraints that were imposed.
    solver : str
    time_limit : float, optional

    Returns
    -------
    InfeasibleError
    """
    from .problem import InfeasibleError

    shortfall = _shortfalls(table, bounds, solver, time_limit)
    header = "the adjustment problem is infeasible"
    if shortfall is None:
        return InfeasibleError(f"{header}, and the diagnosis could not be computed (solver limit).")
    tolerance = 1e-6 * max(1.0, float(np.abs(table.values).max()))
    short = np.flatnonzero(shortfall > tolerance)
    if len(short) == 0:
        cause = "; ".join(statistical) if statistical else "the fixed directions"
        return InfeasibleError(
            f"{header}: every sensitive cell can be protected on its own terms, but not together with "
            f"{cause}. To relax: widen the bounds [p_i, q_i] (now q_i = {widen:g} p_i), drop the "
            "constraint, or use the objective 'compromise' (which minimises |L(y)| instead of "
            "forcing it to 0). Sensitive cells that lie in one chain of totals must all move the same "
            "way, which mean preservation over them cannot allow."
        )
    T = sp.csc_matrix(table.additivity)
    room = np.maximum(bounds.ub_up, bounds.ub_down) * ~(bounds.free | (bounds.directions != 0))
    details = []
    lines = []
    for i in short[:20]:
        required = max(bounds.p_up[i], bounds.p_down[i])
        eqs = T.indices[T.indptr[i] : T.indptr[i + 1]]
        totals = []
        for e in eqs:
            row = table.additivity.getrow(e)
            others = [j for j in row.indices if j != i]
            totals.append((table.describe_cell(table.total_cell[e]), float(room[others].sum())))
        details.append({
            "cell": table.describe_cell(i),
            "required": float(required),
            "achievable": float(required - shortfall[i]),
            "totals": [{"total": name, "capacity_of_other_cells": cap} for name, cap in totals],
        })
        shared = "; ".join(f"[{name}] other cells' capacity {cap:.12g}" for name, cap in totals)
        lines.append(
            f"  {table.describe_cell(i)}: needs a move of {required:.12g}, at most "
            f"{required - shortfall[i]:.12g} is possible; its totals: {shared}"
        )
    more = f"\n  ... and {len(short) - 20} more" if len(short) > 20 else ""
    cap_text = f"a fraction {capacity:.12g} of each cell" if np.isscalar(capacity) else "given per cell"
    advice = (
        f"To relax: raise the capacities of the non-sensitive cells in those totals (now {cap_text}), let "
        "fixed cells move, or lower these cells' protection to what is achievable"
    )
    if method != "milp":
        advice += "; the directions were fixed beforehand, so the MILP (method 'milp') may succeed"
    return InfeasibleError(
        f"{header}: {len(short)} sensitive cell(s) cannot be protected within the capacities of the cells "
        f"they share totals with:\n" + "\n".join(lines) + more + f"\n{advice}.",
        details,
    )
