"""Combining rules for inference from multiple synthetic datasets.

Reiter (2003), *Inference for partially synthetic, public use microdata sets*, Survey Methodology 29:
for ``m`` partially synthetic datasets with estimates ``q^(l)`` and within-dataset variances ``u^(l)``,

* ``q_bar = sum_l q^(l) / m`` (point estimate),
* ``b_m = sum_l (q^(l) - q_bar)^2 / (m - 1)`` (between-dataset variance),
* ``u_bar = sum_l u^(l) / m`` (mean within-dataset variance),
* ``T_p = u_bar + b_m / m`` (total variance),
* ``nu_p = (m - 1) (1 + u_bar / (b_m / m))^2 = (m - 1) (1 + m u_bar / b_m)^2`` degrees of freedom,

and intervals ``q_bar +- t_{nu_p, 1 - alpha/2} sqrt(T_p)``. When ``b_m = 0`` the degrees of freedom are
infinite (normal intervals).

References
----------
.. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets. *Survey
    Methodology*, 29.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["combine_partially_synthetic"]


def combine_partially_synthetic(estimates: Any, variances: Any, level: float = 0.95) -> pd.DataFrame:
    """Combine estimates from ``m`` partially synthetic datasets (Reiter 2003).

    Parameters
    ----------
    estimates
        Point estimates, shape ``(m, k)``: one row per synthetic dataset, one column per quantity
        (a DataFrame's column names become the row labels of the result).
    variances
        Their estimated variances (squared standard errors), same shape.
    level
        Coverage of the intervals (the project's one confidence argument, as in every other interval).

    Returns
    -------
    pandas.DataFrame
        One row per quantity, columns ``estimate`` (q_bar), ``between_variance`` (b_m), ``within_variance``
        (u_bar), ``total_variance`` (T_p = u_bar + b_m/m), ``df`` (nu_p) and ``ci_lower``, ``ci_upper``.
    """
    index = estimates.columns if isinstance(estimates, pd.DataFrame) else None
    q = np.asarray(estimates, dtype=float)
    u = np.asarray(variances, dtype=float)
    if q.ndim == 1:
        q, u = q[:, None], u[:, None]
    if q.shape != u.shape or q.ndim != 2:
        raise ValueError(f"estimates and variances must both have shape (m, k); got {q.shape} and {u.shape}")
    m = q.shape[0]
    if m < 2:
        raise ValueError("the combining rules need at least m = 2 synthetic datasets")
    if (u < 0).any():
        raise ValueError("variances must be non-negative")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    q_bar = q.mean(axis=0)
    b_m = q.var(axis=0, ddof=1)
    u_bar = u.mean(axis=0)
    total = u_bar + b_m / m
    with np.errstate(divide="ignore"):
        df = np.where(b_m > 0, (m - 1) * (1 + m * u_bar / np.where(b_m > 0, b_m, 1.0)) ** 2, np.inf)
    half = stats.t.ppf(0.5 + level / 2, df) * np.sqrt(total)  # df = inf gives the normal quantile
    return pd.DataFrame(
        {
            "estimate": q_bar,
            "between_variance": b_m,
            "within_variance": u_bar,
            "total_variance": total,
            "df": df,
            "ci_lower": q_bar - half,
            "ci_upper": q_bar + half,
        },
        index=index,
    )
