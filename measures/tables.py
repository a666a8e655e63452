"""Utility of count tables: ``tau = 1 - L1 / (2n)`` of a synthetic table against the original one.

* :class:`TableTau` (Rodriguez, Freiman, Reiter & Lauger): for every table the analyst names (subset: the
  table's name), per dataset; reference ``bootstrap``, the mean and 2.5-97.5% range of tau of bootstrap
  replicates of the original: how far the original's own sampling variability moves the table.
* :class:`CountTau` (Hawala, Reiter & Wang's check on totals): tau of all the cells of a table of counts
  (an origin-destination table), of its sensitive cells and of the totals of its margins, per dataset;
  :class:`CountDeviation` the total absolute deviation L1 of the same cells and totals.

Both are 1 when the synthetic table equals the original and 0 when they share no mass. With survey weights
(:attr:`MeasureInput.weights`), :class:`TableTau` compares tables of weighted totals and its bootstrap resamples
weighted records (:mod:`bayessdc.synthesis.tables`); its title and unit then say so. In a release of persons within
households (:attr:`MeasureInput.households`) its bootstrap resamples whole households, whose members are not
independent records.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, register

__all__ = ["CategoryCountError", "CountDeviation", "CountTau", "TableTau", "count_pairs"]


@register
class TableTau(Measure):
    """tau of every named table, per dataset, beside the bootstrap range of the original."""

    reads = ("original", "tables", "bootstrap", "weights", "households")

    name = "table_tau"
    headline = True
    kind = "utility"
    better = "higher"
    title = "tau of the analyst's tables"
    unit = "tau = 1 - L1/(2n)"
    description = "1 - L1/(2n) of each table's synthetic counts against the original's"
    subsets = "a table's name"
    subset_names = None
    references = {"bootstrap": "tau of bootstrap replicates of the original (mean and 2.5-97.5% range)"}

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and bool(data.tables)

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.synthesis.tables import tau_distributions

        taus = tau_distributions(data.original, data.synthetic, data.tables, n_bootstrap=max(data.bootstrap, 1),
                                 seed=data.seed, weights=data.weights, clusters=data.households)  # fmt: skip
        values, references = [], []
        for spec in data.tables:
            rows = taus[taus["table"] == spec.name]
            synthetic = rows[rows["source"] == "synthetic"]
            values += [{"subset": spec.name, "dataset": int(d), "value": float(v)}
                       for d, v in zip(synthetic["replicate"], synthetic["tau"], strict=True)]  # fmt: skip
            if data.bootstrap > 0:
                boot = rows.loc[rows["source"] == "bootstrap", "tau"].to_numpy(float)
                references.append({"subset": spec.name, "reference": "bootstrap", "value": float(boot.mean()),
                                   "lower": float(np.quantile(boot, 0.025)),
                                   "upper": float(np.quantile(boot, 0.975))})  # fmt: skip
        result = self.result(values, references)
        replicates = taus[taus["source"] == "bootstrap"]
        if data.bootstrap > 0 and len(replicates):  # every replicate's tau: the reference's whole distribution
            result.details = pd.DataFrame({"subset": replicates["table"].to_numpy(),
                                           "replicate": replicates["replicate"].to_numpy(int),
                                           "tau": replicates["tau"].to_numpy(float)})  # fmt: skip
        if data.households is not None:
            result.description = (f"{result.description}; the bootstrap resamples whole households "
                                  f"({data.households!r})")  # fmt: skip
        if data.weights is not None:
            result.title = f"{result.title} (weighted by {data.weights})"
            result.unit = f"tau = 1 - L1/(2N) of the totals weighted by {data.weights}"
            result.description = f"{result.description}, both weighted by the survey weight {data.weights!r}"
        return result


def count_pairs(data: MeasureInput) -> Iterator[tuple[str, int, np.ndarray, np.ndarray]]:
    """Per dataset, the original and synthetic counts of every subset of a table of counts: ``all cells``,
    ``sensitive cells`` (the items' rows, when the synthesizer names them: column ``row`` of
    :attr:`MeasureInput.items`) and the totals of each margin; ``(subset, dataset, original, synthetic)``."""
    count = data.count_column
    original = data.original[count].to_numpy(float)
    rows = data.items["row"].to_numpy(int) if data.items is not None and "row" in data.items else None
    margins = [(margin, data.original.groupby(margin, dropna=False)[count].sum()) for margin in data.count_margins]
    for number, frame in data.synthetic.groupby("synthetic", sort=True):
        synthetic = frame[count].to_numpy(float)  # by position: every dataset's rows are the table's, in order
        yield "all cells", int(number), original, synthetic
        if rows is not None:
            yield "sensitive cells", int(number), original[rows], synthetic[rows]
        for margin, totals in margins:
            drawn = frame.groupby(margin, dropna=False)[count].sum().reindex(totals.index, fill_value=0)
            yield f"totals by {'+'.join(margin)}", int(number), totals.to_numpy(float), drawn.to_numpy(float)


@register
class CountTau(Measure):
    """tau of every cell of a table of counts, of its sensitive cells and of its margins' totals, per dataset."""

    reads = ("original", "count_column", "count_margins", "items")

    name = "count_tau"
    headline = "all cells"
    kind = "utility"
    better = "higher"
    title = "tau of the cell counts"
    unit = "tau = 1 - L1/(2n)"
    description = (
        "1 - L1/(2n) of the synthetic cell counts (of every cell, of the sensitive cells, and of the margins' "
        "totals) against the original's"
    )
    subsets = "'all cells', 'sensitive cells' or 'totals by <columns>' of a margin"
    subset_names = None

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and data.count_column is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.synthesis.utility import proportion_of_total_variation

        return self.result({"subset": subset, "dataset": number, "value": proportion_of_total_variation(o, s)}
                           for subset, number, o, s in count_pairs(data))  # fmt: skip


@register
class CountDeviation(CountTau):
    """The total absolute deviation ``L1 = sum_c |synthetic_c - original_c|`` of a table of counts, per dataset
    (the subsets of :class:`CountTau`, which it applies to)."""

    name = "count_deviation"
    headline = False
    better = "lower"
    title = "total absolute deviation of the cell counts"
    unit = "L1 = sum |synthetic - original| (counts)"
    description = (
        "the sum over cells of |synthetic - original| (of every cell, of the sensitive cells, and of the margins' "
        "totals); as a share of the original total it is 2 (1 - tau)"
    )
    bounds = (0.0, float("inf"))

    def compute(self, data: MeasureInput) -> MeasureResult:
        return self.result({"subset": subset, "dataset": number, "value": float(np.abs(s - o).sum())}
                           for subset, number, o, s in count_pairs(data))  # fmt: skip


@register
class CategoryCountError(Measure):
    """The relative error of each category's count of a categorical synthesized column, per dataset."""

    reads = ("original", "categorical", "weights")

    name = "category_count_error"
    kind = "utility"
    better = "lower"
    title = "relative error of the category counts"
    unit = "|synthetic count - original count| / original count"
    description = (
        "for each category of each categorical synthesized column, |synthetic - original| / original of its count "
        "(Rodriguez, Freiman, Reiter & Lauger, Figures 3-4); the details keep the signed errors and the counts"
    )
    subsets = "'<column>: <category>'"
    subset_names = None
    bounds = (0.0, float("inf"))

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and bool(data.categorical) and len(data.synthetic) > 0

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.synthesis.tables import relative_cell_errors

        values, details = [], []
        for column in data.categorical:
            errors = relative_cell_errors(data.original, data.synthetic, column, weights=data.weights)
            errors.insert(0, "subset", [f"{column}: {c}" for c in errors["category"]])
            errors.insert(1, "column", column)
            values += [{"subset": s, "dataset": int(d), "value": abs(float(e))}
                       for s, d, e in zip(errors["subset"], errors["synthetic"], errors["relative_error"], strict=True)]
            details.append(errors)
        result = self.result(values)
        result.details = pd.concat(details, ignore_index=True) if details else None
        if data.weights is not None:
            result.title = f"{result.title} (totals weighted by {data.weights})"
        return result
