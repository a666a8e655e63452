"""Sensitive cells and their protection levels: given by the user or derived by the standard rules.

A protection is a pair of required moves per cell: ``lower`` (how far the cell must move down if it moves
down) and ``upper`` (how far up if it moves up). A cell is sensitive when either is positive.

Rules (applied to every cell, totals included, of a table built from contributor microdata):

- :class:`ThresholdRule` (counts): a cell with ``0 < count < n`` is sensitive; it must move to 0 or to at
  least ``n`` (lower = count, upper = n - count). On a magnitude table the rule counts contributors and the
  protection is ``fraction`` of the cell value.
- :class:`PPercentRule` (magnitudes): with contributions x1 >= x2 >= ... and cell value X, the second largest
  contributor can estimate x1 by X - x2 to within X - x1 - x2; the cell is sensitive when that is less than
  p% of x1, and the protection is ``p/100 * x1 - (X - x1 - x2)``.
- :class:`DominanceRule` (magnitudes): the cell is sensitive when its n largest contributions exceed k% of
  X; the protection is ``100/k * (x1 + ... + xn) - X``, the move that brings their share down to k%.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .table import TOP_CONTRIBUTIONS, Table


@dataclass(frozen=True)
class Protection:
    """Required downward and upward moves per cell (zero for non-sensitive cells).

    Attributes
    ----------
    lower : numpy.ndarray
        Minimum downward move of each cell when it moves down.
    upper : numpy.ndarray
        Minimum upward move of each cell when it moves up.
    """

    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        lower = np.asarray(self.lower, dtype=float)
        upper = np.asarray(self.upper, dtype=float)
        if lower.shape != upper.shape or lower.ndim != 1:
            raise ValueError("protection lower and upper must be 1-d arrays of the same length")
        if np.isnan(lower).any() or np.isnan(upper).any() or (lower < 0).any() or (upper < 0).any():
            raise ValueError("protection levels must be non-negative numbers")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @classmethod
    def symmetric(cls, levels: np.ndarray | Sequence[float]) -> Protection:
        """Protection with the same level ``p_i`` in both directions (Cox's formulation)."""
        levels = np.asarray(levels, dtype=float)
        return cls(levels.copy(), levels.copy())

    @property
    def sensitive(self) -> np.ndarray:
        """Boolean mask of the sensitive cells."""
        return (self.lower > 0) | (self.upper > 0)

    def combine(self, other: Protection) -> Protection:
        """Return the cell-wise maximum of two protections (a cell sensitive under either rule)."""
        return Protection(np.maximum(self.lower, other.lower), np.maximum(self.upper, other.upper))


def _contributions(table: Table) -> np.ndarray:
    if table.top_contributions is None:
        raise ValueError(
            "the sensitivity rules need contributor microdata (build the table with table_from_microdata)"
        )
    return table.top_contributions


@dataclass(frozen=True)
class ThresholdRule:
    """Minimum frequency rule: a cell with fewer than ``n`` units (but some) is sensitive.

    Parameters
    ----------
    n : int
        The threshold (e.g. 3).
    fraction : float, default 0.1
        On a magnitude table, the protection as a fraction of the cell value.
    """

    n: int
    fraction: float = 0.1

    def protection(self, table: Table) -> Protection:
        """Return the protection this rule requires for every cell of ``table``."""
        if self.n < 1:
            raise ValueError("the threshold rule needs n >= 1")
        values = table.values
        zeros = np.zeros_like(values)
        if table.kind == "count":
            units = values
            sensitive = (units > 0) & (units < self.n)
            return Protection(np.where(sensitive, values, zeros), np.where(sensitive, self.n - values, zeros))
        if "n_contributors" not in table.cells:
            raise ValueError("the threshold rule on a magnitude table needs contributor microdata")
        units = table.cells["n_contributors"].to_numpy()
        sensitive = (units > 0) & (units < self.n) & (values > 0)
        level = np.where(sensitive, self.fraction * values, zeros)
        return Protection.symmetric(level)


@dataclass(frozen=True)
class PPercentRule:
    """The p% rule: no contributor may be estimated by another to within p% of its value.

    Parameters
    ----------
    p : float
        The percentage (e.g. 15).
    """

    p: float

    def protection(self, table: Table) -> Protection:
        """Return the protection this rule requires for every cell of ``table``."""
        if not 0 < self.p:
            raise ValueError("the p% rule needs p > 0")
        top = _contributions(table)
        values = table.values
        x1, x2 = top[:, 0], top[:, 1]
        remainder = np.maximum(values - x1 - x2, 0.0)
        required = self.p / 100.0 * x1 - remainder
        level = np.where((values > 0) & (required > 0), required, 0.0)
        return Protection.symmetric(level)


@dataclass(frozen=True)
class DominanceRule:
    """The (n, k)-dominance rule: the n largest contributors may not hold more than k% of the cell.

    Parameters
    ----------
    n : int
        Number of largest contributors (at most :data:`~bayessdc.cta.table.TOP_CONTRIBUTIONS`).
    k : float
        The percentage (e.g. 85).
    """

    n: int
    k: float

    def protection(self, table: Table) -> Protection:
        """Return the protection this rule requires for every cell of ``table``."""
        if not 1 <= self.n <= TOP_CONTRIBUTIONS:
            raise ValueError(f"the (n, k) rule needs 1 <= n <= {TOP_CONTRIBUTIONS}")
        if not 0 < self.k < 100:
            raise ValueError("the (n, k) rule needs 0 < k < 100")
        top = _contributions(table)
        values = table.values
        largest = top[:, : self.n].sum(axis=1)
        required = 100.0 / self.k * largest - values
        level = np.where((values > 0) & (largest > self.k / 100.0 * values), required, 0.0)
        return Protection.symmetric(np.maximum(level, 0.0))


Rule = ThresholdRule | PPercentRule | DominanceRule


def parse_rule(text: str) -> Rule:
    """Parse a rule given as text: ``"p%=15"``, ``"nk=2,85"`` or ``"threshold=3"``.

    Parameters
    ----------
    text : str
        The rule.

    Returns
    -------
    ThresholdRule, PPercentRule or DominanceRule
    """
    match = re.fullmatch(r"\s*([a-zA-Z%]+)\s*=\s*([0-9.,\s]+)", text)
    if not match:
        raise ValueError(f"cannot read the rule {text!r}; use p%=15, nk=2,85 or threshold=3")
    name, args = match.group(1).lower(), [a for a in match.group(2).replace(" ", "").split(",") if a]
    try:
        if name in ("p%", "p", "ppercent") and len(args) == 1:
            return PPercentRule(float(args[0]))
        if name in ("nk", "dominance") and len(args) == 2:
            return DominanceRule(int(args[0]), float(args[1]))
        if name in ("threshold", "n") and len(args) in (1, 2):
            return ThresholdRule(int(args[0]), *(float(a) for a in args[1:]))
    except ValueError as err:
        raise ValueError(f"cannot read the rule {text!r}: {err}") from None
    raise ValueError(f"unknown rule {text!r}; use p%=15, nk=2,85 or threshold=3")


def protection_from_rules(table: Table, rules: Sequence[Rule | str]) -> Protection:
    """Return the protection required by any of the rules (the largest level where several apply).

    Parameters
    ----------
    table : Table
        A table built from contributor microdata (the threshold rule on a count table needs none).
    rules : sequence of rules or rule strings

    Returns
    -------
    Protection
    """
    if not rules:
        raise ValueError("no sensitivity rule given")
    result = Protection.symmetric(np.zeros(table.n_cells))
    for rule in rules:
        rule = parse_rule(rule) if isinstance(rule, str) else rule
        result = result.combine(rule.protection(table))
    return result


def protection_from_table(table: Table) -> Protection:
    """Return the symmetric protection given in the table's ``protection`` column.

    Raises
    ------
    ValueError
        If the table has no protection column, or, for a count table, a protection exceeds its cell.
    """
    if "protection" not in table.cells:
        raise ValueError("the table has no protection column")
    levels = table.cells["protection"].fillna(0.0).to_numpy(dtype=float)
    if table.kind == "count":
        too_large = np.flatnonzero(levels > table.values)
        if len(too_large):
            named = "; ".join(
                f"{table.describe_cell(i)} (value {table.values[i]:.12g}, protection {levels[i]:.12g})"
                for i in too_large[:10]
            )
            raise ValueError(f"protection larger than the cell in a count table: {named}")
    return Protection.symmetric(levels)
