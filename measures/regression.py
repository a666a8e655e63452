"""Analysis-specific utility: the overlap of confidence intervals of the analyst's regression (Karr et al. 2006).

The analyst's OLS (with survey weights, weighted least squares with linearization variances) is fitted to the
original and to each synthetic dataset, the m synthetic estimates are
combined by the rules of the kind of release the regression names (:attr:`RegressionInput.kind`: Reiter's 2003
rules for partially synthetic data, Raghunathan, Reiter & Rubin's 2003 for fully synthetic data,
:mod:`bayessdc.synthesis.combining`), and each coefficient's interval overlap (the
average share of each interval covered by the other) is the figure: one per coefficient (the subset), of the
m datasets jointly (dataset 0). Reference ``unsmoothed``: the same overlap from a reference release (the
spatial synthesizer's model without differential smoothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, register

__all__ = ["IntervalOverlap", "RegressionInput", "judged_coefficients"]

#: A coefficient whose interval on the original is wider than this (on the log-odds scale: a standard error above
#: 10) is not identified: a level seen with one response value only (separation) has no finite estimate.
UNIDENTIFIED_WIDTH = 2 * 1.96 * 10


def judged_coefficients(table: pd.DataFrame, thresholds: int) -> pd.DataFrame:
    """An ordered logit's coefficient table with the columns ``identified`` (its interval on the original is
    finite and narrower than :data:`UNIDENTIFIED_WIDTH`) and ``judged`` (a slope, identified, with a finite
    overlap: the coefficients the measure reports); the last ``thresholds`` rows are the cut points."""
    table = table.copy()
    width = (table["original_upper"] - table["original_lower"]).to_numpy(dtype=float)
    slopes = np.arange(len(table)) < len(table) - thresholds
    table["identified"] = np.isfinite(width) & (width < UNIDENTIFIED_WIDTH)
    table["judged"] = slopes & table["identified"].to_numpy() & np.isfinite(table["ci_overlap"].to_numpy(dtype=float))
    return table


@dataclass
class RegressionInput:
    """The analyst's regression and the frames it is fitted to (on the modelling scale).

    Attributes
    ----------
    original
        The confidential records.
    synthetic
        The m synthetic datasets stacked, a column ``synthetic``.
    response, predictors
        The analyst's regression: an OLS with an intercept (``model="ols"``) or a cumulative logit on one-hot
        predictors (``model="ordered_logit"``, :func:`bayessdc.synthesis.categorical.ordered_logit_combined`).
    reference
        A reference release's datasets, stacked likewise (``None``: no reference).
    model
        ``"ols"`` or ``"ordered_logit"``.
    kind
        The combining rules: ``"partial"`` when the release keeps some collected values (Reiter 2003),
        ``"full"`` when every value is synthesized (Raghunathan, Reiter & Rubin 2003);
        :func:`bayessdc.synthesis.combining.kind_of_release` gives it from the kept columns. Set by whoever
        builds the input (the pipeline knows its release); ``reference`` is combined by the same rules.
    coefficients
        The fit when it was made already: one row per coefficient, columns ``original``, ``original_lower``,
        ``original_upper``, ``estimate``, ``ci_lower``, ``ci_upper`` and ``ci_overlap`` (and ``judged``: the rows
        the measure reports; all of them without it).
    weights
        The survey weight column (of the original and of every dataset): the OLS becomes weighted least squares
        with linearization variances (:func:`bayessdc.synthesis.survey.weighted_regression`); the measure takes
        the release's :attr:`MeasureInput.weights` when this is ``None``.
    replicates
        The replicate weights that go with ``weights`` (:class:`bayessdc.synthesis.replicates.ReplicateDesign`):
        the variances are their replicate variances; the release's :attr:`MeasureInput.replicates` by default.
    """

    original: pd.DataFrame
    synthetic: pd.DataFrame
    response: str
    predictors: list[str]
    reference: pd.DataFrame | None = None
    model: str = "ols"
    coefficients: pd.DataFrame | None = None
    kind: str = "partial"
    weights: str | None = None
    replicates: Any = None

    def fit(self, synthetic: pd.DataFrame | None = None) -> pd.DataFrame:
        """The coefficient table of the regression on the original and combined over ``synthetic`` (default
        the release's datasets)."""
        if synthetic is None and self.coefficients is not None:
            return self.coefficients
        synthetic = self.synthetic if synthetic is None else synthetic
        if self.model == "ordered_logit":
            from bayessdc.synthesis.categorical import ordered_logit_combined

            table = ordered_logit_combined(self.original, synthetic, self.response, self.predictors, kind=self.kind)
            table = table.rename(columns={"q_bar": "estimate", "lower": "ci_lower", "upper": "ci_upper",
                                          "interval_overlap": "ci_overlap"})  # fmt: skip
            return judged_coefficients(table, int(self.original[self.response].nunique()) - 1)
        from bayessdc.synthesis.regression import regression_utility

        return regression_utility(self.original, synthetic, self.response, self.predictors, kind=self.kind,
                                  weights=self.weights, replicates=self.replicates)  # fmt: skip


@register
class IntervalOverlap(Measure):
    """Confidence-interval overlap of each coefficient of the analyst's regressions, combined over m."""

    reads = ("regression", "weights", "replicates")

    name = "ci_overlap"
    headline = True
    kind = "utility"
    better = "higher"
    title = "confidence-interval overlap"
    unit = "overlap (1: the same interval)"
    description = "overlap of each coefficient's interval on the original and combined over the m datasets"
    subsets = "a coefficient of the analyst's regression (prefixed by its response when there are several)"
    subset_names = None
    references = {"unsmoothed": "the same overlap from the model without differential smoothing"}

    def applies(self, data: MeasureInput) -> bool:
        return bool(data.regression)

    def compute(self, data: MeasureInput) -> MeasureResult:
        regressions = data.regression if isinstance(data.regression, list | tuple) else [data.regression]
        values, references, details = [], [], []
        weighted = []
        for r in regressions:
            if r.weights is None and data.weights is not None and r.model == "ols":
                r.weights = data.weights
            if r.replicates is None and r.weights is not None and r.weights == data.weights:
                r.replicates = data.replicates
            if r.weights is not None:
                weighted.append(r.weights)
            prefix = f"{r.response}: " if len(regressions) > 1 or r.model != "ols" else ""
            table = r.fit()
            judged = table[table["judged"]] if "judged" in table else table
            values += [{"subset": f"{prefix}{name}", "dataset": 0, "value": float(v)}
                       for name, v in judged["ci_overlap"].items()]  # fmt: skip
            if r.reference is not None:
                ref = r.fit(r.reference)
                ref_judged = ref[ref["judged"]] if "judged" in ref else ref
                references += [{"subset": f"{prefix}{name}", "reference": "unsmoothed", "value": float(v)}
                               for name, v in ref_judged["ci_overlap"].items()]  # fmt: skip
            for fit, fitted in (("release", table), ("unsmoothed", ref if r.reference is not None else None)):
                if fitted is None:
                    continue
                shown = fitted.copy()
                shown.insert(0, "fit", fit)
                shown.insert(1, "response", r.response)
                shown["combining_rules"] = r.kind
                shown.index = [f"{prefix}{name}" for name in shown.index]
                details.append(shown)
        result = self.result(values, references)
        result.details = pd.concat(details) if details else None
        if weighted:
            result.title = f"{result.title} (weighted by {', '.join(sorted(set(weighted)))})"
            result.description = f"{result.description}; weighted least squares with linearization variances"
        return result
