"""The records the compiled CART of :mod:`bayessdc.models.cart.fast_tree` takes, grouped by meaning (numba
``NamedTuple`` arguments).

A kernel reads its inputs by field name (``predictors.cat``, ``tree.left``), never by position, so two arguments of
the same type cannot be swapped silently. The records are built in :mod:`bayessdc.models.cart.fast_tree`:
:class:`Predictors` by ``_predictor_arrays``, :class:`Target` and :class:`Limits` by ``fit_native_tree``,
:class:`Columns` and :class:`Splits` by ``NativeTree.apply_predictors``; :class:`GrownTree` is what the grower and
the pruner's rebuild return.

Notation: ``n`` records, ``P`` predictors (``P_cat`` categorical, ``P_num`` numeric), ``J`` columns of the one-hot
design (one per level of a categorical predictor, one per numeric predictor), ``N`` nodes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Columns", "GrownTree", "Limits", "Predictors", "Splits", "Target"]


class Predictors(NamedTuple):
    """The predictors as the compiled code reads them, categorical and numeric apart."""

    #: ``(P_cat, n)`` uint8 (every predictor at most 256 levels) or int32: the codes of the categorical predictors.
    cat: np.ndarray
    #: ``(P_cat,)`` int64: their numbers of levels.
    levels: np.ndarray
    #: ``(P_num, n)`` float32: the numeric predictors.
    num: np.ndarray
    #: ``(P,)`` int64: every predictor's kind, 0 categorical, 1 numeric.
    kinds: np.ndarray
    #: ``(P,)`` int64: its row in ``cat`` or ``num``.
    index: np.ndarray
    #: ``(P,)`` int64: its first column of the one-hot design.
    offsets: np.ndarray


class Target(NamedTuple):
    """The variable the tree predicts; the array of the other kind is empty."""

    #: ``(n,)`` int32: the class codes ``0 .. n_classes - 1`` (classification).
    y_class: np.ndarray
    #: ``(n,)`` float: the numbers (regression).
    y_real: np.ndarray
    #: Number of class codes (1 for regression): the width of a node's value.
    n_classes: int
    #: Gini classification tree, else a squared-error regression tree.
    classification: bool


class Limits(NamedTuple):
    """scikit-learn's stopping rules, and the room they leave."""

    #: ``min_samples_leaf``: records of a child at least.
    min_leaf: int
    #: ``max_depth``: depth of a leaf at most.
    max_depth: int
    #: Nodes the tree can have at most (``2 n / min_leaf + 1``), the length of the node arrays grown.
    max_nodes: int


class GrownTree(NamedTuple):
    """A tree's nodes, numbered depth-first (left child first) as scikit-learn numbers them."""

    #: ``(N,)`` int64: the left child of every node (``-1`` at a leaf).
    left: np.ndarray
    #: ``(N,)`` int64: its right child (``-1`` at a leaf).
    right: np.ndarray
    #: ``(N,)`` int64: its column of the one-hot design (``-2`` at a leaf).
    feature: np.ndarray
    #: ``(N,)`` float: its threshold (a record goes left at a value at most this; ``-2`` at a leaf).
    threshold: np.ndarray
    #: ``(N,)`` float: its impurity (Gini or the variance).
    impurity: np.ndarray
    #: ``(N,)`` int64: its records.
    samples: np.ndarray
    #: ``(N, n_classes)`` float: its class fractions, or its mean (``n_classes`` 1).
    value: np.ndarray


class Splits(NamedTuple):
    """The splits of a fitted tree, what routing a record to its leaf reads (the fields of :class:`GrownTree`)."""

    #: ``(N,)`` int64: the left child of every node (``-1`` at a leaf).
    left: np.ndarray
    #: ``(N,)`` int64: its right child.
    right: np.ndarray
    #: ``(N,)`` int64: its column of the one-hot design.
    feature: np.ndarray
    #: ``(N,)`` float: its threshold.
    threshold: np.ndarray


class Columns(NamedTuple):
    """What every column of the one-hot design is, in terms of the :class:`Predictors`."""

    #: ``(J,)`` int64: the kind of the column's predictor, 0 categorical, 1 numeric.
    kind: np.ndarray
    #: ``(J,)`` int64: the predictor's row in ``cat`` or ``num``.
    index: np.ndarray
    #: ``(J,)`` int64: the level the column is one-hot of (categorical; 0 for a numeric column).
    level: np.ndarray
