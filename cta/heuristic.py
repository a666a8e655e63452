"""Up/down directions for the sensitive cells chosen by a heuristic, so that the rest is a linear program.

The heuristic takes the sensitive cells from the largest protection to the smallest and sends each in the
direction that keeps the running imbalance of the equations it appears in (and of the net adjustment, when
the mean is preserved) closest to zero: sensitive moves then cancel each other within totals as far as
possible and the non-sensitive cells have little left to absorb.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def balanced_directions(
    additivity: sp.spmatrix,
    lower: np.ndarray,
    upper: np.ndarray,
    can_go_down: np.ndarray,
    can_go_up: np.ndarray | None = None,
    balance_sets: list[np.ndarray] | None = None,
) -> np.ndarray:
    """Choose +1 (up) or -1 (down) for every sensitive cell; 0 for the others.

    Parameters
    ----------
    additivity : scipy.sparse matrix
        The equations ``T`` (equations x cells).
    lower, upper : numpy.ndarray
        Required downward and upward moves per cell (both zero for non-sensitive cells).
    can_go_down : numpy.ndarray
        Boolean mask: False where a downward move would make the cell negative.
    can_go_up : numpy.ndarray, optional
        Boolean mask: False where the cell may not move up.
    balance_sets : list of numpy.ndarray, optional
        Boolean masks of cell sets whose net adjustment should also stay near zero (mean preservation).

    Returns
    -------
    numpy.ndarray
        Integer directions per cell.
    """
    n = len(lower)
    can_go_up = np.ones(n, dtype=bool) if can_go_up is None else can_go_up
    rows = [sp.csr_matrix(additivity)]
    for mask in balance_sets or []:
        rows.append(sp.csr_matrix(np.asarray(mask, dtype=float)[None, :]))
    system = sp.vstack(rows, format="csc")
    imbalance = np.zeros(system.shape[0])
    directions = np.zeros(n, dtype=np.int64)
    sensitive = np.flatnonzero((lower > 0) | (upper > 0))
    order = sensitive[np.argsort(-np.maximum(lower, upper)[sensitive], kind="stable")]
    for i in order:
        start, stop = system.indptr[i], system.indptr[i + 1]
        eqs, coefs = system.indices[start:stop], system.data[start:stop]
        up_score = np.abs(imbalance[eqs] + coefs * upper[i]).sum()
        down_score = np.abs(imbalance[eqs] - coefs * lower[i]).sum()
        if not can_go_down[i]:
            d = 1
        elif not can_go_up[i]:
            d = -1
        elif up_score < down_score:
            d = 1
        elif down_score < up_score:
            d = -1
        else:
            d = 1 if upper[i] <= lower[i] else -1
        directions[i] = d
        imbalance[eqs] += coefs * (upper[i] if d > 0 else -lower[i])
    return directions
