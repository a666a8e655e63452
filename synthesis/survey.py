"""Design-based estimates from survey weights: weighted means and regressions with their linearization variances.

Generic: a frame, the name of its weight column, and the analyst's estimand; nothing of any model. A synthetic
dataset carries a weight column too (the collected weights kept under partial synthesis, synthesized ones under
full synthesis), so each of the m datasets is analysed exactly as the collected sample would be, and the m
results are combined by :func:`bayessdc.synthesis.combining.combine`.

The design is taken as a single-stage sample drawn with replacement with unequal probabilities (the weights),
the usual approximation of a design whose strata and clusters are not released. The variance is Taylor
linearization (Binder 1983; Wolter 2007, Ch. 6), for an estimator ``theta`` solving ``sum_i w_i psi_i(theta) = 0``:
``n / (n - 1) sum_i (z_i - z_bar)^2`` with ``z_i`` the record's linearized influence. For the weighted mean
(a ratio) ``z_i = w_i (y_i - mu) / sum_j w_j``; for weighted least squares it is the sandwich
``(X'WX)^{-1} [n / (n - 1) sum_i w_i^2 e_i^2 x_i x_i'] (X'WX)^{-1}``, statsmodels' ``WLS(...).fit(cov_type="HC0")``
scaled by ``n / (n - 1)`` (``sum_i z_i = 0`` at the solution, so the centring is exact).

Why not a survey library: samplics (the one maintained survey package on PyPI for Python when this module was
written) announces itself as archived and no longer maintained (samplics 0.6, ``FutureWarning`` on import) and
would bring polars into the dependencies; its Taylor variance of a weighted mean equals :func:`weighted_mean`'s to
machine precision (checked by hand on 50 records: 0.014383324552460823 both). statsmodels' WLS with a
heteroskedasticity-consistent covariance is the well-kept tool for the regression. Where the file carries replicate
weights (:mod:`bayessdc.synthesis.replicates`), the variances are the replicate variances instead
(``replicates=``), as the file's documentation prescribes.

References
----------
.. [1] Binder, D. A. (1983). On the variances of asymptotically normal estimators from complex surveys.
    *International Statistical Review*, 51, 279-292.
.. [2] Wolter, K. M. (2007). *Introduction to Variance Estimation*, 2nd ed. Springer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .combining import Kind, combine
from .replicates import ReplicateDesign, replicate_variance

__all__ = ["combined_weighted_mean", "replicate_weighted_mean", "weighted_mean", "weighted_regression"]


def weighted_mean(values: Sequence[float] | np.ndarray | pd.Series, weights: Sequence[float] | np.ndarray | pd.Series
                  ) -> tuple[float, float]:  # fmt: skip
    """The weighted mean of ``values`` and its linearization variance.

    A missing value (NaN) leaves its record out of the domain the mean is taken over (hours worked by those who
    work): the variance is then the domain estimator's, over all ``n`` records with ``z_i = 0`` outside the
    domain (Wolter 2007, Section 6.11), not a variance of the domain's records taken as the whole sample.

    Parameters
    ----------
    values
        The variable, one value per record (NaN: not in the domain).
    weights
        The survey weights, positive.

    Returns
    -------
    estimate, variance
        ``mu = sum_d w_i y_i / sum_d w_i`` and ``n / (n - 1) sum_i (z_i - z_bar)^2``,
        ``z_i = d_i w_i (y_i - mu) / sum_d w_j`` (``d_i``: in the domain).

    Examples
    --------
    >>> estimate, variance = weighted_mean([1.0, 2.0, 4.0], [1.0, 1.0, 2.0])
    >>> estimate, variance  # z = (-1.75, -0.75, 2.5) / 4; 3/2 * sum z^2
    (2.75, 0.92578125)
    """
    y = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    if y.shape != w.shape or y.ndim != 1:
        raise ValueError(f"values and weights differ in shape: {y.shape} and {w.shape}")
    domain = np.isfinite(y)
    if domain.sum() < 1 or len(y) < 2:
        raise ValueError("a weighted mean needs at least two records and one value")
    total = w[domain].sum()
    mu = float(np.sum(w[domain] * y[domain]) / total)
    z = np.where(domain, w * (np.where(domain, y, 0.0) - mu) / total, 0.0)
    n = len(y)
    return mu, float(n / (n - 1) * np.sum((z - z.mean()) ** 2))


def replicate_weighted_mean(
    frame: pd.DataFrame, column: str, weights: str, replicates: ReplicateDesign
) -> tuple[float, float]:
    """The weighted mean of ``column`` (its domain: the records where it is not missing) and its replicate variance.

    Parameters
    ----------
    frame
        The records, with the weight and replicate weight columns.
    column, weights
        The variable and the full-sample weight column.
    replicates
        The replicate columns and their variance rule.

    Returns
    -------
    estimate, variance
        The mean with the full-sample weights and ``c sum_r (mu_r - mu)^2``.
    """
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    domain = np.isfinite(values)
    if not domain.any():
        raise ValueError(f"column {column!r} has no value to average")

    def mean(_: pd.DataFrame, w: np.ndarray) -> float:
        return float(np.sum(w[domain] * values[domain]) / np.sum(w[domain]))

    estimate, covariance = replicate_variance(mean, frame, weights, replicates)
    return float(estimate[0]), float(covariance[0, 0])


def weighted_regression(
    frame: pd.DataFrame, response: str, predictors: Sequence[str], weights: str,
    replicates: ReplicateDesign | None = None,
) -> tuple[pd.Series, pd.Series]:  # fmt: skip
    """Weighted least squares of ``response`` on an intercept and ``predictors``: coefficients and their
    linearization (sandwich) variances.

    Records with a missing response or predictor are left out (complete cases), as the analyst's own
    regression would.

    Parameters
    ----------
    frame
        The records, with the weight column.
    response, predictors
        The analyst's regression (an intercept is added).
    weights
        The weight column.
    replicates
        The file's replicate weights (:class:`bayessdc.synthesis.replicates.ReplicateDesign`): the variances are
        then the replicate variances of the WLS coefficients, each replicate's fit on the same complete records.

    Returns
    -------
    coefficients, variances
        Indexed ``intercept`` then the predictors; the variances are the diagonal of
        ``n / (n - 1)`` times statsmodels' ``HC0`` covariance of the WLS fit (see the module docstring), or of
        the replicate covariance.
    """
    import statsmodels.api as sm

    columns = [response, *predictors]
    extra = list(replicates.columns) if replicates is not None else []
    used = frame[[*columns, weights, *extra]].apply(pd.to_numeric, errors="coerce").dropna(subset=[*columns, weights])
    names = ["intercept", *predictors]
    n = len(used)
    if n <= len(predictors) + 1:
        raise ValueError(f"{n} complete record(s) for a regression on {len(predictors)} predictor(s)")
    if replicates is not None:
        def coefficients(f: pd.DataFrame, w: np.ndarray) -> np.ndarray:
            design = sm.add_constant(f[list(predictors)].to_numpy(dtype=float), has_constant="add")
            return np.asarray(sm.WLS(f[response].to_numpy(dtype=float), design, weights=w).fit().params)

        estimate, covariance = replicate_variance(coefficients, used, weights, replicates)
        return pd.Series(estimate, index=names), pd.Series(np.diag(covariance), index=names)
    X = sm.add_constant(used[list(predictors)].to_numpy(dtype=float), has_constant="add")
    fit = sm.WLS(used[response].to_numpy(dtype=float), X, weights=used[weights].to_numpy(dtype=float)).fit(
        cov_type="HC0"
    )
    variances = np.diag(np.asarray(fit.cov_params())) * n / (n - 1)
    return pd.Series(np.asarray(fit.params), index=names), pd.Series(variances, index=names)


def combined_weighted_mean(
    synthetic: pd.DataFrame,
    column: str,
    weights: str,
    *,
    kind: Kind = "partial",
    level: float = 0.95,
    n: int | None = None,
    dataset: str = "synthetic",
    replicates: ReplicateDesign | None = None,
) -> pd.DataFrame:
    """The weighted mean of ``column`` in each synthetic dataset, combined over the m datasets.

    Parameters
    ----------
    synthetic
        The m datasets stacked, numbered by ``dataset``, each with its weight column.
    column, weights
        The variable and the weight column.
    kind
        ``"partial"`` (the collected weights kept: Reiter 2003), ``"simple"`` (the weights synthesized too, by
        CART: Raab, Nowok & Dibben 2016) or ``"full"`` (Raghunathan, Reiter & Rubin 2003);
        :func:`bayessdc.synthesis.combining.kind_of_release` gives the release's.
    level
        Coverage of the interval.
    n
        Records of the collected data (the fully synthetic rules' adjustment when ``T_f <= 0``; default the
        mean size of a dataset).
    dataset
        The column numbering the datasets.
    replicates
        The replicate weights kept with the collected weights: each dataset's variance is then the replicate
        variance (:func:`replicate_weighted_mean`).

    Returns
    -------
    pandas.DataFrame
        One row (index ``column``), the columns of :func:`bayessdc.synthesis.combining.combine`.
    """
    estimates, variances, sizes = [], [], []
    for _, frame in synthetic.groupby(dataset, sort=True):
        if replicates is None:
            q, u = weighted_mean(frame[column], frame[weights])
        else:
            q, u = replicate_weighted_mean(frame, column, weights, replicates)
        estimates.append({column: q})
        variances.append({column: u})
        sizes.append(len(frame))
    n_syn = float(np.mean(sizes))
    return combine(pd.DataFrame(estimates), pd.DataFrame(variances), kind, level, n_syn=n_syn,
                   n=n_syn if n is None else n)  # fmt: skip
