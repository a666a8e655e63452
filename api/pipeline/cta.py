"""Controlled tabular adjustment as one verb: :func:`adjust` (Cox 2000; 2003).

A table in long form (one row per cell, totals included) or as contributor microdata is adjusted so that
every sensitive cell moves by at least its protection while every total still adds up; the steps are those of
:mod:`bayessdc.cta` (build the table, decide the sensitive cells, solve the MILP or LP, measure the result),
and :meth:`Adjustment.save` writes ``adjusted.csv`` and ``quality.json`` as ``bayessdc cta`` does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bayessdc import cta

from ..errors import InputError

__all__ = ["Adjustment", "adjust"]


@dataclass
class Adjustment:
    """An adjusted table, its quality figures and the solver's status.

    Attributes
    ----------
    table
        Every cell and total in long form (what ``adjusted.csv`` holds): the dimension columns, ``original``,
        ``adjusted``, ``adjustment``, ``sensitive`` and ``protection`` (the move required in the chosen
        direction).
    quality
        The figures of ``quality.json``: statistics of the sensitive, interior and all cells (correlation,
        slope, variance ratio, total absolute adjustment, ...), the checks (``protection_met``,
        ``totals_add_up``, ``non_negative``), the solver's report and the settings.
    status
        The solver's status (``"optimal"``, ``"optimal_inaccurate"``, ...).
    solution
        The full :class:`bayessdc.cta.Adjustment` (table structure, protection, directions, settings).
    """

    table: pd.DataFrame
    quality: dict[str, Any]
    status: str
    solution: cta.Adjustment = field(repr=False)

    @property
    def protection_met(self) -> bool:
        """Every sensitive cell moved by at least its protection, in its direction."""
        return bool(self.quality["checks"]["protection_met"])

    @property
    def totals_add_up(self) -> bool:
        """Every total of the adjusted table equals the sum of its cells."""
        return bool(self.quality["checks"]["totals_add_up"])

    @property
    def passed(self) -> bool:
        """The adjusted table is safe to publish: protection met and totals adding up."""
        return self.protection_met and self.totals_add_up

    def save(self, out: str | os.PathLike[str]) -> dict[str, Path]:
        """Write ``out/adjusted.csv`` and ``out/quality.json`` (atomically; ``out`` is created if missing).

        Returns
        -------
        dict
            The paths written, under ``"adjusted"`` and ``"quality"``.
        """
        return cta.write_outputs(self.solution, out, self.quality)

    def __repr__(self) -> str:
        checks = self.quality["checks"]
        return (
            f"<Adjustment: {checks['n_sensitive']} sensitive of {checks['n_cells']} cells, status {self.status}, "
            f"protection met: {checks['protection_met']}, totals add up: {checks['totals_add_up']}>"
        )


def adjust(
    table: pd.DataFrame | str | os.PathLike[str],
    dims: str | Sequence[str | Sequence[str]],
    value: str,
    *,
    rule: str | Sequence[str | cta.rules.Rule] | None = None,
    protection: str | None = None,
    contributor: str | None = None,
    kind: str = "magnitude",
    objective: str = "l1",
    preserve_mean: bool = False,
    zero_l: bool = False,
    integer: bool | None = None,
    method: str = "milp",
    capacity: float = cta.problem.DEFAULT_CAPACITY,
    capacity_column: str | None = None,
    cost: str | None = None,
    widen: float | None = None,
    total_label: str = cta.TOTAL_LABEL,
    solver: str = "HIGHS",
    time_limit: float | None = None,
    mip_gap: float | None = None,
) -> Adjustment:
    """Adjust a table so that every sensitive cell moves by at least its protection and all totals add up.

    The options are those of ``bayessdc cta`` (the flag of each in brackets).

    Parameters
    ----------
    table
        The data (``--table``): a DataFrame, or a CSV or Parquet file; one row per cell (long form, totals
        included) or, with ``contributor``, one row per contribution.
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
    objective
        ``"l1"``, ``"relative"``, ``"weighted"``, ``"variance"``, ``"compromise"`` (or ``"max_l"``)
        (``--objective``); see :mod:`bayessdc.cta.problem`.
    preserve_mean, zero_l
        Net adjustment of the sensitive cells zero (``--preserve-mean``); ``L(y) = 0`` (``--zero-l``).
    integer
        Integer adjustments (``--integer``; default: True for count tables).
    method
        ``"milp"`` (the solver picks the directions) or ``"heuristic"`` (directions first, then an LP).
    capacity, capacity_column
        Capacity of the non-sensitive cells as a fraction of their value (``--capacity``, default 0.2), or a
        column of absolute capacities of a long-form table (``--capacity-column``).
    cost
        Column of costs of a long-form table for ``objective="weighted"`` (``--cost``).
    widen
        Upper bounds ``q = widen * p`` (``--widen``; default 1, or 1.5 with mean/L constraints and
        statistical objectives).
    total_label
        Label of a total (``--total-label``).
    solver, time_limit, mip_gap
        The cvxpy solver and its limits (``--solver``, ``--time-limit``, ``--mip-gap``).

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
    """
    data = table if isinstance(table, pd.DataFrame) else cta.read_data(table)
    if rule is not None and protection is not None:
        raise InputError("give the protection levels (--protection COL) or sensitivity rules (--rule RULE), not both")
    if contributor is not None:
        if protection is not None:
            raise InputError("--protection applies to long-form tables; with --contributor use --rule")
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
        raise InputError("say which cells are sensitive: --protection COL or --rule RULE")
    if cost is not None and "cost" not in built.cells:
        raise InputError("--cost applies to long-form tables")
    if capacity_column is not None and "capacity" not in built.cells:
        raise InputError("--capacity-column applies to long-form tables")
    solution = cta.adjust_table(
        built, levels, objective=objective, method=method, capacity=capacity, widen=widen,
        preserve_mean=preserve_mean, zero_l=zero_l, integer=integer, solver=solver, time_limit=time_limit,
        mip_gap=mip_gap,
    )  # fmt: skip
    return Adjustment(solution.to_frame(), cta.quality_report(solution), solution.status, solution)
