"""Utility of a partially synthetic categorical release (Hu & Savitsky, Section 3; Snoke et al. 2018).

* :class:`TableDeviation`: per dataset, the sum over the cells of every table of ``w`` columns involving a
  synthesized column of ``|synthetic - original|`` counts, summed over the tables of that order (subsets
  ``one-way``, ``two-way``, ``three-way``; the paper's Table 2). Zero is a perfect copy of the tables.
* :class:`WithinPatternTV`: per dataset, the total variation distance between the synthetic and original
  counts of the full table (kept and synthesized columns), which is the pattern-size weighted mean over the
  patterns of kept values of the distance between their synthesized values' distributions: the share of
  records whose synthesized values would have to change to restore every pattern's distribution.
* :class:`PMSERatio`: per dataset, the propensity-score mean squared error of a logistic regression telling
  the synthetic records from the original ones, over its expectation were they drawn from the same
  distribution (reference ``null`` = 1).

Both are computed on integer keys with the identification figures
(:func:`bayessdc.measures.identification.per_dataset_figures`); the data-frame functions of
:mod:`bayessdc.synthesis.categorical` are the tests' oracle.
"""

from __future__ import annotations

from .base import Measure, MeasureInput, MeasureResult, register
from .identification import per_dataset_figures

__all__ = ["PMSERatio", "TableDeviation", "WithinPatternTV"]


class _Categorical(Measure):
    kind = "utility"
    better = "lower"
    from_release_figures = True

    def applies(self, data: MeasureInput) -> bool:
        # computed on integer keys of the datasets as drawn (row i record i): once rows were removed before release
        # (data.drawn holds the datasets as drawn) they would describe datasets that were not released, and the
        # synthesizer's own utility, recomputed on what was released, stands instead
        return bool(data.partially_synthetic and data.original is not None and data.synthesized and data.kept
                    and data.drawn is None)  # fmt: skip


@register
class TableDeviation(_Categorical):
    """Sum of absolute cell deviations of the tables involving a synthesized column, per order."""

    name = "table_deviation"
    title = "table deviations"
    unit = "records"
    description = "sum over the tables of w columns involving a synthesized one of |synthetic - original| counts"
    subsets = "'one-way', 'two-way' or 'three-way'"
    subset_names = ("one-way", "two-way", "three-way")

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = per_dataset_figures(data)
        values = []
        for column in [c for c in table.columns if c.startswith("table_deviation[")]:
            subset = column[len("table_deviation[") : -1]
            values += [
                {"subset": subset, "dataset": int(d), "value": float(v)}
                for d, v in zip(table["synthetic"], table[column], strict=True)
            ]
        return self.result(values)


@register
class PMSERatio(_Categorical):
    """pMSE over its null expectation, per dataset (near 1: the datasets cannot be told apart)."""

    name = "pmse_ratio"
    headline = True
    title = "pMSE ratio"
    unit = "pMSE / its null expectation"
    description = "propensity-score mean squared error over its expectation under the original's distribution"
    references = {"null": "1: the expected ratio were the synthetic data drawn from the original's distribution"}

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = per_dataset_figures(data)
        values = [
            {"subset": "all", "dataset": int(d), "value": float(v)}
            for d, v in zip(table["synthetic"], table["pmse_ratio"], strict=True)
        ]
        result = self.result(values, [{"subset": "all", "reference": "null", "value": 1.0}])
        if data.weights is not None:
            result.title = f"{result.title} (weighted by {data.weights})"
            result.description = (f"{result.description}; records weighted by {data.weights!r}, the null expectation "
                                  "times Kish's design effect")  # fmt: skip
        return result


@register
class WithinPatternTV(_Categorical):
    """Total variation between the synthetic and original distributions within the patterns of kept values."""

    name = "within_pattern_tv"
    title = "within-pattern total variation"
    unit = "share of records"
    description = (
        "pattern-weighted total variation between each kept-value pattern's synthetic and original distribution "
        "of the synthesized values: the share of records whose values would have to change to restore them"
    )

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = per_dataset_figures(data)
        values = [
            {"subset": "all", "dataset": int(d), "value": float(v)}
            for d, v in zip(table["synthetic"], table["within_pattern_tv"], strict=True)
        ]
        return self.result(values)
