"""Combining rules for inference from multiple synthetic datasets: partially and fully synthetic releases.

The analyst computes, in each of ``m`` synthetic datasets, a point estimate ``q^(l)`` of a quantity and its
variance ``u^(l)`` as if the dataset were the collected data (for ``k`` quantities at once, the vector
``Q^(l)`` and the covariance matrix ``U^(l)``). Both kinds of release share

* ``q_bar = sum_l q^(l) / m`` (point estimate),
* ``b_m = sum_l (q^(l) - q_bar)^2 / (m - 1)`` (between-dataset variance; ``B_m`` the covariance matrix),
* ``u_bar = sum_l u^(l) / m`` (mean within-dataset variance; ``U_bar`` the mean covariance matrix),

and differ in the total variance, its degrees of freedom and the multi-component test:

**Partially synthetic data** (Reiter 2003): the released records are the collected units, some of their values
replaced by draws from the posterior predictive distribution given the values left unchanged (the kept
columns). ``T_p = u_bar + b_m / m``, ``nu_p = (m - 1) (1 + m u_bar / b_m)^2`` (infinite when ``b_m = 0``: normal
intervals), intervals ``q_bar +- t_{nu_p} sqrt(T_p)``.

**Fully synthetic data** (Raghunathan, Reiter & Rubin 2003; degrees of freedom from Reiter 2002): no collected
value is released. ``T_f = (1 + 1/m) b_m - u_bar``, ``nu_f = (m - 1) (1 - m u_bar / ((m + 1) b_m))^2``,
intervals ``q_bar +- t_{nu_f} sqrt(T_f)``. ``T_f`` can be negative, or zero, when ``b_m`` is small against
``u_bar`` (small ``m`` or ``n_syn``). Reiter (2002) replaces it then by the always positive
``T_f* = max(0, T_f) + delta (n_syn / n) u_bar``, ``delta = 1`` when ``T_f < 0`` and 0 otherwise, where
``n_syn`` is the number of records of each released dataset and ``n`` that of the collected data, and uses
normal (infinite degrees of freedom) intervals with it. Implemented here: ``T_f* = (n_syn / n) u_bar`` with
infinite degrees of freedom whenever ``T_f <= 0`` (``delta = 1`` also at ``T_f = 0`` exactly, where the
published form would give a zero variance); the table's column ``adjusted`` marks those quantities.

Conditions of the fully synthetic rules (Raghunathan et al. 2003): every released value is drawn
anew: each dataset is a new sample of ``n_syn`` records from a synthetic population drawn from the posterior
predictive distribution given the collected data (with a large population, ``n_syn`` independent posterior
predictive draws of whole records given *one* posterior draw of the parameters); the ``m`` datasets are drawn
independently, each from its own posterior draw (a single plug-in estimate of the parameters leaves out the
posterior variance and ``T_f`` then grossly understates the variance); the analyst's estimator is unbiased with
a consistent ``u^(l)`` computed as for a simple random sample of ``n_syn`` records, the synthesis model is
congenial to the analysis, and samples are large enough for normal approximations. When ``n_syn = n`` the
expectations of ``T_f`` and ``T_p`` coincide (``E b_m ~ 2 u``), so the partially synthetic rules are nearly
unbiased for fully synthetic data of the original's size (with other degrees of freedom); with ``n_syn > n``
they under-cover, with ``n_syn < n`` they over-cover (``tests/synthesis/test_combining.py`` simulates
``n_syn = n`` and ``n_syn = 4 n``).

**Simple synthesis** (Raab, Nowok & Dibben 2016; ``kind="simple"``): every value synthesized, each dataset
``n_syn`` records drawn from the synthesizer fitted to the one collected sample (no synthetic population in
between). Then ``q_bar - Q = (q_bar - E(q_bar | data)) + (E(q_bar | data) - Q)``: the second term is the
collected estimate's own error (variance ``u_obs``, estimated by ``(n_syn / n) u_bar``), the first the
synthesis' (``u_bar / m`` for the draws of records, plus, when the synthesizer is *proper*, a fresh draw of its
parameters per dataset, ``(n_syn / n) u_bar / m``). Hence, as R's synthpop computes it
(``summary.fit.synds(population.inference = TRUE)`` with every variable of the model synthesized, file
``R/methods.syn.r``: ``vars <- mvaravg * k/n``, then ``Tf <- vars*(1 + n/k/m)`` or, proper,
``Tf <- vars*(1 + (n/k + 1)/m)``, with synthpop's ``n`` the records collected and ``k`` those synthesized):

* not proper: ``T_s = u_bar (n_syn / n + 1/m)``;
* proper: ``T_s = u_bar (n_syn / n + (1 + n_syn / n) / m)`` (``u_bar (1 + 2/m)`` when ``n_syn = n``);

with normal intervals (synthpop's z statistics; ``b_m`` is not used, so that no degrees of freedom are
estimated). These rules need no synthetic population, hold for any ``m >= 1`` (here ``m >= 2`` like the
others), and trust the synthesizer: they are right when the synthesis model is, since ``b_m`` does not enter
(``E b_m`` is ``u_bar`` not proper, ``(1 + n_syn / n) u_bar`` proper, which ``between_variance`` lets an
analyst check). The expectation of ``T_s`` (proper) is that of ``T_f`` and of ``T_p`` at ``n_syn = n``; it is
the variability of ``T_f`` (``b_m`` on ``m - 1`` degrees of freedom, Reiter's adjustment when ``T_f <= 0`` and
the small ``nu_f``) that makes the fully synthetic rules' intervals wider on average at small ``m``.

**Tests of k components at once** (Reiter 2005), of the null ``Q = Q0``, with ``t = k (m - 1)`` and the
Li, Raghunathan & Rubin (1991) device of taking ``B_m`` proportional to ``U_bar`` (``B_m`` has rank at most
``m - 1`` and is unstable when ``k`` is not small against ``m``), so that ``T = (1 + r) U_bar`` or
``(r - 1) U_bar``:

* partially synthetic: ``r_p = tr(B_m U_bar^{-1}) / (k m)``,
  ``S_p = (q_bar - Q0)' U_bar^{-1} (q_bar - Q0) / (k (1 + r_p))``, reference ``F(k, nu_p)`` with
  ``nu_p = 4 + (t - 4) (1 + (1 - 2/t) / r_p)^2`` (``t > 4``);
* fully synthetic: ``r_f = (1 + 1/m) tr(B_m U_bar^{-1}) / k``,
  ``S_f = (q_bar - Q0)' U_bar^{-1} (q_bar - Q0) / (k (r_f - 1))``, reference ``F(k, nu_f)`` with
  ``nu_f = 4 + (t - 4) (1 - (1 - 2/t) / r_f)^2`` (``t > 4``). The statistic never inverts
  ``T_f = (1 + 1/m) B_m - U_bar`` itself, which need not be positive definite even when ``r_f > 1``; under
  proportionality ``T_f`` is positive definite exactly when ``r_f > 1``.

For ``t <= 4`` both use Li, Raghunathan & Rubin's (1991) small-``t`` form ``t (1 + 1/k) (1 +- 1/r)^2 / 2``
(``+`` partial, ``-`` full; for ``k = 1`` it is the scalar rule's ``(m - 1) (1 +- 1/r)^2``). When
``r_f <= 1`` (the multivariate ``T_f <= 0``) the statistic is undefined; :func:`wald_test` then applies the
multivariate analogue of Reiter's (2002) adjustment: ``U_bar`` scaled by ``n_syn / n`` in place of
``(r_f - 1) U_bar``, with a ``chi^2_k / k`` (``F(k, infinity)``) reference, and marks the result ``adjusted``.

Sources. The scalar rules are those of Reiter (2003) and Raghunathan et al. (2003) with Reiter's (2002) degrees
of freedom. Neither the text of Reiter (2002) nor that of Reiter (2005) was available where this module was
written (nor an implementation of either to compare with: R's synthpop uses other rules for fully synthetic
data): the adjustment ``T_f*`` and the multi-component statistics are written from recollection of their
published forms (the Li et al. construction adapted to ``T_p`` and ``T_f``), and checked
against the scalar rules they must reduce to (``k = 1`` reproduces ``T_p`` and ``T_f`` exactly, and
``nu_p``, ``nu_f`` up to Li et al.'s large-``t`` approximation), not against the papers' printed equations.
The ``t <= 4`` forms, the ``r_f <= 1`` adjustment of the test and ``delta = 1`` at ``T_f = 0`` are this
module's choices, not quotations.

References
----------
.. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets. *Survey
    Methodology*, 29, 181-188.
.. [2] Raghunathan, T. E., Reiter, J. P., & Rubin, D. B. (2003). Multiple imputation for statistical
    disclosure limitation. *Journal of Official Statistics*, 19, 1-16.
.. [3] Reiter, J. P. (2002). Satisfying disclosure restrictions with synthetic data sets. *Journal of
    Official Statistics*, 18, 531-543.
.. [4] Reiter, J. P. (2005). Significance tests for multi-component estimands from multiply imputed,
    synthetic microdata. *Journal of Statistical Planning and Inference*, 131, 365-377.
.. [5] Li, K. H., Raghunathan, T. E., & Rubin, D. B. (1991). Large-sample significance levels from
    multiply imputed data using moment-based statistics and an F reference distribution. *Journal of the
    American Statistical Association*, 86, 1065-1073.
.. [6] Raab, G. M., Nowok, B., & Dibben, C. (2016). Practical data synthesis for large samples. *Journal of
    Privacy and Confidentiality*, 7(3), 67-97.
.. [7] Nowok, B., Raab, G. M., & Dibben, C. (2016). synthpop: Bespoke creation of synthetic data in R.
    *Journal of Statistical Software*, 74(11), 1-26 (``summary.fit.synds`` in ``R/methods.syn.r``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "KINDS",
    "Kind",
    "WaldTest",
    "combine",
    "combine_fully_synthetic",
    "combine_partially_synthetic",
    "combine_simple_synthesis",
    "kind_of_release",
    "wald_test",
]

#: The kind of a release, which decides its combining rules: ``"partial"`` (Reiter 2003), ``"full"``
#: (Raghunathan, Reiter & Rubin 2003) or ``"simple"`` (fully synthetic, Raab, Nowok & Dibben 2016).
Kind = Literal["partial", "full", "simple"]
#: The kinds :func:`combine` accepts (:func:`wald_test`: ``"partial"`` and ``"full"``).
KINDS: tuple[str, ...] = ("partial", "full", "simple")
#: Synthesizers whose fully synthetic releases are combined by the simple-synthesis rules (:func:`kind_of_release`).
SIMPLE_SYNTHESIS = ("cart",)


def kind_of_release(kept: Any, synthesizer: str | None = None) -> Kind:
    """The combining rules of a release by its kept columns: ``"partial"`` when some column is released as
    collected; when none is (every value synthesized), ``"simple"`` for a synthesizer that draws each dataset's
    records from one fit to the collected sample (``"cart"``: fixed trees, a Bayesian bootstrap in the leaves;
    Raab, Nowok & Dibben 2016, :func:`combine_simple_synthesis`), ``"full"`` otherwise (Raghunathan, Reiter &
    Rubin 2003).

    Parameters
    ----------
    kept
        The columns released unchanged (a list of names; empty or ``None`` for none).
    synthesizer
        The synthesizer's name (``Recipe.name``); ``None``: not known (``"full"`` when nothing is kept).

    Returns
    -------
    str
        ``"partial"``, ``"simple"`` or ``"full"``.

    Examples
    --------
    >>> kind_of_release(["age"], "cart"), kind_of_release([], "cart"), kind_of_release([], "dpmpm")
    ('partial', 'simple', 'full')

    References
    ----------
    .. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets. *Survey
        Methodology*, 29, 181-188.
    .. [2] Raghunathan, T. E., Reiter, J. P., & Rubin, D. B. (2003). Multiple imputation for statistical
        disclosure limitation. *Journal of Official Statistics*, 19, 1-16.
    """
    if kept is not None and len(kept) > 0:
        return "partial"
    return "simple" if synthesizer in SIMPLE_SYNTHESIS else "full"


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")


def _size_ratio(n_syn: float | None, n: float | None) -> float:
    """``n_syn / n`` of Reiter's (2002) adjustment (1 when neither is given: datasets of the original's size)."""
    if (n_syn is None) != (n is None):
        raise ValueError("give both n_syn (records per synthetic dataset) and n (records collected), or neither")
    if n_syn is None:
        return 1.0
    if not (n_syn > 0 and n > 0):
        raise ValueError(f"n_syn and n must be positive, got {n_syn!r} and {n!r}")
    return float(n_syn) / float(n)


def _scalar_inputs(estimates: Any, variances: Any, level: float) -> tuple[np.ndarray, np.ndarray, Any]:
    index = estimates.columns if isinstance(estimates, pd.DataFrame) else None
    q = np.asarray(estimates, dtype=float)
    u = np.asarray(variances, dtype=float)
    if q.ndim == 1:
        q, u = q[:, None], u[:, None]
    if q.shape != u.shape or q.ndim != 2:
        raise ValueError(f"estimates and variances must both have shape (m, k); got {q.shape} and {u.shape}")
    if q.shape[0] < 2:
        raise ValueError("the combining rules need at least m = 2 synthetic datasets")
    if (u < 0).any():
        raise ValueError("variances must be non-negative")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return q, u, index


def _table(q_bar: np.ndarray, b_m: np.ndarray, u_bar: np.ndarray, total: np.ndarray, df: np.ndarray,
           level: float, index: Any, adjusted: np.ndarray | None = None) -> pd.DataFrame:  # fmt: skip
    half = stats.t.ppf(0.5 + level / 2, df) * np.sqrt(total)  # df = inf gives the normal quantile
    columns = {
        "estimate": q_bar,
        "between_variance": b_m,
        "within_variance": u_bar,
        "total_variance": total,
        "df": df,
        "ci_lower": q_bar - half,
        "ci_upper": q_bar + half,
    }
    if adjusted is not None:
        columns["adjusted"] = adjusted
    return pd.DataFrame(columns, index=index)


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
        (u_bar), ``total_variance`` (T_p = u_bar + b_m/m), ``df`` (nu_p = (m - 1) (1 + m u_bar / b_m)^2,
        infinite when b_m = 0) and ``ci_lower``, ``ci_upper``.

    References
    ----------
    .. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets. *Survey
        Methodology*, 29, 181-188.
    """
    q, u, index = _scalar_inputs(estimates, variances, level)
    m = q.shape[0]
    q_bar, b_m, u_bar = q.mean(axis=0), q.var(axis=0, ddof=1), u.mean(axis=0)
    total = u_bar + b_m / m
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(b_m > 0, (m - 1) * (1 + m * u_bar / np.where(b_m > 0, b_m, 1.0)) ** 2, np.inf)
    return _table(q_bar, b_m, u_bar, total, df, level, index)


def combine_fully_synthetic(
    estimates: Any, variances: Any, level: float = 0.95, *, n_syn: float | None = None, n: float | None = None
) -> pd.DataFrame:
    """Combine estimates from ``m`` fully synthetic datasets (Raghunathan, Reiter & Rubin 2003).

    ``T_f = (1 + 1/m) b_m - u_bar`` with ``nu_f = (m - 1) (1 - m u_bar / ((m + 1) b_m))^2`` degrees of freedom
    (Reiter 2002); where ``T_f <= 0``, Reiter's (2002) ``T_f* = (n_syn / n) u_bar`` with normal intervals.
    The conditions under which these rules hold are in the module's docstring.

    Parameters
    ----------
    estimates
        Point estimates, shape ``(m, k)``: one row per synthetic dataset, one column per quantity
        (a DataFrame's column names become the row labels of the result).
    variances
        Their estimated variances (squared standard errors), same shape, computed as if each synthetic
        dataset were a simple random sample of its ``n_syn`` records.
    level
        Coverage of the intervals.
    n_syn, n
        Records per synthetic dataset and records collected, for the adjustment when ``T_f <= 0`` (both or
        neither; neither: ``n_syn = n``).

    Returns
    -------
    pandas.DataFrame
        One row per quantity, columns ``estimate`` (q_bar), ``between_variance`` (b_m), ``within_variance``
        (u_bar), ``total_variance`` (T_f, or T_f* where adjusted), ``df`` (nu_f, infinite where adjusted),
        ``ci_lower``, ``ci_upper`` and ``adjusted`` (``T_f <= 0``: Reiter's 2002 adjustment used).

    References
    ----------
    .. [1] Raghunathan, T. E., Reiter, J. P., & Rubin, D. B. (2003). Multiple imputation for statistical
        disclosure limitation. *Journal of Official Statistics*, 19, 1-16.
    .. [2] Reiter, J. P. (2002). Satisfying disclosure restrictions with synthetic data sets. *Journal of
        Official Statistics*, 18, 531-543.
    """
    ratio = _size_ratio(n_syn, n)
    q, u, index = _scalar_inputs(estimates, variances, level)
    m = q.shape[0]
    q_bar, b_m, u_bar = q.mean(axis=0), q.var(axis=0, ddof=1), u.mean(axis=0)
    with np.errstate(invalid="ignore"):
        t_f = (1 + 1 / m) * b_m - u_bar
        adjusted = t_f <= 0  # T_f > 0 implies b_m > 0 (u_bar >= 0)
        total = np.where(adjusted, ratio * u_bar, t_f)
        df = np.where(adjusted, np.inf, (m - 1) * (1 - m * u_bar / ((m + 1) * np.where(b_m > 0, b_m, 1.0))) ** 2)
    return _table(q_bar, b_m, u_bar, total, df, level, index, adjusted=adjusted)


def combine_simple_synthesis(
    estimates: Any,
    variances: Any,
    level: float = 0.95,
    *,
    n_syn: float | None = None,
    n: float | None = None,
    proper: bool = True,
) -> pd.DataFrame:
    """Combine estimates from ``m`` fully synthetic datasets of a simple synthesis (Raab, Nowok & Dibben 2016).

    ``T_s = u_bar (n_syn / n + 1/m)``, or for a proper synthesizer ``T_s = u_bar (n_syn / n + (1 + n_syn / n)
    / m)``, with normal intervals: synthpop's population inference for completely synthesised data
    (``summary.fit.synds``); the derivation and conditions are in the module's docstring.

    Parameters
    ----------
    estimates
        Point estimates, shape ``(m, k)`` (a DataFrame's column names become the row labels of the result).
    variances
        Their estimated variances, same shape, computed as if each synthetic dataset were the collected data.
    level
        Coverage of the intervals.
    n_syn, n
        Records per synthetic dataset and records collected (both or neither; neither: ``n_syn = n``).
    proper
        Whether each dataset is drawn given its own draw of the synthesizer's parameters (a posterior draw, or
        a Bayesian bootstrap as in CART's leaves), which adds ``(n_syn / n) u_bar / m``.

    Returns
    -------
    pandas.DataFrame
        One row per quantity, the columns of :func:`combine_partially_synthetic` (``total_variance`` is
        ``T_s``, ``df`` infinite; ``between_variance`` is shown, not used).

    Examples
    --------
    >>> table = combine_simple_synthesis([[1.0], [2.0], [3.0]], [[0.2], [0.4], [0.3]])
    >>> round(float(table["total_variance"].iloc[0]), 4)  # 0.3 * (1 + 2/3)
    0.5
    >>> round(float(combine_simple_synthesis([[1.0], [2.0]], [[0.3], [0.3]], proper=False).iloc[0, 3]), 4)
    0.45

    References
    ----------
    .. [1] Raab, G. M., Nowok, B., & Dibben, C. (2016). Practical data synthesis for large samples. *Journal
        of Privacy and Confidentiality*, 7(3), 67-97.
    .. [2] Nowok, B., Raab, G. M., & Dibben, C. (2016). synthpop: Bespoke creation of synthetic data in R.
        *Journal of Statistical Software*, 74(11), 1-26.
    """
    ratio = _size_ratio(n_syn, n)
    q, u, index = _scalar_inputs(estimates, variances, level)
    m = q.shape[0]
    q_bar, b_m, u_bar = q.mean(axis=0), q.var(axis=0, ddof=1), u.mean(axis=0)
    total = u_bar * (ratio + ((1 + ratio) if proper else 1.0) / m)
    return _table(q_bar, b_m, u_bar, total, np.full_like(q_bar, np.inf), level, index)


def combine(
    estimates: Any,
    variances: Any,
    kind: Kind = "partial",
    level: float = 0.95,
    *,
    n_syn: float | None = None,
    n: float | None = None,
    proper: bool = True,
) -> pd.DataFrame:
    """Combine estimates from ``m`` synthetic datasets by the rules of the kind of release.

    Parameters
    ----------
    estimates
        Point estimates, shape ``(m, k)`` (one row per synthetic dataset, one column per quantity).
    variances
        Their estimated variances, same shape.
    kind
        ``"partial"``: some values of the collected records released unchanged
        (:func:`combine_partially_synthetic`); ``"full"``: every value synthesized
        (:func:`combine_fully_synthetic`); ``"simple"``: every value synthesized, the datasets drawn from one fit
        to the sample (:func:`combine_simple_synthesis`). :func:`kind_of_release` gives it from the kept columns
        and the synthesizer.
    level
        Coverage of the intervals.
    n_syn, n
        Records per synthetic dataset and records collected (the fully synthetic rules' adjustment, the simple
        synthesis' variance; not used by the partially synthetic rules).
    proper
        ``kind="simple"`` only: see :func:`combine_simple_synthesis`.

    Returns
    -------
    pandas.DataFrame
        One row per quantity: ``estimate``, ``between_variance``, ``within_variance``, ``total_variance``,
        ``df``, ``ci_lower``, ``ci_upper``, and for ``kind="full"`` ``adjusted``.

    Examples
    --------
    >>> table = combine([[1.0], [2.0], [3.0]], [[0.3], [0.3], [0.3]], kind="full")
    >>> round(float(table["total_variance"].iloc[0]), 4)  # (1 + 1/3) * 1 - 0.3
    1.0333

    References
    ----------
    .. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets. *Survey
        Methodology*, 29, 181-188.
    .. [2] Raghunathan, T. E., Reiter, J. P., & Rubin, D. B. (2003). Multiple imputation for statistical
        disclosure limitation. *Journal of Official Statistics*, 19, 1-16.
    .. [3] Reiter, J. P. (2002). Satisfying disclosure restrictions with synthetic data sets. *Journal of
        Official Statistics*, 18, 531-543.
    """
    _check_kind(kind)
    if kind == "full":
        return combine_fully_synthetic(estimates, variances, level, n_syn=n_syn, n=n)
    if kind == "simple":
        return combine_simple_synthesis(estimates, variances, level, n_syn=n_syn, n=n, proper=proper)
    _size_ratio(n_syn, n)  # the same checks, though the partially synthetic rules do not use the sizes
    return combine_partially_synthetic(estimates, variances, level)


@dataclass(frozen=True)
class WaldTest:
    """A test of ``Q = Q0`` for ``k`` quantities at once from ``m`` synthetic datasets (Reiter 2005).

    Attributes
    ----------
    statistic
        ``S_p`` or ``S_f`` (or, where ``adjusted``, ``(q_bar - Q0)' U_bar^{-1} (q_bar - Q0) / (k n_syn / n)``).
    df_num, df_den
        The reference ``F(k, nu)``: ``k`` and ``nu_p`` or ``nu_f`` (infinite where ``adjusted``).
    p_value
        ``P(F(k, nu) > statistic)``.
    r
        ``r_p = tr(B_m U_bar^{-1}) / (k m)`` or ``r_f = (1 + 1/m) tr(B_m U_bar^{-1}) / k``.
    kind
        ``"partial"`` or ``"full"``.
    m
        Number of synthetic datasets.
    adjusted
        Fully synthetic data with ``r_f <= 1``: the statistic of the module docstring's adjustment.
    total_statistic
        ``(q_bar - Q0)' T^{-1} (q_bar - Q0) / k`` with the total covariance matrix itself (``T_p = U_bar + B_m/m``,
        or ``T_f = (1 + 1/m) B_m - U_bar``), NaN where it is not positive definite. It equals ``statistic``
        when ``B_m`` is proportional to ``U_bar``; it is shown for comparison and not referred to ``F``.
    """

    statistic: float
    df_num: int
    df_den: float
    p_value: float
    r: float
    kind: str
    m: int
    adjusted: bool
    total_statistic: float


def _small_t_df(t: int, k: int, r: float, sign: int) -> float:
    """Li, Raghunathan & Rubin's (1991) denominator degrees of freedom, ``sign = +1`` partially and ``-1``
    fully synthetic data (``r > 0``)."""
    if t > 4:
        return 4 + (t - 4) * (1 + sign * (1 - 2 / t) / r) ** 2
    return t * (1 + 1 / k) * (1 + sign / r) ** 2 / 2


def _quadratic(matrix: np.ndarray, d: np.ndarray) -> float:
    """``d' matrix^{-1} d`` for a positive definite ``matrix`` (NaN otherwise)."""
    try:
        lower = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return float("nan")
    z = np.linalg.solve(lower, d)
    return float(z @ z)


def wald_test(
    estimates: Any,
    covariances: Any,
    kind: Kind = "partial",
    null: Any = None,
    *,
    n_syn: float | None = None,
    n: float | None = None,
) -> WaldTest:
    """Test ``Q = Q0`` for ``k`` quantities at once from ``m`` synthetic datasets (Reiter 2005).

    The formulas, their conditions and what is done when the fully synthetic ``r_f <= 1`` are in the module's
    docstring.

    Parameters
    ----------
    estimates
        Point estimates, shape ``(m, k)`` (one row per synthetic dataset).
    covariances
        Their estimated covariance matrices, shape ``(m, k, k)``.
    kind
        ``"partial"`` or ``"full"`` (:func:`kind_of_release`).
    null
        ``Q0``, length ``k`` (default zeros).
    n_syn, n
        Records per synthetic dataset and records collected (the fully synthetic adjustment only; neither:
        ``n_syn = n``).

    Returns
    -------
    WaldTest
        The statistic, its reference ``F(k, nu)`` and the p-value.

    Raises
    ------
    ValueError
        Shapes that do not match, ``m < 2``, or a mean covariance ``U_bar`` that is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> test = wald_test([[1.0, 0.0], [2.0, 1.0], [3.0, 2.0], [2.0, 1.0]], np.tile(np.diag([0.5, 1.0]), (4, 1, 1)))
    >>> round(test.statistic, 4), round(test.df_den, 4)  # r_p = 2 / 8; S_p = 9 / (2 * 1.25)
    (3.6, 30.8889)

    References
    ----------
    .. [1] Reiter, J. P. (2005). Significance tests for multi-component estimands from multiply imputed,
        synthetic microdata. *Journal of Statistical Planning and Inference*, 131, 365-377.
    .. [2] Li, K. H., Raghunathan, T. E., & Rubin, D. B. (1991). Large-sample significance levels from
        multiply imputed data using moment-based statistics and an F reference distribution. *Journal of the
        American Statistical Association*, 86, 1065-1073.
    .. [3] Reiter, J. P. (2002). Satisfying disclosure restrictions with synthetic data sets. *Journal of
        Official Statistics*, 18, 531-543.
    """
    _check_kind(kind)
    if kind == "simple":
        raise ValueError("wald_test: kind='simple' has no multi-component test here (synthpop gives none); use "
                         "kind='full' or test one quantity at a time with combine(kind='simple')")  # fmt: skip
    ratio = _size_ratio(n_syn, n)
    q = np.asarray(estimates, dtype=float)
    u = np.asarray(covariances, dtype=float)
    if q.ndim != 2 or u.shape != (*q.shape, q.shape[1]):
        raise ValueError(f"estimates must have shape (m, k) and covariances (m, k, k); got {q.shape} and {u.shape}")
    m, k = q.shape
    if m < 2:
        raise ValueError("the combining rules need at least m = 2 synthetic datasets")
    q0 = np.zeros(k) if null is None else np.asarray(null, dtype=float).reshape(-1)
    if q0.shape != (k,):
        raise ValueError(f"null must have length k = {k}, got {q0.shape[0]}")
    q_bar = q.mean(axis=0)
    deviations = q - q_bar
    b_m = deviations.T @ deviations / (m - 1)
    u_bar = u.mean(axis=0)
    u_bar = (u_bar + u_bar.T) / 2
    d = q_bar - q0
    w = _quadratic(u_bar, d)
    if not np.isfinite(w):
        raise ValueError("the mean within-dataset covariance U_bar must be positive definite")
    trace = float(np.trace(np.linalg.solve(u_bar, b_m)))
    t = k * (m - 1)
    adjusted = False
    if kind == "partial":
        r = trace / (k * m)
        statistic = w / (k * (1 + r))
        df = _small_t_df(t, k, r, +1) if r > 0 else np.inf
        total = u_bar + b_m / m
    else:
        r = (1 + 1 / m) * trace / k
        total = (1 + 1 / m) * b_m - u_bar
        if r > 1:
            statistic = w / (k * (r - 1))
            df = _small_t_df(t, k, r, -1)
        else:
            adjusted = True
            statistic = w / (k * ratio)
            df = np.inf
    p_value = stats.chi2.sf(k * statistic, k) if np.isinf(df) else stats.f.sf(statistic, k, df)
    return WaldTest(
        statistic=float(statistic), df_num=k, df_den=float(df), p_value=float(p_value), r=float(r), kind=kind,
        m=m, adjusted=adjusted, total_statistic=_quadratic((total + total.T) / 2, d) / k,
    )  # fmt: skip
