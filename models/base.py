"""The contract between a synthesizer and the generic layers.

Everything ``synthesis/``, ``risk/`` and the pipeline call on a synthesizer is declared here, in four
protocols, so that no generic module needs to know any one model:

:class:`Synthesizer` (required of every posterior-based synthesizer)
    ``name``, ``fit(data, seed) -> InferenceData``, ``convergence_quantities(idata, data)`` (what the
    parameter gate monitors, one return type: ``dict[str, xarray.DataArray]`` with ``chain`` and ``draw``
    dimensions), ``observed(data)``, ``posterior_predictive(posterior, data, rng)`` and ``describe()``.
:class:`SupportsReleaseFrame` (optional: whole frames released by the pipeline's default draw step)
    ``release_frame(data, values)``, the m datasets as one frame with a first column ``synthetic``.
:class:`SupportsCandidateRisk` (optional: per-item importance-sampling attribute risk)
    ``candidates(data)`` and ``candidate_log_prob(posterior, data)``, the log probability under each draw
    that a sensitive item takes each candidate value. A synthesizer whose items have no finite candidate set
    (a continuous response) does not offer it.
:class:`SupportsRefitCheck` (optional: the refit check of the importance-sampling approximation)
    ``replace_value(data, item, value)``, the data with one confidential value replaced, and
    ``replace_values(data, values)``, with every one replaced (the no-knowledge intruder's refits).
:class:`SupportsReleaseRisk` (optional: attribute risk that also conditions on the released datasets)
    ``release_log_prob(posterior, data, synthetic)``, and ``data.take(rows)`` on its data object to assess
    a chunk of records.
:class:`SupportsSamplerSettings` (optional: the group runner's longer refits and its share of the cores)
    a dataclass with a ``settings`` dataclass (``draws``, ``target_accept``, ``cores``) that the runner
    replaces with :func:`dataclasses.replace`.
:class:`SupportsContinuation` (optional: the group runner's first extension of a fit that missed r_hat or ESS)
    ``continue_fit(idata, data, draws, seed)``, the chains continued from their adapted state.
:class:`SupportsSynthesizedCodes`, :class:`SupportsSynthesizedCellCounts` (optional: the release gate's datasets
    without frames) ``synthesized_codes(data, joint)``, every dataset's synthesized columns as codes, and
    ``synthesized_cell_counts(posterior, data, rng)``, datasets drawn as counts per cell of identical records
    (:class:`SyntheticCellCounts`).

Posterior draws travel as an :class:`xarray.Dataset` with one ``sample`` dimension (chains and draws
stacked, :func:`stack_draws`); sensitive values as :class:`xarray.DataArray` objects with dimensions
``item`` (one sensitive value of the data), ``sample``/``synthetic`` and ``candidate``.

``idata.attrs`` of every fit follow one schema (:data:`FIT_ATTRS`): the ``sampler_backend`` (a NUTS
backend or the name of an exact sampler), the ``sampler_settings`` (a JSON object: netCDF attributes are
text), the ``sampler_seed`` and the
``sampling_seconds``; a synthesizer may add its own keys beside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

__all__ = [
    "FIT_ATTRS",
    "SupportsCandidateRisk",
    "SupportsContinuation",
    "SupportsRefitCheck",
    "SupportsReleaseFrame",
    "SupportsReleaseRisk",
    "SupportsSamplerSettings",
    "SupportsSynthesizedCellCounts",
    "SupportsSynthesizedCodes",
    "Synthesizer",
    "SyntheticCellCounts",
    "concat_chains",
    "sample_candidates",
    "stack_draws",
]

#: The keys every fit's ``idata.attrs`` carries (values JSON-safe: netCDF keeps them).
FIT_ATTRS: tuple[str, ...] = ("sampler_backend", "sampler_settings", "sampler_seed", "sampling_seconds")


@runtime_checkable
class Synthesizer(Protocol):
    """What the pipeline, the synthesis layer and the group runner need from a synthesizer."""

    #: Short name used in outputs and the CLI.
    name: str

    def fit(self, data: Any, seed: int) -> az.InferenceData:
        """Sample the posterior for ``data`` (same seed, same draws)."""

    def convergence_quantities(self, idata: az.InferenceData, data: Any) -> dict[str, xr.DataArray]:
        """The quantities the parameter gate monitors, each with ``chain`` and ``draw`` dimensions.

        Only quantities that do not depend on how a model is labelled (mixture components) or split
        (effects identified only through the prior) belong here: what the likelihood identifies, and what
        synthesis uses.
        """

    def observed(self, data: Any) -> xr.DataArray:
        """The confidential values of the sensitive items, dimension ``item``."""

    def posterior_predictive(self, posterior: xr.Dataset, data: Any, rng: np.random.Generator) -> xr.DataArray:
        """Synthetic values of every sensitive item for each draw: dimensions ``(sample, item)``."""

    def describe(self) -> dict[str, Any]:
        """Public description of the model (structure, priors, settings; never estimates)."""


@runtime_checkable
class SupportsReleaseFrame(Protocol):
    """Optional: a synthesizer whose synthetic values make whole frames (the pipeline's default draw step)."""

    def release_frame(self, data: Any, values: xr.DataArray) -> pd.DataFrame:
        """The datasets as one frame: a first column ``synthetic`` (the coordinate of ``values``), then the
        released columns of every record with the sensitive items replaced by ``values`` (dimensions
        ``(synthetic, item)``); given the observed values (:meth:`Synthesizer.observed` with a ``synthetic``
        dimension of one), the confidential frame."""


@runtime_checkable
class SupportsSynthesizedCodes(Protocol):
    """Optional: a categorical synthesizer's datasets as codes, for the release gate (no frames)."""

    def synthesized_codes(self, data: Any, joint: xr.DataArray) -> dict[str, tuple[Any, np.ndarray]]:
        """Every synthesized column of every dataset of ``joint`` (dimensions ``(synthetic, item)``):
        ``{column: (levels, codes)}``, ``codes`` of dimensions ``(synthetic, item)`` over ``levels``."""


@dataclass(frozen=True)
class SyntheticCellCounts:
    """Partially synthetic datasets as counts per cell: the original records grouped into cells of records equal in
    every column, and for each dataset how many records of each cell take each joint value of the synthesized
    columns. Every release figure sums over records, and records of one cell are exchangeable, so the counts give
    the same figures as the records (:meth:`bayessdc.risk.release_figures.CategoricalReleaseFigures.of_cell_counts`).

    Attributes
    ----------
    cells
        ``{column: (levels, codes)}``: every column's code in every cell (``codes`` of length C, over ``levels``).
    values
        ``{synthesized column: (levels, codes)}``: each synthesized column's code in every joint value (length V).
    records
        ``(C,)`` each cell's records.
    counts
        ``(dataset, C, V)`` integer counts; each cell's row sums to its records.
    """

    cells: dict[str, tuple[Any, np.ndarray]]
    values: dict[str, tuple[Any, np.ndarray]]
    records: np.ndarray
    counts: np.ndarray


@runtime_checkable
class SupportsSynthesizedCellCounts(Protocol):
    """Optional: a categorical synthesizer's datasets drawn as counts per cell, for the release gate."""

    def synthesized_cell_counts(
        self, posterior: xr.Dataset, data: Any, rng: np.random.Generator
    ) -> SyntheticCellCounts | None:
        """One dataset per draw of ``posterior`` (dimension ``sample``) as :class:`SyntheticCellCounts`, drawn from
        ``rng`` like ``posterior_predictive``'s values; ``None`` when the synthesizer cannot (then the gate draws
        records)."""


@runtime_checkable
class SupportsCandidateRisk(Protocol):
    """Optional: per-item attribute risk by importance sampling over a finite set of candidate values."""

    def candidates(self, data: Any) -> xr.DataArray:
        """The values a sensitive item can take, dimension ``candidate``."""

    def candidate_log_prob(self, posterior: xr.Dataset, data: Any) -> xr.DataArray:
        """log p(item = candidate | draw): dimensions ``sample``, ``item`` and ``candidate``, in any order
        (consumers select them by name; ``(item, candidate, sample)`` is the order the risk step reads without
        a copy)."""


@runtime_checkable
class SupportsRefitCheck(Protocol):
    """Optional: the exact check of the importance-sampling risk by refits
    (:func:`bayessdc.risk.attribute.refit_attribute_risk`)."""

    def replace_value(self, data: Any, item: int, value: Any) -> Any:
        """``data`` with the confidential value of ``item`` replaced by ``value``."""

    def replace_values(self, data: Any, values: Any) -> Any:
        """``data`` with every item's confidential value replaced by ``values`` (a released dataset as data:
        :func:`bayessdc.risk.no_knowledge.no_knowledge_attribute_risk`)."""


@runtime_checkable
class SupportsSamplerSettings(Protocol):
    """Optional: sampler settings the group runner may replace (longer refits, a share of the cores).

    The synthesizer is a dataclass and ``settings`` a dataclass with ``draws``, ``target_accept`` and ``cores``
    (:class:`bayessdc.models.sampling.SamplerSettings`)."""

    settings: Any


@runtime_checkable
class SupportsReleaseRisk(Protocol):
    """Optional: attribute risk that conditions on the released synthetic datasets too."""

    def release_log_prob(self, posterior: xr.Dataset, data: Any, synthetic: xr.DataArray) -> xr.DataArray:
        """log p(released values of each record | draw, record's true value = candidate):
        dimensions ``(sample, item, candidate)``."""


@runtime_checkable
class SupportsContinuation(Protocol):
    """Optional: longer chains without a new warm-up, for a fit that missed r_hat or ESS (the group runner)."""

    def continue_fit(self, idata: az.InferenceData, data: Any, draws: int, seed: int) -> az.InferenceData | None:
        """``idata`` with every chain continued by ``draws`` draws from its last state and adapted sampler
        settings (``None`` when this fit cannot be continued: the runner then refits)."""


def concat_chains(parts: Sequence[az.InferenceData]) -> az.InferenceData:
    """Stack fits of different chains (each labelled by its own indices on ``chain``) into one, in chain order.

    Every group is concatenated along ``chain`` (the values are copied, not recomputed: the result is bitwise
    the fit of those chains together where each chain's draws do not depend on the others); the attributes
    are the first part's, with ``sampling_seconds`` summed over the parts.
    """
    if not parts:
        raise ValueError("no chains to combine")
    parts = sorted(parts, key=lambda part: int(part.posterior["chain"][0]))
    groups = {
        group: xr.concat(
            [part[group] for part in parts],
            dim="chain",
            data_vars="minimal",
            coords="minimal",
            compat="override",
            join="exact",
        )
        for group in parts[0].groups()
    }
    idata = az.InferenceData(**groups)
    idata.attrs.update(parts[0].attrs)
    idata.attrs["sampling_seconds"] = float(sum(float(part.attrs.get("sampling_seconds", 0.0)) for part in parts))
    return idata


def stack_draws(posterior: xr.Dataset) -> xr.Dataset:
    """Stack ``chain`` and ``draw`` into one integer ``sample`` dimension (chain-major order).

    The result of ``posterior.stack(sample=("chain", "draw"))`` with the stacked index replaced by
    ``0..n-1`` (``sample`` last in each variable that has both dimensions, the others unchanged), built by
    reshaping each variable's array: xarray's ``stack`` builds a pandas MultiIndex that is dropped at once,
    3.5 ms of a flow pair's 20 ms risk step (2,601 pairs in a national run, and again in its synthesis).
    """
    n_chains, n_draws = posterior.sizes["chain"], posterior.sizes["draw"]
    variables = {}
    for name, variable in posterior.data_vars.items():
        if "chain" not in variable.dims or "draw" not in variable.dims:
            variables[name] = variable.variable
            continue
        rest = [d for d in variable.dims if d not in ("chain", "draw")]
        values = variable.transpose(*rest, "chain", "draw").to_numpy()
        variables[name] = xr.Variable(
            (*rest, "sample"), values.reshape(*values.shape[:-2], n_chains * n_draws), attrs=variable.attrs
        )
    coords = {
        name: coord.variable for name, coord in posterior.coords.items() if not {"chain", "draw"} & set(coord.dims)
    }
    coords["sample"] = xr.Variable("sample", np.arange(n_chains * n_draws))
    return xr.Dataset(variables, coords=coords, attrs=posterior.attrs)


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
