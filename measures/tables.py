"""Utility of count tables: ``tau = 1 - L1 / (2n)`` of a synthetic table against the original one.

* :class:`TableTau` (Rodriguez, Freiman, Reiter & Lauger): for every table the analyst names (subset: the
  table's name), per dataset; reference ``bootstrap``, the mean and 2.5-97.5% range of tau of bootstrap
  replicates of the original: how far the original's own sampling variability moves the table.
* :class:`CountTau` (Hawala, Reiter & Wang's check on totals): tau of all the cells of a table of counts
  (an origin-destination table) and of the totals of its margins, per dataset.

Both are 1 when the synthetic table equals the original and 0 when they share no mass. With survey weights
(:attr:`MeasureInput.weights`), :class:`TableTau` compares tables of weighted totals and its bootstrap resamples
weighted records (:mod:`bayessdc.synthesis.tables`); its title and unit then say so.
"""

from __future__ import annotations

import numpy as np

from .base import Measure, MeasureInput, MeasureResult, register

__all__ = ["CountTau", "TableTau"]


@register
class TableTau(Measure):
    """tau of every named table, per dataset, beside the bootstrap range of the original."""

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
                                 seed=data.seed, weights=data.weights)  # fmt: skip
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
        if data.weights is not None:
            result.title = f"{result.title} (weighted by {data.weights})"
            result.unit = f"tau = 1 - L1/(2N) of the totals weighted by {data.weights}"
            result.description = f"{result.description}, both weighted by the survey weight {data.weights!r}"
        return result


@register
class CountTau(Measure):
    """tau of every cell of a table of counts, per dataset."""

    name = "count_tau"
    headline = "all cells"
    kind = "utility"
    better = "higher"
    title = "tau of the cell counts"
    unit = "tau = 1 - L1/(2n)"
    description = "1 - L1/(2n) of the synthetic cell counts (and of the margins' totals) against the original's"
    subsets = "'all cells' or 'totals by <columns>' of a margin"
    subset_names = None

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and data.count_column is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.synthesis.utility import proportion_of_total_variation

        count = data.count_column
        original = data.original[count].to_numpy(float)
        values = []
        for number, frame in data.synthetic.groupby("synthetic", sort=True):
            values.append({"subset": "all cells", "dataset": int(number),
                           "value": proportion_of_total_variation(original, frame[count].to_numpy(float))})
            for margin in data.count_margins:
                totals = data.original.groupby(margin, dropna=False)[count].sum()
                synthetic = frame.groupby(margin, dropna=False)[count].sum().reindex(totals.index, fill_value=0)
                values.append({"subset": f"totals by {'+'.join(margin)}", "dataset": int(number),
                               "value": proportion_of_total_variation(totals.to_numpy(float),
                                                                      synthetic.to_numpy(float))})
        return self.result(values)
