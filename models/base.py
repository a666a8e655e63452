"""The contract between a synthesizer and the generic layers.

A synthesizer declares its model and supplies two hooks; nothing else in ``synthesis/`` or ``risk/``
knows anything about it:

``posterior_predictive(posterior, data, rng)``
    draws the sensitive values for each posterior draw in ``posterior`` (one synthetic dataset per draw);
``candidate_log_prob(posterior, data)``
    the log probability, under each posterior draw, that a sensitive item takes each candidate value
    (the importance-sampling ingredient of the attribute-risk module).

Posterior draws travel as an :class:`xarray.Dataset` with one ``sample`` dimension (chains and draws
stacked); sensitive values as :class:`xarray.DataArray` objects with dimensions ``item`` (one sensitive
value of the data), ``sample``/``synthetic`` and ``candidate``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import arviz as az
import numpy as np
import xarray as xr

__all__ = ["Synthesizer", "sample_candidates", "stack_draws"]


@runtime_checkable
class Synthesizer(Protocol):
    """What the generic synthesis and risk layers need from a synthesizer."""

    #: Short name used in outputs and the CLI.
    name: str

    def fit(self, data: Any, seed: int) -> az.InferenceData:
        """Sample the posterior for ``data``."""

    def observed(self, data: Any) -> xr.DataArray:
        """The confidential values of the sensitive items, dimension ``item``."""

    def posterior_predictive(self, posterior: xr.Dataset, data: Any, rng: np.random.Generator) -> xr.DataArray:
        """Synthetic values of every sensitive item for each draw: dimensions ``(sample, item)``."""

    def candidates(self, data: Any) -> xr.DataArray:
        """The values a sensitive item can take, dimension ``candidate``."""

    def candidate_log_prob(self, posterior: xr.Dataset, data: Any) -> xr.DataArray:
        """log p(item = candidate | draw): dimensions ``(sample, item, candidate)``."""

    def describe(self) -> dict[str, Any]:
        """Public description of the model (structure, priors, settings; never estimates)."""


def stack_draws(posterior: xr.Dataset) -> xr.Dataset:
    """Stack ``chain`` and ``draw`` into one integer ``sample`` dimension (chain-major order)."""
    stacked = posterior.stack(sample=("chain", "draw"))
    n = stacked.sizes["sample"]
    return stacked.drop_vars(["sample", "chain", "draw"]).assign_coords(sample=np.arange(n))


def sample_candidates(log_prob: xr.DataArray, rng: np.random.Generator) -> xr.DataArray:
    """Draw one candidate per (sample, item) from ``log_prob`` (dims ``(sample, item, candidate)``).

    Inverse-CDF sampling with one uniform per (sample, item); returns candidate values (not positions).
    """
    log_prob = log_prob.transpose("sample", "item", "candidate")
    values = log_prob.to_numpy()
    probs = np.exp(values - values.max(axis=-1, keepdims=True))
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(values.shape[:-1])[..., None] * cdf[..., -1:]
    position = np.minimum((cdf < u).sum(axis=-1), values.shape[-1] - 1)
    drawn = log_prob["candidate"].to_numpy()[position]
    return xr.DataArray(
        drawn, dims=("sample", "item"), coords={"sample": log_prob["sample"].to_numpy()}, name="synthetic"
    )
