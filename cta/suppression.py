"""Complementary cell suppression: the least-cost pattern of suppressed cells that protects every sensitive cell.

A sensitive (primary) cell is suppressed; so that it cannot be recomputed from the totals, further (secondary)
cells are suppressed with it. A pattern protects primary cell ``i`` when the intruder of
:func:`~bayessdc.cta.audit_table` (``intruder="suppression"``: published cells exact, suppressed cells within
their a-priori ranges ``[l_k, u_k]``, every total exact) can neither bring ``x_i`` below ``x_i - LPL_i`` nor
above ``x_i + UPL_i`` (each capped by the a-priori range, as the audit caps it). The least-cost pattern is the
mixed-integer program of Fischetti & Salazar-Gonzalez (1999, 2001):

    minimise ``sum_k c_k z_k`` over ``z in {0, 1}^n``, ``z_i = 1`` for every primary cell, such that for every
    primary cell and each direction ``s`` (up, down) the attacker's LP
    ``P_is(z) = max s y_i  s.t.  T y = 0,  -L_k z_k <= y_k <= U_k z_k`` reaches the required protection,

with ``y`` the deviation of a table the intruder cannot exclude from the true one (``U_k = u_k - x_k``,
``L_k = x_k - l_k``). ``P_is(z)`` is concave in ``z`` and its LP dual gives, for every multiplier vector ``mu`` of
the equations, the bound ``P_is(z) <= sum_k z_k (U_k r_k^+ + L_k r_k^-)`` with ``r = s e_i - T' mu``; a pattern
whose attacker falls short is cut off by the *capacity cut* ``sum_k (U_k r_k^+ + L_k r_k^-) z_k >= need`` at the
LP's optimal ``mu`` (Fischetti & Salazar-Gonzalez's Benders decomposition, the exact method of tau-ARGUS's
"optimal" and sdcTable's ``OPT``). The solve:

1. The master starts with the cuts every pattern needs (each equation through a primary cell holds another
   suppressed cell: otherwise the equation pins it).
2. Its LP relaxation is cut in rounds (the attackers run on the fractional pattern, a cell moving by ``z_k`` of its
   range) until a round adds none or three rounds raise its cost by less than 0.2%.
3. Rounds of the master MILP (HiGHS, one model kept across rounds, at a 2% gap until a pattern protects): the
   attackers run on its pattern (one LP per primary cell and direction, over the connected part of the suppressed
   cells that holds it) and a cut is added for each that falls short; the pattern is then *repaired* into one that
   protects (for each short attacker the cheapest cells to add, by the LP that routes the missing protection along
   cells whose capacity is capped at it, as the network heuristics of tau-ARGUS and sdcTable do; then every added
   cell no primary cell needs is dropped again, dearest first), and the cheapest protecting pattern so far starts
   the next master.
4. The solve stops when a master's own pattern protects at the solver's gap, or the cheapest protecting pattern is
   within that gap of the masters' lower bound: least cost. A time limit (``SolverSettings.time_limit``) stops it
   with the cheapest protecting pattern found, its status ``"time limit"`` and the bound saying how far from least
   cost it may be; without one it runs until least cost, which on a large table can take long (every round is
   logged with its gap). Without a time limit the same table gives the same pattern.

Costs (Cox 2003, Example 1a, compares both): ``"values"`` suppresses as little of the table's value as it can
(``c_k = x_k``, tau-ARGUS's default), ``"cells"`` as few cells (``c_k = 1``); each is broken by the other at a
thousandth of a unit, so that the pattern is determined. Any non-negative cost per cell may be given instead.

What the intruder is taken to know is the audit's: an unbounded a-priori range (``u_k = inf``, the default's
non-negativity) enters the cuts as the largest value of the table plus the largest protection, a range no
narrower than any an additive non-negative table allows a suppressed cell whose grand total is published and
wide enough to reach every protection; narrowing it can only ask for more suppression, so every pattern found
protects under the wider range too. :func:`~bayessdc.cta.audit_table` checks every pattern afterwards.

Why HiGHS through highspy and scipy, and not cvxpy (which :mod:`~bayessdc.cta.problem` and
:mod:`~bayessdc.cta.audit` use): the attacker LPs are many (two per primary cell per round, and more to repair and
clean a pattern) and small, and all the attackers of one connected part share its constraints. One highspy model
per part, whose objective alone changes from attacker to attacker, solved the bench's attacker LPs in 0.20 ms each,
``scipy.optimize.linprog(method="highs")`` in 1.33 ms and one cvxpy ``Problem`` per LP with HiGHS in 3.36 ms
(``bench/suppression.py --small``); the master MILP is kept the same way, its new cuts added as rows and the
cheapest protecting pattern given as its start. The multipliers the cuts need are HiGHS's own row duals.

References
----------
.. [1] Fischetti, M. & Salazar-Gonzalez, J. J. (1999). Models and algorithms for the 2-dimensional cell
    suppression problem in statistical disclosure control. *Mathematical Programming* 84, 283-312.
.. [2] Fischetti, M. & Salazar-Gonzalez, J. J. (2001). Solving the cell suppression problem on tabular data with
    linear constraints. *Management Science* 47(7), 1008-1027.
.. [3] Cox, L. H. (2003). *Preserving confidentiality and quality of tabular data: are safe data necessarily
    inferior data?* BTS Confidentiality Seminar (Example 1a: suppression beside controlled tabular adjustment).
.. [4] Hundepool, A. et al. *tau-ARGUS user's manual* (optimal secondary suppression; cost by value or cells).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .audit import _a_priori, _check_input, _components
from .problem import InfeasibleError
from .rules import Protection
from .settings import DEFAULT_SOLVER, SolverSettings
from .table import Table

__all__ = ["COSTS", "Attackers", "Suppressed", "suppress_table"]

#: Cox's two costs of a suppression: the value suppressed, or the number of cells.
COSTS = ("values", "cells")

#: Rounds of cuts on the master's LP relaxation before the first MILP, and the relative gap of the MILPs until a
#: pattern protects every primary cell (then the solver's own); the pattern found then is checked once more.
_RELAXATION_ROUNDS = 30
_STALL, _STALLED = 3, 2e-3  # the relaxation's rounds stop when three have raised its cost by less than 0.2%
_LOOSE_GAP = 0.02
_ZERO = 1e-9
_HIGHS_GAP = 1e-4  # HiGHS's default mip_rel_gap


@dataclass(frozen=True)
class Suppressed:
    """A suppression pattern and how it was found (the result of :func:`suppress_table`).

    Attributes
    ----------
    table, protection
        The table and the protection every primary cell needs.
    published
        The published value of every cell, NaN where suppressed.
    primary, secondary
        Boolean masks: the sensitive cells (suppressed because they are), and the cells suppressed to protect them.
    costs
        The cost of each cell the pattern was chosen by.
    status
        ``"optimal"`` (least cost, to the solver's gap), ``"time limit"`` (the time limit stopped the solve: the
        cheapest protecting pattern found, within ``bound`` of least cost) or ``"given"`` (a pattern made
        elsewhere, not solved).
    objective
        The cost of the secondary suppressions.
    bound
        The last master MILP's lower bound on that cost, in the units it minimises (the cost with its tie-break;
        NaN for a given pattern).
    rounds, cuts, lps, seconds
        Master MILPs solved, capacity cuts added (beside the equations' own), attacker LPs solved, time taken.
    """

    table: Table
    protection: Protection
    published: np.ndarray
    primary: np.ndarray
    secondary: np.ndarray
    costs: np.ndarray
    status: str
    objective: float
    bound: float
    rounds: int = 0
    cuts: int = 0
    lps: int = 0
    seconds: float = 0.0

    @property
    def suppressed(self) -> np.ndarray:
        """Boolean mask of the suppressed cells (primary and secondary)."""
        return np.isnan(self.published)

    def frame(self) -> pd.DataFrame:
        """One row per cell: the table's label columns, ``original``, ``published`` (NaN: suppressed),
        ``suppressed``, ``primary``, ``secondary`` and ``cost``."""
        frame = self.table.cells[list(self.table.label_columns)].reset_index(drop=True)
        frame["original"] = self.table.values
        frame["published"] = self.published
        frame["suppressed"] = self.suppressed
        frame["primary"] = self.primary
        frame["secondary"] = self.secondary
        frame["cost"] = self.costs
        return frame


def suppress_table(
    table: Table,
    protection: Protection,
    *,
    cost: str | np.ndarray = "values",
    bounds: tuple | pd.DataFrame | None = None,
    solver: SolverSettings = DEFAULT_SOLVER,
    given: np.ndarray | None = None,
    progress: Callable[[str], None] | None = None,
) -> Suppressed:
    """Suppress every sensitive cell and the least-cost set of other cells that protects them (module docstring).

    Parameters
    ----------
    table
        The table (:func:`~bayessdc.cta.table_from_long`, :func:`~bayessdc.cta.link_tables` ...): its cells, true
        values and additivity equations; hierarchical and linked tables alike.
    protection
        The required downward and upward protection of every cell (:class:`~bayessdc.cta.Protection`, as the p%,
        (n, k) and threshold rules give it); the cells with a positive level are the primary cells.
    cost
        ``"values"`` (the value suppressed), ``"cells"`` (the number of cells suppressed), or one non-negative cost
        per cell.
    bounds
        The intruder's a-priori ranges, as :func:`~bayessdc.cta.audit_table` takes them (default ``[0, inf)``).
    solver
        ``time_limit`` (seconds for the whole solve) and ``mip_gap`` (the relative gap at which a pattern counts
        as least cost); HiGHS (highspy and scipy's) whatever ``solver`` names.
    given
        A pattern made elsewhere (boolean mask of suppressed cells): published as given, no MILP; a primary cell
        not in it stays published (and fails its audit).
    progress
        Called with a line after every round.

    Returns
    -------
    Suppressed

    Raises
    ------
    ValueError
        Before anything is solved, naming the cell: a total that does not add up, an a-priori range that excludes
        a cell's value, a cost that is negative or missing, a pattern of the wrong length.
    bayessdc.cta.InfeasibleError
        A primary cell that no pattern protects (its a-priori range, or the table's structure, allows less than its
        protection even with every other cell suppressed), named.
    TypeError
        ``solver`` not a :class:`~bayessdc.cta.SolverSettings`.

    Examples
    --------
    A 2 x 2 table with its margins and one sensitive cell: the cheapest pattern by value is the rectangle of the
    four interior cells (suppressing totals costs more).

    >>> import pandas as pd
    >>> from bayessdc import cta
    >>> frame = pd.DataFrame({"r": ["a", "a", "b", "b"], "c": ["x", "y", "x", "y"], "v": [10.0, 20, 30, 40],
    ...                       "p": [3.0, 0, 0, 0]})
    >>> table = cta.table_from_long(frame, "r,c", "v", protection="p")
    >>> result = suppress_table(table, cta.protection_from_table(table))
    >>> result.frame().loc[result.suppressed, ["r", "c", "original", "primary"]]
       r  c  original  primary
    0  a  x      10.0     True
    1  a  y      20.0    False
    3  b  x      30.0    False
    4  b  y      40.0    False
    >>> result.objective, result.status
    (90.0, 'optimal')
    """
    started = time.perf_counter()
    if not isinstance(solver, SolverSettings):
        raise TypeError(f"solver= takes SolverSettings(...), not {type(solver).__name__} {solver!r}")
    n = table.n_cells
    x = table.values
    if protection.lower.shape != (n,):
        raise ValueError(f"protection needs one level per cell ({n}), got {protection.lower.shape[0]}")
    lower, upper = _a_priori(table, bounds)
    scale = max(1.0, float(np.max(np.abs(x), initial=0.0)))
    atol = 1e-6 * scale
    _check_input(table, x, x, lower, upper, "suppression", atol)
    primary = protection.sensitive.copy()
    costs, minimised = _costs(table, cost)
    if given is not None:
        pattern = np.asarray(given, dtype=bool)
        if pattern.shape != (n,):
            raise ValueError(f"a given pattern needs one flag per cell ({n}), got shape {pattern.shape}")
        published = np.where(pattern, np.nan, x)
        secondary = pattern & ~primary
        spent = float(costs[secondary].sum())
        return Suppressed(table, protection, published, primary, secondary, costs, "given", spent, float("nan"),
                          seconds=time.perf_counter() - started)  # fmt: skip

    # the required movement each way, capped by the a-priori range as the audit caps it
    need_down = np.where(primary, np.minimum(protection.lower, x - lower), 0.0)
    need_up = np.where(primary, np.minimum(protection.upper, upper - x), 0.0)
    wide = scale + float(np.max(np.r_[protection.lower, protection.upper], initial=0.0))
    slack_down = np.minimum(x - lower, wide)
    slack_up = np.minimum(upper - x, wide)
    unit = 10.0 ** max(0, int(np.floor(np.log10(scale))) - 4)  # as the audit: HiGHS's tolerances are absolute
    problem = _Problem(sp.csr_matrix(table.additivity), slack_down / unit, slack_up / unit, minimised, primary,
                       need_down / unit, need_up / unit, solver, table.describe_cell)  # fmt: skip
    z, status = problem.solve(started, progress)
    published = np.where(z, np.nan, x)
    secondary = z & ~primary
    return Suppressed(table, protection, published, primary, secondary, costs, status, float(costs[secondary].sum()),
                      problem.bound, problem.rounds, problem.n_cuts, problem.lps,
                      time.perf_counter() - started)  # fmt: skip


def _costs(table: Table, cost: str | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cost of suppressing each cell, and the same with ties broken by the other of Cox's two costs at a
    thousandth of a unit (what the MILP minimises)."""
    x = np.abs(table.values)
    top = max(float(x.max(initial=0.0)), 1e-12)
    smallest = float(x[x > 0].min()) if (x > 0).any() else 1.0
    if isinstance(cost, str):
        if cost not in COSTS:
            raise ValueError(f"cost must be one of {COSTS} or one number per cell, not {cost!r}")
        if cost == "values":
            return x, x + 1e-3 * smallest
        return np.ones_like(x), 1.0 + 1e-3 * x / top
    given = np.asarray(cost, dtype=float)
    if given.shape != (table.n_cells,):
        raise ValueError(f"cost needs one value per cell ({table.n_cells}), got shape {given.shape}")
    bad = np.flatnonzero(~np.isfinite(given) | (given < 0))
    if len(bad):
        raise ValueError(f"the cost of {table.describe_cell(bad[0])} is {given[bad[0]]!r}: costs are numbers >= 0")
    positive = given[given > 0]
    return given.copy(), given + 1e-3 * (float(positive.min()) if len(positive) else 1.0) * x / top


class _Problem:
    """The master MILP over which cells are suppressed and its attackers (in scaled units)."""

    def __init__(self, T: sp.csr_matrix, slack_down: np.ndarray, slack_up: np.ndarray, costs: np.ndarray,
                 primary: np.ndarray, need_down: np.ndarray, need_up: np.ndarray, solver: SolverSettings,
                 name: Callable[[int], str]) -> None:  # fmt: skip
        self.T, self.Tc = T, sp.csc_matrix(T)  # rows of T by cell, and cells by equation
        self.down, self.up, self.costs, self.primary = slack_down, slack_up, costs, primary
        self.need = {1.0: need_up, -1.0: need_down}
        self.solver, self.name = solver, name
        self.tol = 1e-7 * max(1.0, float(np.max(np.r_[need_up, need_down], initial=0.0)))
        self.rows: list[np.ndarray] = []
        self.coefs: list[np.ndarray] = []
        self.rhs: list[float] = []
        self.seen: set[bytes] = set()
        self.rounds = self.n_cuts = self.lps = 0
        self.bound = float("nan")
        self.highs = None
        self._last: tuple[bytes, Attackers] | None = None
        self._structural_cuts()

    def _structural_cuts(self) -> None:
        """Each equation through a primary cell holds another suppressed cell (else it pins the cell)."""
        T = self.T
        for i in np.flatnonzero(self.primary):
            if max(self.need[1.0][i], self.need[-1.0][i]) <= self.tol:
                continue
            for e in self.Tc[:, i].indices:
                others = T.indices[T.indptr[e]:T.indptr[e + 1]]
                others = others[others != i]
                self._add(others, np.ones(len(others)), 1.0)

    def _add(self, cells: np.ndarray, coefs: np.ndarray, rhs: float) -> bool:
        key = np.r_[cells.astype(float), np.round(coefs, 9), rhs].tobytes()
        if key in self.seen:
            return False
        self.seen.add(key)
        self.rows.append(cells)
        self.coefs.append(coefs)
        self.rhs.append(rhs)
        return True

    def _matrix(self) -> sp.csr_matrix:
        lengths = [len(r) for r in self.rows]
        return sp.csr_matrix((np.concatenate(self.coefs) if self.coefs else np.zeros(0),
                              np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=int),
                              np.r_[0, np.cumsum(lengths)]), shape=(len(self.rows), len(self.costs)))  # fmt: skip

    def _relaxed(self) -> np.ndarray:
        """The master's LP relaxation: the cheapest fractional pattern that meets every cut so far."""
        from scipy.optimize import linprog

        A, b = (-self._matrix(), -np.asarray(self.rhs)) if self.rows else (None, None)
        box = np.c_[self.primary.astype(float), np.ones(len(self.costs))]
        result = linprog(self.costs, A_ub=A, b_ub=b, bounds=box, method="highs")
        if result.status != 0:
            raise RuntimeError(f"HiGHS could not solve the relaxed suppression problem: {result.message}")
        self.relaxed_cost = float(result.fun)
        return np.clip(result.x, 0.0, 1.0)

    def _master(self, time_left: float | None, gap: float | None, start: np.ndarray | None) -> tuple[np.ndarray, bool]:
        """Solve the master MILP with the cuts so far (one HiGHS model kept across rounds, the new cuts added as
        rows), started from the cheapest protecting pattern known (it meets every cut)."""
        import highspy

        from .problem import _native_stdout_silenced

        n = len(self.costs)
        with contextlib.nullcontext() if self.solver.verbose else _native_stdout_silenced():
            if self.highs is None:
                self.highs = highspy.Highs()
                self.highs.setOptionValue("output_flag", bool(self.solver.verbose))
                self.highs.setOptionValue("threads", 1)  # as cvxpy's HiGHS runs here: one scheduler per process
                columns = np.arange(n, dtype=np.int32)
                self.highs.addVars(n, self.primary.astype(float), np.ones(n))
                self.highs.changeColsCost(n, columns, self.costs)
                self.highs.changeColsIntegrality(n, columns, np.full(n, highspy.HighsVarType.kInteger))
            new = range(self.highs.getNumRow(), len(self.rows))
            if len(new):
                lengths = [len(self.rows[k]) for k in new]
                self.highs.addRows(len(new), np.asarray([self.rhs[k] for k in new]), np.full(len(new), np.inf),
                                   int(sum(lengths)), np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int32),
                                   np.concatenate([self.rows[k] for k in new]).astype(np.int32),
                                   np.concatenate([self.coefs[k] for k in new]))  # fmt: skip
            self.highs.setOptionValue("time_limit", float(max(time_left, 1.0)) if time_left is not None else np.inf)
            self.highs.setOptionValue("mip_rel_gap", float(_HIGHS_GAP if gap is None else gap))
            if start is not None:
                solution = highspy.HighsSolution()
                solution.col_value = start.astype(float).tolist()
                self.highs.setSolution(solution)
            _run(self.highs)
        status = self.highs.getModelStatus()
        info = self.highs.getInfo()
        x = np.asarray(self.highs.getSolution().col_value)
        if len(x) != n or info.primal_solution_status == 0:
            raise RuntimeError(f"HiGHS found no suppression pattern: {self.highs.modelStatusToString(status)}")
        self.bound = float(info.mip_dual_bound) - float(self.costs[self.primary].sum())
        self.gap = float(info.mip_gap)
        return (x > 0.5).astype(float), status == highspy.HighsModelStatus.kOptimal

    def _attackers(self, z: np.ndarray) -> Attackers:
        """The attackers of pattern ``z`` (built once per pattern)."""
        key = z.astype(float).tobytes()
        if self._last is None or self._last[0] != key:
            self._last = (key, Attackers(self.T, self.down, self.up, z.astype(float)))
        return self._last[1]

    def _attack(self, i: int, sign: float, z: np.ndarray) -> tuple[float, np.ndarray]:
        """The attacker's LP for cell ``i`` in direction ``sign`` on pattern ``z`` (fractional in the relaxation: a
        cell moves by at most ``z_k`` of its range): its optimum and the equations' multipliers (one per equation of
        the table; zero for those the LP does not hold)."""
        value, mu = self._attackers(z).attack(i, sign, self.name)
        self.lps += 1
        return value, mu

    def _cut(
        self, i: int, sign: float, mu: np.ndarray, z: np.ndarray, value: float
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """The capacity cut of the attacker's multipliers: ``sum_k (U_k r_k^+ + L_k r_k^-) z_k >= need``."""
        r = np.asarray(self.T.T @ mu).ravel()  # scipy's duals: -sign e_i = A' mu + bound duals, so r = sign e_i + A' mu
        r[i] += sign
        coef = np.where(r > 0, r * self.up, -r * self.down)
        at_z = float(coef @ z)
        if abs(at_z - value) > 1e-6 * max(1.0, abs(value)):  # the dual bound is tight at the pattern that gave it
            raise RuntimeError(f"the attacker's dual for {self.name(i)} does not bound its LP ({at_z} vs {value})")
        need = float(self.need[sign][i])
        rhs = need - coef[i]  # the primary cell is always suppressed
        coef[i] = 0.0
        if float(coef.sum()) < rhs - self.tol:
            side = "upward" if sign > 0 else "downward"
            raise InfeasibleError(
                f"no suppression pattern protects {self.name(i)}: with every other cell suppressed the intruder "
                f"still pins its value to within less than its {side} protection; widen its a-priori range or lower "
                "its protection",
                [{"cell": int(i), "direction": side}],
            )
        cells = np.flatnonzero(coef > self.tol)
        return cells, np.minimum(coef[cells], rhs), rhs  # a coefficient above the right-hand side counts as it

    def _separate(self, z: np.ndarray) -> tuple[int, list[tuple[int, float]]]:
        """Run every primary cell's attackers on ``z`` and add a cut for each that falls short: how many cuts were
        new, and the attackers that fell short."""
        added, short = 0, []
        for i in np.flatnonzero(self.primary):
            for sign in (1.0, -1.0):
                need = self.need[sign][i]
                if need <= self.tol:
                    continue
                value, mu = self._attack(int(i), sign, z)
                if value >= need - self.tol:
                    continue
                short.append((int(i), sign))
                added += self._add(*self._cut(int(i), sign, mu, z, value))
        self.n_cuts += added
        return added, short

    def _repair(self, z: np.ndarray, short: list[tuple[int, float]]) -> np.ndarray:
        """A protecting pattern from ``z``: for each attacker that falls short, in turn, the cheapest cells to add
        by the LP that lets a cell ``k`` move by ``w_k`` of its range at cost ``c_k w_k`` (over the cells within two
        equations of the primary cell and those already suppressed), every cell it moves suppressed."""
        from scipy.optimize import linprog

        z = z.copy() > 0.5
        for i, sign in short:
            value, _ = self._attack(i, sign, z.astype(float))
            need = self.need[sign][i]
            if value >= need - self.tol:
                continue
            near = _near(self.T, self.Tc, i)
            cells = np.union1d(near, self._attackers(z).part(i))
            k = len(cells)
            rows = np.unique(self.Tc[:, cells].indices)
            A = sp.csr_matrix(self.T[rows][:, cells])
            # a cell's capacity capped at the need: moving the whole need through a cell costs its whole cost, so the
            # LP routes it along the cheapest cells (a shortest path, as the network heuristics of tau-ARGUS and
            # sdcTable do) instead of spreading it thinly over many
            up, down = np.minimum(self.up[cells], need), np.minimum(self.down[cells], need)
            fixed = z[cells].astype(float)
            eye = sp.identity(k, format="csr")
            position = int(np.flatnonzero(cells == i)[0])
            pick = sp.csr_matrix(([-sign], ([0], [position])), shape=(1, 2 * k))
            A_ub = sp.vstack([sp.hstack([eye, -sp.diags(up)]), sp.hstack([-eye, -sp.diags(down)]), pick], format="csr")
            b_ub = np.r_[up * fixed, down * fixed, -need]
            box = np.r_[np.c_[np.full(k, -np.inf), np.full(k, np.inf)], np.c_[np.zeros(k), 1.0 - fixed]]
            A_eq = sp.hstack([A, sp.csr_matrix((len(rows), k))], format="csr")
            result = linprog(np.r_[np.zeros(k), self.costs[cells]], A_ub=A_ub, b_ub=b_ub, A_eq=A_eq,
                             b_eq=np.zeros(len(rows)), bounds=box, method="highs")  # fmt: skip
            self.lps += 1
            if result.status != 0:  # the cells near it do not suffice: suppress every cell of its equations' cells
                z[near] = True
                continue
            z[cells[result.x[k:] > _ZERO]] = True
        return z

    def _protects(self, pattern: np.ndarray, primaries: np.ndarray) -> bool:
        """Whether every attacker of the given primary cells falls short of nothing on ``pattern``."""
        for i in primaries:
            for sign in (1.0, -1.0):
                need = self.need[sign][i]
                if need > self.tol and self._attack(int(i), sign, pattern.astype(float))[0] < need - self.tol:
                    return False
        return True

    def _cleaned(self, pattern: np.ndarray, kept: np.ndarray) -> np.ndarray:
        """The repaired pattern less every cell the repairs added that no primary cell needs (tried dearest first:
        a cell is dropped when the attackers of the primary cells it was connected to still reach their need)."""
        pattern = pattern.copy()
        added = np.flatnonzero(pattern & ~kept & ~self.primary)
        for cell in added[np.argsort(-self.costs[added], kind="stable")]:
            connected = self._attackers(pattern).part(int(cell))
            primaries = connected[self.primary[connected]]
            pattern[cell] = False
            if not self._protects(pattern, primaries):
                pattern[cell] = True
        return pattern

    def solve(self, started: float, progress: Callable[[str], None] | None) -> tuple[np.ndarray, str]:
        """Cut the LP relaxation until its attackers are satisfied; then solve master MILPs, each pattern's short
        attackers cut off and the pattern repaired into a protecting one (the incumbent), until a master's own
        pattern protects at the solver's gap or the incumbent is within that gap of the masters' lower bound (least
        cost), or the time limit (the cheapest protecting pattern found)."""
        limit = self.solver.time_limit
        final_gap = _HIGHS_GAP if self.solver.mip_gap is None else self.solver.mip_gap

        def left() -> float | None:
            return None if limit is None else limit - (time.perf_counter() - started)

        def say(text: str) -> None:
            if progress is not None:
                progress(text)

        costs: list[float] = []
        for relaxation in range(1, _RELAXATION_ROUNDS + 1):
            if (left() or 1.0) <= 0:
                break
            added, _ = self._separate(self._relaxed())
            costs.append(self.relaxed_cost)
            say(f"relaxation {relaxation}: {added} cuts added, relaxed cost {self.relaxed_cost:.6g}")
            if not added or (len(costs) > _STALL and costs[-1] <= costs[-1 - _STALL] * (1 + _STALLED)):
                break
        gap = max(_LOOSE_GAP, final_gap)
        best, best_cost, lower = None, np.inf, -np.inf
        while True:
            time_left = left()
            if best is not None and time_left is not None and time_left <= 0:
                self.bound = lower
                return best, "time limit"
            z, optimal = self._master(time_left, gap, best)
            lower = max(lower, self.bound)
            self.rounds += 1
            added, short = self._separate(z)
            pattern = self._cleaned(self._repair(z, short), z > 0.5) if short else z > 0.5
            cost = float(self.costs[pattern].sum() - self.costs[self.primary].sum())
            if cost < best_cost:
                best, best_cost = pattern, cost
            say(f"round {self.rounds}: {int(z.sum())} cells suppressed, {added} cuts added; the cheapest protecting "
                f"pattern {int(best.sum())} cells, within {_relative(best_cost, lower):.2%} of the least cost")
            self.bound = lower
            if not short and gap <= final_gap:
                return best, "optimal" if optimal else "time limit"
            if best_cost <= lower + final_gap * max(abs(lower), 1e-12):
                return best, "optimal"
            if not short:
                gap = final_gap  # the loose pattern protects: solve again to the solver's own gap


def _relative(cost: float, lower: float) -> float:
    return (cost - lower) / max(abs(cost), 1e-12) if np.isfinite(lower) else float("nan")


def _near(T: sp.csr_matrix, Tc: sp.csc_matrix, cell: int) -> np.ndarray:
    """The cells within two equations of ``cell``."""
    cells = np.array([cell])
    for _ in range(2):
        rows = np.unique(Tc[:, cells].indices)
        cells = np.unique(np.r_[cells, T[rows].indices]) if len(rows) else cells
    return cells


class Attackers:
    """The intruder's LPs on one pattern: ``max s y_i`` subject to ``T y = 0`` and ``-L_k z_k <= y_k <= U_k z_k``
    over the connected part of the suppressed cells that holds ``i``. One HiGHS model per part, whose objective alone
    changes from attacker to attacker (the simplex starts from the last basis): measured on the 9,936-cell bench
    table, scipy's ``linprog`` took 5.4 ms an attacker, mostly its own wrapping, and the parts by sparse indexing
    another 2.7 ms."""

    def __init__(self, T: sp.csr_matrix, down: np.ndarray, up: np.ndarray, z: np.ndarray) -> None:
        self.T, self.z, self.down, self.up = T, z, down, up
        self.active = np.flatnonzero(z > _ZERO)
        labels, self.used, self.row_label = _components(sp.csr_matrix(T[:, self.active]))
        self.cell_label = np.full(len(z), -1)
        self.cell_label[self.active] = labels
        self.models: dict[int, tuple] = {}

    def part(self, cell: int) -> np.ndarray:
        """The suppressed cells connected to ``cell`` (itself alone when it is not suppressed)."""
        label = self.cell_label[cell]
        return np.flatnonzero(self.cell_label == label) if label >= 0 else np.array([cell])

    def _model(self, label: int) -> tuple:
        import highspy

        from .problem import _native_stdout_silenced

        if label not in self.models:
            cells = np.flatnonzero(self.cell_label == label)
            rows = self.used[self.row_label == label]
            A = sp.csr_matrix(self.T[rows][:, cells])
            with _native_stdout_silenced():  # highspy prints its banner when the first model is made
                highs = highspy.Highs()
            highs.setOptionValue("output_flag", False)
            highs.setOptionValue("threads", 1)  # as cvxpy's HiGHS runs here: one scheduler per process
            highs.addVars(len(cells), -self.down[cells] * self.z[cells], self.up[cells] * self.z[cells])
            if len(rows):
                zero = np.zeros(len(rows))
                highs.addRows(len(rows), zero, zero, A.nnz, A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32),
                              A.data.astype(float))  # fmt: skip
            self.models[label] = (highs, cells, rows, [None])
        return self.models[label]

    def attack(self, i: int, sign: float, name: Callable[[int], str]) -> tuple[float, np.ndarray]:
        """The optimum of ``max sign * y_i`` and the multipliers of every equation (HiGHS's row duals of the min
        problem; zero for the equations outside the part)."""
        import highspy

        label = self.cell_label[i]
        mu = np.zeros(self.T.shape[0])
        if label < 0:  # not suppressed: it cannot move
            return 0.0, mu
        highs, cells, rows, last = self._model(label)
        position = int(np.searchsorted(cells, i))
        if last[0] is not None and last[0] != position:
            highs.changeColCost(last[0], 0.0)
        highs.changeColCost(position, -sign)
        last[0] = position
        _run(highs)
        if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"the attacker's LP for {name(i)} failed: "
                               f"{highs.modelStatusToString(highs.getModelStatus())}")  # fmt: skip
        if len(rows):
            mu[rows] = np.asarray(highs.getSolution().row_dual)
        return -float(highs.getInfo().objective_function_value), mu


def _run(highs) -> None:
    """Run a HiGHS model with one thread. HiGHS keeps one thread scheduler per process, made by the first model that
    runs; a model asking for another number of threads does not run ("the scheduler has already been initialized").
    cvxpy's HiGHS here asks for one (:mod:`~bayessdc.cta.problem`), but a caller's own HiGHS may have made it with
    more: then the scheduler is made again, once."""
    import highspy

    if highs.run() == highspy.HighsStatus.kError and highs.getModelStatus() == highspy.HighsModelStatus.kNotset:
        highspy.Highs.resetGlobalScheduler(True)
        highs.run()
