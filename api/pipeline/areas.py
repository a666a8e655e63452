"""The first stage of a release whose area is synthesized before its within-area models (issue 51, item 1).

A recipe synthesizing area by area (``strata=``) may draw each record's area first (``area_model=``): another
recipe of the registry, ``bsd.DPMPM`` or ``bsd.DPAreal`` (:func:`bayessdc.recipes.area_recipe`), draws the area and
the categorical ``area_columns`` given the record's kept values (``area_given``), used through the pipeline's
contract (:class:`~bayessdc.pipeline.recipe.Recipe`: its ``prepare``, its ``fit`` with its release gate,
``more_chains`` for the gate's stopping rule, ``describe``), its seed the run's stream ``"area-model"``. Its m
datasets are its posterior-predictive draw (:func:`bayessdc.synthesis.datasets.draw_synthetic` and the model's
``release_frame``) from its seed's stream ``"datasets"``: the m datasets ``bsd.synthesize`` with that recipe and seed
releases. Then the recipe's own within-area models draw the other columns of each record by its synthetic area:
CART's trees (:mod:`bayessdc.recipes.cart.areas`) or the DPMPM's groups
(:mod:`bayessdc.recipes.categorical.areas`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.cart.data import is_numeric
from bayessdc.synthesis import streams
from bayessdc.synthesis.datasets import draw_synthetic
from bayessdc.synthesis.streams import Stream

from ..errors import InputError
from .recipe import Fitted, Prepared, Recipe

__all__ = [
    "AREA_MODELS", "AreaInput", "area_counts", "area_datasets", "area_folder", "area_roles", "check_area_model",
    "check_area_options",
    "describe_area", "fit_area", "prepare_area", "stage_parts",
]  # fmt: skip

_log = logging.getLogger(__name__)

#: The area models: ``area_model=`` name -> the registry's recipe class.
AREA_MODELS = {"dpmpm": "DPMPM", "dp_areal": "DPAreal"}


def check_area_model(area_model: Any) -> Recipe:
    """An area model given as a recipe, checked: a categorical synthesizer of :data:`AREA_MODELS` drawing the area
    over the whole file.

    Raises
    ------
    bayessdc.InputError
        Another object, a recipe with ``strata=`` of its own (the area model draws the area itself, over the whole
        file), or with missing values as a level (a missing area would be released as a level).
    """
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


def check_area_options(strata: str | None, area_model: Any) -> None:
    """Refuse ``area_model=``, ``area_columns=`` or ``area_given=`` without ``strata=``, and the last two without
    ``area_model=`` (the options that need one another), before :func:`area_roles` reads the columns."""
    if strata is None:
        raise InputError("area_model=, area_columns= and area_given= need strata=, the column of areas the area "
                         "model draws")  # fmt: skip
    if area_model is None:
        raise InputError("area_columns= and area_given= need area_model=, the model that synthesizes the area")


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


def prepare_area(recipe: Recipe, frame: pd.DataFrame, columns: list[str], given: list[str],
                 seed: int) -> AreaInput:  # fmt: skip
    """The area model's prepared input: ``recipe``'s ``prepare`` (:func:`bayessdc.recipes.area_recipe`) of the first
    stage's and the given columns (its refusals name the area model); its notices but the columns it does not read.

    Raises
    ------
    bayessdc.InputError
        What the area model refuses (a numeric given column of too many values, too many levels ...).
    """
    own = streams.integer_seed(seed, Stream.AREA_MODEL)
    try:
        prepared = recipe.prepare(frame[[*given, *columns]], columns, given, own)
    except InputError as err:
        raise InputError(f"area_model={recipe.name!r} (the area {columns[0]!r} given {', '.join(given)}): {err}; "
                         "area_given= names the kept columns it is given") from None  # fmt: skip
    prepared.notices = [f"area model: {notice}" for notice in prepared.notices]
    return AreaInput(recipe, prepared, list(columns), list(given), own)


def fit_area(area: AreaInput, m: int, workdir: Path | None, progress: bool, label: str) -> Fitted:
    """The area model's posterior and its release gate (its recipe's ``fit``, from its seed; finished parts under
    ``private/area_model/`` when the run has a folder); ``label`` names the run's synthesizer in the progress
    line."""
    others = f" with {', '.join(area.columns[1:])}" if area.columns[1:] else ""
    if progress:
        _log.info("%s", f"the area {area.columns[0]!r}{others} by the {area.name} given {', '.join(area.given)} ...",
                  extra={"synthesizer": label})
    return area.recipe.fit(area.prepared, m, area.seed, area_folder(workdir), progress)


def area_datasets(area: AreaInput, stages: Any, m: int) -> pd.DataFrame:
    """The area model's m datasets of the area and the area columns (``synthetic`` and :attr:`AreaInput.columns`,
    the records in the data's order): its posterior-predictive draw from its seed's stream ``"datasets"``, drawn once
    per m.

    ``stages`` is the run's fit: its ``first`` the area model's fit, its ``areas`` the datasets drawn (by m) and its
    ``draws`` the stacked posterior draw of each (by m), both filled here."""
    if m not in stages.areas:
        state = stages.first.state  # the area model's posterior and model (a PosteriorFit)
        data = area.prepared.data
        joint = draw_synthetic(state.synthesizer, state.idata, data, m, streams.rng(area.seed, Stream.DATASETS))
        stages.areas[m] = state.synthesizer.release_frame(data, joint)[["synthetic", *area.columns]]
        stages.draws[m] = joint["posterior_draw"].to_numpy()
    return stages.areas[m]


def describe_area(area: AreaInput, first: Fitted, second: str, **more: Any) -> dict[str, Any]:
    """The area model in ``release/model.json``: what it synthesizes given what, how the stages join (``second``: the
    within-area models' stage in words; no count of any area), ``more`` of the run's, and its recipe's description
    (model, priors, sampler, release gate; no estimate)."""
    first_columns = f"the area {area.columns[0]!r}" + (f" and {', '.join(map(repr, area.columns[1:]))}"
                                                        if area.columns[1:] else "")
    return {
        "model": area.name,
        "synthesizes": list(area.columns),
        "given": list(area.given),
        "stages": [
            f"1. {first_columns} of every record drawn by the {area.name} given its kept {', '.join(area.given)}, one "
            "posterior draw per dataset",
            f"2. {second}; dataset l of stage 2 given dataset l of stage 1",
        ],
        "records_per_area": "drawn by the area model in every dataset; no area's count is stated",
        **more,
        **area.recipe.describe(area.prepared, first),
    }  # fmt: skip


def stage_parts(first: Fitted) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The area model's posteriors, parameter-gate reports and private files as the run's: its fit ``all`` as
    ``area_model`` (another fit ``f`` as ``area_model/f``), its files as ``area_model.<name>``
    (``private/area_model.posterior.nc``, which :func:`bayessdc.load` lists as the fit ``area_model``)."""

    def named(k: str) -> str:
        return "area_model" if k == "all" else f"area_model/{k}"

    return (
        {named(k): v for k, v in first.diagnostics.posteriors.items()},
        {named(k): v for k, v in first.reports.items()},
        {f"area_model.{name}": write for name, write in first.private_files.items()},
    )


def area_folder(workdir: Path | None) -> Path | None:
    """Where the area model's finished parts are kept (``private/area_model``), when the run has a folder."""
    return None if workdir is None else Path(workdir) / "area_model"


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
