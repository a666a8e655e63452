"""The area synthesized before the within-area trees (issue 51, item 1): ``bsd.CART(strata=..., area_model=...)``.

Two stages, each from its own seed:

1. **The area model** draws each record's area label, and with it the categorical ``area_columns``, given the
   record's kept values (``area_given``; default every kept column but the survey weight): a categorical
   synthesizer of the registry, ``bsd.DPMPM`` or ``bsd.DPAreal``, through the pipeline's contract
   (:mod:`bayessdc.pipeline.areas`). A posterior that fails its release gate refuses the release, as the categorical
   recipes do.
2. **The within-area trees** (:class:`~bayessdc.models.cart.areas.SynthesizedAreaCart`) draw the other synthesized
   columns of each record by the trees of its synthetic area, given its kept values and the first stage's, dataset
   ``l`` given the area model's dataset ``l``. A record whose synthetic area's trees hold no value the rules admit
   for it has its first stage drawn again (:func:`area_redraw`: the area model's posterior predictive of that record
   under its dataset's posterior draw), then its other columns by its new area's trees.

What changes against a release that keeps the area: each area's number of records in a dataset is drawn, so
``release/model.json`` states no area's count (the plan's groups name their areas only); the area and the area
columns are synthesized columns of the measures (the identification figures judge them against the inherent
maximum, which redraws them within each pattern of kept values); the records-copied criteria read a cross-fitted
release of the second stage given the same first-stage datasets (the area model's posterior saw every record and is
not refitted per fold: what the criteria judge is the trees' copying, and the first stage is judged by the
identification figures and its release gate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.cart.areas import AreaRedraw, SynthesizedAreaCart
from bayessdc.models.cart.rules import Rule
from bayessdc.synthesis import streams
from bayessdc.synthesis.datasets import stack_draws
from bayessdc.synthesis.streams import Stream

from ...errors import InputError
from ...pipeline.areas import AreaInput, area_datasets, area_folder, describe_area, stage_parts
from ...pipeline.recipe import Fitted
from ...release import Diagnostics

__all__ = ["AreaStages", "area_redraw", "check_area_rules", "describe_trees_area", "more_area_chains", "staged_fit"]


def check_area_rules(rules: Sequence[Rule], columns: Sequence[str], synthesize: Sequence[str]) -> None:
    """Refuse a rule on the first stage's columns that names no column the trees draw: the trees cannot enforce it
    (its values are all fixed before they draw), and the area model is given its own rules as structural zeros."""
    for rule in rules:
        if rule.columns & set(columns) and not rule.columns & set(synthesize):
            named = ", ".join(sorted(rule.columns & set(columns)))
            raise InputError(
                f"rule {rule.name!r} names the area or an area column ({named}) and no column the trees synthesize: "
                "the area model draws those, so give it the rule as a structural zero (bsd.DPMPM(structural_zeros=...) "
                "as area_model=)"
            )


@dataclass
class AreaStages:
    """The fit of a release whose area is synthesized: the area model's fit and the within-area trees; the first
    stage's datasets drawn once per m, and the posterior draw of each (shared by every drawing)."""

    first: Fitted
    trees: SynthesizedAreaCart
    summary: dict[str, Any]
    areas: dict[int, pd.DataFrame] = field(default_factory=dict)
    draws: dict[int, np.ndarray] = field(default_factory=dict)

    def drawing(self, donors: str) -> AreaStages:
        """The same stages, the trees drawing with other ``donors`` (the area model's datasets unchanged)."""
        return replace(self, trees=self.trees.drawing(donors))


def more_area_chains(area: AreaInput, stages: AreaStages, chains: int, workdir: Path | None,
                     progress: bool) -> Fitted | None:  # fmt: skip
    """The run's fit with the area model's chains brought to ``chains`` (its recipe's ``more_chains``), the trees
    unchanged; ``None`` when the area model cannot add chains."""
    first = area.recipe.more_chains(area.prepared, stages.first, chains, area.seed, area_folder(workdir), progress)
    return None if first is None else staged_fit(area, first, stages.trees, stages.summary)


def staged_fit(area: AreaInput, first: Fitted, trees: SynthesizedAreaCart, summary: dict[str, Any]) -> Fitted:
    """The run's fit: decided by the area model's gate (its release gate, report and advice), the trees' figures in
    ``private/diagnostics.json`` beside the area model's (``area_model``), its posterior and private files under
    ``private/area_model.<name>``."""
    posteriors, reports, private_files = stage_parts(first)
    diagnostics = Diagnostics(posteriors, {**summary, "area_model": {"model": area.name, **first.diagnostics.summary}},
                              passed=first.diagnostics.passed)  # fmt: skip
    return Fitted(
        diagnostics, first.report, what=f"the area model ({area.name}) of {area.columns[0]!r}", hint=first.hint,
        state=AreaStages(first, trees, summary),
        private_files=private_files,
        reports=reports, release_gate=first.release_gate, parameter_passed=first.parameter_passed,
        failure=first.failure, advice=first.advice,
    )  # fmt: skip


def area_redraw(area: AreaInput, stages: AreaStages, m: int) -> AreaRedraw:
    """The area model's draw of single records' area and area columns again (what
    :meth:`~bayessdc.models.cart.areas.SynthesizedAreaCart.synthesize_datasets` asks for a record whose synthetic
    area's trees hold no value the rules admit for it).

    ``redraw(k, records, attempt)`` is the area model's posterior predictive of ``records`` (positions in the data)
    under the posterior draw of dataset ``k`` of :func:`area_datasets`, through the model's own contract: its
    ``posterior_predictive`` of that one draw for those records (the DPMPM's coded records restricted to them, its
    latent classes drawn given each record's values as in its datasets; the DP-areal model's of every record, its
    label probabilities of each pattern drawn afresh under the draw, kept for those records) and its
    ``release_frame``. Its stream is the area model's ``"datasets"`` below the dataset and the attempt, one of its
    own: the same seed redraws the same records alike. So each redrawn record's first stage is another draw of the
    distribution its rejected one came from, and the release's records are the two stages' draws restricted to those
    whose other columns the rules admit.

    The alternative, the record's area drawn from the other areas' probabilities for its pattern of given values,
    would need each model's probabilities of the area given a pattern (the DPMPM's latent class weights, the DP-areal
    model's rates): the contract's ``posterior_predictive`` draws the same distribution for both models.
    """
    area_datasets(area, stages, m)  # the posterior draw of every dataset
    state, data, draws = stages.first.state, area.prepared.data, stages.draws[m]
    stacked: list[Any] = []  # the stacked posterior, once a record is drawn again

    def redraw(k: int, records: np.ndarray, attempt: int) -> pd.DataFrame:
        records = np.asarray(records, dtype=np.int64)
        rng = streams.rng(area.seed, Stream.DATASETS, int(k), int(attempt))
        stacked[:] = stacked or [stack_draws(state.idata.posterior)]
        some = data.take(records) if hasattr(data, "take") else data  # the DP-areal draws its patterns together
        values = state.synthesizer.posterior_predictive(stacked[0].isel(sample=[int(draws[k - 1])]), some, rng)
        joint = values.rename(sample="synthetic").assign_coords(synthetic=[1])
        frame = state.synthesizer.release_frame(some, joint)[area.columns]
        return (frame if some is not data else frame.iloc[records]).reset_index(drop=True)

    return redraw


def describe_trees_area(area: AreaInput, first: Fitted) -> dict[str, Any]:
    """The area model in ``release/model.json`` (:func:`~bayessdc.pipeline.areas.describe_area`) with the trees as
    the second stage and the reference of the records copied."""
    return describe_area(
        area, first,
        "the other synthesized columns of every record drawn by the trees of its synthetic area (fitted on that "
        "area's, or its pool's, real records), the first stage's values as kept values",
        reference_of_records_copied="cross-fitted within-area trees (each row drawn by trees that never held its "
        "record) given the release's own stage-1 datasets; the area model's posterior is fitted on every record",
    )  # fmt: skip
