"""Proximity risk for continuous synthesized values (any synthesizer).

An intruder who knows a record's location (or other released keys) reads off its synthetic values; the
record is at risk when they fall close to the true value. Per record, the share of its ``m`` synthetic
values within a relative band ``|y* - y| <= relative |y|`` (Quick, Holan & Wikle use 10%) and within an
absolute band ``|y* - y| <= absolute`` (their $10,000 on incomes), summarised for the at-risk records and
the others, and compared between two synthesizers by the relative reduction ``1 - share_new / share_old``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["proximity_shares", "proximity_summary", "relative_reduction"]


def proximity_shares(
    true_values: Any, synthetic_values: Any, *, relative: float = 0.10, absolute: float | None = None
) -> pd.DataFrame:
    """Per record, the share of synthetic values within the relative and the absolute band of the truth.

    Parameters
    ----------
    true_values
        Confidential values, shape ``(n,)``, on the released scale.
    synthetic_values
        Synthetic values, shape ``(m, n)`` (one row per synthetic dataset).
    relative
        Half-width of the relative band as a fraction of ``|true value|`` (default 10%).
    absolute
        Half-width of the absolute band (``None``: no absolute band, column of NaN).

    Returns
    -------
    pandas.DataFrame
        Columns ``true``, ``within_band`` (relative), ``within_absolute``, ``mean_abs_error``.
    """
    y = np.asarray(true_values, dtype=float)
    syn = np.asarray(synthetic_values, dtype=float)
    if syn.ndim != 2 or syn.shape[1] != y.shape[0]:
        raise ValueError(f"synthetic values must have shape (m, {y.shape[0]}), got {syn.shape}")
    if relative < 0 or (absolute is not None and absolute < 0):
        raise ValueError("band widths must be non-negative")
    distance = np.abs(syn - y[None, :])
    within_relative = (distance <= relative * np.abs(y)[None, :]).mean(axis=0)
    within_absolute = (distance <= absolute).mean(axis=0) if absolute is not None else np.full(len(y), np.nan)
    return pd.DataFrame(
        {
            "true": y,
            "within_band": within_relative,
            "within_absolute": within_absolute,
            "mean_abs_error": distance.mean(axis=0),
        }
    )


def proximity_summary(shares: pd.DataFrame, at_risk: Any, column: str = "within_band") -> dict[str, float | None]:
    """Mean share in ``column`` over the at-risk records and over the others (``None`` for an empty group)."""
    mask = np.asarray(at_risk, dtype=bool)
    values = shares[column].to_numpy(dtype=float)
    return {
        "at_risk": float(values[mask].mean()) if mask.any() else None,
        "other": float(values[~mask].mean()) if (~mask).any() else None,
    }


def relative_reduction(before: dict[str, float | None], after: dict[str, float | None]) -> dict[str, float | None]:
    """``1 - after/before`` for each group of :func:`proximity_summary` (``None`` when ``before`` is 0 or missing)."""
    out: dict[str, float | None] = {}
    for key, old in before.items():
        new = after.get(key)
        out[key] = None if old is None or new is None or old == 0 else 1.0 - new / old
    return out
