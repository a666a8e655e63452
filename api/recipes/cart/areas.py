"""The area synthesized before the within-area trees (issue 51, item 1): ``bsd.CART(strata=..., area_model=...)``.

Two stages, each from its own seed:

1. **The area model** draws each record's area label, and with it the categorical ``area_columns``, given the
   record's kept values (``area_given``; default every kept column but the survey weight). It is a categorical
   synthesizer of the registry, ``bsd.DPMPM`` or ``bsd.DPAreal`` (``area_model="dpmpm"`` / ``"dp_areal"`` with its
   defaults, or a recipe with settings of its own), used through the pipeline's contract
   (:class:`~bayessdc.pipeline.recipe.Recipe`: its ``prepare``, its ``fit`` with its release gate, ``more_chains``
   for the gate's stopping rule, ``describe``), its seed the run's stream ``"area-model"``. Its m datasets are its
   posterior-predictive draw (:func:`bayessdc.synthesis.datasets.draw_synthetic` and the model's ``release_frame``),
   from its seed's stream ``"datasets"``: the m datasets ``bsd.synthesize`` with that recipe and seed releases. A
   posterior that fails its release gate refuses the release, as the categorical recipes do.
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

import importlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.cart.areas import AreaRedraw, SynthesizedAreaCart
from bayessdc.models.cart.data import is_numeric
from bayessdc.models.cart.rules import Rule
from bayessdc.synthesis import streams
from bayessdc.synthesis.datasets import draw_synthetic, stack_draws
from bayessdc.synthesis.streams import Stream

from ...errors import InputError
from ...pipeline.recipe import Fitted, Prepared, Recipe
from ...release import Diagnostics
from .. import RECIPES

__all__ = [
    "AREA_MODELS", "AreaInput", "AreaStages", "area_counts", "area_datasets", "area_recipe", "area_redraw",
    "area_roles", "describe_area", "fit_area", "more_area_chains", "prepare_area", "staged_fit",
]  # fmt: skip

_log = logging.getLogger(__name__)

#: The area models: ``area_model=`` name -> the registry's recipe class.
AREA_MODELS = {"dpmpm": "DPMPM", "dp_areal": "DPAreal"}


def area_recipe(area_model: str | Recipe) -> Recipe:
    """The area model's recipe: ``"dpmpm"`` or ``"dp_areal"`` (the registry's ``bsd.DPMPM()``, ``bsd.DPAreal()``), or
    such a recipe as given.

    Examples
    --------
    >>> area_recipe("dpmpm").name, area_recipe("dp_areal").gate.datasets_per_chain
    ('dpmpm', 200)

    Raises
    ------
    bayessdc.InputError
        Another name or object, a recipe with ``strata=`` of its own (the area model draws the area itself, over the
        whole file), or with missing values as a level (a missing area would be released as a level).
    """
    if isinstance(area_model, str):
        if area_model not in AREA_MODELS:
            raise InputError(f"area_model= must be one of {', '.join(AREA_MODELS)}, or a bsd.DPMPM or bsd.DPAreal "
                             f"recipe; got {area_model!r}")  # fmt: skip
        name = AREA_MODELS[area_model]
        return getattr(importlib.import_module(RECIPES[name]), name)()
    if not isinstance(area_model, Recipe) or area_model.name not in AREA_MODELS:
        raise InputError(f"area_model= must be one of {', '.join(AREA_MODELS)}, or a bsd.DPMPM or bsd.DPAreal recipe; "
                         f"got {type(area_model).__name__}")  # fmt: skip
    if getattr(area_model, "strata", None) is not None:
        raise InputError(f"area_model= has strata={area_model.strata!r} of its own: the area model draws the area "
                         "itself, over the whole file")  # fmt: skip
    if getattr(area_model, "missing", "refuse") != "refuse":
        raise InputError("area_model= with missing values as a level is not built: the area and the area columns "
                         "must hold no missing value")  # fmt: skip
    return area_model


def area_roles(
    frame: pd.DataFrame, strata: str, area_columns: Sequence[str], area_given: Sequence[str] | None,
    synthesize: list[str], keep: list[str], categorical: Sequence[str], pool_by: str | None = None,
    weights: str | None = None, area_model: str = "dpmpm",
) -> tuple[list[str], list[str]]:
    """The first stage's columns (the area, then the area columns) and the kept columns it draws them given, checked
    before anything is fitted (each refusal names the column).

    Parameters
    ----------
    frame
        The data.
    strata
        The column of areas.
    area_columns
        Categorical columns synthesized with the area.
    area_given
        The kept columns the area model draws given (default: every kept column but the area and ``weights``).
    synthesize, keep
        The columns the trees synthesize and those kept (the area among them or not).
    categorical
        Numeric columns the trees treat as categorical.
    pool_by
        The parent areas the small areas are pooled within.
    weights
        The survey weight column.
    area_model
        The area model's name (the DP-areal model draws one label: no area column).

    Raises
    ------
    bayessdc.InputError
        An area column that is not a column of the data, named twice, the area or ``pool_by``, kept or synthesized,
        or not categorical; area columns with the DP-areal model; ``pool_by`` kept (a synthetic area could leave its
        record's real parent area); a column given that is not kept; no column given.
    """
    columns = [str(c) for c in area_columns]
    for column in columns:
        if column not in frame.columns:
            raise InputError(f"area_columns: {column!r} is not a column of the data")
        if columns.count(column) > 1:
            raise InputError(f"area_columns: {column!r} is named twice")
        if column in (strata, pool_by):
            raise InputError(f"area_columns: {column!r} is the column of areas or of their parents (strata=, pool_by=)")
        if column in keep:
            raise InputError(f"area_columns: {column!r} is also kept: an area column is synthesized with the area, a "
                             "kept one released as it is; name it in one of the two")  # fmt: skip
        if column in synthesize:
            raise InputError(f"area_columns: {column!r} is also among the columns the trees synthesize; name it in "
                             "one of the two")  # fmt: skip
        if is_numeric(frame[column], categorical):
            raise InputError(f"area_columns: {column!r} is numeric: the area model synthesizes categories; band it, or "
                             "name it in categorical= when its numbers are codes")  # fmt: skip
    if columns and area_model == "dp_areal":
        raise InputError(f"area_columns= ({', '.join(columns)}) with the DP-areal model, which draws one label (the "
                         "area): use area_model='dpmpm' to synthesize columns with the area")  # fmt: skip
    if pool_by is not None and pool_by in keep:
        raise InputError(f"pool_by={pool_by!r} is kept: a synthesized area could fall outside its record's real "
                         f"{pool_by!r}; leave it out of the kept columns")  # fmt: skip
    kept = [c for c in keep if c != strata]
    if area_given is None:
        given = [c for c in kept if c != weights]
    else:
        given = [str(c) for c in area_given]
        wrong = [c for c in given if c not in kept]
        if wrong:
            raise InputError(f"area_given: {', '.join(map(repr, wrong))} is not a kept column (the area model draws "
                             f"the area given kept columns: {', '.join(kept) or 'none'})")  # fmt: skip
    if not given:
        raise InputError("area_model= draws the area given kept columns: keep= at least one column besides the area "
                         "(and the survey weight), or name them in area_given=")  # fmt: skip
    return [strata, *columns], given


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
class AreaInput:
    """The first stage's validated input.

    Attributes
    ----------
    recipe
        The area model's recipe.
    prepared
        Its prepared input (the area and area columns synthesized, ``given`` kept).
    columns
        The area, then the area columns.
    given
        The kept columns the area is drawn given.
    seed
        The area model's seed (the run's stream ``"area-model"``).
    """

    recipe: Recipe
    prepared: Prepared
    columns: list[str]
    given: list[str]
    seed: int

    @property
    def name(self) -> str:
        """The area model's name (``"dpmpm"``, ``"dp_areal"``)."""
        return self.recipe.name


def prepare_area(area_model: str | Recipe, frame: pd.DataFrame, columns: list[str], given: list[str],
                 seed: int) -> AreaInput:  # fmt: skip
    """The area model's prepared input: its recipe's ``prepare`` of the first stage's and the given columns (its
    refusals name the area model); its notices but the columns it does not read.

    Raises
    ------
    bayessdc.InputError
        What the area model refuses (a numeric given column of too many values, too many levels ...).
    """
    recipe = area_recipe(area_model)
    own = streams.integer_seed(seed, Stream.AREA_MODEL)
    try:
        prepared = recipe.prepare(frame[[*given, *columns]], columns, given, own)
    except InputError as err:
        raise InputError(f"area_model={recipe.name!r} (the area {columns[0]!r} given {', '.join(given)}): {err}; "
                         "area_given= names the kept columns it is given") from None  # fmt: skip
    prepared.notices = [f"area model: {notice}" for notice in prepared.notices]
    return AreaInput(recipe, prepared, list(columns), list(given), own)


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


def _folder(workdir: Path | None) -> Path | None:
    return None if workdir is None else Path(workdir) / "area_model"


def _say(progress: bool, message: str) -> None:
    if progress:
        _log.info("%s", message, extra={"synthesizer": "cart"})


def fit_area(area: AreaInput, m: int, workdir: Path | None, progress: bool) -> Fitted:
    """The area model's posterior and its release gate (its recipe's ``fit``, from its seed; finished parts under
    ``private/area_model/`` when the run has a folder)."""
    others = f" with {', '.join(area.columns[1:])}" if area.columns[1:] else ""
    _say(progress, f"the area {area.columns[0]!r}{others} by the {area.name} given {', '.join(area.given)} ...")
    return area.recipe.fit(area.prepared, m, area.seed, _folder(workdir), progress)


def more_area_chains(area: AreaInput, stages: AreaStages, chains: int, workdir: Path | None,
                     progress: bool) -> Fitted | None:  # fmt: skip
    """The run's fit with the area model's chains brought to ``chains`` (its recipe's ``more_chains``), the trees
    unchanged; ``None`` when the area model cannot add chains."""
    first = area.recipe.more_chains(area.prepared, stages.first, chains, area.seed, _folder(workdir), progress)
    return None if first is None else staged_fit(area, first, stages.trees, stages.summary)


def staged_fit(area: AreaInput, first: Fitted, trees: SynthesizedAreaCart, summary: dict[str, Any]) -> Fitted:
    """The run's fit: decided by the area model's gate (its release gate, report and advice), the trees' figures in
    ``private/diagnostics.json`` beside the area model's (``area_model``), its posterior and private files under
    ``private/area_model.<name>``."""
    posteriors = {f"area_model{'' if k == 'all' else '/' + k}": v for k, v in first.diagnostics.posteriors.items()}
    reports = {f"area_model{'' if k == 'all' else '/' + k}": v for k, v in first.reports.items()}
    diagnostics = Diagnostics(posteriors, {**summary, "area_model": {"model": area.name, **first.diagnostics.summary}},
                              passed=first.diagnostics.passed)  # fmt: skip
    return Fitted(
        diagnostics, first.report, what=f"the area model ({area.name}) of {area.columns[0]!r}", hint=first.hint,
        state=AreaStages(first, trees, summary),
        private_files={f"area_model.{name}": write for name, write in first.private_files.items()},
        reports=reports, release_gate=first.release_gate, parameter_passed=first.parameter_passed,
        failure=first.failure, advice=first.advice,
    )  # fmt: skip


def area_datasets(area: AreaInput, stages: AreaStages, m: int) -> pd.DataFrame:
    """The area model's m datasets of the area and the area columns (``synthetic`` and :attr:`AreaInput.columns`,
    the records in the data's order): its posterior-predictive draw from its seed's stream ``"datasets"``, drawn once
    per m (with an :class:`AreaStages`, the stacked posterior draw of each dataset kept in ``draws``)."""
    if m not in stages.areas:
        state = stages.first.state  # the area model's posterior and model (a PosteriorFit)
        data = area.prepared.data
        joint = draw_synthetic(state.synthesizer, state.idata, data, m, streams.rng(area.seed, Stream.DATASETS))
        stages.areas[m] = state.synthesizer.release_frame(data, joint)[["synthetic", *area.columns]]
        if isinstance(stages, AreaStages):
            stages.draws[m] = joint["posterior_draw"].to_numpy()
    return stages.areas[m]


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


def describe_area(area: AreaInput, first: Fitted) -> dict[str, Any]:
    """The area model in ``release/model.json``: its recipe's description (model, priors, sampler, release gate; no
    estimate), what it synthesizes given what, and how the stages join (no count of any area)."""
    return {
        "model": area.name,
        "synthesizes": list(area.columns),
        "given": list(area.given),
        "stages": [
            f"1. the area {area.columns[0]!r}" + (f" and {', '.join(map(repr, area.columns[1:]))}" if area.columns[1:]
                                                  else "")
            + f" of every record drawn by the {area.name} given its kept {', '.join(area.given)}, one posterior draw "
            "per dataset",
            "2. the other synthesized columns of every record drawn by the trees of its synthetic area (fitted on that "
            "area's, or its pool's, real records), the first stage's values as kept values; dataset l of stage 2 "
            "given dataset l of stage 1",
        ],
        "records_per_area": "drawn by the area model in every dataset; no area's count is stated",
        "reference_of_records_copied": "cross-fitted within-area trees (each row drawn by trees that never held its "
        "record) given the release's own stage-1 datasets; the area model's posterior is fitted on every record",
        **area.recipe.describe(area.prepared, first),
    }  # fmt: skip


def area_counts(original: pd.DataFrame, synthetic: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per area and dataset: the area's real records and its records drawn in the dataset (private).

    Examples
    --------
    >>> original = pd.DataFrame({"area": ["a", "a", "b"]})
    >>> synthetic = pd.DataFrame({"synthetic": [1, 1, 1, 2, 2, 2], "area": ["a", "b", "b", "a", "a", "a"]})
    >>> area_counts(original, synthetic, "area")
      area  synthetic  records  drawn
    0    a          1        2      1
    1    a          2        2      3
    2    b          1        1      2
    3    b          2        1      0
    """
    real = original[column].astype(str).value_counts()
    drawn = pd.crosstab(synthetic[column].astype(str).to_numpy(), synthetic["synthetic"].to_numpy())
    drawn = drawn.reindex(index=real.index, fill_value=0).sort_index()
    long = drawn.rename_axis(index="area", columns="synthetic").stack().rename("drawn").reset_index()
    long.insert(2, "records", long["area"].map(real).to_numpy())
    return long.astype({"synthetic": np.int64, "records": np.int64, "drawn": np.int64})
