"""Distances on the map: the exponential correlation of Section 2 and nearest-neighbour distances."""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

__all__ = ["exponential_correlation", "nearest_neighbour_distance"]


def exponential_correlation(a: np.ndarray, b: np.ndarray | None, phi: float) -> np.ndarray:
    """``exp(-phi ||a_i - b_j||)``: the exponential correlation of Section 2 (``b = a`` when ``None``)."""
    return np.exp(-phi * cdist(a, a if b is None else b))


def nearest_neighbour_distance(coords: np.ndarray) -> np.ndarray:
    """``min_{j != i} ||s_i - s_j||`` for every location."""
    distances, _ = cKDTree(coords).query(coords, k=2)
    return distances[:, 1]
