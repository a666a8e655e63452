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

All three are computed on integer keys with the identification figures
(:func:`bayessdc.measures.identification.per_dataset_figures`); the data-frame functions of
:mod:`bayessdc.synthesis.categorical` are the tests' oracle. Once rows were removed before release (the
replicated uniques; :attr:`~bayessdc.measures.MeasureInput.drawn` holds the datasets as drawn), the figures are
of the rows released, through those data-frame functions (:func:`released_figures`): a removed record is missing
from its cells, which the deviations and the total variation count, and the pMSE's propensity model sees the
smaller synthetic share. A release with numeric columns (matched on bands) has none of these figures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, register
from .identification import IDENTIFICATION_READS, per_dataset_figures

__all__ = ["PMSERatio", "TableDeviation", "WithinPatternTV", "frame_figures", "released_figures", "within_patterns"]

_WAYS = {1: "one-way", 2: "two-way", 3: "three-way"}


def frame_figures(data: MeasureInput) -> dict[str, dict]:
    """The table deviations (``"deviations"``, per order: each dataset's and each table's) and the pMSE (``"pmse"``:
    per dataset, and its model) of the datasets as released (``data.synthetic``), through the data-frame functions of
    :mod:`bayessdc.synthesis.categorical`, unweighted; computed once per input, for the figures of the rows released
    (:func:`released_figures`) and the details of :class:`TableDeviation` and :class:`PMSERatio` alike."""
    from bayessdc.synthesis.categorical import pmse, table_deviations

    cache = data.cache
    if "frame_figures" not in cache:
        original, synthetic = data.original, data.synthetic
        cache["frame_figures"] = {
            "deviations": table_deviations(original, synthetic, data.synthesized, data.kept, ways=tuple(_WAYS)),
            "pmse": pmse(original, synthetic, data.kept + data.synthesized, data.synthesized),
        }
    return cache["frame_figures"]


def released_figures(data: MeasureInput) -> pd.DataFrame:
    """The figures of :func:`~bayessdc.measures.identification.per_dataset_figures` that describe utility, of the
    datasets as released (``data.synthetic``), computed once per input through the data-frame functions of
    :mod:`bayessdc.synthesis.categorical`, which need no row ``i`` to be record ``i``: one row per dataset, columns
    ``synthetic``, ``table_deviation[one-way]`` ..., ``within_pattern_tv`` (half the sum of ``|synthetic -
    original|`` counts of the full table over the original's records) and ``pmse_ratio`` (unweighted)."""
    from bayessdc.synthesis.categorical import deviation_tables

    cache = data.cache
    if "released_figures" not in cache:
        original, synthetic = data.original, data.synthetic
        columns = data.kept + data.synthesized
        table = pd.DataFrame({"synthetic": np.sort(synthetic["synthetic"].unique())})
        deviations = frame_figures(data)["deviations"]
        for way in _WAYS.values():
            if way in deviations:
                table[f"table_deviation[{way}]"] = deviations[way]["per_dataset"]
        full = deviation_tables(original, synthetic, columns)
        changed = full["deviation"].abs().groupby(full["synthetic"]).sum()
        table["within_pattern_tv"] = changed.reindex(table["synthetic"]).to_numpy(dtype=float) / (2 * len(original))
        table["pmse_ratio"] = frame_figures(data)["pmse"]["per_dataset"]["ratio"]
        cache["released_figures"] = table
    return cache["released_figures"]


class _Categorical(Measure):

    reads = (*IDENTIFICATION_READS, "removed")
    kind = "utility"
    better = "lower"
    from_release_figures = True

    def applies(self, data: MeasureInput) -> bool:
        # categorical columns only: a numeric column enters the identification figures on bands, and its tables
        # would have a cell per value; a dataset emptied by the removal of replicated uniques has no table
        emptied = data.removed is not None and not (data.removed["kept"] > 0).all()
        return bool(data.partially_synthetic and data.original is not None and data.synthesized and data.kept
                    and not data.bands and not emptied)  # fmt: skip

    @staticmethod
    def figures(data: MeasureInput) -> pd.DataFrame:
        """The datasets' figures: on integer keys of the datasets as drawn, or of the rows released once some were
        removed (:func:`released_figures`)."""
        return per_dataset_figures(data) if data.drawn is None else released_figures(data)


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
        table = self.figures(data)
        values = []
        for column in [c for c in table.columns if c.startswith("table_deviation[")]:
            subset = column[len("table_deviation[") : -1]
            values += [
                {"subset": subset, "dataset": int(d), "value": float(v)}
                for d, v in zip(table["synthetic"], table[column], strict=True)
            ]
        result = self.result(values)
        if data.details and data.weights is None:  # each table's deviation, mean over the datasets (unweighted)
            orders = frame_figures(data)["deviations"]
            result.details = pd.DataFrame([{"subset": order, "table": name, "deviation": float(v)}
                                           for order, figures in orders.items()
                                           for name, v in figures["tables"].items()])  # fmt: skip
        return result


@register
class PMSERatio(_Categorical):
    """pMSE over its null expectation, per dataset (near 1: the datasets cannot be told apart)."""

    name = "pmse_ratio"
    headline = True
    title = "pMSE ratio"
    unit = "pMSE / its null expectation"
    description = "propensity-score mean squared error over its expectation under the original's distribution"
    references = {"null": "1: the expected ratio were the synthetic data drawn from the original's distribution"}

    def applies(self, data: MeasureInput) -> bool:
        # the rows released have no weighted form here (the survey-weighted pMSE is on integer keys, row i record i)
        return super().applies(data) and (data.drawn is None or data.weights is None)

    def compute(self, data: MeasureInput) -> MeasureResult:
        table = self.figures(data)
        values = [
            {"subset": "all", "dataset": int(d), "value": float(v)}
            for d, v in zip(table["synthetic"], table["pmse_ratio"], strict=True)
        ]
        result = self.result(values, [{"subset": "all", "reference": "null", "value": 1.0}])
        if data.details and data.weights is None:  # per dataset: the pMSE, its null expectation, the model's size
            fit = frame_figures(data)["pmse"]
            result.details = pd.DataFrame({"dataset": table["synthetic"].to_numpy(int), **fit["per_dataset"]})
            result.description = f"{result.description} (the propensity model: {fit['model']})"
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
        table = self.figures(data)
        values = [
            {"subset": "all", "dataset": int(d), "value": float(v)}
            for d, v in zip(table["synthetic"], table["within_pattern_tv"], strict=True)
        ]
        result = self.result(values)
        if data.details:
            result.details = within_patterns(data)[1]  # per pattern: its records and total variation, m datasets pooled
        return result


def within_patterns(data: MeasureInput) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`bayessdc.synthesis.categorical.within_pattern_distributions` of the datasets released (computed
    once per input): per cell, and per pattern of kept values."""
    if "within_patterns" not in data.cache:
        from bayessdc.synthesis.categorical import within_pattern_distributions

        data.cache["within_patterns"] = within_pattern_distributions(data.original, data.synthetic, data.synthesized,
                                                                     data.kept)  # fmt: skip
    return data.cache["within_patterns"]
