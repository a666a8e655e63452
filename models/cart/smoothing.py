"""Smoothing of a numeric column's draws (``smoothing="density"``, as R synthpop's ``syn.smooth``).

CART draws a numeric value from the confidential values in the record's leaf (its *donors*), so every
synthetic value is a real one. With density smoothing, the drawn donor value is perturbed by a Gaussian
kernel: ``value + N(0, h^2)``, one draw of the leaf's kernel density estimate, where the bandwidth ``h`` is
R's ``bw.nrd0`` rule of thumb on the leaf's donor values,

    h = 0.9 * min(sd, IQR / 1.34) * n ** (-1/5)

(``sd`` when the IQR is 0). synthpop's ``"density"`` takes the Sheather-Jones bandwidth of the whole column;
a bandwidth per leaf keeps the perturbation on the scale of the values the tree puts together. Then, as in
synthpop, the value is kept within the range of the column's observed values (clipped to its minimum and
maximum) and rounded to the number of decimal places the observed values have (so an integer column stays
whole numbers, and a smoothed value may round back onto a donor's). Exceptions:

* a leaf whose donors all share one value has no spread to set a bandwidth from: its draws keep that value
  (synthpop likewise leaves a value holding over 70% of the draws unsmoothed);
* a smoothed value that lands on a declared missing-value code or spike of the column keeps the donor's value
  (a drawn value is never a code nor a spike).

Smoothing is a privacy lever: the fewer synthetic values equal a real one, the fewer synthetic records copy a
real record. Its random numbers are a stream of their own (``"cart-smoothing"``), so the same seed draws the
same donors with and without smoothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .tree import ColumnTree

__all__ = ["SMOOTHING", "ValueSmoother", "bandwidth_nrd0", "decimal_places", "leaf_bandwidths"]

#: The smoothing methods: none (donor values) or a Gaussian kernel (``"density"``).
SMOOTHING = (None, "density")


def bandwidth_nrd0(values: np.ndarray) -> float:
    """R's ``bw.nrd0``: ``0.9 * min(sd, IQR / 1.34) * n ** (-1/5)``, ``sd`` when the IQR is 0; 0 without spread.

    Parameters
    ----------
    values
        The donor values (repeated as often as they occur).
    """
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return 0.0
    spread = float(np.std(values, ddof=1))
    q1, q3 = np.quantile(values, [0.25, 0.75])
    low = min(spread, float(q3 - q1) / 1.34) or spread
    return 0.9 * low * len(values) ** -0.2


def decimal_places(values: np.ndarray, most: int = 8) -> int:
    """The fewest decimal places (up to ``most``) that write every one of ``values`` exactly."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    tolerance = 1e-9 * max(1.0, float(np.abs(values).max(initial=0.0)))
    for places in range(most + 1):
        if np.allclose(np.round(values, places), values, rtol=0.0, atol=tolerance):
            return places
    return most


def leaf_bandwidths(fitted: ColumnTree, levels: np.ndarray) -> np.ndarray:
    """Per node of ``fitted``'s tree, the ``bw.nrd0`` bandwidth of the leaf's donor values (NaN: inner nodes and
    leaves without spread, whose draws are not smoothed)."""
    is_leaf = fitted.tree.tree_.children_left == -1
    bandwidth = np.full(len(is_leaf), np.nan)
    numbers = np.asarray(levels, dtype=float)
    for node in np.flatnonzero(is_leaf):
        pairs = slice(fitted.pair_start[node], fitted.pair_end[node])
        donors = np.repeat(numbers[fitted.pair_code[pairs]], fitted.pair_count[pairs].astype(np.int64))
        h = bandwidth_nrd0(donors)
        if h > 0:
            bandwidth[node] = h
    return bandwidth


@dataclass(frozen=True)
class ValueSmoother:
    """The Gaussian-kernel smoothing of one numeric column's draws.

    Parameters
    ----------
    low, high
        The range of the column's observed values (smoothed values are clipped to it).
    decimals
        Decimal places of the observed values (smoothed values are rounded to them).
    forbidden
        The column's declared missing-value codes and spikes (a smoothed value equal to one keeps the donor's).
    """

    low: float
    high: float
    decimals: int
    forbidden: tuple[float, ...] = ()

    @classmethod
    def of(cls, observed: np.ndarray, forbidden: Sequence[float] = ()) -> ValueSmoother:
        """The smoother of a column whose drawn values are ``observed`` (its confidential values in the
        "value" state)."""
        observed = np.asarray(observed, dtype=float)
        return cls(float(observed.min()), float(observed.max()), decimal_places(observed), tuple(forbidden))

    def smooth(self, donors: np.ndarray, bandwidth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Smoothed values of the drawn ``donors`` given each draw's bandwidth (NaN: kept as drawn).

        One standard normal per draw is taken from ``rng`` whatever the bandwidths, so the draws of a dataset
        depend only on the seed.
        """
        donors = np.asarray(donors, dtype=float)
        noise = rng.standard_normal(len(donors))
        smoothed = np.round(np.clip(donors + noise * np.nan_to_num(bandwidth), self.low, self.high), self.decimals)
        keep = np.isnan(bandwidth) | np.isin(smoothed, np.asarray(self.forbidden, dtype=float))
        return np.where(keep, donors, smoothed)
