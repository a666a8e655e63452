"""Utility measures for multiply-synthesized data, knowing nothing of any model.

Synthetic datasets travel as one long table with a ``synthetic`` column (1..m), the layout of
``release/synthetic.parquet``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["margin_deviation", "proportion_of_total_variation", "total_variation_by_dataset"]


def proportion_of_total_variation(original: Any, synthetic: Any) -> float:
    """``tau = 1 - L1 / (2 n)`` between two tables of counts over the same cells.

    ``L1 = sum_c |original_c - synthetic_c|`` and ``n = sum_c original_c``: 1 when the tables agree, 0
    when they share no mass (Rodriguez et al.; the flow paper's utility check on totals).

    Parameters
    ----------
    original, synthetic
        Counts over the same cells (array-likes of equal shape, or Series aligned on their index, a
        missing cell counting as 0).
    """
    if isinstance(original, pd.Series) and isinstance(synthetic, pd.Series):
        original, synthetic = original.align(synthetic, fill_value=0)
    o = np.asarray(original, dtype=float)
    s = np.asarray(synthetic, dtype=float)
    if o.shape != s.shape:
        raise ValueError(f"tables differ in shape: {o.shape} and {s.shape}")
    n = o.sum()
    if n <= 0:
        raise ValueError("the original table has no mass")
    return float(1.0 - np.abs(o - s).sum() / (2.0 * n))


def total_variation_by_dataset(
    original: pd.DataFrame, synthetic: pd.DataFrame, by: Sequence[str], value: str | None = None
) -> pd.Series:
    """``tau`` of the table ``by`` (sum of ``value``, or record counts) for each synthetic dataset.

    A missing value of a ``by`` column is a cell of its own.

    Returns a Series indexed by the ``synthetic`` number.
    """
    by = list(by)
    base = _table(original, by, value)
    return (
        synthetic.groupby("synthetic")
        .apply(lambda frame: proportion_of_total_variation(base, _table(frame, by, value)))
        .rename("tau")
    )


def margin_deviation(original: pd.DataFrame, synthetic: pd.DataFrame, by: Sequence[str], value: str) -> dict[str, Any]:
    """How far the totals over ``by`` of the synthetic datasets are from the original totals.

    Parameters
    ----------
    original
        The confidential table.
    synthetic
        All synthetic datasets in long form with a ``synthetic`` column.
    by
        Columns defining the totals (for example ``["origin"]`` for out-migration totals).
    value
        The column summed.

    Returns
    -------
    dict
        ``total_absolute_deviation`` (sum over totals of |synthetic - original|, averaged over datasets),
        ``relative_deviation`` (that divided by the grand total), ``tau`` (proportion of total variation of
        the totals, averaged) and ``per_dataset`` lists of the first and last.
    """
    by = list(by)
    base = _table(original, by, value)
    deviation, tau = [], []
    for _, frame in synthetic.groupby("synthetic"):
        totals, reference = _table(frame, by, value).align(base, fill_value=0)
        deviation.append(float(np.abs(totals - reference).sum()))
        tau.append(proportion_of_total_variation(reference, totals))
    grand = float(base.sum())
    return {
        "by": by,
        "total_absolute_deviation": float(np.mean(deviation)),
        "relative_deviation": float(np.mean(deviation) / grand) if grand else None,
        "tau": float(np.mean(tau)),
        "per_dataset": {"total_absolute_deviation": deviation, "tau": tau},
    }


def _table(frame: pd.DataFrame, by: list[str], value: str | None) -> pd.Series:
    """Counts (or sums of ``value``) over the cells of ``by``; a missing value is a cell of its own."""
    if value is None:
        return frame.groupby(by, observed=True, dropna=False).size()
    return frame.groupby(by, observed=True, dropna=False)[value].sum()
