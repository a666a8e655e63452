"""Simulator for the DP-areal model: records whose label counts follow eq. (7)-(9) with a few components."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["simulate_areal"]


def simulate_areal(
    n_labels: int,
    levels: Sequence[int],
    *,
    component_weights: Sequence[float] = (0.6, 0.4),
    intercepts: Sequence[float] = (-1.0, 1.5),
    effect_scale: float = 0.5,
    tau_lambda: float = 4.0,
    seed: int = 0,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Records simulated from the DP-areal model (eq. 7-9) with a few components.

    Parameters
    ----------
    n_labels
        Number of labels (counties) ``G``.
    levels
        Numbers of levels of the kept variables (columns ``v0, v1, ...``); their combinations are the patterns.
    component_weights, intercepts
        ``rho`` and the component intercepts ``mu + theta*_k``.
    effect_scale
        Standard deviation of the per-component one-hot effects ``phi*_k``.
    tau_lambda
        Precision of the log rates.
    seed
        Random seed.

    Returns
    -------
    frame, truth
        One row per record (columns ``v0, ...`` and ``label``), and ``{"log_rate": (B, G), "label": (B, G),
        "location": (K, B), "rho", "tau_lambda", "patterns": (B, p)}`` with patterns in the order of
        :func:`prepare_areal`.
    """
    rng = np.random.default_rng(seed)
    grids = np.meshgrid(*[np.arange(d) for d in levels], indexing="ij")
    patterns = np.column_stack([g.ravel() for g in grids])
    design = np.hstack([np.eye(d)[patterns[:, j]] for j, d in enumerate(levels)])
    rho = np.asarray(component_weights, dtype=float)
    rho = rho / rho.sum()
    phi = rng.normal(0.0, effect_scale, (len(rho), design.shape[1]))
    location = np.asarray(intercepts, dtype=float)[:, None] + phi @ design.T  # (K, B)
    z = rng.choice(len(rho), size=(len(patterns), n_labels), p=rho)
    log_rate = rng.normal(location[z, np.arange(len(patterns))[:, None]], 1.0 / math.sqrt(tau_lambda))
    counts = rng.poisson(np.exp(log_rate))
    rows = []
    for b, pattern in enumerate(patterns):
        labels = np.repeat(np.arange(n_labels), counts[b])
        rows.append(np.column_stack([np.tile(pattern, (len(labels), 1)), labels]))
    table = np.vstack(rows)
    frame = pd.DataFrame(table, columns=[*(f"v{j}" for j in range(len(levels))), "label"])
    truth = {
        "log_rate": log_rate,
        "label": z,
        "location": location,
        "rho": rho,
        "tau_lambda": tau_lambda,
        "patterns": patterns,
        "counts": counts,
    }
    return frame.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True), truth
