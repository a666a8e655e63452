"""The input of the flow synthesizer: column names, checks, and one :class:`FlowGroup` per group pair.

Cells of a county-to-county flow table whose count lies in ``lower..upper`` (1..9 in the paper) are
sensitive; their shifted counts ``y = count - lower`` are modelled, one model per (origin group,
destination group) pair (Hawala, Reiter & Wang, Section 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..validation import name_rows

__all__ = ["FlowColumns", "FlowDataError", "FlowGroup", "split_groups", "validate_flows"]


class FlowDataError(InputError):
    """The flow table cannot be modelled as given (the message names the column or rows at fault)."""


@dataclass(frozen=True)
class FlowColumns:
    """Names of the input columns."""

    origin: str = "origin"
    destination: str = "destination"
    origin_group: str = "origin_group"
    destination_group: str = "destination_group"
    count: str = "count"

    def as_list(self) -> list[str]:
        """All five column names, in the order above."""
        return [self.origin, self.destination, self.origin_group, self.destination_group, self.count]


def validate_flows(data: pd.DataFrame, columns: FlowColumns = FlowColumns()) -> pd.DataFrame:
    """Check a flow table and return it with a clean integer count column.

    Parameters
    ----------
    data
        One row per origin-destination pair, with origin, destination, their groups and the count.
    columns
        Names of those columns.

    Returns
    -------
    pandas.DataFrame
        The same rows (same order and index) with ``count`` as int64.

    Raises
    ------
    FlowDataError
        Missing columns, no rows, missing values, counts that are not non-negative integers, duplicate
        origin-destination rows, or an origin (destination) listed in two groups; the message names the
        column and the data rows.
    """
    missing = [c for c in columns.as_list() if c not in data.columns]
    if missing:
        raise FlowDataError(
            f"missing column(s) {', '.join(repr(c) for c in missing)}; the table has "
            f"{', '.join(repr(str(c)) for c in data.columns)} (rename them, or name them in columns=)"
        )
    if len(data) == 0:
        raise FlowDataError("the table has no rows: there is no flow to synthesize")
    out = data.reset_index(drop=True).copy()
    for col in columns.as_list():
        na = out[col].isna().to_numpy()
        if na.any():
            raise FlowDataError(f"column {col!r} has missing values at {name_rows(na)}")
    counts = pd.to_numeric(out[columns.count], errors="coerce")
    bad = counts.isna().to_numpy()
    if bad.any():
        raise FlowDataError(f"column {columns.count!r} is not numeric at {name_rows(bad)}")
    values = counts.to_numpy(dtype=float)
    negative = values < 0
    if negative.any():
        raise FlowDataError(f"column {columns.count!r} has negative counts at {name_rows(negative)}")
    fractional = values != np.round(values)
    if fractional.any():
        raise FlowDataError(f"column {columns.count!r} has non-integer counts at {name_rows(fractional)}")
    out[columns.count] = values.astype(np.int64)
    duplicated = out.duplicated([columns.origin, columns.destination], keep=False).to_numpy()
    if duplicated.any():
        raise FlowDataError(
            f"origin-destination pairs appear more than once ({columns.origin!r}, {columns.destination!r}) "
            f"at {name_rows(duplicated)}"
        )
    for unit, group in ((columns.origin, columns.origin_group), (columns.destination, columns.destination_group)):
        n_groups = out.groupby(unit, sort=False)[group].nunique()
        split = n_groups[n_groups > 1]
        if len(split):
            name = split.index[0]
            raise FlowDataError(
                f"{unit} {name!r} belongs to more than one {group} "
                f"({sorted(map(str, out.loc[out[unit] == name, group].unique()))}); each unit needs one group"
            )
    return out


@dataclass
class FlowGroup:
    """The sensitive cells of one (origin group, destination group) pair: the data of one model.

    Attributes
    ----------
    key
        ``(origin_group, destination_group)``.
    rows
        Positions of the sensitive cells in the validated table.
    origins, destinations
        Labels of the origins and destinations that have at least one sensitive cell.
    origin_index, destination_index
        For every cell, the position of its origin in ``origins`` (destination in ``destinations``).
    y
        Shifted counts ``count - lower`` (the modelled values, 0..upper-lower).
    upper
        Largest modelled value, ``upper - lower`` (8 in the paper).
    """

    key: tuple[Any, Any]
    rows: np.ndarray
    origins: np.ndarray
    destinations: np.ndarray
    origin_index: np.ndarray
    destination_index: np.ndarray
    y: np.ndarray
    upper: int

    @property
    def n_cells(self) -> int:
        """Number of sensitive cells."""
        return len(self.y)

    @property
    def name(self) -> str:
        """A file-system-safe name for the group."""
        text = f"{self.key[0]}__{self.key[1]}"
        return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)

    def with_values(self, y: np.ndarray) -> FlowGroup:
        """The same group with other modelled values (for exact risk checks and simulations)."""
        y = np.asarray(y, dtype=np.int64)
        if y.shape != self.y.shape or y.min(initial=0) < 0 or y.max(initial=0) > self.upper:
            raise ValueError(f"values must be {self.n_cells} integers in 0..{self.upper}")
        return FlowGroup(
            self.key,
            self.rows,
            self.origins,
            self.destinations,
            self.origin_index,
            self.destination_index,
            y,
            self.upper,
        )

    def without(self, item: int) -> FlowGroup:
        """The group without cell ``item`` (the leave-one-out fit of an exact check), its origin and destination
        kept as labels of the effects even when no other cell has them (their effects then come from the prior)."""
        keep = np.arange(self.n_cells) != item
        return FlowGroup(
            self.key,
            self.rows[keep],
            self.origins,
            self.destinations,
            self.origin_index[keep],
            self.destination_index[keep],
            self.y[keep],
            self.upper,
        )


def split_groups(
    data: pd.DataFrame,
    columns: FlowColumns = FlowColumns(),
    lower: int = 1,
    upper: int = 9,
) -> tuple[list[FlowGroup], list[tuple[Any, Any]]]:
    """Split a validated flow table into one :class:`FlowGroup` per group pair.

    Parameters
    ----------
    data
        Output of :func:`validate_flows`.
    columns
        Column names.
    lower, upper
        Counts in ``lower..upper`` are sensitive (1 and 9 in the paper).

    Returns
    -------
    groups
        Group pairs with at least one sensitive cell, sorted by key.
    skipped
        Keys of group pairs without sensitive cells (they pass through unchanged).
    """
    if not (isinstance(lower, int) and isinstance(upper, int) and 0 <= lower < upper):
        raise ValueError(f"sensitive bounds must be integers with 0 <= lower < upper, got {lower}..{upper}")
    sensitive = data[columns.count].between(lower, upper).to_numpy()
    keys = [columns.origin_group, columns.destination_group]
    groups: list[FlowGroup] = []
    skipped: list[tuple[Any, Any]] = []
    positions = pd.Series(np.arange(len(data)), index=data.index)
    for key, frame in data.groupby(keys, sort=True):
        mask = sensitive[positions.loc[frame.index].to_numpy()]
        if not mask.any():
            skipped.append(tuple(key))
            continue
        cells = frame[mask]
        origin_codes, origins = pd.factorize(cells[columns.origin], sort=True)
        destination_codes, destinations = pd.factorize(cells[columns.destination], sort=True)
        groups.append(
            FlowGroup(
                key=tuple(key),
                rows=positions.loc[cells.index].to_numpy(),
                origins=np.asarray(origins),
                destinations=np.asarray(destinations),
                origin_index=origin_codes.astype(np.int64),
                destination_index=destination_codes.astype(np.int64),
                y=(cells[columns.count].to_numpy() - lower).astype(np.int64),
                upper=upper - lower,
            )
        )
    return groups, skipped
