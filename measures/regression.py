"""Analysis-specific utility: the overlap of confidence intervals of the analyst's regression (Karr et al. 2006).

The analyst's OLS is fitted to the original and to each synthetic dataset, the m synthetic estimates are
combined by Reiter's (2003) rules for partially synthetic data, and each coefficient's interval overlap (the
average share of each interval covered by the other) is the figure: one per coefficient (the subset), of the
m datasets jointly (dataset 0). Reference ``unsmoothed``: the same overlap from a reference release (the
spatial synthesizer's model without differential smoothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, register

__all__ = ["IntervalOverlap", "RegressionInput"]


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
        The analyst's OLS (an intercept is added).
    reference
        A reference release's datasets, stacked likewise (``None``: no reference).
    """

    original: pd.DataFrame
    synthetic: pd.DataFrame
    response: str
    predictors: list[str]
    reference: pd.DataFrame | None = None


@register
class IntervalOverlap(Measure):
    """Confidence-interval overlap of each coefficient of the analyst's regression, combined over m."""

    name = "ci_overlap"
    kind = "utility"
    better = "higher"
    title = "confidence-interval overlap"
    unit = "overlap (1: the same interval)"
    description = "overlap of each coefficient's interval on the original and combined over the m datasets"
    subsets = "a coefficient of the analyst's regression"
    references = {"unsmoothed": "the same overlap from the model without differential smoothing"}

    def applies(self, data: MeasureInput) -> bool:
        return data.regression is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.synthesis.regression import regression_utility

        r: RegressionInput = data.regression
        table = regression_utility(r.original, r.synthetic, r.response, r.predictors)
        values = [{"subset": str(name), "dataset": 0, "value": float(v)} for name, v in table["ci_overlap"].items()]
        references = []
        if r.reference is not None:
            ref = regression_utility(r.original, r.reference, r.response, r.predictors)
            references = [{"subset": str(name), "reference": "unsmoothed", "value": float(v)}
                          for name, v in ref["ci_overlap"].items()]  # fmt: skip
        return self.result(values, references)
