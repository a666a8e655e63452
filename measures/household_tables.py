"""Households counted: tau of the tables of households by size and composition, against a bootstrap of households.

A release of persons in households (:attr:`MeasureInput.households`) is used for what persons alone cannot give:
how many households of each size and composition an area has. Each dataset's households (one row per household:
its kept columns, its number of members and its composition, the multiset of its members' relationships to the
reference person, :attr:`MeasureInput.household_relationship`) are counted in the tables

* households by size,
* households by size and by each column constant within every household of the original (the area),
* households by composition, and by composition and each such column,

and each table's ``tau = 1 - L1/(2n)`` (Rodriguez, Freiman, Reiter & Lauger; :mod:`bayessdc.synthesis.tables`) is
set beside the same tau of bootstrap replicates of the original's *households*, drawn whole with replacement: the
range a table of households varies over by sampling alone. (A bootstrap of persons would break households apart and
understate it.) Sizes of 6 and more are one cell, as in the household measures' subsets.

Weighted form (survey weights, :attr:`MeasureInput.weights`): the weight of a household survey is the household's,
the same for every member (``bsd.CART(households=...)`` refuses any other before fitting,
:func:`bayessdc.recipes.cart.recipe.check_household_weight`), read from a household's first member. Each table is
then of estimated population totals of households, the sum of the weights of the households in each cell (a
synthetic dataset's households with their own weights: the collected ones of the households they stand for when
the weight is kept, synthesized ones when not), ``tau = 1 - L1/(2N)`` with ``N`` the original's weighted total of
households, and a bootstrap replicate resamples the original's households whole, with replacement, each carrying
its weight (:func:`bayessdc.synthesis.tables.tau_bootstrap`). The weight is never a column the households are
counted by.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, register
from .households import household_level_columns

__all__ = ["HouseholdTableTau", "household_frame"]

#: The cells of household size: 1 to 5, and 6 or more.
_LARGEST = 6


def household_frame(persons: pd.DataFrame, household: str, relationship: str | None, columns: list[str],
                    by: str | None = None) -> pd.DataFrame:  # fmt: skip
    """One row per household of ``persons``: its first member's ``columns``, its size (``"household size"``, 6 and
    more as ``"6+"``) and, with ``relationship``, its composition (``"household composition"``: the members'
    relationships, sorted, joined by ``" + "``); with ``by`` (the datasets' column), per dataset.

    Examples
    --------
    >>> persons = pd.DataFrame({"h": [1, 1, 2], "rel": ["head", "child", "head"], "area": ["a", "a", "b"]})
    >>> household_frame(persons, "h", "rel", ["area"])[["area", "household size", "household composition"]]
      area household size household composition
    0    a              2          child + head
    1    b              1                  head
    """
    keys = [household] if by is None else [by, household]
    grouped = persons.groupby(keys, sort=False, observed=True)
    out = grouped[columns].first().reset_index() if columns else grouped.size().reset_index()[keys]
    size = grouped.size().to_numpy()
    out["household size"] = np.where(size >= _LARGEST, f"{_LARGEST}+", size.astype(str))
    if relationship is not None:
        ordered = persons[[*keys, relationship]].assign(_w=persons[relationship].astype(str))
        ordered = ordered.sort_values([*keys, "_w"], kind="stable")
        joined = ordered.groupby(keys, sort=False, observed=True)["_w"].agg(" + ".join)
        out["household composition"] = joined.reindex(pd.MultiIndex.from_frame(out[keys]) if by is not None
                                                      else out[household]).to_numpy()  # fmt: skip
    return out.drop(columns=[household])


@register
class HouseholdTableTau(Measure):
    """tau of the tables of households by size and composition, per dataset, beside a bootstrap of households;
    with survey weights, of the weighted totals of households against a bootstrap of weighted households (see the
    module docstring)."""

    reads = ("original", "households", "household_relationship", "household_known", "bootstrap", "weights")

    name = "household_table_tau"
    kind = "utility"
    better = "higher"
    title = "tau of the tables of households"
    unit = "tau = 1 - L1/(2n), n households"
    description = ("1 - L1/(2n) of the counts of households by size and composition (and by area), synthetic "
                   "against original")  # fmt: skip
    subsets = "a table's name"
    subset_names = None
    references = {"bootstrap": "tau of bootstrap replicates of the original's households, drawn whole (mean and "
                  "2.5-97.5% range)"}  # fmt: skip

    def applies(self, data: MeasureInput) -> bool:
        return data.households is not None and data.original is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.synthesis.tables import TableSpec, tau_distributions

        household, relationship, weights = data.households, data.household_relationship, data.weights
        candidates = [c for c in data.household_known if c not in (household, relationship, weights)]
        areas = household_level_columns(data.original, household, candidates)
        carried = areas if weights is None else [*areas, weights]  # a household's weight: its first member's
        original = household_frame(data.original, household, relationship, carried)
        synthetic = household_frame(data.synthetic, household, relationship, carried, by="synthetic")
        kinds = ["household size", *(["household composition"] if relationship is not None else [])]
        tables = [TableSpec(f"households by {kind.removeprefix('household ')}", (kind,)) for kind in kinds]
        tables += [TableSpec(f"households by {kind.removeprefix('household ')} x {area}", (kind, area))
                   for kind in kinds for area in areas]  # fmt: skip
        replicates = max(data.bootstrap, 1)
        taus = tau_distributions(original, synthetic, tables, n_bootstrap=replicates, seed=data.seed, weights=weights)
        values, references = [], []
        details = []
        for spec in tables:
            rows = taus[taus["table"] == spec.name]
            drawn = rows[rows["source"] == "synthetic"]
            values += [{"subset": spec.name, "dataset": int(d), "value": float(v)}
                       for d, v in zip(drawn["replicate"], drawn["tau"], strict=True)]  # fmt: skip
            boot = rows.loc[rows["source"] == "bootstrap", "tau"].to_numpy(float)
            low, high = float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))
            references.append({"subset": spec.name, "reference": "bootstrap", "value": float(boot.mean()),
                               "lower": low, "upper": high})  # fmt: skip
            details.append({"table": spec.name, "cells": int(original.groupby(list(spec.by)).ngroups),
                            "tau": float(drawn["tau"].mean()), "bootstrap_lower": low, "bootstrap_upper": high})
        result = self.result(values, references)
        result.details = pd.DataFrame(details)
        if weights is not None:
            result.title = f"{result.title} (weighted by {weights})"
            result.unit = f"tau = 1 - L1/(2N) of the households' totals weighted by {weights}"
            result.description = f"{result.description}, both weighted by the household weight {weights!r}"
            result.reference_notes["bootstrap"] = ("tau of bootstrap replicates of the original's households, drawn "
                                                   "whole with their weights (mean and 2.5-97.5% range)")
        return result
