"""The pMSE's propensity model fitted exactly: Newton's method on indicator columns, one block per component.

The pMSE (Snoke et al. 2018; :func:`bayessdc.synthesis.categorical.pmse`) is a function of the fitted propensities
of a logistic regression of the synthetic indicator on one-hot main effects and pairwise interactions. Its
likelihood is concave, so the figure is the maximum: a solver stopped early is a different figure (scikit-learn's
L-BFGS at its default tolerance, measured on a demo dataset of the CE-like data: pMSE 0.02673 against the optimum's
0.02691, 0.7% below; 0.02495 against 0.02511 on the next dataset).

Here the model is written in indicator columns, one per level of every term (a main effect is a column, an
interaction a pair of columns): a design whose rows hold one 1 per term. These span the same functions of the
cells as an intercept with the drop-first dummies of every main effect and interaction (each pair's indicators
sum to one and sum, over one column's levels, to the other column's indicators), so the fitted propensities are
the same. Two indicator columns that never share a row have a zero in the Hessian: when every interaction involves
one synthesized column (the geography label), the Hessian is block diagonal, one block per level of that column
(the ``connected_components`` of the columns), and a Newton step is a batch of small dense solves. Blocks too large
for that are solved as one sparse system (SuperLU).

A ridge of ``penalty`` on every coefficient (scikit-learn's ``C = 1 / penalty`` of the previous fit) keeps the
coefficients of separated cells finite (their propensities then within about ``penalty / weight`` of 0 or 1) and
the overparametrized system positive definite; Newton's iterates stay in the row space of the design, so the
redundant directions never move. Measured on the two demo datasets above: the optimum found to 7 digits of the
objective (scikit-learn's ``newton-cholesky`` at ``tol=1e-8``: the same pMSE to 7 significant digits) in 14-16
iterations; see ``bench/pmse_fit.py`` for the times.

The sparse system's Hessian ``X' diag(h) X`` has the same sparsity pattern at every Newton step; only the weights
``h`` change. Its pattern is therefore built once per fit (:class:`_SparseHessian`): every product of two columns
in a row is one entry, and the entries are put once into the order in which scipy's COO-to-CSC conversion sums
them (bucketed by column, then sorted by scipy's own index sort), giving a 0/1 matrix that maps the rows' weights
to the Hessian's data array. Each step is then one sparse matrix-vector product, which adds every entry of the
Hessian in the same order as the conversion did: the same Hessian, bit for bit, as the COO matrix converted at
every step, at a fraction of its cost (``bench/pmse_fit.py --hessian``; README, "Measured choices in the code").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix, identity
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu
from scipy.special import expit

__all__ = ["logistic_propensities"]

#: Components up to this many columns are solved as dense blocks; larger ones as one sparse system.
DENSE_BLOCK = 400


class _SparseHessian:
    """The Hessian ``X' diag(h) X + penalty I`` of a sparse group, its sparsity pattern built once.

    The design's rows (``rows``) hold one 1 per term; the products of their columns are the ``entries``, row
    ``rows[e // pairs]`` contributing its weight at ``(first[e], second[e])``. Summed by scipy's COO-to-CSC
    conversion, the entries are bucketed by column in their order, sorted by row within each column
    (``sort_indices``, whose order of equal indices depends on the indices only) and summed from left to right;
    here that order is found once, and the sums of every step are a product of the weights with a 0/1 matrix
    whose rows are the Hessian's nonzeros, its indices in that order (a left-to-right sum too): the converted
    matrix, bit for bit.

    Parameters
    ----------
    rows
        The row of the design (of the fit's weights) behind every ``pairs`` consecutive entries.
    first, second
        Every entry's row and column in the group's Hessian.
    pairs
        Entries per design row (terms squared).
    total
        The Hessian's order.
    n
        Rows of the design (the length of the weights).
    """

    def __init__(self, rows: np.ndarray, first: np.ndarray, second: np.ndarray, pairs: int, total: int, n: int) -> None:
        entries = len(first)
        first = first.astype(np.int32)
        # the entries bucketed by column, in their order within each (a counting sort: the conversion's first pass)
        bucket = csr_matrix(
            (np.ones(entries, dtype=np.int8), second.astype(np.int32), np.arange(entries + 1)), shape=(entries, total)
        ).tocsc()
        # sorted by row within each column by the conversion's own sort, the entries' numbers carried as the data
        ordered = csc_matrix((bucket.indices.astype(float), first[bucket.indices], bucket.indptr), shape=(total, total))
        ordered.sort_indices()
        row_index = ordered.indices
        starts = np.ones(entries, dtype=bool)  # the first entry of every nonzero of the Hessian
        starts[1:] = row_index[1:] != row_index[:-1]
        starts[bucket.indptr[:-1][np.diff(bucket.indptr) > 0]] = True
        start = np.flatnonzero(starts)
        source = rows[ordered.data.astype(np.int64) // pairs]
        self.gather = csr_matrix((np.ones(entries), source, np.append(start, entries)), shape=(len(start), n))
        self.indices = row_index[start]
        column = np.repeat(np.arange(total), np.diff(np.searchsorted(start, bucket.indptr)))
        self.indptr = np.searchsorted(start, bucket.indptr).astype(np.int32)
        on_diagonal = np.flatnonzero(self.indices == column)
        # the diagonal's place in the data, when every column has one (else the identity is added as a matrix)
        self.diagonal = on_diagonal if len(on_diagonal) == total else None
        self.total = total

    def __call__(self, hessian_weight: np.ndarray, penalty: float) -> csc_matrix:
        """The Hessian at the rows' weights ``hessian_weight``, as ``coo_matrix(...).tocsc() + penalty I``."""
        values = self.gather @ hessian_weight
        shape = (self.total, self.total)
        if self.diagonal is not None:
            diagonal = values[self.diagonal] + penalty
            if values.all() and diagonal.all():  # no zero for the sum of sparse matrices to drop
                values[self.diagonal] = diagonal
                return csc_matrix((values, self.indices, self.indptr), shape=shape)
        return csc_matrix((values, self.indices.copy(), self.indptr.copy()), shape=shape) + penalty * identity(
            self.total, format="csc"
        )


class _Blocks:
    """The Hessian's block structure: the components of the indicator columns, grouped by size."""

    def __init__(self, columns: np.ndarray, k: int) -> None:
        n, terms = columns.shape
        first = np.repeat(columns[:, 0], terms)
        graph = csr_matrix((np.ones(n * terms), (first, columns.ravel())), shape=(k, k))
        count, component = connected_components(graph, directed=False)
        sizes = np.bincount(component, minlength=count)
        position = np.empty(k, dtype=np.int64)  # the column's place in its component
        order = np.argsort(component, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        position[order] = np.arange(k) - np.repeat(starts, sizes)
        row_component = component[columns[:, 0]]
        self.groups: list[tuple] = []
        pair_i = np.repeat(np.arange(terms), terms)
        pair_j = np.tile(np.arange(terms), terms)
        for size in np.unique(sizes):
            members = np.flatnonzero(sizes == size)
            slot = np.full(count, -1, dtype=np.int64)
            slot[members] = np.arange(len(members))
            rows = np.flatnonzero(slot[row_component] >= 0)
            cols = columns[rows]
            # every column of the group, in the order of (block, position)
            group_columns = np.empty(len(members) * size, dtype=np.int64)
            in_group = slot[component] >= 0
            group_columns[slot[component[in_group]] * size + position[in_group]] = np.flatnonzero(in_group)
            b = slot[row_component[rows]]
            if size <= DENSE_BLOCK:
                flat = (b[:, None] * size + position[cols[:, pair_i]]) * size + position[cols[:, pair_j]]
                self.groups.append(("dense", int(size), len(members), rows, flat.ravel(), group_columns))
            else:  # one sparse system for all of the group's blocks, its pattern built once
                index = b[:, None] * size + position[cols]
                hessian = _SparseHessian(
                    rows, index[:, pair_i].ravel(), index[:, pair_j].ravel(), terms * terms, len(members) * size, n
                )
                self.groups.append(("sparse", int(size), len(members), rows, hessian, group_columns))
        self.terms = terms

    def solve(self, hessian_weight: np.ndarray, gradient: np.ndarray, penalty: float) -> np.ndarray:
        """The Newton step ``-(X' diag(h) X + penalty I)^-1 gradient``."""
        step = np.empty_like(gradient)
        pairs = self.terms * self.terms
        for kind, size, blocks, rows, structure, group_columns in self.groups:
            g = gradient[group_columns]
            if kind == "dense":
                h = np.repeat(hessian_weight[rows], pairs)
                hessian = np.bincount(structure, weights=h, minlength=blocks * size * size).reshape(blocks, size, size)
                hessian += penalty * np.eye(size)
                step[group_columns] = -np.linalg.solve(hessian, g.reshape(blocks, size, 1)).ravel()
            else:
                step[group_columns] = -splu(structure(hessian_weight, penalty)).solve(g)
        return step


def logistic_propensities(
    terms: Sequence[np.ndarray],
    label: np.ndarray,
    weight: np.ndarray,
    *,
    penalty: float = 1e-6,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> np.ndarray:
    """Fitted probabilities of a weighted logistic regression on the indicators of categorical terms.

    Maximizes ``sum_i w_i (y_i eta_i - log(1 + exp(eta_i))) - penalty / 2 ||beta||^2`` with
    ``eta_i = sum_t beta_t[terms[t][i]]``, by Newton's method with a backtracking (Armijo) line search.

    Parameters
    ----------
    terms
        One integer code per row for every term, ``0 .. L_t - 1`` (a main effect's level, or an interaction's
        combination of levels).
    label
        The response of every row (0 or 1).
    weight
        Every row's weight (a count of records, or a sum of survey weights).
    penalty
        Ridge on every coefficient, in units of the weights.
    tol
        Convergence: half the Newton decrement below ``tol`` times the objective's scale (1 + its value); the
        last (full) step is then taken.
    max_iter
        Newton steps allowed before the fit is refused.

    Returns
    -------
    numpy.ndarray
        The fitted probability of every row.

    Raises
    ------
    RuntimeError
        Not converged in ``max_iter`` steps.

    Examples
    --------
    One term: the fit is saturated, every cell's propensity its own share of label 1.

    >>> p = logistic_propensities([np.array([0, 0, 1, 1])], np.array([0, 1, 0, 1]), np.array([3.0, 1.0, 1.0, 1.0]))
    >>> np.round(p, 6).tolist()
    [0.25, 0.25, 0.5, 0.5]
    """
    codes = [np.asarray(t, dtype=np.int64) for t in terms]
    if not codes:
        raise ValueError("the propensity model needs at least one term")
    y = np.asarray(label, dtype=float)
    w = np.asarray(weight, dtype=float)
    sizes = [int(c.max()) + 1 if c.size else 0 for c in codes]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    columns = np.stack([c + o for c, o in zip(codes, offsets, strict=True)], axis=1)
    k = int(sum(sizes))
    blocks = _Blocks(columns, k)

    def linear(beta: np.ndarray) -> np.ndarray:
        return beta[columns].sum(axis=1)

    def objective(eta: np.ndarray, beta: np.ndarray) -> float:
        return float(np.sum(w * (np.logaddexp(0.0, eta) - y * eta)) + 0.5 * penalty * beta @ beta)

    beta = np.zeros(k)
    eta = np.zeros(len(y))
    value = objective(eta, beta)
    flat_columns = columns.ravel()
    for _ in range(max_iter):
        p = expit(eta)
        residual = np.repeat(w * (p - y), columns.shape[1])
        gradient = np.bincount(flat_columns, weights=residual, minlength=k) + penalty * beta
        step = blocks.solve(w * p * (1.0 - p), gradient, penalty)
        decrement = -float(gradient @ step)
        if decrement / 2 <= tol * (1.0 + abs(value)):  # within the quadratic phase: the full step, and done
            return expit(linear(beta + step))
        t = 1.0
        while True:
            trial_beta = beta + t * step
            trial_eta = linear(trial_beta)
            trial = objective(trial_eta, trial_beta)
            if trial <= value - 1e-4 * t * decrement or t < 1e-12:
                break
            t /= 2
        beta, eta, value = trial_beta, trial_eta, trial
    raise RuntimeError(f"the pMSE's logistic regression did not converge in {max_iter} Newton steps")
