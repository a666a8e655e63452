"""Table-based utility of multiply-synthesized data against the sampling variability of the original.

Generic: tables are defined on columns, and synthetic datasets travel as one long table with a ``synthetic``
column (1..m), the layout of ``release/synthetic.parquet``.

* :func:`tau_distributions`: the proportion of total variation ``tau = 1 - L1 / (2 n)`` of user-defined
  tables, for each of the ``m`` synthetic datasets and for ``B`` bootstrap replicates of the original, both
  against the original table (Rodriguez, Freiman, Reiter & Lauger, Section 5 and Figure 2: 896 synthetic,
  4,480 bootstrap). The bootstrap shows how far a table moves by sampling alone.
* :func:`relative_cell_errors`: the relative error of the count of each category across the synthetic
  datasets (Figures 3 and 4).

Survey weights (``weights=`` the weight column): every table is then one of estimated population totals, the sum
of the weights of the records in each cell (a synthetic dataset's own weight column: the collected weights when
kept, synthesized ones when not), ``tau = 1 - L1 / (2 N)`` with ``N`` the original's weighted total, and a
bootstrap replicate resamples the ``n`` records with replacement, each carrying its weight (the with-replacement
approximation of the design, as :mod:`bayessdc.synthesis.survey`).

Clusters (``clusters=`` a column, the household id of persons within households): a bootstrap replicate resamples
the clusters with replacement, each bringing all its records (and their weights), since records of one household
are not independent draws; a bootstrap of persons would understate how far a table moves by sampling alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import streams
from .streams import Stream
from .utility import proportion_of_total_variation

__all__ = [
    "TableSpec",
    "count_table",
    "relative_cell_errors",
    "summarize_relative_errors",
    "summarize_tau",
    "tau_bootstrap",
    "tau_distributions",
    "tau_synthetic",
]


@dataclass(frozen=True)
class TableSpec:
    """A table of counts: records satisfying ``where``, cross-classified by ``by``.

    Parameters
    ----------
    name
        Label in outputs (for example ``"T1"``).
    by
        Columns cross-classified.
    where
        Optional :meth:`pandas.DataFrame.query` expression selecting the records counted (for example
        ``"age >= 18"``).
    bins
        Numeric columns of ``by`` cut into intervals: column -> increasing edges, intervals closed on the left
        (``[18, 25, 45]`` gives 18-24 and 25-44; records with a value outside are not counted).

    Notes
    -----
    A missing value (NaN, None) is a cell of its own, counted like any value, binned columns included.
    """

    name: str
    by: tuple[str, ...]
    where: str | None = None
    bins: Mapping[str, Sequence[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by", tuple(self.by))
        if not self.by:
            raise ValueError(f"table {self.name!r}: name at least one column")
        unknown = [c for c in self.bins if c not in self.by]
        if unknown:
            raise ValueError(f"table {self.name!r}: binned column(s) {unknown} are not among {list(self.by)}")

    def to_dict(self) -> dict[str, Any]:
        """The definition as plain data (for JSON)."""
        return {"by": list(self.by), "where": self.where, "bins": {k: list(v) for k, v in self.bins.items()}}


def _classify(frame: pd.DataFrame, spec: TableSpec) -> pd.DataFrame:
    """The ``by`` columns of the records counted (after ``where`` and binning)."""
    missing = [c for c in spec.by if c not in frame.columns]
    if missing:
        raise ValueError(f"table {spec.name!r}: unknown column(s) {missing}")
    selected = frame.query(spec.where) if spec.where else frame
    columns = {}
    outside = np.zeros(len(selected), dtype=bool)
    for column in spec.by:
        values = selected[column]
        if column in spec.bins:
            binned = pd.cut(values, list(spec.bins[column]), right=False)
            outside |= (binned.isna() & values.notna()).to_numpy()  # outside the bins: not counted
            values = binned
        if isinstance(values.dtype, pd.CategoricalDtype):
            # plain values, so that tables from categorical and object columns align cell by cell
            values = values.astype(object)
        columns[column] = values
    return pd.DataFrame(columns, index=selected.index)[~outside]


def count_table(frame: pd.DataFrame, spec: TableSpec, weights: str | None = None) -> pd.Series:
    """Counts of the table ``spec`` in ``frame``: a Series indexed by the cells that occur, a missing value
    being a cell of its own (NaN in the index). With ``weights`` (a column of ``frame``), the sums of the
    weights of the records in each cell (estimated population totals) instead of the counts."""
    if weights is None:
        return _classify(frame, spec).groupby(list(spec.by), observed=True, dropna=False).size()
    frame = frame.reset_index(drop=True)
    classified = _classify(frame, spec)
    summed = classified.assign(**{_WEIGHT: frame.loc[classified.index, weights].to_numpy(dtype=float)})
    return summed.groupby(list(spec.by), observed=True, dropna=False)[_WEIGHT].sum()


#: The column holding the weights while a weighted table is summed (never a user's column).
_WEIGHT = "__survey_weight__"


def tau_synthetic(
    original: pd.DataFrame, synthetic: pd.DataFrame, spec: TableSpec, weights: str | None = None
) -> pd.Series:
    """``tau`` of the table ``spec`` for each synthetic dataset against the original (indexed by ``synthetic``).

    A cell absent from one of the two tables counts 0 in it. With ``weights``, tables of weighted totals, each
    dataset with its own weight column.
    """
    base = count_table(original, spec, weights)
    if synthetic.empty:  # every row removed: no dataset left to compare
        return pd.Series([], dtype=float, name="tau", index=pd.Index([], name="synthetic"))
    return (
        synthetic.groupby("synthetic")
        .apply(
            lambda frame: proportion_of_total_variation(base, count_table(frame, spec, weights)), include_groups=False
        )  # fmt: skip
        .rename("tau")
    )


def tau_bootstrap(
    original: pd.DataFrame, spec: TableSpec, n_replicates: int, rng: np.random.Generator, weights: str | None = None,
    clusters: str | None = None,
) -> np.ndarray:
    """``tau`` of the table ``spec`` for ``n_replicates`` bootstrap replicates of the original against the original.

    A replicate resamples the ``n`` records with replacement. Its table is drawn directly: the counts of
    the table's cells and of the records outside the table (not selected by ``where``) are
    Multinomial(n, original proportions), exactly the distribution of the counts of a resample. With
    ``weights``, each resampled record adds its weight to its cell (the records themselves are resampled). With
    ``clusters`` (a column of ``original``: the household id), the ``H`` clusters are resampled with replacement,
    each adding all its records (weighted or not) to their cells.

    Examples
    --------
    Two households of two persons, one with both persons in cell ``a``, one with both in ``b``: a replicate of
    households holds 4 persons in ``a``, 4 in ``b`` or 2 and 2 (tau 0.5, 0.5 or 1, with probabilities 1/4, 1/4,
    1/2), where a bootstrap of persons would seldom move a whole household's count at once:

    >>> original = pd.DataFrame({"h": [1, 1, 2, 2], "x": ["a", "a", "b", "b"]})
    >>> taus = tau_bootstrap(original, TableSpec("x", ("x",)), 4000, np.random.default_rng(0), clusters="h")
    >>> sorted(set(taus.tolist())), round(float((taus == 1).mean()), 1)
    ([0.5, 1.0], 0.5)
    """
    if n_replicates < 1:
        raise ValueError(f"n_replicates must be at least 1, got {n_replicates}")
    if clusters is not None:
        return _cluster_tau_bootstrap(original, spec, n_replicates, rng, clusters, weights)
    if weights is not None:
        return _weighted_tau_bootstrap(original, spec, n_replicates, rng, weights)
    base = count_table(original, spec).to_numpy(dtype=float)
    n_records = len(original)
    outside = n_records - base.sum()
    probabilities = np.append(base, outside) / n_records
    counts = rng.multinomial(n_records, probabilities, size=n_replicates)[:, :-1]
    total = base.sum()
    if total <= 0:
        raise ValueError(f"table {spec.name!r} has no records in the original")
    return 1.0 - np.abs(counts - base).sum(axis=1) / (2.0 * total)


def _record_cells(frame: pd.DataFrame, spec: TableSpec) -> tuple[np.ndarray, int]:
    """Each record's cell of the table (``0 .. C - 1``; ``C`` for a record outside it, left out of tau) and ``C``."""
    classified = _classify(frame, spec)
    cells = np.full(len(frame), -1, dtype=np.int64)
    cells[classified.index.to_numpy()] = classified.groupby(list(spec.by), observed=True, dropna=False).ngroup()
    n_cells = int(cells.max()) + 1
    if n_cells < 1:
        raise ValueError(f"table {spec.name!r} has no records in the original")
    cells[cells < 0] = n_cells
    return cells, n_cells


def _cluster_tau_bootstrap(
    original: pd.DataFrame, spec: TableSpec, n_replicates: int, rng: np.random.Generator, clusters: str,
    weights: str | None,
) -> np.ndarray:
    """:func:`tau_bootstrap` of clusters: each replicate draws the ``H`` clusters with replacement (their
    multiplicities), and a cell's total is the multiplicities times each cluster's count (or weighted total) in the
    cell, one sparse product per replicate (cost: the records, not ``H`` times the cells)."""
    from scipy import sparse

    frame = original.reset_index(drop=True)
    cells, n_cells = _record_cells(frame, spec)
    cluster = pd.factorize(frame[clusters], use_na_sentinel=False)[0]
    n_clusters = int(cluster.max()) + 1
    w = np.ones(len(frame)) if weights is None else frame[weights].to_numpy(dtype=float)
    by_cluster = sparse.csr_matrix((w, (cells, cluster)), shape=(n_cells + 1, n_clusters))
    base = np.asarray(by_cluster.sum(axis=1)).ravel()[:n_cells]
    taus = np.empty(n_replicates)
    for r in range(n_replicates):
        times = np.bincount(rng.integers(0, n_clusters, n_clusters), minlength=n_clusters).astype(float)
        totals = (by_cluster @ times)[:n_cells]
        taus[r] = 1.0 - np.abs(totals - base).sum() / (2.0 * base.sum())
    return taus


def _weighted_tau_bootstrap(
    original: pd.DataFrame, spec: TableSpec, n_replicates: int, rng: np.random.Generator, weights: str
) -> np.ndarray:
    """:func:`tau_bootstrap` of weighted totals: every replicate resamples the records (cost ``n`` per replicate)."""
    frame = original.reset_index(drop=True)
    cells, n_cells = _record_cells(frame, spec)
    n_records = len(frame)
    w = frame[weights].to_numpy(dtype=float)
    base = np.bincount(cells, weights=w, minlength=n_cells + 1)[:n_cells]
    taus = np.empty(n_replicates)
    for r in range(n_replicates):
        drawn = rng.integers(0, n_records, n_records)
        totals = np.bincount(cells[drawn], weights=w[drawn], minlength=n_cells + 1)[:n_cells]
        taus[r] = 1.0 - np.abs(totals - base).sum() / (2.0 * base.sum())
    return taus


def tau_distributions(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    tables: Sequence[TableSpec],
    n_bootstrap: int = 1000,
    seed: int = 0,
    weights: str | None = None,
    clusters: str | None = None,
) -> pd.DataFrame:
    """``tau`` per table for every synthetic dataset and every bootstrap replicate (the paper's Figure 2).

    Parameters
    ----------
    original
        The confidential records.
    synthetic
        The synthetic datasets in long form with a ``synthetic`` column.
    tables
        The tables compared.
    n_bootstrap
        Bootstrap replicates of the original per table (the paper: 4,480).
    seed
        Seed of the bootstrap.
    weights
        The survey weight column (of the original and of every synthetic dataset): tables of weighted totals
        and a bootstrap that resamples weighted records (see the module docstring); ``None``: counts.
    clusters
        A column of the original whose values are resampled whole by the bootstrap (the household id of persons
        within households); ``None``: the records are resampled.

    Returns
    -------
    pandas.DataFrame
        Columns ``table``, ``source`` (``"synthetic"`` or ``"bootstrap"``), ``replicate`` (1-based) and ``tau``.
    """
    rng = streams.rng(seed, Stream.TABLES_BOOTSTRAP)
    frames = []
    for spec in tables:
        synthetic_tau = tau_synthetic(original, synthetic, spec, weights)
        bootstrap_tau = tau_bootstrap(original, spec, n_bootstrap, rng, weights, clusters)
        frames.append(
            pd.DataFrame(
                {
                    "table": spec.name,
                    "source": "synthetic",
                    "replicate": synthetic_tau.index.to_numpy(),
                    "tau": synthetic_tau.to_numpy(),
                }
            )
        )
        frames.append(
            pd.DataFrame(
                {
                    "table": spec.name,
                    "source": "bootstrap",
                    "replicate": np.arange(1, n_bootstrap + 1),
                    "tau": bootstrap_tau,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _quartiles(values: np.ndarray) -> dict[str, float]:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return {"n": 0, "median": None, "q1": None, "q3": None, "min": None, "max": None}
    q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75])
    return {
        "n": len(values),
        "median": float(median),
        "q1": float(q1),
        "q3": float(q3),
        "min": float(values.min()),
        "max": float(values.max()),
    }


def summarize_tau(taus: pd.DataFrame) -> dict[str, dict[str, dict[str, float]]]:
    """Median, quartiles, extremes and count of ``tau`` per table and source (from :func:`tau_distributions`)."""
    return {
        str(table): {str(source): _quartiles(group["tau"].to_numpy()) for source, group in frame.groupby("source")}
        for table, frame in taus.groupby("table", sort=False)
    }


def relative_cell_errors(
    original: pd.DataFrame, synthetic: pd.DataFrame, column: str, where: str | None = None, weights: str | None = None
) -> pd.DataFrame:
    """Relative error of the count of each category of ``column`` in each synthetic dataset (Figures 3-4).

    ``(synthetic count - original count) / original count`` over the records selected by ``where`` (a
    :meth:`pandas.DataFrame.query` expression, e.g. ``"age >= 18"``); categories absent from the original
    are left out (their relative error is undefined). With ``weights``, of the weighted totals.

    Returns
    -------
    pandas.DataFrame
        Columns ``synthetic``, ``category``, ``original``, ``count`` and ``relative_error``.
    """
    spec = TableSpec(column, (column,), where)
    base = count_table(original, spec, weights)
    base = base[base > 0]
    rows = []
    for k, frame in synthetic.groupby("synthetic"):
        counts = count_table(frame, spec, weights).reindex(base.index, fill_value=0)
        rows.append(
            pd.DataFrame(
                {
                    "synthetic": k,
                    "category": base.index.to_numpy(),
                    "original": base.to_numpy(),
                    "count": counts.to_numpy(),
                    "relative_error": (counts.to_numpy() - base.to_numpy()) / base.to_numpy(),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def summarize_relative_errors(errors: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Median, quartiles and extremes of the relative error per category (from :func:`relative_cell_errors`)."""
    out = {}
    for category, group in errors.groupby("category", sort=False, observed=True, dropna=False):
        summary = _quartiles(group["relative_error"].to_numpy())
        original = float(group["original"].iloc[0])
        summary["original"] = int(original) if original.is_integer() else original
        out[str(category)] = summary
    return out
