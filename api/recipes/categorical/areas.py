"""The area synthesized before the within-area models of a categorical release: ``bsd.DPMPM(strata=...,
area_model=...)`` (issue 51, item 1).

Two stages, the first as CART's (:mod:`bayessdc.pipeline.areas`):

1. **The area model** (``bsd.DPMPM`` or ``bsd.DPAreal``, :func:`~bayessdc.recipes.area_recipe`) draws each
   record's area, and with it the ``area_columns``, given the record's kept values (``area_given``), its posterior
   judged by its own release gate; its seed is the run's stream ``"area-model"``.
2. **The within-area DPMPMs**, one per group of areas (:mod:`bayessdc.recipes.categorical.strata`), each fitted on its
   areas' real records with the group's own seed and judged by its own release gate, draw the synthesized columns
   of every record placed in one of its areas by the first stage, given the record's kept values, its synthetic
   area and area columns: dataset ``l`` given the first stage's dataset ``l``, by the ``l``-th of the group's m
   posterior draws spread over its chains (:func:`~bayessdc.synthesis.datasets.choose_draws`, the group's stream
   ``"datasets"``).

What the second stage changes against a release that keeps the area:

- A record drawn into an area may carry kept values no real record of that area has, so each group's model codes
  every kept column on the whole file's levels (:meth:`~bayessdc.models.categorical.CategoricalData.with_levels`):
  the latent class of such a record is drawn from the probabilities the group's posterior gives its values (a
  level the group's records never take has the mass of the Dirichlet prior and of the other records'
  classes). The synthesized columns are still coded on the group's own levels: a model draws only the labels its
  areas' records take.
- The latent class is drawn given the kept values only (the DPMPM's ``conditioning="pattern"``, its gate datasets
  too): the record's own labels were observed by another area's model, if any.
- The release gate of the run is the area model's and every group's (:class:`StrataGateReport`, the area model a
  group named ``"area model"``): more chains go to whichever fails.
- The area and the area columns are synthesized columns of the measures (Hu & Savitsky's figures judge them
  against the inherent maximum, which redraws them within each pattern of the kept values), ``release/model.json``
  states no area's count of records, and ``private/area_counts.parquet`` holds each area's real and drawn counts.

The DP-areal model is not a within-area model here: its log rates are those of the patterns of kept values its
records take, so it has none for a pattern a record brings from another area.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.base import stack_draws
from bayessdc.models.cart.strata import without_counts
from bayessdc.synthesis import streams
from bayessdc.synthesis.datasets import choose_draws
from bayessdc.synthesis.streams import Stream

from ...pipeline.areas import AreaInput, area_datasets, describe_area, stage_parts
from ...pipeline.recipe import Fitted
from .input import CategoricalPrepared, CategoricalStrata, release_notices
from .strata import StrataFit, StrataGateReport

__all__ = [
    "AREA_GROUP", "AreaStrataFit", "area_description", "draw_within_areas", "measured_input", "measured_roles",
    "staged_description", "staged_fit", "within_area_prepared",
]  # fmt: skip

#: The area model's name among the groups of the run's release gate.
AREA_GROUP = "area model"


@dataclass
class AreaStrataFit(StrataFit):
    """The fit of a categorical release whose area is synthesized first: the groups' fits, the area model's fit
    (``first``), its m datasets once drawn (``areas``, by m) and the posterior draw of each (``draws``)."""

    first: Fitted | None = None
    areas: dict[int, pd.DataFrame] = field(default_factory=dict)
    draws: dict[int, np.ndarray] = field(default_factory=dict)


def staged_fit(area: AreaInput, first: Fitted, groups: Fitted) -> Fitted:
    """The run's fit of the area model's ``first`` and the groups' fit ``groups``
    (:func:`~bayessdc.recipes.categorical.strata.combine_fits`), not yet decided: the release gate is the area
    model's (as the group :data:`AREA_GROUP`, first) and every group's; the area model's posterior is the fit
    ``area_model`` (``private/area_model.posterior.nc``), its summary under ``area_model`` in
    ``private/diagnostics.json``."""
    gate = StrataGateReport.of({AREA_GROUP: first.release_gate, **groups.release_gate.groups})
    diagnostics = groups.diagnostics
    posteriors, reports, private_files = stage_parts(first)
    summary = {**diagnostics.summary, "area_model": {"model": area.name, **first.diagnostics.summary}}
    fitted = replace(
        groups,
        diagnostics=replace(diagnostics, posteriors={**posteriors, **diagnostics.posteriors}, summary=summary),
        state=AreaStrataFit(groups.state.parts, first=first),
        private_files={**groups.private_files, **private_files},
        reports={**reports, **groups.reports},
    )  # fmt: skip
    if not first.release_gate.passed:
        fitted.what = f"the area model ({area.name}) of {area.columns[0]!r} and {groups.what}"
    fitted.release_gate = gate
    return fitted


def measured_roles(prepared: CategoricalPrepared, area: AreaInput) -> tuple[list[str], list[str]]:
    """The release's synthesized and kept columns as the measures read them: the area and the area columns
    synthesized (before the within-area models' columns), the other kept columns released unchanged."""
    synthesized = [*area.columns, *prepared.synthesize]
    return synthesized, [c for c in prepared.keep if c not in area.columns]


def measured_input(prepared: CategoricalPrepared) -> CategoricalPrepared:
    """The run's input as the measures read it (:func:`measured_roles`; the knowledge sets ``prepare`` checked
    against them), with the records alone in their pattern of the kept columns counted again."""
    synthesized, kept = measured_roles(prepared, prepared.area)
    _, singles = release_notices(prepared.original, prepared.original, synthesized, kept)
    return replace(prepared, synthesize=synthesized, keep=kept, singles=singles)


def draw_within_areas(
    prepared: CategoricalPrepared, state: AreaStrataFit, area: AreaInput, m: int, seed: int
) -> pd.DataFrame:
    """The m datasets of the whole file (a release frame: ``synthetic`` = 1..m, the records in the data's order):
    the area model's datasets, then each record's synthesized columns by its synthetic area's group.

    Parameters
    ----------
    prepared
        The run's prepared input (its ``strata`` the groups' own inputs, coded on the whole file's kept levels).
    state
        The fit: the groups' posteriors and the area model's.
    area
        The area model's input.
    m
        Number of datasets.
    seed
        The run's seed (each group's draws from its own seed's stream ``"datasets"``).
    """
    strata: CategoricalStrata = prepared.strata
    areas = area_datasets(area, state, m)  # reads state.first and caches in state.areas
    frame = prepared.original
    n = len(frame)
    columns = ["synthetic", *prepared.keep, *prepared.synthesize]
    pieces, order = [], []
    by_dataset = [areas.iloc[(l - 1) * n:l * n].reset_index(drop=True) for l in range(1, m + 1)]
    placed = [strata.plan.rows(drawn) for drawn in by_dataset]  # per dataset: group -> its records' positions
    for name, part in strata.parts.items():
        own = state.parts[name].state
        rng = streams.rng(strata.seed(seed, name), Stream.DATASETS)
        posterior = own.idata.posterior
        positions = choose_draws(posterior.sizes["chain"], posterior.sizes["draw"], m, rng)
        stacked = stack_draws(posterior)
        for l, drawn in enumerate(by_dataset, start=1):
            rows = placed[l - 1][name]
            if not len(rows):
                continue
            records = frame.iloc[rows].reset_index(drop=True)
            records[area.columns] = drawn[area.columns].iloc[rows].to_numpy()
            data = part.data.code_kept(records)
            joint = own.synthesizer.posterior_predictive(stacked.isel(sample=[positions[l - 1]]), data, rng)
            joint = joint.rename(sample="synthetic").assign_coords(synthetic=[1])
            released = own.synthesizer.release_frame(data, joint)
            pieces.append(released.assign(synthetic=l)[columns])
            order.append(np.column_stack([np.full(len(rows), l), rows]))
    synthetic = pd.concat(pieces, ignore_index=True)
    key = np.concatenate(order)
    return synthetic.iloc[np.lexsort((key[:, 1], key[:, 0]))].reset_index(drop=True)


def within_area_prepared(part: CategoricalPrepared, whole: CategoricalPrepared, area: AreaInput) -> CategoricalPrepared:
    """A group's input for a release whose area is synthesized: every kept column but the area coded on the whole
    file's levels (a record drawn into the group may take any), the synthesized ones on the group's own."""
    wide = {c: whole.data.levels[c] for c in whole.keep if c != area.columns[0]}
    return replace(part, data=part.data.with_levels(wide), area=area)


def staged_description(prepared: CategoricalPrepared, first: Fitted) -> dict[str, Any]:
    """The area model in ``release/model.json`` (:func:`~bayessdc.pipeline.areas.describe_area`) with the
    within-area DPMPMs as the second stage and the reference of the release's risk figures."""
    return describe_area(
        prepared.area, first,
        f"{', '.join(map(repr, prepared.synthesize))} of every record drawn by the DPMPM of its synthetic area's group "
        "(fitted on that group's real records) given its kept values and the first stage's, one posterior draw per "
        "dataset",
        reference_of_risk="Hu & Savitsky's inherent minimum and maximum with the area and the area columns among the "
        "synthesized columns (redrawn within each pattern of the kept columns by the maximum)",
    )  # fmt: skip


def area_description(description: dict[str, Any]) -> dict[str, Any]:
    """The strata's description with no area's count of records (each area's records are the area model's draw)."""
    strata = without_counts(description["strata"])
    strata["models"] = ("one DPMPM per group, fitted on the group's real records (the labels they take; every kept "
                        "column on the whole file's levels) with the group's own seed; each record's synthesized "
                        "values drawn by the group of its synthetic area given its kept values and its synthetic area "
                        "(conditioning on the pattern)")  # fmt: skip
    return description
