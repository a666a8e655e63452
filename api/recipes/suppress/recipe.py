"""Complementary cell suppression as one verb: :func:`suppress` (Cox 1980; Fischetti & Salazar-Gonzalez 2001).

A table in long form (one row per cell, totals included) or as contributor microdata has its sensitive (primary)
cells suppressed, by the p%, (n, k) or threshold rules or by protection levels given per cell, and with them the
least-cost set of other (secondary) cells that keeps every primary cell from being recomputed, from the published
cells and the totals, to within its protection: the MILP of :func:`bayessdc.cta.suppression.suppress_table`, for
hierarchical tables as for flat ones. A pattern made elsewhere (tau-ARGUS, sdcTable) can be given instead: it is
audited and released as given. Either way the published table is audited as an intruder would audit it
(:func:`bayessdc.cta.audit_table`, measure ``audited_cells``), and :meth:`Suppression.save` writes the two-part
output folder as ``bayessdc suppress`` does:

``release/`` (may be published)
    ``suppressed.csv``: the dimension columns and the value column (named as in the input) holding the value of
    every published cell and total, a suppressed cell left empty; ``model.json``: how the primary cells were
    decided, the cost, the method and the a-priori ranges assumed, never a suppressed cell's value, a protection
    level or the cost of the pattern.
``private/`` (never published)
    ``cells.csv``: each cell's original and published value, whether it is primary or secondary, its cost, its
    protection and its audited interval; ``audit.csv``: the intruder's audit of every primary cell;
    ``quality.json``: the information loss, the solver's and the audit's report; ``policy.json``: the disclosure
    policy's verdict; ``report.html``; ``run.json``: the run's identity.

A table whose audit leaves a primary cell narrower than its protection is not released: ``save`` writes
``private/`` and raises (``bayessdc suppress`` exits with status 3).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayessdc import cta
from bayessdc.cta.suppression import COSTS, suppress_table
from bayessdc.measures import MeasureInput, compute_measures
from bayessdc.synthesis.output import fingerprint_frame

from ...errors import InputError
from ...io import read_table
from ...policy import Policy, judge, load_policy
from ...progress import logger
from ...validation import check_values
from .suppression import Suppression, SuppressionNotSafeError

__all__ = ["Suppression", "SuppressionNotSafeError", "suppress"]

#: The name a suppression is judged under (a policy criterion's ``applies_to``) and its run is recorded as.
NAME = "suppress"

#: Cox's two costs in words (``release/model.json``).
COST_WORDS = {"values": "the value suppressed (Cox's first cost)", "cells": "the number of cells suppressed"}


def suppress(
    table: pd.DataFrame | str | os.PathLike[str],
    dims: str | Sequence[str | Sequence[str]],
    value: str,
    *,
    rule: str | Sequence[str | cta.rules.Rule] | None = None,
    protection: str | None = None,
    contributor: str | None = None,
    kind: str = "magnitude",
    cost: str = "values",
    pattern: str | None = None,
    lower: str | None = None,
    upper: str | None = None,
    total_label: str = cta.TOTAL_LABEL,
    solver: cta.SolverSettings = cta.settings.DEFAULT_SOLVER,
    policy: Policy | str | os.PathLike[str] | None = None,
) -> Suppression:
    """Suppress every sensitive cell of a table and the least-cost set of other cells that protects them.

    The options are those of ``bayessdc suppress`` (the flag of each in brackets): the parameters describe the
    table, which cells are sensitive (the primary cells), what a suppression costs and what the intruder knows
    beforehand; ``solver`` says how long the MILP may take.

    Parameters
    ----------
    table
        The data (``--table``): a DataFrame, or a file :func:`bayessdc.read_table` reads; one row per cell
        (long form, totals included) or, with ``contributor``, one row per contribution.
    dims
        Dimension columns (``--dims``), comma separated or a list; ``"a>b"`` is a hierarchy (a above b).
    value
        Column of the cell values or contributions (``--value``).
    rule
        Sensitivity rules (``--rule``): ``"p%=15"``, ``"nk=2,85"``, ``"threshold=3"`` or rule objects; one or
        several. The primary cells and their protection levels are the rules'.
    protection
        Column of protection levels of a long-form table (``--protection``); ``rule`` or ``protection`` says
        which cells are primary.
    contributor
        The input is microdata: this column identifies contributors and cells are sums (``--contributor``).
    kind
        ``"magnitude"`` or ``"count"`` (``--kind``): count tables hold whole numbers, the threshold rule counts
        them, and the intruder knows the true values are whole.
    cost
        What a suppression costs (``--cost``): ``"values"`` (the value suppressed, the default), ``"cells"``
        (the number of cells suppressed), Cox's two costs, or the name of a column of a long-form table holding a
        cost >= 0 for every cell (a named cost is taken before a column of that name).
    pattern
        Column of a long-form table marking cells suppressed elsewhere (``--pattern``; true/false, 1/0 or
        yes/no): no MILP, the pattern is audited and released as given (a primary cell it leaves published, or
        whose complement it leaves missing, fails the audit and nothing is released). A cell with no row is
        published.
    lower, upper
        Columns of a long-form table with the intruder's a-priori lower and upper bounds of each cell's true value
        (``--lower``, ``--upper``; an empty value: the default, ``[0, inf)``). The pattern protects every primary
        cell against an intruder who knows them; the audit assumes them too.
    total_label
        Label of a total (``--total-label``).
    solver
        The MILP's limits (:class:`bayessdc.SolverSettings`): ``time_limit`` (``--time-limit``), ``mip_gap``
        (``--mip-gap``); ``solver`` (``--solver``) is recorded (the MILP and its attackers run on HiGHS).
    policy
        The disclosure policy the suppressed table is judged by (a TOML file or a :class:`bayessdc.Policy`; default
        bayessdc's own, whose criterion here is the intruder's audit, :func:`bayessdc.cta.audit_table`: every
        primary cell's interval covers its protection range). Read before anything is solved;
        :meth:`Suppression.save` refuses a table that fails it.

    Returns
    -------
    Suppression

    Raises
    ------
    bayessdc.InputError
        Before anything is solved: no primary cells said, an option that does not apply to the input, or a value
        of a cost, pattern or bound column that cannot be used (naming the cell): a cost missing or negative, an
        a-priori range that excludes the cell's value.
    ValueError
        Bad data, or totals that do not add up (naming the cell).
    bayessdc.cta.InfeasibleError
        No pattern protects a primary cell (its a-priori range is narrower than its protection); the message names
        it.
    TypeError
        ``solver`` not a :class:`~bayessdc.SolverSettings`, before anything is read.

    Examples
    --------
    Cox's 4 x 9 table: its seven sensitive cells, and the secondary cells of least value that protect them.

    >>> import bayessdc as bsd
    >>> result = bsd.suppress(bsd.examples.cox_table(), "row,column", "value", protection="protection")
    >>> result.policy.passed  # the intruder's audit: every primary cell's interval covers its protection
    True
    >>> figures = result.quality["all_cells"]
    >>> figures["primary"], figures["secondary"], result.status
    (7, 5, 'optimal')
    >>> bsd.suppress(bsd.examples.cox_table(), "row,column", "value", protection="protection",
    ...              cost="cells").quality["all_cells"]["secondary"]
    4
    """
    if not isinstance(solver, cta.SolverSettings):
        raise TypeError(f"solver= takes SolverSettings(...), not {type(solver).__name__} {solver!r}")
    disclosure_policy = load_policy(policy)
    data = table if isinstance(table, pd.DataFrame) else read_table(table)
    if not isinstance(cost, str):
        raise InputError(f"cost= takes {' or '.join(map(repr, COSTS))} or the name of a column of costs, not {cost!r}")
    cost_column = None if cost in COSTS else cost
    columns = {"pattern": pattern, "lower": lower, "upper": upper, "cost": cost_column}
    try:
        read: list[Any] | None = [c for dim in cta.parse_dimensions(dims) for c in dim]
    except ValueError:  # the table's own check names what is wrong with the dimensions
        read = None
    if read is not None:
        read = [c for c in [*read, value, protection, contributor, *columns.values()] if c is not None]
    data = check_values(data, read)
    if rule is not None and protection is not None:
        raise InputError("give the protection levels (protection=COLUMN) or sensitivity rules (rule=RULE), not both")
    if contributor is not None:
        per_cell = [f"{name}=" for name, column in (("protection", protection), *columns.items()) if column is not None]
        if per_cell:
            raise InputError(f"{', '.join(per_cell)}: a column per cell of a long-form table; with contributor= use "
                             f"rule= and cost={COSTS[0]!r} or {COSTS[1]!r}")  # fmt: skip
        built = cta.table_from_microdata(data, dims, value, contributor, total_label=total_label, kind=kind)
    else:
        missing = [c for c in columns.values() if c is not None and c not in data.columns]
        if missing:
            raise InputError(f"column(s) not in the data: {', '.join(missing)} (have: {', '.join(map(str, data))})")
        built = cta.table_from_long(data, dims, value, total_label=total_label, kind=kind, protection=protection)
    rules = [rule] if isinstance(rule, str) else list(rule or [])
    if rules:
        levels = cta.protection_from_rules(built, rules)
    elif protection is not None:
        levels = cta.protection_from_table(built)
    else:
        raise InputError("say which cells are sensitive: protection=COLUMN or rule=RULE")
    costs: Any = cost if cost_column is None else _costs(built, data, cost_column)
    bounds = _bounds(built, data, lower, upper)
    given_pattern = None if pattern is None else _pattern(built, data, pattern)
    solution = suppress_table(built, levels, cost=costs, bounds=bounds, solver=solver, given=given_pattern,
                              progress=logger.info)  # fmt: skip
    options = {
        "dims": dims if isinstance(dims, str) else [d if isinstance(d, str) else list(d) for d in dims],
        "value": value, "rules": [str(r) for r in rules], "protection": protection, "contributor": contributor,
        "kind": kind, "cost": cost, "pattern": pattern, "lower": lower, "upper": upper, "total_label": total_label,
        "solver": solver.solver, "time_limit": solver.time_limit, "mip_gap": solver.mip_gap,
    }  # fmt: skip
    if solver.solver_options != type(solver)().solver_options:
        options["solver_options"] = solver.solver_options
    identity = {"synthesizer": NAME, "input": fingerprint_frame(data), **options}
    if not disclosure_policy.builtin:
        identity["policy"] = {"name": disclosure_policy.name, "digest": disclosure_policy.digest}
    audit_input = cta.AuditInput(built, solution.published, levels, intruder="suppression", bounds=bounds,
                                 solver=solver)  # fmt: skip
    cells = _cells(solution)
    released = cells[built.label_columns].assign(**{value: cells["published"].to_numpy()}, synthetic=1)
    measured = compute_measures(MeasureInput(released, audit=audit_input))
    audit = measured.get("audited_cells").details
    cells = _with_audit(cells, audit, built)
    result = Suppression(
        cells, _quality(solution, audit, cost), solution.status, solution, audit=audit,
        description=_description(solution, options, bounds is not None), identity=identity, value=value,
    )  # fmt: skip
    result.measured = measured
    result.policy = judge(disclosure_policy, measured, NAME)
    return result


def _keys(built: cta.Table, data: pd.DataFrame) -> np.ndarray:
    """The table position of every data row (matched on the labels as :func:`bayessdc.cta.table_from_long` reads
    them; every row names a cell, which it has checked)."""
    labels = built.label_columns
    index = {key: i for i, key in enumerate(built.cells[labels].astype(str).itertuples(index=False, name=None))}
    keys = data[labels].astype(str).apply(lambda s: s.str.strip()).itertuples(index=False, name=None)
    return np.array([index[key] for key in keys], dtype=np.int64)


def _per_cell(built: cta.Table, data: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """Column ``column`` as one number per cell (NaN: no row, or an empty value); text or an infinite number is
    refused naming the cell."""
    positions = _keys(built, data)
    given = pd.to_numeric(data[column], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero((np.isnan(given) & data[column].notna().to_numpy()) | np.isinf(given))
    if len(bad):
        raise InputError(f"column {column!r} ({what}) holds {data[column].iloc[bad[0]]!r} at "
                         f"{built.describe_cell(positions[bad[0]])}: a finite number is needed")  # fmt: skip
    values = np.full(built.n_cells, np.nan)
    values[positions] = given
    return values


def _costs(built: cta.Table, data: pd.DataFrame, column: str) -> np.ndarray:
    """The cost column as one cost >= 0 per cell; a missing or negative one is refused naming the cell."""
    costs = _per_cell(built, data, column, "costs")
    for bad, said in ((np.isnan(costs), "has no cost (an empty value, or no row)"), (costs < 0, "has a negative cost")):
        cells = np.flatnonzero(bad)
        if len(cells):
            more = f" (and {len(cells) - 1} other cell(s))" if len(cells) > 1 else ""
            raise InputError(f"cost column {column!r}: {built.describe_cell(cells[0])} {said}{more}; give every cell "
                             "a cost >= 0")  # fmt: skip
    return costs


def _bounds(built: cta.Table, data: pd.DataFrame, lower: str | None, upper: str | None) -> tuple | None:
    """The intruder's a-priori ranges from the bound columns (NaN: the default), as ``(lower, upper)`` per cell;
    an empty range, or one that excludes the cell's value, is refused naming the cell."""
    if lower is None and upper is None:
        return None
    low = np.zeros(built.n_cells) if lower is None else _per_cell(built, data, lower, "a-priori lower bounds")
    high = np.full(built.n_cells, np.inf) if upper is None else _per_cell(built, data, upper, "a-priori upper bounds")
    low, high = np.where(np.isnan(low), 0.0, low), np.where(np.isnan(high), np.inf, high)
    values = built.values
    atol = 1e-6 * max(1.0, float(np.max(np.abs(values), initial=0.0)))
    for bad, said in (
        (low > high, "is empty"),
        ((values < low - atol) | (values > high + atol), "excludes its value"),
    ):
        cells = np.flatnonzero(bad)
        if len(cells):
            i = cells[0]
            more = f" (and {len(cells) - 1} other cell(s))" if len(cells) > 1 else ""
            raise InputError(f"the a-priori range [{low[i]:.12g}, {high[i]:.12g}] of {built.describe_cell(i)} "
                             f"{said} ({values[i]:.12g}){more}; an intruder's bounds hold the true value")  # fmt: skip
    return low, high


#: The words of a pattern column, read case-insensitively.
_FLAGS = {"true": True, "false": False, "yes": True, "no": False, "1": True, "0": False, "1.0": True, "0.0": False}


def _pattern(built: cta.Table, data: pd.DataFrame, column: str) -> np.ndarray:
    """The pattern column as one flag per cell (a cell with no row: published); a value that is not true/false,
    1/0 or yes/no, or is missing, is refused naming the cell."""
    positions = _keys(built, data)
    words = data[column].map(lambda v: _FLAGS.get(str(v).strip().lower()) if pd.notna(v) else None)
    bad = np.flatnonzero(words.isna().to_numpy())
    if len(bad):
        raise InputError(f"pattern column {column!r} holds {data[column].iloc[bad[0]]!r} at "
                         f"{built.describe_cell(positions[bad[0]])}: say true or false (1 or 0, yes or no) for each "
                         "row")  # fmt: skip
    flags = np.zeros(built.n_cells, dtype=bool)
    flags[positions] = words.to_numpy(dtype=bool)
    return flags


def _cells(solution: Any) -> pd.DataFrame:
    """Every cell in the table's order: labels, values, what was suppressed and why, cost and protection."""
    protection = solution.protection
    return solution.frame().assign(protection_lower=protection.lower, protection_upper=protection.upper)


def _with_audit(cells: pd.DataFrame, audit: pd.DataFrame, built: cta.Table) -> pd.DataFrame:
    """``cells`` with each primary cell's audited interval (``audited_min``, ``audited_max``) and ``protected``."""
    position = {built.describe_cell(i): i for i in np.flatnonzero(cells["primary"].to_numpy())}
    rows = np.array([position[name] for name in audit["name"]], dtype=np.int64)
    low, high = np.full(len(cells), np.nan), np.full(len(cells), np.nan)
    protected = pd.array([pd.NA] * len(cells), dtype="boolean")
    low[rows], high[rows] = audit["min"].to_numpy(float), audit["max"].to_numpy(float)
    protected[rows] = audit["protected"].to_numpy(bool)
    return cells.assign(audited_min=low, audited_max=high, protected=protected)


def _loss(cells: pd.DataFrame, mask: np.ndarray) -> dict[str, Any]:
    """The information loss among the cells of ``mask``: cells and value suppressed."""
    part = cells[mask]
    original = part["original"].to_numpy(float)
    suppressed = part["suppressed"].to_numpy(bool)
    total = float(original.sum())
    value = float(original[suppressed].sum())
    return {
        "cells": int(len(part)),
        "suppressed": int(suppressed.sum()),
        "primary": int(part["primary"].sum()),
        "secondary": int(part["secondary"].sum()),
        "share_of_cells": float(suppressed.mean()) if len(part) else None,
        "value": total,
        "value_suppressed": value,
        "value_secondary": float(original[part["secondary"].to_numpy(bool)].sum()),
        "share_suppressed": value / total if total > 0 else None,
    }


def _quality(solution: Any, audit: pd.DataFrame, cost: str) -> dict[str, Any]:
    """The figures of ``quality.json``: information loss by set of cells, the solver's and the audit's report."""
    table = solution.table
    interior = table.cells["interior"].to_numpy(bool)
    cells = _cells(solution)
    failing = audit.loc[~audit["protected"].astype(bool)]
    objective, bound = float(solution.objective), float(solution.bound)
    return {
        "interior_cells": _loss(cells, interior),
        "totals": _loss(cells, ~interior),
        "all_cells": _loss(cells, np.ones(len(cells), dtype=bool)),
        "solver": {
            "status": solution.status,
            "cost": cost,
            "objective": objective,
            "bound": bound if np.isfinite(bound) else None,
            "rounds": int(solution.rounds),
            "cuts": int(solution.cuts),
            "lps": int(solution.lps),
            "seconds": float(solution.seconds),
        },
        "checks": {
            "n_cells": int(table.n_cells),
            "primary": int(len(audit)),
            "protected": bool(failing.empty),
            "unprotected_cells": [str(name) for name in failing["name"]],
            "audit_intruder": str(audit.attrs.get("intruder", "suppression")),
            "audit_lps": int(audit.attrs.get("lps", 0)),
        },
    }


def _description(solution: Any, options: dict[str, Any], bounded: bool) -> dict[str, Any]:
    """The public description of a suppression (``release/model.json``): how the primary cells were decided, the
    cost and method; never a suppressed cell's value, a protection level, a bound or the pattern's cost."""
    if options["rules"]:
        sensitivity: Any = {"rules": options["rules"]}
    else:
        sensitivity = "protection levels given per cell (not published)"
    cost = options["cost"]
    if options["pattern"] is not None:
        secondary = "a pattern made elsewhere, released as given after the intruder's audit"
    else:
        secondary = "the least-cost pattern protecting every primary cell (MILP, Fischetti & Salazar-Gonzalez)"
    return {
        "synthesizer": NAME,
        "method": "complementary cell suppression (Cox 1980; Fischetti & Salazar-Gonzalez 2001)",
        "table": {
            "dimensions": solution.table.label_columns,
            "value": options["value"],
            "total_label": options["total_label"],
            "kind": options["kind"],
            "from_microdata": options["contributor"] is not None,
            "cells": int(solution.table.n_cells),
        },
        "sensitive_cells": sensitivity,
        "secondary_suppression": secondary,
        "cost": COST_WORDS.get(cost, "per cell (not published)"),
        "suppressed_cells": "published with no value",
        "a_priori_ranges": ("per cell (not published)" if bounded else "every value non-negative, no upper bound"),
        "audit": "every primary cell's interval, derived by the intruder's linear programs from the published cells "
        "and totals, covers its protection range",
        "solver": options["solver"],
    }
