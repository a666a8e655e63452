"""Controlled tabular adjustment as one verb: :func:`adjust` (Cox 2000; 2003).

A table in long form (one row per cell, totals included) or as contributor microdata is adjusted so that
every sensitive cell moves by at least its protection while every total still adds up; the steps are those of
:mod:`bayessdc.cta` (build the table, decide the sensitive cells, solve the MILP or LP, measure the result),
and :meth:`Adjustment.save` writes the two-part output folder as ``bayessdc cta`` does:

``release/`` (may be published)
    ``adjusted.csv``: the dimension columns and the value column (named as in the input) holding the adjusted
    values of every cell and total; ``model.json``: the rule and objective (how sensitive cells were decided,
    the objective, the method, capacity, integrality), never an original value or a protection level.
``private/`` (never published)
    ``cells.csv``: each cell's original value, adjusted value, adjustment, sensitivity flag and protection;
    ``audit.csv``: the intruder's audit of every sensitive cell (its interval, :func:`bayessdc.cta.audit_table`);
    ``quality.json``: the quality figures, checks and solver report; ``run.json``: the run's identity.

An adjustment that does not meet every protection or whose totals do not add up is not released: ``save``
writes ``private/`` and raises :class:`ProtectionNotMetError` (``bayessdc cta`` exits with status 3).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayessdc import cta
from bayessdc.measures import MeasureInput, compute_measures
from bayessdc.synthesis.output import fingerprint_frame

from ...errors import InputError
from ...io import read_table
from ...policy import Policy, judge, load_policy
from ...validation import check_values
from .adjustment import Adjustment, ProtectionNotMetError

__all__ = ["Adjustment", "ProtectionNotMetError", "adjust"]


def adjust(
    table: pd.DataFrame | str | os.PathLike[str],
    dims: str | Sequence[str | Sequence[str]],
    value: str,
    *,
    rule: str | Sequence[str | cta.rules.Rule] | None = None,
    protection: str | None = None,
    contributor: str | None = None,
    kind: str = "magnitude",
    capacity_column: str | None = None,
    cost: str | None = None,
    total_label: str = cta.TOTAL_LABEL,
    settings: cta.AdjustmentSettings = cta.settings.DEFAULT_ADJUSTMENT,
    solver: cta.SolverSettings = cta.settings.DEFAULT_SOLVER,
    policy: Policy | str | os.PathLike[str] | None = None,
) -> Adjustment:
    """Adjust a table so that every sensitive cell moves by at least its protection and all totals add up.

    The options are those of ``bayessdc cta`` (the flag of each in brackets): the parameters describe the table
    and which cells are sensitive; ``settings`` and ``solver`` say what is solved and how.

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
        several.
    protection
        Column of protection levels of a long-form table (``--protection``); ``rule`` or ``protection`` says
        which cells are sensitive.
    contributor
        The input is microdata: this column identifies contributors and cells are sums (``--contributor``).
    kind
        ``"magnitude"`` or ``"count"`` (``--kind``): count tables get integer adjustments and the threshold
        rule on counts.
    capacity_column
        Column of absolute capacities of the non-sensitive cells of a long-form table (``--capacity-column``);
        where it holds a value, it takes the place of ``settings.capacity``.
    cost
        Column of costs of a long-form table for the objective ``"weighted"`` (``--cost``).
    total_label
        Label of a total (``--total-label``).
    settings
        The problem (:class:`bayessdc.AdjustmentSettings`): ``objective`` (``--objective``): ``"l1"``,
        ``"relative"``, ``"weighted"``, ``"variance"``, ``"compromise"`` (or ``"max_l"``), see
        :mod:`bayessdc.cta.problem`; ``method`` (``--method``): ``"milp"`` (the solver picks the directions) or
        ``"heuristic"`` (directions first, then an LP); ``capacity`` (``--capacity``, default 0.2): capacity of
        the non-sensitive cells as a fraction of their value; ``widen`` (``--widen``): upper bounds
        ``q = widen * p`` (default 1, or 1.5 with mean/L constraints and statistical objectives);
        ``preserve_mean`` (``--preserve-mean``): net adjustment of the sensitive cells zero; ``zero_l``
        (``--zero-l``): ``L(y) = 0``; ``integer`` (``--integer``; default: True for count tables); ``tie_break``
        and ``strengthen`` (no flag; both on).
    solver
        The solver and its limits (:class:`bayessdc.SolverSettings`): ``solver`` (``--solver``, default HiGHS),
        ``time_limit`` (``--time-limit``), ``mip_gap`` (``--mip-gap``); ``solver_options`` and ``verbose`` (no
        flag).
    policy
        The disclosure policy the adjusted table is judged by (a TOML file or a :class:`bayessdc.Policy`;
        default bayessdc's own, whose criteria here are that every sensitive cell meets its protection, and that
        the intruder's audit of the adjusted table, :func:`bayessdc.cta.audit_table` with the intruder knowing the
        method, leaves every sensitive cell's interval covering its protection range). Read before anything is
        solved; :meth:`Adjustment.save` refuses a table that fails it.

    Returns
    -------
    Adjustment

    Raises
    ------
    bayessdc.InputError
        No protection given, or an option that does not apply to the input, before anything is solved.
    bayessdc.cta.InfeasibleError
        No adjustment meets the protections; the message names the cells and what to relax.
    ValueError
        Bad data or totals (the message names the cell).
    TypeError
        ``settings`` or ``solver`` not an :class:`~bayessdc.AdjustmentSettings` or a
        :class:`~bayessdc.SolverSettings`, before anything is read.

    Examples
    --------
    >>> import bayessdc as bsd
    >>> result = bsd.adjust(bsd.examples.cox_table(), "row,column", "value", protection="protection",
    ...                     settings=bsd.AdjustmentSettings(integer=True))
    >>> result.policy.passed  # every sensitive cell moved by at least its protection level
    True
    >>> bsd.adjust(bsd.examples.cox_table(), "row,column", "value", protection="protection",
    ...            settings=bsd.AdjustmentSettings(objective="compromise", preserve_mean=True, integer=True),
    ...            solver=bsd.SolverSettings(time_limit=60)).quality["checks"]["protection_met"]
    True
    """
    cta.settings.check_settings(settings, solver)
    disclosure_policy = load_policy(policy)
    data = table if isinstance(table, pd.DataFrame) else read_table(table)
    try:
        read = [c for dim in cta.parse_dimensions(dims) for c in dim] + [value, protection, capacity_column, cost,
                                                                        contributor]  # fmt: skip
    except ValueError:  # the table's own check names what is wrong with the dimensions
        read = None
    data = check_values(data, [c for c in read if c is not None] if read is not None else None)
    if rule is not None and protection is not None:
        raise InputError("give the protection levels (protection=COLUMN) or sensitivity rules (rule=RULE), not both")
    if contributor is not None:
        if protection is not None:
            raise InputError("protection= applies to long-form tables; with contributor= use rule=")
        built = cta.table_from_microdata(data, dims, value, contributor, total_label=total_label, kind=kind)
    else:
        built = cta.table_from_long(
            data, dims, value, total_label=total_label, kind=kind, protection=protection, capacity=capacity_column,
            cost=cost,
        )  # fmt: skip
    rules = [rule] if isinstance(rule, str) else list(rule or [])
    if rules:
        levels = cta.protection_from_rules(built, rules)
    elif protection is not None:
        levels = cta.protection_from_table(built)
    else:
        raise InputError("say which cells are sensitive: protection=COLUMN or rule=RULE")
    if cost is not None and "cost" not in built.cells:
        raise InputError("cost= applies to long-form tables")
    if capacity_column is not None and "capacity" not in built.cells:
        raise InputError("capacity_column= applies to long-form tables")
    solution = cta.adjust_table(built, levels, settings=settings, solver=solver)
    options = {
        "dims": dims if isinstance(dims, str) else [d if isinstance(d, str) else list(d) for d in dims],
        "value": value, "rules": [str(r) for r in rules], "protection": protection, "contributor": contributor,
        "kind": kind, "objective": settings.objective, "method": settings.method,
        "preserve_mean": settings.preserve_mean, "zero_l": settings.zero_l, "integer": settings.integer,
        "capacity": settings.capacity, "capacity_column": capacity_column, "cost": cost, "widen": settings.widen,
        "total_label": total_label, "solver": solver.solver, "time_limit": solver.time_limit,
        "mip_gap": solver.mip_gap, **_changed(settings, solver),
    }  # fmt: skip
    identity = {"synthesizer": "cta", "input": fingerprint_frame(data), **options}
    if not disclosure_policy.builtin:
        identity["policy"] = {"name": disclosure_policy.name, "digest": disclosure_policy.digest}
    result = Adjustment(
        solution.to_frame(), cta.quality_report(solution), solution.status, solution,
        description=_description(solution, options), identity=identity, value=value,
    )  # fmt: skip
    short = cta.protection_shortfalls(solution)
    sensitive = np.flatnonzero(solution.sensitive)
    cells = pd.DataFrame({"cell": sensitive, "protected": ~np.isin(sensitive, short)})
    released = result.released_table.assign(synthetic=1)
    result.measured = compute_measures(MeasureInput(released, cells=cells, audit=_audit(solution, settings, solver)))
    result.policy = judge(disclosure_policy, result.measured, "cta")
    return result


def _audit(solution: cta.Adjustment, settings: cta.AdjustmentSettings, solver: cta.SolverSettings) -> cta.AuditInput:
    """The adjusted table as the intruder of :func:`bayessdc.cta.audit_table` sees it, knowing the method as
    ``release/model.json`` states it: each sensitive cell moved by at least its protection, down or up; the other
    cells by at most the capacity (the fraction of their true value; per-cell capacities, which are not published,
    assumed known: the worst case); the sensitive cells' adjustments summing to zero under ``preserve_mean``; the
    true values integral where the adjustments and the published values are. ``widen`` (the sensitive cells' upper
    bound) is not assumed known: with the default of 1 it would leave two candidate values per cell."""
    table, adjusted = solution.table, solution.adjusted
    capacity = settings.capacity if np.isscalar(settings.capacity) else None
    absolute = None if capacity is not None else np.asarray(settings.capacity, dtype=float)
    if "capacity" in table.cells:  # a table's capacity column takes the place of settings.capacity where given
        given = table.cells["capacity"].to_numpy(dtype=float)
        absolute = given if absolute is None else np.where(np.isnan(given), absolute, given)
    integral = bool(solution.settings.get("integer")) and np.allclose(adjusted, np.round(adjusted), rtol=0, atol=1e-9)
    return cta.AuditInput(
        table, adjusted, solution.protection, intruder="cta", capacity=capacity, absolute_capacity=absolute,
        balanced=(solution.sensitive,) if settings.preserve_mean else (), integer=integral, solver=solver,
    )  # fmt: skip


def _changed(settings: cta.AdjustmentSettings, solver: cta.SolverSettings) -> dict[str, Any]:
    """For the run's identity, the settings ``bsd.adjust`` took only once its options were grouped (``tie_break``,
    ``strengthen``, ``solver_options``), each named only when it differs from its default: a run that leaves
    them alone keeps the identity it had, so that its rerun into the same folder is the same run. ``verbose``
    changes nothing of the table."""
    defaults, solver_defaults = type(settings)(), type(solver)()
    changed = {name: getattr(settings, name) for name in ("tie_break", "strengthen")
               if getattr(settings, name) != getattr(defaults, name)}  # fmt: skip
    if solver.solver_options != solver_defaults.solver_options:
        changed["solver_options"] = solver.solver_options
    return changed


def _description(solution: cta.Adjustment, options: dict[str, Any]) -> dict[str, Any]:
    """The public description of an adjustment (``release/model.json``): how sensitive cells were decided and
    what was solved; never a cell's original value, its protection, or which cells are sensitive."""
    settings = solution.settings
    if options["rules"]:
        sensitivity: Any = {"rules": options["rules"]}
    else:
        sensitivity = "protection levels given per cell (not published)"
    return {
        "synthesizer": "cta",
        "method": "controlled tabular adjustment (Cox 2000; 2003)",
        "table": {
            "dimensions": solution.table.label_columns,
            "value": options["value"],
            "total_label": options["total_label"],
            "kind": options["kind"],
            "from_microdata": options["contributor"] is not None,
            "cells": int(solution.table.n_cells),
        },
        "sensitive_cells": sensitivity,
        "objective": solution.objective,
        "solution_method": solution.method,
        "integer": bool(settings.get("integer")),
        "capacity": "per cell (not published)" if options["capacity_column"] else settings.get("capacity"),
        "widen": settings.get("widen"),
        "preserve_mean": bool(settings.get("preserve_mean")),
        "zero_l": bool(settings.get("zero_l")),
        "solver": solution.solver,
    }
