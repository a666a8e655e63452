"""Drawing synthetic datasets from a posterior, for any synthesizer.

Each of the ``m`` synthetic datasets comes from ONE posterior draw (never the posterior mean, which would
leak more about the confidential values), and the ``m`` draws are spaced as far apart as the chains allow
so that the datasets are close to independent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayessdc.models.base import Synthesizer, stack_draws

from . import streams

__all__ = ["choose_draws", "draw_synthetic", "group_seed", "stack_datasets"]


def group_seed(seed: int, name: str) -> np.random.SeedSequence:
    """A seed for one group that depends only on the run's seed and the group's name: ``stream(seed, name)``.

    The same group gets the same random numbers whatever order the groups are processed in, on one machine
    or on a cluster. Kept for its callers; the values are those it always had,
    ``SeedSequence([seed, crc32(name)])`` (:func:`bayessdc.synthesis.streams.stream`).
    """
    return streams.stream(seed, name)


def choose_draws(n_chains: int, n_draws: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Positions (in the chain-major stacked order) of ``m`` posterior draws spaced far apart.

    The stacked draws are cut into ``m`` equal blocks and one draw is taken at the same random offset in
    every block, so consecutive synthetic datasets are ``n_chains * n_draws / m`` draws apart (whole chains
    apart when ``m <= n_chains``).

    Parameters
    ----------
    n_chains, n_draws
        Shape of the posterior.
    m
        Number of synthetic datasets.
    rng
        Random generator for the common offset.

    Returns
    -------
    numpy.ndarray
        ``m`` distinct positions in ``0 .. n_chains * n_draws - 1``.
    """
    total = n_chains * n_draws
    if not 1 <= m <= total:
        raise ValueError(f"m = {m} synthetic datasets need between 1 and {total} posterior draws")
    block = total // m
    offset = int(rng.integers(block))
    return np.arange(m) * block + offset


def draw_synthetic(
    synthesizer: Synthesizer,
    idata: az.InferenceData,
    data: Any,
    m: int,
    rng: np.random.Generator,
) -> xr.DataArray:
    """Draw ``m`` synthetic versions of the sensitive items of ``data``.

    Parameters
    ----------
    synthesizer
        Supplies ``posterior_predictive``.
    idata
        The posterior.
    data
        The data the posterior was fitted to.
    m
        Number of synthetic datasets.
    rng
        Random generator (draw choice and the predictive draws).

    Returns
    -------
    xarray.DataArray
        Dimensions ``(synthetic, item)`` with ``synthetic = 1..m``; the coordinate ``posterior_draw`` (private)
        says which stacked posterior draw produced each dataset.
    """
    posterior = idata.posterior
    positions = choose_draws(posterior.sizes["chain"], posterior.sizes["draw"], m, rng)
    draws = stack_draws(posterior).isel(sample=positions)
    values = synthesizer.posterior_predictive(draws, data, rng)
    return (
        values.rename(sample="synthetic")
        .assign_coords(synthetic=np.arange(1, m + 1), posterior_draw=("synthetic", positions))
        .rename("synthetic_values")
    )


def stack_datasets(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The m synthetic datasets as one table: a first column ``synthetic`` = 1..m, then each dataset's rows.

    Every synthesizer releases this one shape, so utility, risk and reports loop over ``synthetic`` without
    knowing the model.
    """
    stacked = []
    for k, frame in enumerate(frames, start=1):
        frame = frame.reset_index(drop=True)
        if "synthetic" in frame.columns:
            raise ValueError("a synthetic dataset already has a column named 'synthetic'")
        frame.insert(0, "synthetic", k)
        stacked.append(frame)
    return pd.concat(stacked, ignore_index=True)
