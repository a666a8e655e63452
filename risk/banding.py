"""Numeric columns read on bands by the identification figures (Hu & Savitsky's matching on exact values).

An intruder matches a target's known values against the released records exactly; a numeric value (an age, the
hours worked, a synthesized income) is known, and matched, only to its band. The bands are the original's
deciles (:func:`band_edges`): ten bands of about equal counts, fewer where values repeat (the edges are the
distinct deciles), so that a band is as coarse for a skewed variable as for a symmetric one. The edges are a
statistic of the confidential data: they stay in memory and in ``private/``, never in ``release/``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["BANDS", "band_edges", "banded", "numeric_columns"]

#: Bands of a numeric column: its deciles.
BANDS = 10


def band_edges(values: pd.Series | np.ndarray, bands: int = BANDS) -> np.ndarray:
    """The inner edges of ``bands`` bands of about equal counts: the distinct quantiles ``k / bands`` of
    ``values`` (missing values left out), ascending."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return np.empty(0)
    return np.unique(np.quantile(v, np.arange(1, bands) / bands))


def banded(frame: pd.DataFrame, bands: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """``frame`` with each column of ``bands`` replaced by its band: the number of edges at or below the value
    (0 .. len(edges)), -1 for a missing value. Other columns are the frame's own (not copied when none is
    banded)."""
    present = [c for c in bands if c in frame.columns]
    if not present:
        return frame
    out = frame.copy()
    for column in present:
        v = frame[column].to_numpy(dtype=float)
        out[column] = np.where(np.isnan(v), -1, np.searchsorted(bands[column], v, side="right")).astype(np.int64)
    return out


def numeric_columns(frame: pd.DataFrame, columns: list[str], bands: int = BANDS) -> list[str]:
    """The ``columns`` of ``frame`` read on bands: numeric (not categorical, not boolean) with more distinct
    values than ``bands``; a numeric code of a few levels (a sex coded 1 and 2) is matched as it is."""
    out = []
    for column in columns:
        series = frame[column]
        numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
        if numeric and not isinstance(series.dtype, pd.CategoricalDtype) and series.nunique() > bands:
            out.append(column)
    return out
