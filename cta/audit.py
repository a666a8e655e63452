"""The intruder's audit of a published table: the interval each sensitive cell is known to lie in.

A published table (adjusted by controlled tabular adjustment, suppressed, or both) is audited the way
sdcTable's ``attack()`` and tau-ARGUS's audit audit a suppressed table: for every sensitive cell ``i`` the
intruder solves two linear programs, minimise and maximise the cell's true value ``x_i`` over every table
consistent with what is published and what is known, and so learns that ``x_i`` lies in ``[min_i, max_i]``.
Cox (2003, in ``../shared/papers``) sets controlled tabular adjustment beside complementary cell suppression
(his Example 1a) and asks of both that no sensitive value be estimated too closely; this module checks it on the
published numbers, not on the solver's intent.

What every intruder knows
-------------------------
The table's structure (every cell, every total, the additivity equations ``T x = 0`` of :class:`~.table.Table`:
each total is the sum of its cells, hierarchical and linked tables included) and a-priori bounds
``l_k <= x_k <= u_k`` on every cell's true value: non-negativity (``[0, inf)``) by default, optional ranges per
cell (``bounds=``). Which cells are sensitive and their protection levels are assumed known too (the worst case
tau-ARGUS and sdcTable assume: the audit asks whether the table protects them even so).

Intruder ``"suppression"`` (sdcTable ``attack()``, tau-ARGUS audit)
    A published cell is its true value: ``x_k = b_k``. A suppressed cell (NaN) is an unknown within its
    a-priori bounds. The equations hold exactly. The interval is the exact projection of this polyhedron
    (Fischetti & Salazar's attacker subproblems); no relaxation. A sensitive cell that is published has the
    interval ``[b_i, b_i]``.

Intruder ``"cta"`` (the intruder knows the method: Cox's MILP, :mod:`bayessdc.cta.problem`)
    A published cell is its true value plus an unknown adjustment, ``b_k = x_k + y_k``; the true table is
    additive (``T x = 0``), and so is the published one (it is checked). What bounds ``y``:

    * a non-sensitive cell's adjustment is at most its capacity, as CTA bounds it: ``|y_k| <= c x_k``
      (``capacity=c``, CTA's default ``capacity=0.2`` of the true value; linear in ``x`` because
      ``x_k >= 0``: ``b_k / (1 + c) <= x_k <= b_k / (1 - c)``), or ``|y_k| <= e_k`` for an absolute capacity
      (``absolute_capacity=``). Where the intruder is given no capacity the adjustment is unbounded and the
      cell says nothing beyond its a-priori range; with no capacity anywhere the interval is the a-priori range
      narrowed by the equations alone (for an interior cell of a table with published margins, its a-priori
      range);
    * a sensitive cell's adjustment is at least its protection level, downward or upward: the direction set
      ``y_i <= -LPL_i`` (moved down, so ``x_i >= b_i + LPL_i``) or ``y_i >= UPL_i`` (moved up, so
      ``x_i <= b_i - UPL_i``). The intruder's set for ``x_i`` is then the union of two intervals
      ``[min_F, b_i - UPL_i] U [b_i + LPL_i, max_F]`` around the hole ``(b_i - UPL_i, b_i + LPL_i)``; the
      audit reports its hull (``min``, ``max``) and the hole (``hole_lower``, ``hole_upper``). ``[min_F,
      max_F]`` is the projection of the convex set in which the other sensitive cells' direction sets are
      relaxed to their hull (they keep their a-priori bounds, and ``widen``'s below): that is what the two LPs
      per cell give, and the full-knowledge intruder's set lies inside it. Where both LP optima meet every other
      sensitive cell's direction set the hull is exactly the full-knowledge intruder's; where not, the relaxation
      may be far wider (on a 3 x 3 table at capacity 0.1, ``[24.4, 56.4]`` against ``[55, 56.4]``), so by
      default (``exact=True``) the cell is solved again as the MILP that keeps every direction set (one binary
      per sensitive published cell of its part, big-M bounds from the LP hulls), whose hull is the full-knowledge
      intruder's (checked against the enumeration of every direction pattern); the column ``exact`` says which
      cells have it;
    * with ``widen=w`` the intruder also knows CTA's upper bound ``|y_i| <= q_i = w p_i`` (Cox's ``q_i``;
      ``release/model.json`` states ``widen``). Not assumed by default: with ``w = 1`` (CTA's default)
      the sensitive cell's true value is one of the two points ``b_i -+ p_i``, and no interval criterion can
      pass (the hull ``[x_i, x_i + 2 p_i]`` or ``[x_i - 2 p_i, x_i]`` ends at the true value);
    * ``balanced=`` sets of cells whose adjustments sum to zero (``preserve_mean``, ``mean_subsets``); the
      constraint ``L(y) = 0`` is not linear in the true values and is not used;
    * suppressed cells (NaN) are unknowns within their a-priori bounds, as above.

Integral tables (``integer=True``: count tables, or integer adjustments of integer published values) have
integral true values, so the ends are rounded inward (``ceil(min)``, ``floor(max)``), as an intruder would.

The protection judged
---------------------
A sensitive cell with true value ``x`` and required protection ``LPL`` (downward) and ``UPL`` (upward), the
levels of :class:`~.rules.Protection` (the p% and (n, k) rules give ``LPL = UPL``; the threshold rule on
counts ``LPL = x``, ``UPL = n - x``), is protected when the intruder's interval covers its protection range:
``min <= x - LPL`` and ``max >= x + UPL``, each end capped by the cell's a-priori range (``x - LPL`` below
the a-priori minimum asks for ``min`` at that minimum; Fischetti & Salazar's assumption ``LPL <= x - l``), to
the tolerance ``tolerance * max(1, max |x|)`` of :func:`~.quality.quality_report`.

Timing: two LPs per sensitive cell (and an MILP for each end the LP does not attain), solved with HiGHS through
one parametrised cvxpy problem per connected part of the unknowns (only the objective changes from cell to cell;
each solve starts afresh: cvxpy's warm start, HiGHS given the previous optimum, made HiGHS 1.16's MIP report a
wrong optimum), measured on 2 cores: about 20 ms per sensitive cell on Cox's 4 x 9 table (mostly cvxpy's own
time), under either intruder; on a hierarchical table of 9,936 cells (province > arrondissement > municipality,
240 municipalities, by 35 sectors; 1,572 equations) with 168 sensitive cells, 0.15 to 0.25 s per cell for the CTA
intruder's two LPs (each over the whole table) and 0.77 s per cell with the MILPs, which every end needed there
(129 s in all); about 10 ms per cell for a suppressed table, whose parts are small.

References
----------
.. [1] Cox, L. H. (2003). *Preserving confidentiality and quality of tabular data: are safe data necessarily
    inferior data?* BTS Confidentiality Seminar (Examples 1a and 1b; the MILP of controlled tabular adjustment).
.. [2] Fischetti, M. & Salazar-Gonzalez, J. J. (2001). Solving the cell suppression problem on tabular data with
    linear constraints. *Management Science* 47(7), 1008-1027 (the attacker subproblems, protection levels).
.. [3] Meindl, B. sdcTable: ``attack()``, the intruder's LPs for every primary cell of a protected table.
.. [4] Hundepool, A. et al. *tau-ARGUS user's manual*: the audit of a suppressed table (the feasibility
    interval of every cell).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .rules import Protection, protection_from_table
from .settings import DEFAULT_SOLVER, SolverSettings
from .table import Table

__all__ = ["AUDIT_COLUMNS", "INTRUDERS", "AuditInput", "audit_table"]

#: The intruder models (see the module docstring).
INTRUDERS = ("suppression", "cta")

#: Columns of the audit frame after the table's label columns.
AUDIT_COLUMNS = (
    "cell", "name", "true", "published", "min", "max", "required_lower", "required_upper", "protected", "fails",
    "hole_lower", "hole_upper", "exact",
)  # fmt: skip


@dataclass(frozen=True)
class AuditInput:
    """A published table and what its intruder knows: the arguments of :func:`audit_table`, held together so that a
    release can hand them to the measure ``audited_cells`` (:attr:`bayessdc.measures.MeasureInput.audit`).

    Attributes
    ----------
    table
        The table's cells with their true values, and its additivity equations.
    published
        The published value of every cell, NaN for a suppressed cell.
    protection
        The required downward and upward protection of every cell (zero for a non-sensitive cell); None: the table's
        ``protection`` column.
    intruder, bounds, capacity, absolute_capacity, widen, balanced, integer, exact, solver
        As :func:`audit_table` takes them.
    """

    table: Table
    published: np.ndarray
    protection: Protection | None = None
    intruder: str = "suppression"
    bounds: tuple | pd.DataFrame | None = None
    capacity: float | None = None
    absolute_capacity: np.ndarray | None = None
    widen: float | None = None
    balanced: tuple[np.ndarray, ...] = ()
    integer: bool | None = None
    exact: bool = True
    solver: SolverSettings = DEFAULT_SOLVER

    def run(self) -> pd.DataFrame:
        """The audit frame of :func:`audit_table`."""
        return audit_table(
            self.table, self.published, self.protection, intruder=self.intruder, bounds=self.bounds,
            capacity=self.capacity, absolute_capacity=self.absolute_capacity, widen=self.widen,
            balanced=self.balanced, integer=self.integer, exact=self.exact, solver=self.solver,
        )  # fmt: skip


def audit_table(
    table: Table,
    published: np.ndarray | Sequence[float] | pd.Series | pd.DataFrame,
    protection: Protection | None = None,
    *,
    intruder: str = "suppression",
    bounds: tuple | pd.DataFrame | None = None,
    capacity: float | None = None,
    absolute_capacity: np.ndarray | Sequence[float] | None = None,
    widen: float | None = None,
    balanced: Sequence[np.ndarray] = (),
    integer: bool | None = None,
    exact: bool = True,
    solver: SolverSettings = DEFAULT_SOLVER,
    tolerance: float = 1e-6,
) -> pd.DataFrame:
    """The interval an intruder derives for every sensitive cell of a published table, and whether it protects it.

    Parameters
    ----------
    table
        The table (:func:`~bayessdc.cta.table_from_long`, :func:`~bayessdc.cta.link_tables` ...): its cells, their
        true values and the additivity equations.
    published
        The published value of every cell in the table's order (NaN: suppressed), or a frame with the table's
        label columns and one column ``published`` (every cell once; an empty value: suppressed).
    protection
        The required protection (:class:`~bayessdc.cta.Protection`, as the rules give it); by default the table's
        ``protection`` column.
    intruder
        ``"suppression"`` (published cells exact) or ``"cta"`` (published cells adjusted by a method the intruder
        knows); see the module docstring.
    bounds
        The intruder's a-priori ranges of the true values: ``(lower, upper)``, each a number or one per cell, or a
        frame with the table's label columns and columns ``lower`` and/or ``upper`` for the cells it names (a
        missing value: the default). Default ``[0, inf)`` for every cell.
    capacity
        CTA intruder: every non-sensitive cell's adjustment is at most this fraction of its true value (CTA's
        ``capacity``). None: not known.
    absolute_capacity
        CTA intruder: per cell, an absolute bound on its adjustment (NaN: not given, ``capacity`` applies).
    widen
        CTA intruder: a sensitive cell's adjustment is also at most ``widen`` times its protection (CTA's
        ``widen``, Cox's ``q_i``). None: not known (the default).
    balanced
        CTA intruder: boolean masks of published cells whose adjustments sum to zero (CTA's ``preserve_mean``
        over the sensitive cells, ``mean_subsets``).
    integer
        The true values are integers (the ends are rounded inward); default: a count table.
    exact
        CTA intruder: where a cell's LP ends are not attained under every other sensitive cell's direction set,
        solve the MILP that keeps them all (one binary per sensitive published cell of its part), so that the hull
        is the full-knowledge intruder's; False: report the LP hull (an outer bound) and ``exact`` false.
    solver
        The solver and its limits (:class:`~bayessdc.cta.SolverSettings`, HiGHS by default).
    tolerance
        Relative tolerance of the checks and of the protection judged, times ``max(1, max |x|)``.

    Returns
    -------
    pandas.DataFrame
        One row per sensitive cell, in the table's order: the table's label columns, then ``cell`` (its
        position), ``name``, ``true``, ``published`` (NaN: suppressed), ``min`` and ``max`` (the hull of the
        intruder's set), ``required_lower`` and ``required_upper`` (``LPL``, ``UPL``), ``protected``, ``fails``
        (``""``, ``"lower"``, ``"upper"`` or ``"both"``: which side of the protection range the interval does
        not reach), ``hole_lower`` and ``hole_upper`` (CTA: the open interval the direction set excludes; NaN
        otherwise) and ``exact`` (both ends are attained under every sensitive cell's direction set; always
        true for the suppression intruder). ``attrs`` holds ``intruder`` (the model in words), ``lps`` (how
        many LPs and MILPs were solved) and ``seconds``.

    Raises
    ------
    ValueError
        Before anything is solved, naming the cell: a published or true total that does not add up, an a-priori
        range that excludes a cell's published (suppression) or true value, a frame naming a cell the table
        has not got, a published cell that differs from its true value under the suppression intruder, what the
        intruder knows of a cell contradicting itself; after solving, a solver failure.
    TypeError
        ``solver`` not a :class:`~bayessdc.cta.SolverSettings`.

    Examples
    --------
    A 2 x 2 table with its margins, the four interior cells suppressed: cell (a, x) = 10 lies within its
    Frechet bounds ``[max(0, 30 - 60), min(30, 40)]``.

    >>> import numpy as np, pandas as pd
    >>> from bayessdc import cta
    >>> frame = pd.DataFrame({"r": ["a", "a", "b", "b"], "c": ["x", "y", "x", "y"], "v": [10.0, 20, 30, 40],
    ...                       "p": [3.0, 0, 0, 0]})
    >>> table = cta.table_from_long(frame, "r,c", "v", protection="p")
    >>> published = np.where(table.cells["interior"], np.nan, table.values)
    >>> audit = audit_table(table, published)
    >>> audit[["name", "min", "max", "protected"]]
              name  min   max  protected
    0  r=a, c=x  0.0  30.0       True
    """
    started = time.perf_counter()
    if not isinstance(solver, SolverSettings):
        raise TypeError(f"solver= takes SolverSettings(...), not {type(solver).__name__} {solver!r}")
    if intruder not in INTRUDERS:
        raise ValueError(f"intruder must be one of {INTRUDERS}, not {intruder!r}")
    if intruder == "suppression":
        given = [name for name, value in (("capacity", capacity), ("absolute_capacity", absolute_capacity),
                                          ("widen", widen), ("balanced", balanced or None)) if value is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: what the intruder knows of an adjustment, for intruder='cta'")
    n = table.n_cells
    true = table.values
    if protection is None:
        protection = protection_from_table(table)
    if protection.lower.shape != (n,):
        raise ValueError(f"protection needs one level per cell ({n}), got {protection.lower.shape[0]}")
    if integer is None:
        integer = table.kind == "count"
    b = _published(table, published)
    lower, upper = _a_priori(table, bounds)
    scale = max(1.0, float(np.nanmax(np.abs(np.concatenate([true, b])), initial=0.0)))
    atol = tolerance * scale
    sensitive = protection.sensitive
    suppressed = np.isnan(b)
    _check_input(table, b, true, lower, upper, intruder, atol)

    lpl, upl = protection.lower, protection.upper
    cta_model = intruder == "cta"
    hole = cta_model & sensitive & ~suppressed
    if cta_model:
        lo, hi = _cta_boxes(table, b, lower, upper, sensitive, lpl, upl, capacity, absolute_capacity, widen, atol)
    else:
        lo, hi = lower.copy(), upper.copy()
    unknown = suppressed | cta_model
    eq_rows, eq_rhs = _balance_rows(table, b, balanced, cta_model) if len(balanced) else (None, None)

    targets = np.flatnonzero(sensitive)
    low_end = np.full(n, np.nan)
    high_end = np.full(n, np.nan)
    low_attained, high_attained = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
    known_targets = targets[~unknown[targets]]
    low_end[known_targets] = high_end[known_targets] = b[known_targets]
    unit = 10.0 ** max(0, int(np.floor(np.log10(scale))) - 4)  # as adjust_table: HiGHS's tolerances are absolute
    lp_tol = 1e-5 * unit  # what an LP optimum may be off by (HiGHS's feasibility tolerance, 1e-7 of a unit, and more)
    hole_lower = np.where(hole, b - upl, np.nan)
    hole_upper = np.where(hole, b + lpl, np.nan)
    lps = 0
    for part, rows, rhs in _parts(table.additivity, b, unknown, eq_rows, eq_rhs):
        wanted = part[sensitive[part]]
        if not len(wanted):
            continue
        if rows is None:  # a lone unknown in no equation: its box (less its hole) is all the intruder knows
            (cell,) = part
            low_end[cell], high_end[cell], *_ = _less_hole(lo[cell], hi[cell], hole_lower[cell], hole_upper[cell],
                                                           lp_tol)  # fmt: skip
            continue
        scaled = _Part(rows, rhs / unit, lo[part] / unit, hi[part] / unit, hole[part], hole_lower[part] / unit,
                       hole_upper[part] / unit, lp_tol / unit, solver)  # fmt: skip
        position = {cell: k for k, cell in enumerate(part)}
        for cell in wanted:
            low, high, low_attained[cell], high_attained[cell] = scaled.hull(position[cell], table.describe_cell(cell))
            low_end[cell], high_end[cell] = low * unit, high * unit
        lps += scaled.solved
        short = wanted[~(low_attained[wanted] & high_attained[wanted])]
        if exact and cta_model and len(short):
            scaled.relaxed_bounds(np.array([position[c] for c in wanted]), low_end[wanted] / unit,
                                  high_end[wanted] / unit)  # fmt: skip
            for cell in short:
                for sign, ends, attained in ((1.0, low_end, low_attained), (-1.0, high_end, high_attained)):
                    if not attained[cell]:
                        found = scaled.exact_end(position[cell], sign, table.describe_cell(cell))
                        if found is not None:
                            ends[cell], attained[cell] = found * unit, True
            lps += scaled.solved_exact
    if integer:
        low_end = np.where(np.isfinite(low_end), np.ceil(low_end - lp_tol), low_end)
        high_end = np.where(np.isfinite(high_end), np.floor(high_end + lp_tol), high_end)
    low_end, high_end = low_end + 0.0, high_end + 0.0  # no -0.0

    need_low = np.maximum(true - lpl, lower)
    need_high = np.minimum(true + upl, upper)
    fails_low = low_end > need_low + atol
    fails_high = high_end < need_high - atol
    fails = np.select([fails_low & fails_high, fails_low, fails_high], ["both", "lower", "upper"], "")
    labels = [c for c in table.label_columns if c not in AUDIT_COLUMNS]  # ``name`` names the cell whatever they are
    frame = table.cells.iloc[targets][labels].reset_index(drop=True)
    columns = {
        "cell": targets, "name": [table.describe_cell(i) for i in targets], "true": true[targets],
        "published": b[targets], "min": low_end[targets], "max": high_end[targets],
        "required_lower": lpl[targets], "required_upper": upl[targets], "protected": fails[targets] == "",
        "fails": fails[targets], "hole_lower": hole_lower[targets], "hole_upper": hole_upper[targets],
        "exact": low_attained[targets] & high_attained[targets],
    }  # fmt: skip
    for name, values in columns.items():
        frame[name] = values
    frame.attrs.update(intruder=_describe(intruder, capacity, absolute_capacity, widen, balanced, integer),
                       lps=lps, seconds=time.perf_counter() - started)  # fmt: skip
    return frame


def _describe(intruder: str, capacity, absolute_capacity, widen, balanced, integer: bool) -> str:
    """The intruder model in words (the frame's ``attrs["intruder"]``)."""
    if intruder == "suppression":
        text = "suppression: published cells exact, suppressed cells within their a-priori ranges, totals exact"
    else:
        known = []
        if capacity is not None:
            known.append(f"non-sensitive adjustments at most {capacity:g} of the true value")
        if absolute_capacity is not None:
            known.append("absolute capacities of some cells")
        if capacity is None and absolute_capacity is None:
            known.append("non-sensitive adjustments unbounded")
        known.append("sensitive adjustments at least the protection, down or up (hull reported)")
        if widen is not None:
            known.append(f"and at most {widen:g} times it")
        if len(balanced):
            known.append(f"{len(balanced)} set(s) of adjustments summing to zero")
        text = "cta: true = published - adjustment, true table additive; " + ", ".join(known)
    return text + ("; integral values" if integer else "")


def _published(table: Table, published) -> np.ndarray:
    """The published values as one float per cell (NaN: suppressed)."""
    if isinstance(published, pd.DataFrame):
        if "published" not in published:
            raise ValueError("a published frame needs the table's label columns and a column 'published'")
        positions = _positions(table, published, "published table")
        if len(set(positions.tolist())) != len(positions):
            dup = pd.Series(positions).duplicated()
            raise ValueError(f"the published table names {table.describe_cell(positions[dup.to_numpy()][0])} twice")
        missing = np.setdiff1d(np.arange(table.n_cells), positions)
        if len(missing):
            raise ValueError(
                f"the published table lacks {table.describe_cell(missing[0])}"
                + (f" and {len(missing) - 1} other cell(s)" if len(missing) > 1 else "")
                + "; give a suppressed cell with no value"
            )
        values = np.full(table.n_cells, np.nan)
        values[positions] = pd.to_numeric(published["published"], errors="raise").to_numpy(dtype=float)
        return values
    values = np.asarray(published, dtype=float)
    if values.shape != (table.n_cells,):
        raise ValueError(f"published needs one value per cell ({table.n_cells}), got shape {values.shape}")
    return values.copy()


def _positions(table: Table, frame: pd.DataFrame, what: str) -> np.ndarray:
    """The table position of every row of ``frame`` (matched on the label columns); a row naming a cell the table
    has not got is refused, naming it."""
    columns = table.label_columns
    missing = [c for c in columns if c not in frame]
    if missing:
        raise ValueError(f"the {what} lacks the label column(s) {', '.join(missing)}")
    index = {key: i for i, key in enumerate(table.cells[columns].astype(str).itertuples(index=False, name=None))}
    keys = frame[columns].astype(str).apply(lambda s: s.str.strip()).itertuples(index=False, name=None)
    positions = []
    for key in keys:
        if key not in index:
            named = ", ".join(f"{c}={v}" for c, v in zip(columns, key, strict=True))
            raise ValueError(f"the {what} names the cell {named}, which the table has not got")
        positions.append(index[key])
    return np.asarray(positions, dtype=np.int64)


def _a_priori(table: Table, bounds) -> tuple[np.ndarray, np.ndarray]:
    """The a-priori lower and upper bound of every cell's true value (default ``[0, inf)``)."""
    n = table.n_cells
    lower, upper = np.zeros(n), np.full(n, np.inf)
    if bounds is None:
        return lower, upper
    if isinstance(bounds, pd.DataFrame):
        if not {"lower", "upper"} & set(bounds):
            raise ValueError("a bounds frame needs a column 'lower' and/or 'upper'")
        positions = _positions(table, bounds, "bounds")
        for column, target in (("lower", lower), ("upper", upper)):
            if column in bounds:
                given = pd.to_numeric(bounds[column], errors="raise").to_numpy(dtype=float)
                ok = ~np.isnan(given)
                target[positions[ok]] = given[ok]
        return lower, upper
    if len(bounds) != 2:
        raise ValueError("bounds are (lower, upper): two numbers, or two arrays of one value per cell")
    result = []
    for given, default in zip(bounds, (lower, upper), strict=True):
        if given is None:
            result.append(default)
            continue
        values = np.broadcast_to(np.asarray(given, dtype=float), (n,)).copy()
        result.append(np.where(np.isnan(values), default, values))
    return result[0], result[1]


def _check_input(table: Table, b: np.ndarray, true: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                 intruder: str, atol: float) -> None:
    """Refuse, naming the cell, what cannot be audited (before anything is solved)."""
    name = table.describe_cell
    shown = ~np.isnan(b)
    T = sp.csr_matrix(table.additivity)
    true_residual = T @ true
    complete = np.asarray(abs(T) @ (~shown).astype(float) == 0).ravel()  # equations of published cells only
    published_residual = T @ np.where(shown, b, 0.0)
    checks = [
        (np.isinf(b), lambda i: f"published value of {name(i)} is infinite"),
        (np.isnan(true), lambda i: f"true value of {name(i)} is missing"),
        (lower > upper, lambda i: f"a-priori range of {name(i)} is empty ([{lower[i]:.12g}, {upper[i]:.12g}])"),
    ]
    if intruder == "suppression":  # the published values are true values: the bounds hold them
        checks.append((shown & ((b < lower - atol) | (b > upper + atol)), lambda i: (
            f"a-priori range [{lower[i]:.12g}, {upper[i]:.12g}] of {name(i)} excludes its published value {b[i]:.12g}"
        )))  # fmt: skip
    checks += [
        ((true < lower - atol) | (true > upper + atol), lambda i: (
            f"a-priori range [{lower[i]:.12g}, {upper[i]:.12g}] of {name(i)} excludes its true value {true[i]:.12g}")),
        (np.abs(true_residual) > atol, lambda e: (
            f"true total {name(table.total_cell[e])} does not add up (off by {true_residual[e]:.12g})")),
        (complete & (np.abs(published_residual) > atol), lambda e: (
            f"published total {name(table.total_cell[e])} does not add up (off by {published_residual[e]:.12g})")),
    ]  # fmt: skip
    if intruder == "suppression":
        checks.append((shown & (np.abs(b - true) > atol), lambda i: (
            f"{name(i)} is published as {b[i]:.12g} but is {true[i]:.12g}: a suppressed table publishes its cells "
            "unchanged (an adjusted one: intruder='cta')"
        )))  # fmt: skip
    for failing, message in checks:
        bad = np.flatnonzero(failing)
        if len(bad):
            more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
            raise ValueError("; ".join(message(i) for i in bad[:10]) + more)


def _cta_boxes(table: Table, b: np.ndarray, lower: np.ndarray, upper: np.ndarray, sensitive: np.ndarray,
               lpl: np.ndarray, upl: np.ndarray, capacity: float | None, absolute_capacity, widen: float | None,
               atol: float) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, the range of its true value the CTA intruder knows besides the equations: the a-priori range,
    narrowed by the capacity of a non-sensitive published cell and by ``widen`` for a sensitive one."""
    n = table.n_cells
    lo, hi = lower.copy(), upper.copy()
    shown = ~np.isnan(b)
    plain = shown & ~sensitive
    if capacity is not None:
        if not np.isscalar(capacity) or not capacity >= 0:
            raise ValueError(f"capacity is a fraction >= 0 of each cell's true value, not {capacity!r}")
        negative = np.flatnonzero(plain & (lower < 0))
        if len(negative):
            raise ValueError(f"a capacity relative to the true value needs a-priori lower bounds >= 0; "
                             f"{table.describe_cell(negative[0])} may be negative (give absolute_capacity=)")
        c = float(capacity)
        relative = plain.copy()
        lo[relative] = np.maximum(lo[relative], b[relative] / (1.0 + c))  # b - x <= c x
        if c < 1:
            hi[relative] = np.minimum(hi[relative], b[relative] / (1.0 - c))  # x - b <= c x
    if absolute_capacity is not None:
        e = np.asarray(absolute_capacity, dtype=float)
        if e.shape != (n,):
            raise ValueError(f"absolute_capacity needs one value per cell ({n}), got shape {e.shape}")
        bad = np.flatnonzero(e < 0)
        if len(bad):
            raise ValueError(f"absolute capacity of {table.describe_cell(bad[0])} is negative ({e[bad[0]]:.12g})")
        given = plain & ~np.isnan(e)
        if capacity is not None:  # the absolute capacity replaces the relative one where given, as in adjust_table
            lo[given], hi[given] = lower[given], upper[given]
        lo[given] = np.maximum(lo[given], b[given] - e[given])
        hi[given] = np.minimum(hi[given], b[given] + e[given])
    if widen is not None:
        if not widen >= 1:
            raise ValueError(f"widen is at least 1 (q_i >= p_i), not {widen!r}")
        moved = shown & sensitive
        lo[moved] = np.maximum(lo[moved], b[moved] - widen * upl[moved])
        hi[moved] = np.minimum(hi[moved], b[moved] + widen * lpl[moved])
    empty = np.flatnonzero(lo > hi + atol)
    if len(empty):
        raise ValueError("; ".join(
            f"what the intruder knows of {table.describe_cell(i)} contradicts itself: its a-priori range "
            f"[{lower[i]:.12g}, {upper[i]:.12g}] and its published value {b[i]:.12g} with the method's bounds leave "
            f"[{lo[i]:.12g}, {hi[i]:.12g}]" for i in empty[:10]))  # fmt: skip
    hi = np.maximum(hi, lo)
    both_sides = np.flatnonzero(shown & sensitive & (lo > b - upl + atol) & (hi < b + lpl - atol))
    if len(both_sides):
        raise ValueError("; ".join(
            f"the a-priori range of {table.describe_cell(i)} leaves it no room to have moved by its protection "
            f"from its published value {b[i]:.12g}" for i in both_sides[:10]))  # fmt: skip
    return lo, hi


def _balance_rows(table: Table, b: np.ndarray, balanced: Sequence[np.ndarray], cta_model: bool
                  ) -> tuple[sp.csr_matrix, np.ndarray]:
    """The rows ``sum_{k in S} x_k = sum_{k in S} b_k`` of the sets whose adjustments sum to zero."""
    if not cta_model:
        raise ValueError("balanced= applies to the CTA intruder (intruder='cta')")
    masks = [np.asarray(m, dtype=bool) for m in balanced]
    for mask in masks:
        if mask.shape != (table.n_cells,):
            raise ValueError(f"a balanced set needs one flag per cell ({table.n_cells})")
        hidden = np.flatnonzero(mask & np.isnan(b))
        if len(hidden):
            raise ValueError(f"a balanced set holds the suppressed cell {table.describe_cell(hidden[0])}")
    rows = sp.csr_matrix(np.vstack(masks).astype(float))
    return rows, np.array([b[m].sum() for m in masks])


def _parts(T: sp.spmatrix, b: np.ndarray, unknown: np.ndarray, extra_rows: sp.csr_matrix | None,
           extra_rhs: np.ndarray | None):
    """The connected parts of the unknowns: ``(cells, rows, rhs)``, with ``rows @ x[cells] == rhs`` the equations
    that hold them once the known cells are put in (``rows`` None for an unknown in no equation)."""
    T = sp.csr_matrix(T)
    rhs_all = -(T[:, np.flatnonzero(~unknown)] @ b[~unknown]) if (~unknown).any() else np.zeros(T.shape[0])
    if extra_rows is not None:
        T = sp.vstack([T, extra_rows], format="csr")
        rhs_all = np.concatenate([rhs_all, extra_rhs])
    cells = np.flatnonzero(unknown)
    A = sp.csr_matrix(T[:, cells])
    cell_label, used, row_label = _components(A)
    A, rhs_all = A[used], rhs_all[used]
    order = np.argsort(cell_label, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(cell_label[order]) != 0])
    row_order = np.argsort(row_label, kind="stable")
    for group in np.split(order, starts[1:]):
        label = cell_label[group[0]]
        rows = row_order[np.searchsorted(row_label[row_order], label, "left"):
                         np.searchsorted(row_label[row_order], label, "right")]
        if not len(rows):
            yield cells[group], None, None
            continue
        yield cells[group], sp.csr_matrix(A[rows][:, group]), rhs_all[rows]


def _components(A: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The connected parts of the columns of ``A`` (cells) linked through its rows (equations): each column's part,
    the rows that hold any column, and each such row's part."""
    from scipy.sparse.csgraph import connected_components

    used = np.flatnonzero(A.getnnz(axis=1) > 0)
    pattern = sp.csr_matrix(abs(A[used]))
    pattern.data[:] = 1.0
    k = A.shape[1]
    graph = sp.bmat([[None, pattern.T], [pattern, None]], format="csr") if len(used) else sp.csr_matrix((k, k))
    _, labels = connected_components(graph, directed=False)
    return labels[:k], used, labels[k:]


class _Part:
    """The intruder's problems over one connected part of the unknowns (in scaled units): the LP ``min s x_k``
    subject to the part's equations and boxes, one parametrised cvxpy problem whose objective alone changes from
    cell to cell; and, built when first needed, the MILP in which every sensitive published cell keeps its
    direction set (one binary each), for the cells whose LP ends the relaxation may have widened."""

    def __init__(self, rows: sp.csr_matrix, rhs: np.ndarray, lo: np.ndarray, hi: np.ndarray, hole: np.ndarray,
                 hole_lower: np.ndarray, hole_upper: np.ndarray, tol: float, solver: SolverSettings) -> None:
        import cvxpy as cp

        self.size = rows.shape[1]
        self.rows, self.rhs, self.lo, self.hi = rows, rhs, lo, hi
        self.hole, self.hole_lower, self.hole_upper, self.tol = hole, hole_lower, hole_upper, tol
        self.solver = solver
        self.x = cp.Variable(self.size, bounds=[lo, hi])
        self.c = cp.Parameter(self.size)
        self.problem = cp.Problem(cp.Minimize(self.c @ self.x), [rows @ self.x == rhs])
        self.solved = self.solved_exact = 0
        self.relaxed: tuple[np.ndarray, np.ndarray] | None = None
        self.milp = None

    def _extreme(self, problem, x, c, k: int, sign: float, name: str, milp: bool = False
                 ) -> tuple[float, np.ndarray | None]:
        """``min x_k`` (``sign`` 1) or ``max x_k`` (-1) of ``problem``: the value and the optimal point (None: the
        end is infinite). A time-limited MILP gives its best point found, whose value is inside the true end (the
        interval reported is then narrower than the intruder's: the audit errs towards refusing)."""
        from .problem import _solve

        s = self.solver
        # cvxpy hands HiGHS the previous solve's point as a start (warm_start, on by default); with a changed
        # objective HiGHS 1.16's MIP then reported a wrong optimum (on Cox's table a minimum above the true value,
        # depending on the order of the cells): every solve starts afresh.
        options = {"warm_start": False, **(s.solver_options or {})}
        objective = np.zeros(self.size)
        objective[k] = sign
        c.value = objective
        status, _ = _solve(problem, s.solver, s.time_limit, s.mip_gap if milp else None, s.verbose, options)
        if status == "infeasible_or_unbounded":  # presolve cannot tell: a zero objective can
            c.value = np.zeros(self.size)
            feasible, _ = _solve(problem, s.solver, s.time_limit, None, s.verbose, options)
            status = "unbounded" if feasible in ("optimal", "optimal_inaccurate", "user_limit") else "infeasible"
        if status in ("unbounded", "unbounded_inaccurate"):
            return -sign * np.inf, None
        if status in ("infeasible", "infeasible_inaccurate"):
            if milp:
                raise _NoExactHull
            raise ValueError(
                f"the published table and what the intruder is said to know admit no true table around {name}: "
                "check the a-priori ranges and the method's bounds"
            )
        if status not in ("optimal", "optimal_inaccurate", "user_limit") or x.value is None:
            if milp:
                raise _NoExactHull
            raise ValueError(f"the solver found no {'minimum' if sign > 0 else 'maximum'} of {name} (status {status})")
        point = np.asarray(x.value)
        return float(point[k]), point

    def _meets_directions(self, point: np.ndarray | None, k: int) -> bool:
        """Whether every sensitive published cell but ``k`` lies outside its hole at ``point``."""
        others = self.hole.copy()
        others[k] = False
        if not others.any():
            return True
        if point is None:
            return False
        inside = others & (point > self.hole_lower + self.tol) & (point < self.hole_upper - self.tol)
        return not inside.any()

    def hull(self, k: int, name: str) -> tuple[float, float, bool, bool]:
        """The LP hull of cell ``k``'s set: ``(min, max, min attained, max attained)``, an end attained when the
        LP reaches it at a point that meets every other sensitive cell's direction set (and the cell's own hole did
        not move it)."""
        low, at_low = self._extreme(self.problem, self.x, self.c, k, 1.0, name)
        high, at_high = self._extreme(self.problem, self.x, self.c, k, -1.0, name)
        self.solved += 2
        low, high = max(low, self.lo[k]), min(high, self.hi[k])
        low, high, low_kept, high_kept = _less_hole(low, high, self.hole_lower[k], self.hole_upper[k], self.tol)
        return low, high, low_kept and self._meets_directions(at_low, k), high_kept and self._meets_directions(
            at_high, k)

    def relaxed_bounds(self, positions: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
        """The LP hulls of the part's sensitive cells: the bounds of the MILP's big-M constraints."""
        lower, upper = np.full(self.size, np.nan), np.full(self.size, np.nan)
        lower[positions], upper[positions] = low, high
        self.relaxed = (lower, upper)

    def exact_end(self, k: int, sign: float, name: str) -> float | None:
        """Cell ``k``'s minimum (``sign`` 1) or maximum (-1) under every sensitive cell's direction set (the
        MILP), or None where it cannot be posed (an infinite LP end) or solved."""
        import cvxpy as cp

        if self.milp is None:
            held = np.flatnonzero(self.hole)
            low, high = (bound[held] for bound in self.relaxed)
            if not (np.isfinite(low).all() and np.isfinite(high).all()):
                self.milp = False
            else:
                x = cp.Variable(self.size, bounds=[self.lo, self.hi])
                c = cp.Parameter(self.size)
                above = cp.Variable(len(held), boolean=True)  # 1: moved down, the true value above the hole
                gap_low, gap_high = self.hole_lower[held], self.hole_upper[held]
                constraints = [
                    self.rows @ x == self.rhs,
                    x[held] <= gap_low + cp.multiply(np.maximum(high - gap_low, 0.0), above),
                    x[held] >= gap_high - cp.multiply(np.maximum(gap_high - low, 0.0), 1 - above),
                ]
                self.milp = (cp.Problem(cp.Minimize(c @ x), constraints), x, c)
        if self.milp is False:
            return None
        problem, x, c = self.milp
        self.solved_exact += 1
        try:
            value, _ = self._extreme(problem, x, c, k, sign, name, milp=True)
        except _NoExactHull:
            return None
        return max(value, self.lo[k]) if sign > 0 else min(value, self.hi[k])


def _less_hole(low: float, high: float, gap_low: float, gap_high: float, tol: float
               ) -> tuple[float, float, bool, bool]:
    """The hull of ``[low, high]`` less the open hole ``(gap_low, gap_high)`` of a sensitive cell's direction set
    (no hole: NaN ends), and whether each end is that of ``[low, high]`` itself. When the whole interval lies in the
    hole the published value contradicts the method (the protection was not met): the interval is kept, as it holds
    the true value."""
    if np.isnan(gap_low):
        return low, high, True, True
    low_kept = high_kept = True
    if gap_low + tol < low < gap_high and high >= gap_high - tol:  # nothing below the hole
        low, low_kept = gap_high, False
    if gap_low < high < gap_high - tol and low <= gap_low + tol:  # nothing above the hole
        high, high_kept = gap_low, False
    return low, high, low_kept, high_kept


class _NoExactHull(Exception):
    """The MILP of a cell found nothing (infeasible, or no point within the limits): its LP hull stands."""
