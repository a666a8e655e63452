"""Simulators for the DPMPM: a latent-class model (eq. 1-2) and a table shaped like the paper's CE sample."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["simulate_ce_like", "simulate_latent_class"]


def simulate_latent_class(
    n: int,
    n_levels: Sequence[int],
    weights: Sequence[float],
    seed: int,
    concentration: float = 0.3,
    names: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Records from a latent-class model (eq. 1-2 with fixed ``pi`` and random ``theta``).

    Returns
    -------
    frame, truth
        The records (integer levels) and ``{"pi", "theta": [per variable (H, d_j)], "cell_probability"}``
        with the joint probability of every cell as an array of shape ``n_levels``.
    """
    rng = np.random.default_rng(seed)
    pi = np.asarray(weights, dtype=float)
    pi = pi / pi.sum()
    names = list(names) if names is not None else [f"x{j}" for j in range(len(n_levels))]
    thetas = [rng.dirichlet(np.full(d, concentration), size=len(pi)) for d in n_levels]
    z = rng.choice(len(pi), size=n, p=pi)
    columns = {}
    for name, theta in zip(names, thetas, strict=True):
        u = rng.random(n)[:, None]
        columns[name] = np.minimum((np.cumsum(theta[z], axis=1) < u).sum(axis=1), theta.shape[1] - 1)
    joint = np.zeros(tuple(n_levels))
    for h, w in enumerate(pi):
        term = np.asarray(w)
        for theta in thetas:
            term = np.multiply.outer(term, theta[h])
        joint += term
    return pd.DataFrame(columns), {"pi": pi, "theta": thetas, "cell_probability": joint}


def simulate_ce_like(n: int = 6208, n_counties: int = 133, seed: int = 0) -> pd.DataFrame:
    """A CE-like table (Section 1.1): gender (2) x income (4) x age (5) = 40 patterns, and a county label.

    Pattern sizes are very unequal (the smallest with 3 records, as in the paper's patterns 6, 11 and 36,
    the largest several hundred); county sizes are skewed and the county distribution differs by pattern
    (each pattern tilts towards its own group of counties).

    Parameters
    ----------
    n
        Number of records (6,208 in the CE sample).
    n_counties
        Number of county labels (133).
    seed
        Random seed.

    Returns
    -------
    pandas.DataFrame
        Columns ``gender``, ``income``, ``age`` (integer codes from 1) and ``county`` (1..n_counties).
    """
    rng = np.random.default_rng(seed)
    genders, incomes, ages = np.meshgrid(np.arange(1, 3), np.arange(1, 5), np.arange(1, 6), indexing="ij")
    patterns = np.column_stack([genders.ravel(), incomes.ravel(), ages.ravel()])  # 40 x 3
    n_patterns = len(patterns)
    # Very unequal pattern sizes: log-normal shares, three patterns fixed at 3 records.
    tiny = np.array([5, 10, 35])
    share = np.exp(rng.normal(0.0, 1.1, n_patterns))
    share[tiny] = 0.0
    sizes = np.zeros(n_patterns, dtype=np.int64)
    sizes[tiny] = 3
    rest = n - sizes.sum()
    sizes += rng.multinomial(rest, share / share.sum())
    # County sizes: skewed (Zipf-like), tilted per pattern by a few latent "regions".
    base = 1.0 / np.arange(1, n_counties + 1) ** 0.8
    base = base[rng.permutation(n_counties)]
    regions = rng.integers(0, 6, n_counties)
    county = np.empty(n, dtype=np.int64)
    start = 0
    for b, size in enumerate(sizes):
        tilt = np.exp(1.5 * (regions == rng.integers(0, 6)) + 0.8 * (regions == (patterns[b, 2] % 6)))
        probs = base * tilt * rng.gamma(4.0, 0.25, n_counties)
        county[start : start + size] = rng.choice(n_counties, size=size, p=probs / probs.sum()) + 1
        start += size
    frame = pd.DataFrame(
        {
            "gender": np.repeat(patterns[:, 0], sizes),
            "income": np.repeat(patterns[:, 1], sizes),
            "age": np.repeat(patterns[:, 2], sizes),
            "county": county,
        }
    )
    return frame.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True)
