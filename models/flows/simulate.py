"""Simulated flow data: one group pair from the model itself (recovery tests) and a national example table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .data import FlowGroup
from .model import log_factorials

__all__ = ["simulate_flow_table", "simulate_group"]


def simulate_group(
    n_origins: int,
    n_destinations: int,
    n_cells: int,
    *,
    mu: float = 0.6,
    beta_sd: float = 0.6,
    gamma_sd: float = 0.5,
    upper: int = 8,
    seed: int = 0,
    key: tuple[Any, Any] = ("A", "B"),
) -> tuple[FlowGroup, dict[str, np.ndarray]]:
    """Simulate one group pair from the model of eq. (1) and Section 2.1 with known parameters.

    Returns the group and the true values: ``mu``, ``beta_effect``, ``gamma_effect``, ``log_lambda``,
    ``phi_beta`` (= 1/beta_sd^2), ``phi_gamma``. Every origin and destination has at least one cell.
    """
    rng = np.random.default_rng(seed)
    if n_cells < max(n_origins, n_destinations) or n_cells > n_origins * n_destinations:
        raise ValueError("n_cells must be between max(n_origins, n_destinations) and n_origins * n_destinations")
    beta = rng.normal(0.0, beta_sd, n_origins)
    gamma = rng.normal(0.0, gamma_sd, n_destinations)
    # a cover of every origin and destination, then further distinct pairs at random
    k = max(n_origins, n_destinations)
    base = {(i % n_origins, i % n_destinations) for i in range(k)}
    others = [p for p in np.ndindex(n_origins, n_destinations) if p not in base]
    extra = rng.choice(len(others), size=n_cells - len(base), replace=False)
    pairs = np.array(sorted(base) + [others[e] for e in extra])
    oi, dj = pairs[:, 0], pairs[:, 1]
    log_lambda = mu + beta[oi] + gamma[dj]
    r = np.arange(upper + 1)
    log_p = log_lambda[:, None] * r - log_factorials(upper)
    p = np.exp(log_p - log_p.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) < rng.random(len(oi))[:, None]).sum(axis=1)
    group = FlowGroup(
        key=key,
        rows=np.arange(len(y)),
        origins=np.array([f"o{i:03d}" for i in range(n_origins)]),
        destinations=np.array([f"d{j:03d}" for j in range(n_destinations)]),
        origin_index=oi.astype(np.int64),
        destination_index=dj.astype(np.int64),
        y=y.astype(np.int64),
        upper=upper,
    )
    truth = {
        "mu": np.array(mu),
        "beta_effect": beta,
        "gamma_effect": gamma,
        "log_lambda": log_lambda,
        "phi_beta": np.array(1 / beta_sd**2),
        "phi_gamma": np.array(1 / gamma_sd**2),
    }
    return group, truth


def simulate_flow_table(
    n_states: int = 6,
    counties_per_state: float = 12.0,
    *,
    scale: float = 0.002,
    seed: int = 0,
) -> pd.DataFrame:
    """A realistic county-to-county migration table (the bundled example).

    Counties get log-normal populations and positions around their state's centre; the expected flow
    from county i to county j (i != j) follows a gravity law, ``scale * P_i * P_j / (d_ij + 0.05)^2``
    (populations in thousands), with extra-Poisson variation; only pairs with at least one mover are
    listed, as in the IRS-based tables. With the defaults most listed pairs are below 10.

    Parameters
    ----------
    n_states
        Number of states (origin and destination groups).
    counties_per_state
        Mean number of counties per state (Poisson, at least 1).
    scale
        Overall level of migration.
    seed
        Random seed.

    Returns
    -------
    pandas.DataFrame
        Columns ``origin, destination, origin_group, destination_group, count``.
    """
    rng = np.random.default_rng(seed)
    sizes = np.maximum(1, rng.poisson(counties_per_state, n_states))
    state_of = np.repeat(np.arange(n_states), sizes)
    n = len(state_of)
    centres = rng.uniform(0, 10, (n_states, 2))
    position = centres[state_of] + rng.normal(0, 0.6, (n, 2))
    population = np.exp(rng.normal(3.0, 1.1, n))  # thousands
    states = [f"S{s:02d}" for s in range(n_states)]
    county = np.array([f"{states[s]}C{k:03d}" for s, size in enumerate(sizes) for k in range(size)])
    rows = []
    for start in range(0, n, 500):  # blocks of origins keep memory small for national sizes
        block = slice(start, min(n, start + 500))
        distance = np.sqrt(((position[block, None, :] - position[None, :, :]) ** 2).sum(-1))
        mean = scale * population[block, None] * population[None, :] / (distance + 0.05) ** 2
        mean *= rng.gamma(2.0, 0.5, mean.shape)  # extra-Poisson variation
        counts = rng.poisson(mean)
        idx = np.arange(block.start, block.stop)
        counts[idx - block.start, idx] = 0
        oi, dj = np.nonzero(counts)
        rows.append(
            pd.DataFrame(
                {
                    "origin": county[oi + block.start],
                    "destination": county[dj],
                    "origin_group": np.array(states)[state_of[oi + block.start]],
                    "destination_group": np.array(states)[state_of[dj]],
                    "count": counts[oi, dj].astype(np.int64),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)
