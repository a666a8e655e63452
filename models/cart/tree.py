"""One CART per synthesized column (Rodriguez et al., Section 2, steps 1-3) and its leaves' observed values.

Each synthesized variable ``X_j`` gets one tree, fitted once on the confidential data, with the kept
variables and the variables synthesized before it as predictors: a classification tree for a categorical
variable, a regression tree for a numeric one (Breiman et al. 1984; scikit-learn's CART). Two builders grow
the same tree (``tree_builder``): ``"native"`` (default), the compiled builder of
:mod:`bayessdc.models.cart.fast_tree`, which scores a categorical predictor's level-versus-rest splits from its
level counts, and ``"sklearn"``, scikit-learn's ``DecisionTreeClassifier`` / ``DecisionTreeRegressor`` on the
one-hot design, the reference it is tested against (they differ only in the choice among exactly equal splits).

Encoding of categorical predictors: one-hot. A CART split on a one-hot column separates one category from
the rest, so no order is imposed on unordered categories (an ordinal code would let a split group
"Divorced" with "Married" only because their codes are adjacent); several splits build any grouping.
Numeric predictors enter as numbers; a numeric column with missing values or missing-value codes enters as
its number with those replaced by a fill constant, beside its state column (one-hot), which the sequence
lists right after it (:mod:`bayessdc.models.cart.states`).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from .fast_tree import fit_native_tree
from .rules import ColumnSchema, Rule

__all__ = ["TREE_BUILDERS", "ColumnTree", "DesignLayout", "design_matrix", "fit_column_tree"]

#: The tree builders: the compiled one (default) and scikit-learn's, its reference.
TREE_BUILDERS = ("native", "sklearn")


@dataclass
class ColumnTree:
    """The fitted tree of one synthesized column and its leaves' observed values.

    The leaves are ranked in depth-first order so that the leaves of any subtree are consecutive; the
    distinct (leaf, value) pairs are stored in that order, so the observed values of node ``a`` are the pairs
    ``pair_start[a] .. pair_end[a] - 1``.
    """

    column: str
    predictors: list[str]
    tree: Any
    parent: np.ndarray
    pair_start: np.ndarray
    pair_end: np.ndarray
    pair_code: np.ndarray
    pair_count: np.ndarray
    rules: list[Rule]
    #: The column a candidate stands for in the rules (a state tree: its numeric column; default ``column``).
    rule_column: str | None = None
    #: Per candidate code, the number it gives ``rule_column`` in the rules (a state tree: NaN, codes, spikes).
    rule_numbers: np.ndarray | None = None
    #: Per candidate code, True when the rules cannot judge it yet (the "value" state: its number comes next).
    unjudged: np.ndarray | None = None
    #: A value tree: the state column whose "value" state (code 0) selects the records it draws for.
    gate: str | None = None
    #: Smoothing of a numeric column's draws: per node, the bandwidth of its donors (NaN: not smoothed).
    bandwidth: np.ndarray | None = None
    #: Per record of the data, the (leaf, value) pair its own observation belongs to (-1: a record the tree was
    #: not fitted on), for draws that leave a record's own observation out of its own bootstrap.
    own_pair: np.ndarray | None = None

    @property
    def n_leaves(self) -> int:
        """Number of leaves of the tree."""
        return int(self.tree.get_n_leaves())


def design_matrix(
    columns: Sequence[str], values: Mapping[str, np.ndarray], n: int, schema: Mapping[str, ColumnSchema]
) -> np.ndarray:
    """Predictor matrix: one-hot columns for categorical predictors, numbers for numeric ones.

    Parameters
    ----------
    columns
        The predictors, in order.
    values
        Encoded values of each predictor (codes or floats), ``n`` per column.
    n
        Number of records.
    schema
        The encoding of every column.
    """
    width = sum(len(schema[c].levels) if schema[c].categorical else 1 for c in columns)
    design = np.zeros((n, max(width, 1)), dtype=np.float32)  # no predictors: one constant column, one leaf
    offset = 0
    rows = np.arange(n)
    for column in columns:
        spec = schema[column]
        if spec.categorical:
            design[rows, offset + values[column]] = 1.0
            offset += len(spec.levels)
        else:
            design[:, offset] = spec.predictor(values[column])
            offset += 1
    return design


class DesignLayout:
    """Where each column sits in a design matrix of :func:`design_matrix`'s encoding over ``columns``, in order.

    The predictors of every tree of the synthesizer are a prefix of one column sequence (the kept columns, then
    the synthesized ones in order), so one column-major matrix serves every tree of a dataset: the tree of a
    column reads the prefix of its predictors (a view, no copy), and each drawn column is written in as it is
    drawn. The values are those :func:`design_matrix` gives.

    Parameters
    ----------
    columns
        Every column that may be a predictor, in the order of the sequence.
    schema
        The encoding of every column.
    """

    def __init__(self, columns: Sequence[str], schema: Mapping[str, ColumnSchema]) -> None:
        self.schema = schema
        self.offset: dict[str, int] = {}
        offset = 0
        for column in columns:
            self.offset[column] = offset
            offset += len(schema[column].levels) if schema[column].categorical else 1
        self.total = offset

    def width(self, predictors: Sequence[str]) -> int:
        """Columns of the matrix taken by ``predictors`` (a prefix of the sequence)."""
        if not predictors:
            return 0
        last = predictors[-1]
        width = self.offset[last] + (len(self.schema[last].levels) if self.schema[last].categorical else 1)
        if width != sum(len(self.schema[c].levels) if self.schema[c].categorical else 1 for c in predictors):
            raise ValueError("the predictors are not a prefix of the layout's columns")
        return width

    def empty(self, n: int) -> np.ndarray:
        """A zero matrix of ``n`` rows (at least one column: a tree without predictors reads a constant)."""
        return np.zeros((n, max(self.total, 1)), dtype=np.float32, order="F")

    def fill(self, design: np.ndarray, column: str, values: np.ndarray) -> None:
        """Write the encoded ``values`` of ``column`` (codes or numbers, one per row) into ``design``."""
        spec, offset = self.schema[column], self.offset[column]
        if spec.categorical:
            block = design[:, offset : offset + len(spec.levels)]
            block[:] = 0.0
            block[np.arange(len(values)), values] = 1.0
        else:
            design[:, offset] = spec.predictor(values)


def fit_column_tree(
    column: str,
    predictors: list[str],
    rules: list[Rule],
    schema: Mapping[str, ColumnSchema],
    codes: Mapping[str, np.ndarray],
    *,
    min_samples_leaf: int,
    ccp_alpha: float,
    max_depth: int | None,
    seed: int,
    rows: np.ndarray | None = None,
    tree_builder: str = "native",
    orders: MutableMapping[str, np.ndarray] | None = None,
) -> ColumnTree:
    """Fit the tree of ``column`` on the confidential values and index its leaves' observed values.

    Parameters
    ----------
    column
        The synthesized column.
    predictors
        The kept columns and the columns synthesized before ``column``.
    rules
        The rules enforced when ``column`` is drawn (stored with the tree).
    schema, codes
        The encoding and the encoded confidential values of every column.
    min_samples_leaf, ccp_alpha, max_depth
        scikit-learn's tree settings.
    seed
        ``random_state`` of scikit-learn's tree (its tie-breaking among equally good splits; the native builder
        takes the first in the design's order and needs no seed).
    rows
        The records the tree is fitted on (default all; a value tree: those in the "value" state).
    tree_builder
        ``"native"`` (:func:`bayessdc.models.cart.fast_tree.fit_native_tree`) or ``"sklearn"`` (scikit-learn on
        the one-hot design; ``seed`` breaks its ties).
    orders
        A cache shared by the trees of a synthesizer: per numeric column, all records in the order of its
        predictor values (native builder; filled as the trees need them).
    """
    if tree_builder not in TREE_BUILDERS:
        raise ValueError(f"tree_builder must be one of {TREE_BUILDERS}, got {tree_builder!r}")
    spec = schema[column]
    every = codes
    if rows is not None:
        codes = {c: codes[c][rows] for c in {column, *predictors}}
    n = len(codes[column])
    if spec.categorical:
        target_codes = codes[column]
    else:
        target_codes = np.searchsorted(spec.levels.astype(float), codes[column])
    if tree_builder == "native":
        orders = {} if orders is None else orders
        sorted_rows = [
            None if schema[c].categorical else _sorted_rows(c, every, schema, rows, orders) for c in predictors
        ]
        tree: Any = fit_native_tree(
            [codes[c] if schema[c].categorical else schema[c].predictor(codes[c]) for c in predictors],
            [len(schema[c].levels) if schema[c].categorical else 0 for c in predictors],
            codes[column],
            classification=spec.categorical,
            n_classes=len(spec.levels) if spec.categorical else 0,
            min_samples_leaf=min_samples_leaf,
            max_depth=max_depth,
            ccp_alpha=ccp_alpha,
            sorted_rows=sorted_rows,
        )
        fitted_leaves, tree.fitted_leaves = tree.fitted_leaves, None
    else:
        design = design_matrix(predictors, codes, n, schema)
        settings = {
            "min_samples_leaf": min_samples_leaf,
            "ccp_alpha": ccp_alpha,
            "max_depth": max_depth,
            "random_state": seed,
        }
        kind = DecisionTreeClassifier if spec.categorical else DecisionTreeRegressor
        tree = kind(**settings).fit(design, codes[column])
        fitted_leaves = tree.apply(design)
        del design
    left, right = tree.tree_.children_left, tree.tree_.children_right
    n_nodes = len(left)
    is_leaf = left == -1  # sklearn.tree._tree.TREE_LEAF
    parent = np.full(n_nodes, -1, dtype=np.int64)
    parent[left[~is_leaf]] = np.flatnonzero(~is_leaf)
    parent[right[~is_leaf]] = np.flatnonzero(~is_leaf)
    # Depth-first order: the leaves under any node get consecutive ranks.
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if not is_leaf[node]:
            stack.extend((right[node], left[node]))
    leaf_rank = np.full(n_nodes, -1, dtype=np.int64)
    leaves = [node for node in order if is_leaf[node]]
    leaf_rank[leaves] = np.arange(len(leaves))
    first, last = leaf_rank.copy(), leaf_rank.copy()
    for node in reversed(order):
        if not is_leaf[node]:
            first[node] = first[left[node]]
            last[node] = last[right[node]]
    n_levels = len(spec.levels)
    key = leaf_rank[fitted_leaves] * n_levels + target_codes
    pairs, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    own_pair = np.full(len(every[column]), -1, dtype=np.int64)
    own_pair[slice(None) if rows is None else rows] = inverse.ravel()
    pair_leaf = pairs // n_levels
    leaf_start = np.searchsorted(pair_leaf, np.arange(len(leaves)), side="left")
    leaf_end = np.searchsorted(pair_leaf, np.arange(len(leaves)), side="right")
    return ColumnTree(
        column=column,
        predictors=predictors,
        tree=tree,
        parent=parent,
        pair_start=leaf_start[first],
        pair_end=leaf_end[last],
        pair_code=(pairs % n_levels).astype(np.int64),
        pair_count=counts.astype(float),
        rules=rules,
        own_pair=own_pair,
    )


def _sorted_rows(
    column: str,
    codes: Mapping[str, np.ndarray],
    schema: Mapping[str, ColumnSchema],
    rows: np.ndarray | None,
    orders: MutableMapping[str, np.ndarray],
) -> np.ndarray:
    """The records (``rows``, or all) in the order of the numeric ``column``'s float32 predictor values; the order
    of all records is sorted once and kept in ``orders``."""
    order = orders.get(column)
    if order is None:
        order = np.argsort(np.asarray(schema[column].predictor(codes[column]), dtype=np.float32), kind="stable")
        orders[column] = order
    if rows is None:
        return order
    position = np.full(len(order), -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    kept = position[order]
    return kept[kept >= 0]
