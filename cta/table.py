"""Tables with marginal totals at every level, and their additivity equations ``T y = 0``.

A table is the full cross product of its dimensions. Each dimension is a hierarchy built from one or more
columns (``("province", "arrondissement")`` is province > arrondissement); a flat dimension is a hierarchy of
depth one. Every node of every hierarchy is a cell coordinate, so the table holds the interior cells, every
marginal total and the grand total. The additivity equations say, for every dimension, that a cell at an
inner node equals the sum of the cells at its children, all other coordinates held fixed. Cells are ordered
as the C-order product of the dimensions' node orders (children before their parent), which makes the
equations Kronecker products of small per-dimension matrices.

Tables that share cells (linked tables) are joined with :func:`link_tables` into one system: a cell is
identified by its labels on every dimension column, a column missing from a table counting as its total.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..models.validation import name_rows

#: Default label of a marginal total.
TOTAL_LABEL = "Total"

#: How many of the largest contributions per cell are kept for the sensitivity rules.
TOP_CONTRIBUTIONS = 10

TABLE_KINDS = ("magnitude", "count")


@dataclass(frozen=True)
class Dimension:
    """One dimension of a table: a hierarchy of labels over one or more columns.

    Attributes
    ----------
    columns : tuple of str
        The columns, from the top level down (one column for a flat dimension).
    nodes : list of tuple of str
        Every node as a tuple of labels, one per column; levels below the node carry the total label.
        Ordered depth first with children before their parent, so the root (all totals) is last.
    parent : numpy.ndarray
        Index of each node's parent in ``nodes`` (-1 for the root).
    """

    columns: tuple[str, ...]
    nodes: list[tuple[str, ...]]
    parent: np.ndarray

    @property
    def size(self) -> int:
        """Number of nodes (leaves, inner nodes and the root)."""
        return len(self.nodes)

    @property
    def is_leaf(self) -> np.ndarray:
        """Boolean mask of the nodes that have no children."""
        has_child = np.zeros(self.size, dtype=bool)
        has_child[self.parent[self.parent >= 0]] = True
        return ~has_child

    def children_matrix(self) -> sp.csr_matrix:
        """Return the (inner nodes x nodes) matrix with +1 at each inner node and -1 at its children."""
        inner = np.flatnonzero(~self.is_leaf)
        row_of = {node: r for r, node in enumerate(inner)}
        rows, cols, vals = [], [], []
        for r, node in enumerate(inner):
            rows.append(r)
            cols.append(node)
            vals.append(1.0)
        for child, par in enumerate(self.parent):
            if par >= 0:
                rows.append(row_of[par])
                cols.append(child)
                vals.append(-1.0)
        return sp.csr_matrix((vals, (rows, cols)), shape=(len(inner), self.size))

    def descendant_leaf_matrix(self) -> sp.csr_matrix:
        """Return the (nodes x leaves) 0/1 matrix saying which leaves each node adds up."""
        leaves = np.flatnonzero(self.is_leaf)
        rows, cols = [], []
        for j, leaf in enumerate(leaves):
            node = leaf
            while node >= 0:
                rows.append(node)
                cols.append(j)
                node = self.parent[node]
        return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(self.size, len(leaves)))


def build_dimension(columns: Sequence[str], leaves: Sequence[tuple[str, ...]], total_label: str) -> Dimension:
    """Build a :class:`Dimension` from the distinct leaf label tuples found in the data.

    Parameters
    ----------
    columns : sequence of str
        The dimension's columns from the top level down.
    leaves : sequence of tuple of str
        The distinct leaf labels (one label per column).
    total_label : str
        The label of a total.

    Returns
    -------
    Dimension
    """
    columns = tuple(columns)
    depth = len(columns)
    leaf_set = sorted(set(leaves))
    nodes: list[tuple[str, ...]] = []

    def pad(prefix: tuple[str, ...]) -> tuple[str, ...]:
        return prefix + (total_label,) * (depth - len(prefix))

    def visit(prefix: tuple[str, ...]) -> None:
        level = len(prefix)
        if level < depth:
            for child in sorted({leaf[level] for leaf in leaf_set if leaf[:level] == prefix}):
                visit(prefix + (child,))
        nodes.append(pad(prefix))

    visit(())
    index = {node: i for i, node in enumerate(nodes)}
    parent = np.full(len(nodes), -1, dtype=np.int64)
    for i, node in enumerate(nodes):
        level = sum(label != total_label for label in node)
        if level > 0:
            parent[i] = index[pad(node[: level - 1])]
    return Dimension(columns=columns, nodes=nodes, parent=parent)


@dataclass
class Table:
    """Cells of one table (or of a system of linked tables) with their additivity equations.

    Attributes
    ----------
    cells : pandas.DataFrame
        One row per cell: the dimension columns (labels, the total label for totals), ``original`` (the cell
        value) and ``interior`` (True for cells that are no total). Optional per-cell columns given with the
        data: ``protection``, ``capacity``, ``cost``. Built from microdata, also ``n_contributors``.
    additivity : scipy.sparse.csr_matrix
        The matrix ``T`` (equations x cells) with ``T @ values == 0`` for an additive table.
    total_cell : numpy.ndarray
        For each equation, the index of the total cell it defines.
    dimensions : list of Dimension
        The dimensions (of the first table for linked tables).
    total_label : str
        The label of a total.
    kind : str
        ``"magnitude"`` or ``"count"``.
    top_contributions : numpy.ndarray or None
        (cells x :data:`TOP_CONTRIBUTIONS`) largest contributions per cell in decreasing order, zero padded;
        present when the table was built from contributor microdata.
    """

    cells: pd.DataFrame
    additivity: sp.csr_matrix
    total_cell: np.ndarray
    dimensions: list[Dimension]
    total_label: str = TOTAL_LABEL
    kind: str = "magnitude"
    top_contributions: np.ndarray | None = None
    label_columns: list[str] = field(default_factory=list)

    @property
    def values(self) -> np.ndarray:
        """The original cell values as a float array."""
        return self.cells["original"].to_numpy(dtype=float)

    @property
    def n_cells(self) -> int:
        """Number of cells, totals included."""
        return len(self.cells)

    def describe_cell(self, index: int) -> str:
        """Return ``"col=label, col=label"`` naming one cell."""
        row = self.cells.iloc[int(index)]
        return ", ".join(f"{col}={row[col]}" for col in self.label_columns)

    def additivity_residuals(self, values: np.ndarray | None = None) -> np.ndarray:
        """Return ``T @ values`` (one residual per equation; zero when every total adds up)."""
        return self.additivity @ (self.values if values is None else np.asarray(values, dtype=float))


def parse_dimensions(dims: str | Sequence[str | Sequence[str]]) -> list[tuple[str, ...]]:
    """Parse a dimension specification into column tuples.

    Parameters
    ----------
    dims : str or sequence
        ``"province>arrondissement,sex"`` or ``[("province", "arrondissement"), "sex"]``: comma-separated
        dimensions, ``>`` separating the levels of a hierarchical dimension from the top down.

    Returns
    -------
    list of tuple of str
    """
    if isinstance(dims, str):
        dims = [d for d in (part.strip() for part in dims.split(",")) if d]
    parsed: list[tuple[str, ...]] = []
    for dim in dims:
        if isinstance(dim, str):
            parsed.append(tuple(level.strip() for level in dim.split(">") if level.strip()))
        else:
            parsed.append(tuple(dim))
    if not parsed or any(not dim for dim in parsed):
        raise ValueError("no dimension columns given")
    flat = [col for dim in parsed for col in dim]
    if len(set(flat)) != len(flat):
        raise ValueError(f"a dimension column is named twice: {flat}")
    return parsed


def _check_columns(data: pd.DataFrame, columns: Sequence[str | None]) -> None:
    missing = [col for col in columns if col is not None and col not in data.columns]
    if missing:
        have = ", ".join(map(str, data.columns))
        raise ValueError(f"column(s) not in the data: {', '.join(missing)} (have: {have})")


def _check_rows(data: pd.DataFrame) -> None:
    if len(data) == 0:
        raise ValueError("the table has no rows: there is no cell to adjust")


def _labels(data: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    out = pd.DataFrame(index=data.index)
    for col in columns:
        missing = data[col].isna().to_numpy()
        if missing.any():
            raise ValueError(f"dimension column {col!r} has missing values (no label) at {name_rows(missing)}")
        out[col] = data[col].astype(str).str.strip()
    return out


def _given_numbers(data: pd.DataFrame, column: str) -> pd.Series:
    """The column as floats, missing values kept as NaN; a value that is not a number, or not finite, is refused
    (data rows named)."""
    values = pd.to_numeric(data[column], errors="coerce")
    text = (values.isna() & data[column].notna()).to_numpy()
    if text.any():
        raise ValueError(f"column {column!r} is not numeric at {name_rows(text)}")
    values = values.astype(float)
    infinite = np.isinf(values.to_numpy())
    if infinite.any():
        raise ValueError(f"column {column!r} holds inf at {name_rows(infinite)}; every number must be finite")
    return values


def _numeric(data: pd.DataFrame, column: str) -> pd.Series:
    values = _given_numbers(data, column)
    missing = values.isna().to_numpy()
    if missing.any():
        raise ValueError(f"column {column!r} has missing values at {name_rows(missing)}")
    return values


def _structure(dims: list[Dimension]) -> tuple[pd.DataFrame, sp.csr_matrix, np.ndarray, sp.csr_matrix]:
    """Cells frame (labels), the matrix T, the total cell of each equation and the leaf aggregation matrix."""
    sizes = [d.size for d in dims]
    label_rows = []
    for combo in itertools.product(*(d.nodes for d in dims)):
        label_rows.append(tuple(label for node in combo for label in node))
    columns = [col for d in dims for col in d.columns]
    cells = pd.DataFrame(label_rows, columns=columns)
    interior = np.ones(1, dtype=bool)
    for d in dims:
        interior = np.kron(interior, d.is_leaf)
    cells["interior"] = interior.astype(bool)

    blocks, totals = [], []
    for k, d in enumerate(dims):
        factors = [sp.identity(s, format="csr") for s in sizes]
        factors[k] = d.children_matrix()
        block = factors[0]
        for f in factors[1:]:
            block = sp.kron(block, f, format="csr")
        blocks.append(block)
        # The +1 entry of each row is its total cell.
        coo = block.tocoo()
        plus = coo.data > 0
        order = np.argsort(coo.row[plus])
        totals.append(coo.col[plus][order])
    T = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, len(cells)))
    aggregate = dims[0].descendant_leaf_matrix()
    for d in dims[1:]:
        aggregate = sp.kron(aggregate, d.descendant_leaf_matrix(), format="csr")
    return cells, T, np.concatenate(totals) if totals else np.zeros(0, int), aggregate


def _check_kind(kind: str) -> None:
    if kind not in TABLE_KINDS:
        raise ValueError(f"table kind must be one of {TABLE_KINDS}, not {kind!r}")


def table_from_long(
    data: pd.DataFrame,
    dims: str | Sequence[str | Sequence[str]],
    value: str,
    *,
    total_label: str = TOTAL_LABEL,
    kind: str = "magnitude",
    protection: str | None = None,
    capacity: str | None = None,
    cost: str | None = None,
    allow_negative: bool = False,
) -> Table:
    """Build a table from long-form data: dimension columns and a value column, one row per cell.

    Rows whose labels include the total label are given totals: they are checked against the sums of the
    interior cells (and a :class:`ValueError` names every total that does not add up). Totals that are not
    given are computed. Interior cells that do not appear are zero.

    Parameters
    ----------
    data : pandas.DataFrame
        The table in long form.
    dims : str or sequence
        The dimensions, see :func:`parse_dimensions`.
    value : str
        The column of cell values.
    total_label : str, default "Total"
        The label that marks a total.
    kind : {"magnitude", "count"}
        Count tables must hold whole numbers.
    protection, capacity, cost : str, optional
        Columns with per-cell protection levels, adjustment capacities and costs (a missing capacity or cost
        means "not given"; a missing protection level is refused: 0 means none; cells not listed get none).
    allow_negative : bool, default False
        Accept negative cell values.

    Returns
    -------
    Table
    """
    _check_kind(kind)
    parsed = parse_dimensions(dims)
    columns = [col for dim in parsed for col in dim]
    _check_columns(data, columns + [value, protection, capacity, cost])
    _check_rows(data)
    labels = _labels(data, columns)
    values = _numeric(data, value)
    negative = (values < 0).to_numpy()
    if not allow_negative and negative.any():
        bad = data.index[negative][:5]
        described = "; ".join(", ".join(f"{c}={labels.at[i, c]}" for c in columns) for i in bad)
        raise ValueError(
            f"negative values in column {value!r} (e.g. {described}) at {name_rows(negative)}; cell values must be >= 0"
        )
    fractional = ~np.isclose(values, np.round(values))
    if kind == "count" and fractional.any():
        raise ValueError(
            f"a count table needs whole numbers in column {value!r}; non-integer at {name_rows(fractional)}"
        )

    is_total = np.zeros(len(data), dtype=bool)
    for dim in parsed:
        dim_labels = labels[list(dim)].to_numpy()
        totals = dim_labels == total_label
        # Totals must come last within a hierarchy: once a level is a total, all below are totals.
        bad_order = ((np.cumsum(totals, axis=1) > 0) & ~totals).any(axis=1)
        if bad_order.any():
            raise ValueError(
                f"{name_rows(bad_order)}: in dimension {'>'.join(dim)} a level below a {total_label!r} label is not "
                f"{total_label!r}"
            )
        is_total |= totals.any(axis=1)

    interior_labels = labels[~is_total]
    keys = list(interior_labels.itertuples(index=False, name=None))
    if len(set(keys)) != len(keys):
        dup = pd.Series(keys).duplicated(keep=False)
        first = pd.Series(keys)[dup].iloc[0]
        same = np.zeros(len(data), dtype=bool)
        same[np.flatnonzero(~is_total)] = [key == first for key in keys]
        raise ValueError(
            f"cell {dict(zip(columns, first, strict=True))} appears more than once in the data (at {name_rows(same)})"
        )
    if not keys:
        raise ValueError("the data holds no interior cells (every row is a total)")

    dim_objects = []
    start = 0
    for dim in parsed:
        leaves = {key[start : start + len(dim)] for key in keys}
        dim_objects.append(build_dimension(dim, sorted(leaves), total_label))
        start += len(dim)
    cells, T, total_cell, aggregate = _structure(dim_objects)
    index_of = {key: i for i, key in enumerate(cells[columns].itertuples(index=False, name=None))}

    interior_index = np.flatnonzero(cells["interior"].to_numpy())
    leaf_values = np.zeros(len(interior_index))
    position = {cell: j for j, cell in enumerate(interior_index)}
    for key, v in zip(keys, values[~is_total], strict=True):
        leaf_values[position[index_of[key]]] = v
    cells["original"] = aggregate @ leaf_values

    row_cell = np.array([index_of.get(key, -1) for key in labels.itertuples(index=False, name=None)])
    if (row_cell < 0).any():
        row = data.index[row_cell < 0][0]
        raise ValueError(
            f"{name_rows(row_cell < 0)}: total {dict(labels.loc[row])} refers to labels with no interior cell"
        )

    given_total_rows = np.flatnonzero(is_total)
    if len(given_total_rows):
        given = values.to_numpy()[given_total_rows]
        computed = cells["original"].to_numpy()[row_cell[given_total_rows]]
        tolerance = 1e-9 * max(1.0, float(np.abs(computed).max()))
        failing = np.flatnonzero(np.abs(given - computed) > tolerance)
        if len(failing):
            lines = []
            for j in failing[:20]:
                cell = row_cell[given_total_rows[j]]
                name = ", ".join(f"{c}={cells.at[cell, c]}" for c in columns)
                lines.append(f"  {name}: given {given[j]:.12g}, its cells add up to {computed[j]:.12g}")
            more = f"\n  ... and {len(failing) - 20} more" if len(failing) > 20 else ""
            raise ValueError(f"{len(failing)} total(s) do not add up:\n" + "\n".join(lines) + more)

    for column, name in ((protection, "protection"), (capacity, "capacity"), (cost, "cost")):
        if column is None:
            continue
        given = _given_numbers(data, column).to_numpy(dtype=float)
        if name == "protection" and np.isnan(given).any():  # "none" or "unknown"? A level is said, 0 for none
            raise ValueError(
                f"column {column!r} (protection levels) has missing values at {name_rows(np.isnan(given))}; give every "
                "cell its level, 0 for a cell that needs none (a missing level would leave a sensitive cell to the "
                "rule's protection, or to none)"
            )
        if (given < 0).any():
            raise ValueError(f"column {column!r} has negative values at {name_rows(given < 0)}")
        per_cell = np.full(len(cells), np.nan if name != "protection" else 0.0)
        ok = ~np.isnan(given)
        per_cell[row_cell[ok]] = given[ok]
        cells[name] = per_cell

    return Table(
        cells=cells,
        additivity=T,
        total_cell=total_cell,
        dimensions=dim_objects,
        total_label=total_label,
        kind=kind,
        label_columns=columns,
    )


def table_from_microdata(
    data: pd.DataFrame,
    dims: str | Sequence[str | Sequence[str]],
    value: str | None,
    contributor: str | None = None,
    *,
    total_label: str = TOTAL_LABEL,
    kind: str = "magnitude",
    weight: str | None = None,
) -> Table:
    """Build a table from contributor-level microdata: each cell is the sum over its contributors.

    Every cell (totals included) records its number of contributors and its largest contributions, which the
    sensitivity rules (:mod:`bayessdc.cta.rules`) use. A contributor with several rows in a cell contributes
    the sum of them.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per contribution.
    dims : str or sequence
        The dimensions, see :func:`parse_dimensions`.
    value : str or None
        The column of contributions; None for a count table (each row counts one).
    contributor : str, optional
        The column identifying contributors; by default each row is its own contributor.
    total_label : str, default "Total"
        The label of a total; it may not occur in the data.
    kind : {"magnitude", "count"}
    weight : str, optional
        A column of weights multiplying each contribution (e.g. survey weights).

    Returns
    -------
    Table
    """
    _check_kind(kind)
    if value is None and kind != "count":
        raise ValueError("a magnitude table needs a value column")
    parsed = parse_dimensions(dims)
    columns = [col for dim in parsed for col in dim]
    _check_columns(data, columns + [value, contributor, weight])
    _check_rows(data)
    labels = _labels(data, columns)
    if (labels == total_label).any().any():
        col = labels.columns[(labels == total_label).any()][0]
        raise ValueError(f"microdata column {col!r} uses the total label {total_label!r} as a category")
    amount = pd.Series(1.0, index=data.index) if value is None else _numeric(data, value)
    if (amount < 0).any():
        raise ValueError(
            f"negative values in column {value!r} at {name_rows((amount < 0).to_numpy())}; contributions must be >= 0"
        )
    if weight is not None:
        amount = amount * _numeric(data, weight)
    frame = labels.copy()
    frame["_amount"] = amount.to_numpy()
    frame["_who"] = data[contributor].astype(str).to_numpy() if contributor else np.arange(len(data))

    dim_objects = []
    for dim in parsed:
        leaves = set(frame[list(dim)].itertuples(index=False, name=None))
        dim_objects.append(build_dimension(dim, sorted(leaves), total_label))
    cells, T, total_cell, _ = _structure(dim_objects)
    index_of = {key: i for i, key in enumerate(cells[columns].itertuples(index=False, name=None))}

    totals = np.zeros(len(cells))
    counts = np.zeros(len(cells), dtype=np.int64)
    top = np.zeros((len(cells), TOP_CONTRIBUTIONS))
    for depths in itertools.product(*(range(len(dim) + 1) for dim in parsed)):
        keys = frame[columns].copy()
        for dim, depth in zip(parsed, depths, strict=True):
            for col in dim[depth:]:
                keys[col] = total_label
        grouped = (
            pd.concat([keys, frame[["_who", "_amount"]]], axis=1)
            .groupby(columns + ["_who"], sort=False)["_amount"]
            .sum()
            .reset_index()
        )
        grouped["_cell"] = [index_of[k] for k in grouped[columns].itertuples(index=False, name=None)]
        grouped = grouped.sort_values(["_cell", "_amount"], ascending=[True, False])
        grouped["_rank"] = grouped.groupby("_cell").cumcount()
        per_cell = grouped.groupby("_cell")["_amount"]
        sums = per_cell.sum()
        totals[sums.index] = sums.to_numpy()
        n = grouped.groupby("_cell")["_who"].size()
        counts[n.index] = n.to_numpy()
        head = grouped[grouped["_rank"] < TOP_CONTRIBUTIONS]
        top[head["_cell"].to_numpy(), head["_rank"].to_numpy()] = head["_amount"].to_numpy()

    cells["original"] = totals
    cells["n_contributors"] = counts
    return Table(
        cells=cells,
        additivity=T,
        total_cell=total_cell,
        dimensions=dim_objects,
        total_label=total_label,
        kind=kind,
        top_contributions=top,
        label_columns=columns,
    )


def link_tables(tables: Sequence[Table]) -> Table:
    """Join tables that share cells into one system of equations.

    A cell is identified by its labels on the union of all dimension columns (a column that a table lacks
    counts as its total), so the shared marginal cells of two tables become one cell. Shared cells must have
    the same value in every table.

    Parameters
    ----------
    tables : sequence of Table
        Tables with the same total label and kind.

    Returns
    -------
    Table
        One table whose ``additivity`` stacks every table's equations.
    """
    if not tables:
        raise ValueError("no tables to link")
    total_label = tables[0].total_label
    kind = tables[0].kind
    if any(t.total_label != total_label or t.kind != kind for t in tables):
        raise ValueError("linked tables need the same total label and kind")
    columns: list[str] = []
    for t in tables:
        columns += [c for c in t.label_columns if c not in columns]
    extra_columns = [
        c for c in ("protection", "capacity", "cost", "n_contributors") if any(c in t.cells for t in tables)
    ]

    index_of: dict[tuple[str, ...], int] = {}
    rows: list[dict] = []
    tops: list[np.ndarray] = []
    blocks, totals = [], []
    for t in tables:
        frame = t.cells.copy()
        for col in columns:
            if col not in frame:
                frame[col] = total_label
        mapping = np.empty(t.n_cells, dtype=np.int64)
        for i, record in enumerate(frame.to_dict("records")):
            key = tuple(record[c] for c in columns)
            if key in index_of:
                j = index_of[key]
                known = rows[j]["original"]
                if not np.isclose(known, record["original"], rtol=1e-9, atol=1e-9):
                    name = ", ".join(f"{c}={v}" for c, v in zip(columns, key, strict=True))
                    raise ValueError(
                        f"linked tables disagree on the shared cell {name}: {known:.12g} vs {record['original']:.12g}"
                    )
                rows[j]["interior"] = rows[j]["interior"] and record["interior"]
            else:
                j = len(rows)
                index_of[key] = j
                rows.append(
                    {
                        **{c: record[c] for c in columns},
                        "original": record["original"],
                        "interior": record["interior"],
                        **{c: record.get(c, np.nan) for c in extra_columns},
                    }
                )
                if t.top_contributions is not None:
                    tops.append(t.top_contributions[i])
                else:
                    tops.append(np.zeros(TOP_CONTRIBUTIONS))
            mapping[i] = j
        blocks.append((t.additivity.tocoo(), mapping))
        totals.append(mapping[t.total_cell])
    n = len(rows)
    mats = [sp.csr_matrix((coo.data, (coo.row, mapping[coo.col])), shape=(coo.shape[0], n)) for coo, mapping in blocks]
    cells = pd.DataFrame(rows)
    if "protection" in cells:
        cells["protection"] = cells["protection"].fillna(0.0)
    has_top = any(t.top_contributions is not None for t in tables)
    return Table(
        cells=cells,
        additivity=sp.vstack(mats, format="csr"),
        total_cell=np.concatenate(totals),
        dimensions=[d for t in tables for d in t.dimensions],
        total_label=total_label,
        kind=kind,
        top_contributions=np.vstack(tops) if has_top else None,
        label_columns=columns,
    )
