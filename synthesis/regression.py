"""The analyst's linear regression on synthetic data, against the same regression on the original.

Each synthetic dataset is analysed as if it were the real one (statsmodels OLS), the ``m`` results are
combined by the rules of the kind of release (:func:`bayessdc.synthesis.combining.combine`: Reiter's 2003
rules for partially synthetic data, Raghunathan, Reiter & Rubin's 2003 or Raab, Nowok & Dibben's 2016 simple
synthesis for fully synthetic data), and
the combined intervals are compared with the original data's intervals by their overlap (Karr et al. 2006):
``I = (overlap / length_original + overlap / length_synthetic) / 2`` (1 for identical intervals, 0 or less
for disjoint ones; negative values measure how far apart they are).

With survey weights (``weights=`` the weight column, present in the original and in every synthetic dataset) the
regression is weighted least squares with linearization (sandwich) variances
(:func:`bayessdc.synthesis.survey.weighted_regression`), on the original and on each dataset alike, and the
original's interval uses ``n - 1`` degrees of freedom (the design's, for a single-stage sample).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .combining import Kind, combine
from .replicates import ReplicateDesign
from .survey import weighted_regression

__all__ = ["interval_overlap", "ols_fit", "regression_utility"]


def ols_fit(frame: pd.DataFrame, response: str, predictors: Sequence[str]) -> tuple[pd.Series, pd.Series]:
    """OLS of ``response`` on an intercept and ``predictors``: coefficients and their variances."""
    import statsmodels.api as sm

    X = sm.add_constant(frame[list(predictors)].to_numpy(dtype=float), has_constant="add")
    result = sm.OLS(frame[response].to_numpy(dtype=float), X).fit()
    names = ["intercept", *predictors]
    return pd.Series(result.params, index=names), pd.Series(np.diag(result.cov_params()), index=names)


def interval_overlap(lower_a: np.ndarray, upper_a: np.ndarray, lower_b: np.ndarray, upper_b: np.ndarray) -> np.ndarray:
    """Karr et al.'s interval overlap ``(overlap/len_a + overlap/len_b) / 2`` (may be negative when disjoint)."""
    overlap = np.minimum(upper_a, upper_b) - np.maximum(lower_a, lower_b)
    return 0.5 * (overlap / (upper_a - lower_a) + overlap / (upper_b - lower_b))


def regression_utility(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    response: str,
    predictors: Sequence[str],
    *,
    dataset: str = "synthetic",
    level: float = 0.95,
    kind: Kind = "partial",
    weights: str | None = None,
    replicates: ReplicateDesign | None = None,
) -> pd.DataFrame:
    """The regression table: original-data OLS beside the combined synthetic-data OLS, with CI overlap.

    Parameters
    ----------
    original
        The confidential data.
    synthetic
        The ``m`` synthetic datasets stacked, with a column ``dataset`` numbering them.
    response, predictors
        The analyst's regression (an intercept is added).
    dataset
        Name of the column that numbers the synthetic datasets.
    level
        Coverage of the intervals (t intervals with the OLS residual df for the original data).
    kind
        The combining rules: ``"partial"`` (some columns kept, Reiter 2003) or ``"full"`` (every value
        synthesized, Raghunathan, Reiter & Rubin 2003; its adjustment where ``T_f <= 0`` takes ``n_syn`` as
        the mean number of records of a synthetic dataset and ``n`` as the original's) or ``"simple"`` (every
        value synthesized from one fit to the sample, Raab, Nowok & Dibben 2016: a fully synthetic CART
        release; :func:`bayessdc.synthesis.combining.kind_of_release` says which).
    weights
        The survey weight column: weighted least squares with linearization variances throughout (module
        docstring); ``None``: OLS.
    replicates
        The replicate weights kept with the survey weights (:class:`bayessdc.synthesis.replicates.ReplicateDesign`):
        every variance, the original's and each synthetic dataset's, is then their replicate variance.

    Returns
    -------
    pandas.DataFrame
        One row per coefficient: ``original``, ``original_lower``, ``original_upper``, the columns of
        :func:`bayessdc.synthesis.combining.combine`, and ``ci_overlap``.

    References
    ----------
    .. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets. *Survey
        Methodology*, 29, 181-188.
    .. [2] Raghunathan, T. E., Reiter, J. P., & Rubin, D. B. (2003). Multiple imputation for statistical
        disclosure limitation. *Journal of Official Statistics*, 19, 1-16.
    .. [3] Karr, A. F., Kohnen, C. N., Oganian, A., Reiter, J. P., & Sanil, A. P. (2006). A framework for
        evaluating the utility of data altered to protect confidentiality. *The American Statistician*, 60,
        224-232.
    """
    import statsmodels.api as sm
    from scipy import stats

    names = ["intercept", *predictors]
    if weights is None:
        X = sm.add_constant(original[list(predictors)].to_numpy(dtype=float), has_constant="add")
        fit = sm.OLS(original[response].to_numpy(dtype=float), X).fit()
        params, ci = np.asarray(fit.params), np.asarray(fit.conf_int(1 - level))
    else:
        estimate, variance = weighted_regression(original, response, predictors, weights, replicates)
        half = stats.t.ppf(0.5 + level / 2, len(original) - 1) * np.sqrt(variance.to_numpy())
        params = estimate.to_numpy()
        ci = np.column_stack([params - half, params + half])
    estimates, variances, sizes = [], [], []
    for _, frame in synthetic.groupby(dataset, sort=True):
        if weights is None:
            q, u = ols_fit(frame, response, predictors)
        else:
            q, u = weighted_regression(frame, response, predictors, weights, replicates)
        estimates.append(q)
        variances.append(u)
        sizes.append(len(frame))
    combined = combine(pd.DataFrame(estimates), pd.DataFrame(variances), kind, level,
                       n_syn=float(np.mean(sizes)), n=len(original))  # fmt: skip
    table = pd.DataFrame(
        {"original": params, "original_lower": ci[:, 0], "original_upper": ci[:, 1]}, index=names
    ).join(combined)
    table["ci_overlap"] = interval_overlap(
        table["original_lower"].to_numpy(),
        table["original_upper"].to_numpy(),
        table["ci_lower"].to_numpy(),
        table["ci_upper"].to_numpy(),
    )
    table.index.name = "coefficient"
    return table
