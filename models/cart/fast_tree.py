"""A compiled CART that scores a categorical predictor's level-versus-rest splits from its level counts.

The reference is scikit-learn's CART (``DecisionTreeClassifier`` with Gini, ``DecisionTreeRegressor`` with
squared error) on the one-hot design of :func:`bayessdc.models.cart.tree.design_matrix`, where a split on a
one-hot column separates one level of a categorical predictor from the rest. scikit-learn sorts every
one-hot column at every node: a tree of the 100-column table of ``bench/cart_many_columns.py`` has up to about
400 of them, and growing the trees was nearly all of a run's time (288 s of the 100-column, 100,000-record
table, 2.6x to 2.8x python-synthpop's speed against the 5x asked for). Measured with ``bench/cart_tree_builders.py``
(every tree of a fully synthetic run, one thread, load average 5.1): scikit-learn 2.6 s and this builder 0.8 s on
the CPS file (3.2x), 51.2 s and 8.4 s on the 100-column table at 20,000 records (6.1x); with it the whole run is
5.3x to 6.5x python-synthpop's speed on that table (``bench/cart_many_columns.py``).

:func:`fit_native_tree` grows the same tree from the predictors themselves: a categorical predictor enters as
its integer codes, and every level-versus-rest split of it is scored from per-level class counts (Gini) or
per-level sums (squared error) gathered in ONE pass over the node's records; a numeric predictor is scanned in
sorted order as scikit-learn does, from indices sorted once at the root and kept sorted within each node by a
stable partition at every split, its values beside them (no sort per node; reading the values in order instead of
through the indices took 40% off the CPU time at 100,000 records); a predictor constant in a node is skipped in
every node below it, as scikit-learn skips its known constant features. The candidates and the criterion are
scikit-learn's:

* the split maximising scikit-learn's proxy of the impurity decrease (for Gini the same floating-point
  expression, so the same bits; for squared error the same formula, summed in another order);
* a split between consecutive sorted values more than ``1e-7`` apart (float32, scikit-learn's
  ``FEATURE_THRESHOLD``), at the threshold ``a / 2 + b / 2`` of the two float32 values; a one-hot column's split
  is the level (right, value 1) against the rest (left, value 0) at 0.5; both children at least
  ``min_samples_leaf`` records; a node is a leaf at ``max_depth``, below ``2 min_samples_leaf`` records, at an
  impurity ``<= eps`` or when the best split's weighted impurity decrease is below ``-eps``;
* nodes numbered depth-first, left child first, as scikit-learn's depth-first builder numbers them;
* minimal cost-complexity pruning of the whole grown tree with ``ccp_alpha`` exactly as scikit-learn's
  ``_cost_complexity_prune`` (weighted impurities ``n_t / n * i(t)``, the weakest link pruned while its effective
  alpha is at most ``ccp_alpha``), then the pruned tree renumbered depth-first.

The fitted :class:`NativeTree` is expressed in the one-hot design's columns (``tree_.feature`` is a design column,
``tree_.threshold`` scikit-learn's), so ``apply`` reads the same design matrix as scikit-learn's tree.

Ties: among splits with exactly equal proxies (for instance the two levels of a binary predictor, which make
the same partition mirrored), scikit-learn takes the first in a random order of the features drawn from
``random_state``; this builder takes the first in the order of the design's columns (a predictor's levels in
code order). The partition into leaves is the same whenever the best split is unique; at exact ties it is
another, equally good, tree. Squared errors are summed in another order than scikit-learn's, so two splits whose
decreases are equal but for rounding may also be taken differently. ``tests/models/cart/test_fast_tree.py``
checks the agreement with scikit-learn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from .records import Columns, GrownTree, Limits, Predictors, Splits, Target

__all__ = ["NativeTree", "TreeArrays", "fit_native_tree"]

#: scikit-learn's ``FEATURE_THRESHOLD`` (float32): sorted values closer than this are not split apart.
FEATURE_THRESHOLD = np.float32(1e-7)
#: scikit-learn's ``EPSILON``: an impurity at most this is zero, a decrease below ``-EPSILON`` no split.
EPSILON = float(np.finfo(np.float64).eps)
_LEAF = -1
_UNDEFINED = -2


@dataclass
class TreeArrays:
    """The arrays of a fitted tree, named and laid out as scikit-learn's ``tree_`` (one output).

    ``value`` is ``(node_count, 1, n_classes)``: class fractions of a classification tree (over the codes
    ``0 .. n_classes - 1``, absent codes included), the mean of a regression tree (``n_classes`` 1).
    """

    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    value: np.ndarray

    @property
    def node_count(self) -> int:
        """Number of nodes."""
        return len(self.children_left)

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return int((self.children_left == _LEAF).sum())

    @property
    def max_depth(self) -> int:
        """Depth of the deepest leaf (the root alone: 0)."""
        return int(_depths(self.children_left, self.children_right).max())


class NativeTree:
    """A tree grown by :func:`fit_native_tree`, with the part of scikit-learn's tree interface CART uses.

    Parameters
    ----------
    arrays
        The tree (``tree_``), in the one-hot design's columns.
    """

    def __init__(self, arrays: TreeArrays) -> None:
        self.tree_ = arrays
        self._nodes: np.ndarray | None = None
        #: The leaf of each record the tree was grown on (dropped by its user once read).
        self.fitted_leaves: np.ndarray | None = None

    def apply(self, design: np.ndarray) -> np.ndarray:
        """The leaf (node id) of every row of ``design`` (the one-hot design matrix, float32).

        A row goes left where its value in the node's column is at most the threshold, as in scikit-learn.
        """
        design = np.asarray(design)
        if design.dtype != np.float32:
            design = design.astype(np.float32)
        if getattr(self, "_nodes", None) is None:
            # left, right, column and threshold of a node side by side
            arrays = self.tree_
            self._nodes = np.column_stack(
                [arrays.children_left, arrays.children_right, arrays.feature, arrays.threshold]
            ).astype(np.float64)
        return _apply(design, self._nodes)

    def apply_predictors(self, predictors: Sequence[np.ndarray], n_levels: Sequence[int], n: int) -> np.ndarray:
        """The leaf of every record given its predictors as :func:`fit_native_tree` takes them (no design matrix).

        Parameters
        ----------
        predictors, n_levels
            As for :func:`fit_native_tree`.
        n
            Number of records (a tree without predictors has no array to count them).
        """
        arrays = _predictor_arrays(predictors, n_levels, n)
        widths = np.array([k if k else 1 for k in n_levels], dtype=np.int64)
        column_of = np.repeat(np.arange(len(arrays.kinds)), widths)
        level_of = np.concatenate([np.arange(w) for w in widths]) if len(widths) else np.zeros(0, dtype=np.int64)
        columns = Columns(kind=arrays.kinds[column_of], index=arrays.index[column_of], level=level_of.astype(np.int64))
        tree = self.tree_
        splits = Splits(left=tree.children_left, right=tree.children_right, feature=tree.feature,
                        threshold=tree.threshold)  # fmt: skip
        return _apply_predictors(arrays, columns, splits, n)

    def get_n_leaves(self) -> int:
        """Number of leaves."""
        return self.tree_.n_leaves

    def get_depth(self) -> int:
        """Depth of the tree."""
        return self.tree_.max_depth


def fit_native_tree(
    predictors: Sequence[np.ndarray],
    n_levels: Sequence[int],
    target: np.ndarray,
    *,
    classification: bool,
    n_classes: int = 0,
    min_samples_leaf: int = 1,
    max_depth: int | None = None,
    ccp_alpha: float = 0.0,
    sorted_rows: Sequence[np.ndarray | None] | None = None,
) -> NativeTree:
    """Grow (and prune) scikit-learn's CART on the one-hot design of ``predictors`` without building it.

    Parameters
    ----------
    predictors
        The predictors in design order: a categorical one as integer codes ``0 .. n_levels - 1`` (one design
        column per level), a numeric one as its numbers (one design column; cast to float32 as scikit-learn
        casts its input).
    n_levels
        Per predictor, its number of levels (0: numeric).
    target
        Codes ``0 .. n_classes - 1`` (classification) or numbers (regression).
    classification
        Gini classification tree, else a squared-error regression tree.
    n_classes
        Number of class codes (classification).
    min_samples_leaf, max_depth, ccp_alpha
        scikit-learn's settings (``min_samples_split`` is scikit-learn's default, 2).
    sorted_rows
        Per predictor, the records in the order of its float32 values (numeric predictors; ``None``: sorted
        here), so that the trees sharing a predictor sort it once.

    Returns
    -------
    NativeTree
        The tree; its ``feature`` are columns of the one-hot design.
    """
    n = len(target)
    arrays = _predictor_arrays(predictors, n_levels, n)
    order = np.empty(arrays.num.shape, dtype=np.int32)
    given = [r for r, k in zip(sorted_rows or [None] * len(n_levels), n_levels, strict=True) if not k]
    for f in range(len(arrays.num)):
        order[f] = np.argsort(arrays.num[f], kind="stable") if given[f] is None else given[f]
    if classification:
        y_class, y_real, width = np.asarray(target, dtype=np.int32), np.zeros(0), max(int(n_classes), 1)
    else:
        y_class, y_real, width = np.zeros(0, dtype=np.int32), np.asarray(target, dtype=np.float64), 1
    depth = np.iinfo(np.int32).max if max_depth is None else int(max_depth)
    leaf = max(int(min_samples_leaf), 1)
    max_nodes = 2 * max(n // leaf, 1) + 1
    goal = Target(y_class=y_class, y_real=y_real, n_classes=width, classification=bool(classification))
    limits = Limits(min_leaf=leaf, max_depth=depth, max_nodes=max_nodes)
    grown, leaf_of = _grow(arrays, order, goal, limits)
    kept = grown
    if ccp_alpha > 0.0:
        keep_leaf = _prune(grown, grown.samples.astype(np.float64), float(ccp_alpha))
        kept, new_of_old = _rebuild(keep_leaf, grown)
        left, right = grown.left, grown.right
        parent = np.full(len(left), -1, dtype=np.int64)
        inner = np.flatnonzero(left != _LEAF)
        parent[left[inner]], parent[right[inner]] = inner, inner
        for old in range(len(left)):  # a parent's id is below its children's (depth-first numbering)
            if new_of_old[old] < 0:
                new_of_old[old] = new_of_old[parent[old]]
        leaf_of = new_of_old[leaf_of]
    tree = NativeTree(
        TreeArrays(
            children_left=kept.left,
            children_right=kept.right,
            feature=kept.feature,
            threshold=kept.threshold,
            impurity=kept.impurity,
            n_node_samples=kept.samples,
            weighted_n_node_samples=kept.samples.astype(np.float64),
            value=kept.value[:, None, :],
        )
    )
    tree.fitted_leaves = leaf_of
    return tree


def _predictor_arrays(predictors: Sequence[np.ndarray], n_levels: Sequence[int], n: int | None = None) -> Predictors:
    """The predictors as the compiled code takes them (:class:`~bayessdc.models.cart.records.Predictors`): codes
    ``(categorical, n)`` uint8 or int32, levels, numbers ``(numeric, n)`` float32, and per predictor its kind (0
    categorical, 1 numeric), row and design offset."""
    if n is None:
        n = len(predictors[0]) if len(predictors) else 0
    kinds = np.array([0 if k else 1 for k in n_levels], dtype=np.int64)
    widths = np.array([k if k else 1 for k in n_levels], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
    index = np.zeros(len(kinds), dtype=np.int64)
    index[kinds == 0] = np.arange(int((kinds == 0).sum()))
    index[kinds == 1] = np.arange(int((kinds == 1).sum()))
    # uint8 codes where every predictor has at most 256 levels: a quarter of the memory the passes read
    small = all(k <= 256 for k in n_levels)
    cat = np.empty((int((kinds == 0).sum()), n), dtype=np.uint8 if small else np.int32)
    num = np.empty((int((kinds == 1).sum()), n), dtype=np.float32)
    for values, kind, row in zip(predictors, kinds, index, strict=True):
        if kind == 0:
            cat[row] = values
        else:
            num[row] = np.asarray(values, dtype=np.float32)
    levels = np.array([k for k in n_levels if k], dtype=np.int64)
    return Predictors(cat=cat, levels=levels, num=num, kinds=kinds, index=index, offsets=offsets)


def _depths(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(left), dtype=np.int64)
    for node in range(len(left)):  # children come after their parent (depth-first numbering)
        if left[node] != _LEAF:
            depth[left[node]] = depth[right[node]] = depth[node] + 1
    return depth


@njit(nogil=True, cache=True)
def _apply(design, nodes):  # pragma: no cover - compiled
    """The leaf of every row, routing the rows node by node: each node reads one column of the (column-major)
    design for its rows (1.85x faster than walking each row down the tree, 36 to 19 ms a tree of 100,000 rows)."""
    n = design.shape[0]
    rows = np.arange(n)
    buffer = np.empty(n, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    st_node = np.empty(nodes.shape[0] + 1, dtype=np.int64)
    st_start = np.empty(nodes.shape[0] + 1, dtype=np.int64)
    st_end = np.empty(nodes.shape[0] + 1, dtype=np.int64)
    top = 1
    st_node[0], st_start[0], st_end[0] = 0, 0, n
    while top > 0:
        top -= 1
        node, start, end = st_node[top], st_start[top], st_end[top]
        left = np.int64(nodes[node, 0])
        if left == _LEAF:
            for i in range(start, end):
                out[rows[i]] = node
            continue
        column, threshold = np.int64(nodes[node, 2]), nodes[node, 3]
        k = start
        m = 0
        for i in range(start, end):
            r = rows[i]
            if np.float64(design[r, column]) <= threshold:
                rows[k] = r
                k += 1
            else:
                buffer[m] = r
                m += 1
        for i in range(m):
            rows[k + i] = buffer[i]
        st_node[top], st_start[top], st_end[top] = np.int64(nodes[node, 1]), k, end
        top += 1
        st_node[top], st_start[top], st_end[top] = left, start, k
        top += 1
    return out


@njit(nogil=True, cache=True)
def _apply_predictors(predictors, columns, splits, n):  # pragma: no cover - compiled
    """The leaf of each of the ``n`` records of ``predictors`` (:class:`~bayessdc.models.cart.records.Predictors`),
    walked down the ``splits`` (:class:`~bayessdc.models.cart.records.Splits`) whose design columns ``columns``
    (:class:`~bayessdc.models.cart.records.Columns`) maps back to the predictors."""
    cat, num = predictors.cat, predictors.num
    kind_of, index_of, level_of = columns.kind, columns.index, columns.level
    left, right, feature, threshold = splits.left, splits.right, splits.feature, splits.threshold
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        node = 0
        while left[node] != _LEAF:
            d = feature[node]
            if kind_of[d] == 0:
                x = 1.0 if cat[index_of[d], i] == level_of[d] else 0.0
            else:
                x = np.float64(num[index_of[d], i])
            if x <= threshold[node]:
                node = left[node]
            else:
                node = right[node]
        out[i] = node
    return out


@njit(nogil=True, cache=True)
def _gini(counts, total):  # pragma: no cover - compiled
    sq = 0.0
    for c in range(counts.shape[0]):
        sq += counts[c] * counts[c]
    return 1.0 - sq / (total * total)


@njit(nogil=True, cache=True)
def _grow(predictors, order, target, limits):  # pragma: no cover - compiled
    """Grow the tree (the module's docstring) of ``target`` (:class:`~bayessdc.models.cart.records.Target`) on
    ``predictors`` (:class:`~bayessdc.models.cart.records.Predictors`) within ``limits``
    (:class:`~bayessdc.models.cart.records.Limits`); ``order`` ``(P_num, n)`` holds every numeric predictor's
    records in the order of its values and is partitioned in place. Returns the
    :class:`~bayessdc.models.cart.records.GrownTree` and the leaf of every record."""
    cat, levels, num = predictors.cat, predictors.levels, predictors.num
    kinds, index, offsets = predictors.kinds, predictors.index, predictors.offsets
    y_class, y_real, n_classes, classification = target.y_class, target.y_real, target.n_classes, target.classification
    min_leaf, max_depth, max_nodes = limits.min_leaf, limits.max_depth, limits.max_nodes
    n = order.shape[1] if order.shape[0] else (y_class.shape[0] if classification else y_real.shape[0])
    n_pred = kinds.shape[0]
    total_weight = np.float64(n)
    min_split = max(2, 2 * min_leaf)
    left = np.full(max_nodes, _LEAF, dtype=np.int64)
    right = np.full(max_nodes, _LEAF, dtype=np.int64)
    feature = np.full(max_nodes, _UNDEFINED, dtype=np.int64)
    threshold = np.full(max_nodes, np.float64(_UNDEFINED))
    impurity = np.zeros(max_nodes)
    n_samples = np.zeros(max_nodes, dtype=np.int64)
    value = np.zeros((max_nodes, n_classes))
    samples = np.arange(n).astype(np.int32)
    buffer = np.empty(n, dtype=np.int32)
    goes_left = np.zeros(n, dtype=np.uint8)
    most_levels = 1
    for f in range(levels.shape[0]):
        most_levels = max(most_levels, levels[f])
    level_counts = np.zeros((most_levels, n_classes))
    level_n = np.zeros(most_levels)
    level_sum = np.zeros(most_levels)
    total = np.zeros(n_classes)
    count_left = np.zeros(n_classes)
    # The stack of nodes to grow: start, end, depth, parent, is_left, impurity.
    st_start = np.zeros(max_nodes + 2, dtype=np.int64)
    st_end = np.zeros(max_nodes + 2, dtype=np.int64)
    st_depth = np.zeros(max_nodes + 2, dtype=np.int64)
    st_parent = np.zeros(max_nodes + 2, dtype=np.int64)
    st_is_left = np.zeros(max_nodes + 2, dtype=np.uint8)
    st_impurity = np.zeros(max_nodes + 2)
    # Per stack entry, the predictors constant in its node (so in every node below it): not scanned, not partitioned.
    st_constant = np.zeros((max_nodes + 2, n_pred), dtype=np.uint8)
    constant = np.zeros(n_pred, dtype=np.uint8)
    leaf_of = np.empty(n, dtype=np.int64)
    svals = np.empty_like(num)
    for f in range(num.shape[0]):
        for i in range(n):
            svals[f, i] = num[f, order[f, i]]
    vbuffer = np.empty(n, dtype=np.float32)
    top = 1
    st_start[0], st_end[0], st_depth[0], st_parent[0], st_is_left[0] = 0, n, 0, _UNDEFINED, 0
    st_impurity[0] = np.inf
    first = True
    node_count = 0
    while top > 0:
        top -= 1
        start, end, depth = st_start[top], st_end[top], st_depth[top]
        parent, is_left, node_impurity = st_parent[top], st_is_left[top], st_impurity[top]
        constant[:] = st_constant[top]
        n_node = end - start
        weight = np.float64(n_node)
        sum_total = 0.0
        sq_total = 0.0
        if classification:
            total[:] = 0.0
            for i in range(start, end):
                total[y_class[samples[i]]] += 1.0
        else:
            for i in range(start, end):
                y = y_real[samples[i]]
                sum_total += y
                sq_total += y * y
        is_leaf = depth >= max_depth or n_node < min_split or n_node < 2 * min_leaf
        if first:
            if classification:
                node_impurity = _gini(total, weight)
            else:
                node_impurity = sq_total / weight - (sum_total / weight) ** 2.0
            first = False
        is_leaf = is_leaf or node_impurity <= EPSILON
        best_proxy = -np.inf
        best_pred = -1
        best_level = -1
        best_threshold = 0.0
        if not is_leaf:
            for p in range(n_pred):
                if constant[p]:
                    continue
                f = index[p]
                if kinds[p] == 0:
                    k = levels[f]
                    codes = cat[f]
                    if classification:
                        for i in range(start, end):
                            s = samples[i]
                            c = codes[s]
                            level_n[c] += 1.0
                            level_counts[c, y_class[s]] += 1.0
                    else:
                        for i in range(start, end):
                            s = samples[i]
                            c = codes[s]
                            level_n[c] += 1.0
                            level_sum[c] += y_real[s]
                    for c in range(k):
                        n_right = level_n[c]
                        if n_right == 0.0:
                            continue
                        n_left = weight - n_right
                        if n_left == 0.0:
                            constant[p] = 1  # one level only
                        if n_left == 0.0 or n_left < min_leaf or n_right < min_leaf:
                            continue
                        # left: the records without the level (one-hot 0), right: those with it (one-hot 1)
                        if classification:
                            sq_left = 0.0
                            sq_right = 0.0
                            for y in range(n_classes):
                                r = level_counts[c, y]
                                rest = total[y] - r
                                sq_left += rest * rest
                                sq_right += r * r
                            gini_left = 1.0 - sq_left / (n_left * n_left)
                            gini_right = 1.0 - sq_right / (n_right * n_right)
                            proxy = -n_right * gini_right - n_left * gini_left
                        else:
                            sum_right = level_sum[c]
                            sum_left = sum_total - sum_right
                            proxy = sum_left * sum_left / n_left + sum_right * sum_right / n_right
                        if proxy > best_proxy:
                            best_proxy = proxy
                            best_pred = p
                            best_level = c
                            best_threshold = 0.5
                    for c in range(k):
                        if level_n[c] != 0.0:
                            level_n[c] = 0.0
                            level_sum[c] = 0.0
                            if classification:
                                for y in range(n_classes):
                                    level_counts[c, y] = 0.0
                else:
                    values = svals[f]
                    sorted_rows = order[f]
                    lowest = values[start]
                    if values[end - 1] <= lowest + FEATURE_THRESHOLD:
                        constant[p] = 1
                        continue
                    sum_left = 0.0
                    sq_left = 0.0
                    sq_right = 0.0
                    if classification:
                        count_left[:] = 0.0
                        for y in range(n_classes):
                            sq_right += total[y] * total[y]
                    after = lowest
                    for q in range(n_node - 1):
                        s = sorted_rows[start + q]
                        here = after
                        after = values[start + q + 1]
                        if classification:
                            y = y_class[s]
                            sq_left += 2.0 * count_left[y] + 1.0
                            sq_right -= 2.0 * (total[y] - count_left[y]) - 1.0
                            count_left[y] += 1.0
                        else:
                            sum_left += y_real[s]
                        n_left = np.float64(q + 1)
                        n_right = weight - n_left
                        if n_right < min_leaf:
                            break
                        if n_left < min_leaf:
                            continue
                        if after <= here + FEATURE_THRESHOLD:
                            continue
                        if classification:
                            gini_left = 1.0 - sq_left / (n_left * n_left)
                            gini_right = 1.0 - sq_right / (n_right * n_right)
                            proxy = -n_right * gini_right - n_left * gini_left
                        else:
                            sum_right = sum_total - sum_left
                            proxy = sum_left * sum_left / n_left + sum_right * sum_right / n_right
                        if proxy > best_proxy:
                            best_proxy = proxy
                            best_pred = p
                            best_level = -1
                            best_threshold = np.float64(here) / 2.0 + np.float64(after) / 2.0
            is_leaf = best_pred < 0
        n_left_rows = 0
        impurity_left = 0.0
        impurity_right = 0.0
        if not is_leaf:
            f = index[best_pred]
            for i in range(start, end):
                s = samples[i]
                if kinds[best_pred] == 0:
                    go = cat[f, s] != best_level
                else:
                    go = np.float64(num[f, s]) <= best_threshold
                goes_left[s] = 1 if go else 0
                n_left_rows += goes_left[s]
            n_left = np.float64(n_left_rows)
            n_right = weight - n_left
            if classification:
                count_left[:] = 0.0
                for i in range(start, end):
                    s = samples[i]
                    if goes_left[s]:
                        count_left[y_class[s]] += 1.0
                sq_left = 0.0
                sq_right = 0.0
                for y in range(n_classes):
                    sq_left += count_left[y] * count_left[y]
                    r = total[y] - count_left[y]
                    sq_right += r * r
                impurity_left = 1.0 - sq_left / (n_left * n_left)
                impurity_right = 1.0 - sq_right / (n_right * n_right)
            else:
                sum_left = 0.0
                sq_left = 0.0
                for i in range(start, end):
                    s = samples[i]
                    if goes_left[s]:
                        sum_left += y_real[s]
                        sq_left += y_real[s] * y_real[s]
                sum_right = sum_total - sum_left
                sq_right = sq_total - sq_left
                impurity_left = sq_left / n_left - (sum_left / n_left) ** 2.0
                impurity_right = sq_right / n_right - (sum_right / n_right) ** 2.0
            improvement = (weight / total_weight) * (
                node_impurity - (n_right / weight * impurity_right) - (n_left / weight * impurity_left)
            )
            is_leaf = improvement + EPSILON < 0.0
        node = node_count
        node_count += 1
        if parent != _UNDEFINED:
            if is_left:
                left[parent] = node
            else:
                right[parent] = node
        impurity[node] = node_impurity
        n_samples[node] = n_node
        if classification:
            for y in range(n_classes):
                value[node, y] = total[y] / weight
        else:
            value[node, 0] = sum_total / weight
        if is_leaf:
            for i in range(start, end):
                leaf_of[samples[i]] = node
            continue
        feature[node] = offsets[best_pred] + (best_level if best_level >= 0 else 0)
        threshold[node] = best_threshold
        # Stable partition of the node's records, and of each numeric predictor's sorted records.
        _partition(samples, start, end, goes_left, buffer)
        for p in range(n_pred):
            if kinds[p] == 1 and not constant[p]:
                _partition2(order[index[p]], svals[index[p]], start, end, goes_left, buffer, vbuffer)
        middle = start + n_left_rows
        st_constant[top] = constant
        st_constant[top + 1] = constant
        st_start[top], st_end[top], st_depth[top] = middle, end, depth + 1
        st_parent[top], st_is_left[top], st_impurity[top] = node, 0, impurity_right
        top += 1
        st_start[top], st_end[top], st_depth[top] = start, middle, depth + 1
        st_parent[top], st_is_left[top], st_impurity[top] = node, 1, impurity_left
        top += 1
    grown = GrownTree(
        left[:node_count].copy(),
        right[:node_count].copy(),
        feature[:node_count].copy(),
        threshold[:node_count].copy(),
        impurity[:node_count].copy(),
        n_samples[:node_count].copy(),
        value[:node_count].copy(),
    )
    return grown, leaf_of


@njit(nogil=True, cache=True)
def _partition2(rows, vals, start, end, goes_left, buffer, vbuffer):  # pragma: no cover - compiled
    """:func:`_partition` of ``rows[start:end]`` with their sorted values ``vals`` moved alongside."""
    k = start
    m = 0
    for i in range(start, end):
        s = rows[i]
        if goes_left[s]:
            rows[k] = s
            vals[k] = vals[i]
            k += 1
        else:
            buffer[m] = s
            vbuffer[m] = vals[i]
            m += 1
    for i in range(m):
        rows[k + i] = buffer[i]
        vals[k + i] = vbuffer[i]


@njit(nogil=True, cache=True)
def _partition(rows, start, end, goes_left, buffer):  # pragma: no cover - compiled
    """Reorder ``rows[start:end]``: those going left first, then the others, each in their order."""
    k = start
    m = 0
    for i in range(start, end):
        s = rows[i]
        if goes_left[s]:
            rows[k] = s
            k += 1
        else:
            buffer[m] = s
            m += 1
    for i in range(m):
        rows[k + i] = buffer[i]


@njit(nogil=True, cache=True)
def _prune(tree, weighted, ccp_alpha):  # pragma: no cover - compiled
    """The leaves of the pruned ``tree`` (a :class:`~bayessdc.models.cart.records.GrownTree`, ``weighted`` its
    nodes' records as floats): scikit-learn's ``_cost_complexity_prune`` with its ``_AlphaPruner``."""
    left, right, impurity = tree.left, tree.right, tree.impurity
    n_nodes = left.shape[0]
    total = weighted[0]
    r_node = np.empty(n_nodes)
    for i in range(n_nodes):
        r_node[i] = weighted[i] * impurity[i] / total
    parent = np.full(n_nodes, _UNDEFINED, dtype=np.int64)
    leaves = np.zeros(n_nodes, dtype=np.uint8)
    for i in range(n_nodes):
        if left[i] == _LEAF:
            leaves[i] = 1
        else:
            parent[left[i]] = i
            parent[right[i]] = i
    n_leaves = np.zeros(n_nodes, dtype=np.int64)
    r_branch = np.zeros(n_nodes)
    for leaf in range(n_nodes):
        if not leaves[leaf]:
            continue
        r_branch[leaf] = r_node[leaf]
        current = r_node[leaf]
        node = leaf
        while node != 0:
            up = parent[node]
            r_branch[up] += current
            n_leaves[up] += 1
            node = up
    candidate = np.zeros(n_nodes, dtype=np.uint8)
    for i in range(n_nodes):
        candidate[i] = 1 - leaves[i]
    in_subtree = np.ones(n_nodes, dtype=np.uint8)
    stack = np.empty(n_nodes + 1, dtype=np.int64)
    largest = np.finfo(np.float64).max
    while candidate[0]:
        effective = largest
        pruned = 0
        for i in range(n_nodes):
            if not candidate[i]:
                continue
            alpha = (r_node[i] - r_branch[i]) / (n_leaves[i] - 1)
            if alpha < effective:
                effective = alpha
                pruned = i
        if ccp_alpha < effective:
            break
        top = 1
        stack[0] = pruned
        while top > 0:
            top -= 1
            node = stack[top]
            if not in_subtree[node]:
                continue
            candidate[node] = 0
            leaves[node] = 0
            in_subtree[node] = 0
            if left[node] != _LEAF:
                stack[top] = left[node]
                stack[top + 1] = right[node]
                top += 2
        leaves[pruned] = 1
        in_subtree[pruned] = 1
        removed = n_leaves[pruned] - 1
        n_leaves[pruned] = 0
        r_diff = r_node[pruned] - r_branch[pruned]
        r_branch[pruned] = r_node[pruned]
        node = parent[pruned]
        while node != _UNDEFINED:
            n_leaves[node] -= removed
            r_branch[node] += r_diff
            node = parent[node]
    return leaves


@njit(nogil=True, cache=True)
def _rebuild(keep_leaf, tree):  # pragma: no cover - compiled
    """The pruned ``tree`` (a :class:`~bayessdc.models.cart.records.GrownTree`; ``keep_leaf`` its nodes kept as
    leaves), renumbered depth-first (left first) as scikit-learn's ``_build_pruned_tree``; returns it and every
    old node's new id (``-1``: pruned)."""
    left, right, feature, threshold = tree.left, tree.right, tree.feature, tree.threshold
    impurity, samples, value = tree.impurity, tree.samples, tree.value
    n_nodes = left.shape[0]
    new_left = np.full(n_nodes, _LEAF, dtype=np.int64)
    new_right = np.full(n_nodes, _LEAF, dtype=np.int64)
    new_feature = np.full(n_nodes, _UNDEFINED, dtype=np.int64)
    new_threshold = np.full(n_nodes, np.float64(_UNDEFINED))
    new_impurity = np.zeros(n_nodes)
    new_samples = np.zeros(n_nodes, dtype=np.int64)
    new_value = np.zeros(value.shape)
    stack_node = np.empty(n_nodes + 1, dtype=np.int64)
    stack_parent = np.empty(n_nodes + 1, dtype=np.int64)
    stack_is_left = np.empty(n_nodes + 1, dtype=np.uint8)
    top = 1
    stack_node[0], stack_parent[0], stack_is_left[0] = 0, _UNDEFINED, 0
    count = 0
    new_of_old = np.full(n_nodes, -1, dtype=np.int64)
    while top > 0:
        top -= 1
        old, parent, is_left = stack_node[top], stack_parent[top], stack_is_left[top]
        node = count
        count += 1
        new_of_old[old] = node
        if parent != _UNDEFINED:
            if is_left:
                new_left[parent] = node
            else:
                new_right[parent] = node
        new_impurity[node] = impurity[old]
        new_samples[node] = samples[old]
        new_value[node] = value[old]
        if keep_leaf[old]:
            continue
        new_feature[node] = feature[old]
        new_threshold[node] = threshold[old]
        stack_node[top], stack_parent[top], stack_is_left[top] = right[old], node, 0
        top += 1
        stack_node[top], stack_parent[top], stack_is_left[top] = left[old], node, 1
        top += 1
    rebuilt = GrownTree(
        new_left[:count].copy(),
        new_right[:count].copy(),
        new_feature[:count].copy(),
        new_threshold[:count].copy(),
        new_impurity[:count].copy(),
        new_samples[:count].copy(),
        new_value[:count].copy(),
    )
    return rebuilt, new_of_old
