"""Variances from replicate weights: what an agency's file carries in place of its strata and clusters.

Generic: a frame, its full-sample weight, its replicate weight columns and the rule that turns the replicate
estimates into a variance; nothing of any model. Many public-use files (the American Community Survey's 80
successive-difference replicates, the Current Population Survey's 160, the Consumer Expenditure Survey's 44 BRR
replicates, Statistics Canada's bootstrap weights) publish replicate weights so that a user outside the agency can
compute design-based variances without the design. A partially synthetic release that keeps the weights keeps the
replicate weights with them, and each of the ``m`` datasets is analysed exactly as the collected sample would be:
the estimate with the full-sample weight, its variance from the replicates, then the combining rules of
:mod:`bayessdc.synthesis.combining`.

For an estimator ``theta`` computed with the full-sample weight and ``theta_r`` with replicate ``r`` (``R`` of
them), the variance is ``c sum_r (theta_r - theta)^2`` (Wolter 2007, Ch. 3-5; the "mse" form, centred on the
full-sample estimate, as the ACS and CPS documentation prescribe), with ``c`` by method:

============  ================================  =====================================================
method        ``c``                             where
============  ================================  =====================================================
``sdr``       ``4 / R``                         successive difference (ACS, CPS; Fay & Train 1995)
``jk1``       ``(R - 1) / R``                   delete-one-group jackknife, unstratified
``brr``       ``1 / R``                         balanced repeated replication
``fay``       ``1 / (R (1 - rho)^2)``           Fay's BRR with perturbation factor ``rho``
``bootstrap`` ``1 / R``                         (rescaled) bootstrap replicate weights
============  ================================  =====================================================

A file whose documentation gives another factor (e.g. a stratified jackknife, JKn) passes it as ``scale``.

This is the well-known computation that survey packages (R's ``survey::svrepdesign``) perform; it is written here
because no maintained Python survey package could be installed beside this one (see
:mod:`bayessdc.synthesis.survey`: samplics is archived) and it is a few lines of arithmetic on the estimates.

References
----------
.. [1] Wolter, K. M. (2007). *Introduction to Variance Estimation*, 2nd ed. Springer.
.. [2] Fay, R. E., & Train, G. F. (1995). Aspects of survey and model-based postcensal estimation of income and
    poverty characteristics for states and counties. *Proceedings of the Section on Government Statistics*,
    American Statistical Association, 154-159.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "REPLICATE_METHODS", "ReplicateDesign", "invalid_replicate_rows", "replicate_columns", "replicate_variance",
]

#: The replication methods whose variance factor is known from the number of replicates (``rho`` for ``fay``).
REPLICATE_METHODS = ("sdr", "jk1", "brr", "fay", "bootstrap")


@dataclass(frozen=True)
class ReplicateDesign:
    """How a file's replicate weights give a variance: the columns, the method and its factor.

    Parameters
    ----------
    columns
        The replicate weight columns, in order (e.g. ``PWGTP1`` .. ``PWGTP80`` of the ACS).
    method
        One of :data:`REPLICATE_METHODS` (see the module's table).
    rho
        Fay's perturbation factor, for ``method="fay"`` only (0.5 in the CE and many BRR files).
    scale
        The factor ``c`` as the file's documentation states it; overrides the method's.
    """

    columns: tuple[str, ...]
    method: str = "sdr"
    rho: float | None = None
    scale: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        if len(self.columns) < 2:
            raise ValueError(f"replicate weights need at least 2 columns, got {len(self.columns)}")
        repeated = sorted({c for c in self.columns if self.columns.count(c) > 1})
        if repeated:
            raise ValueError(f"replicate weight column(s) listed twice: {', '.join(map(str, repeated))}")
        if self.method not in REPLICATE_METHODS:
            raise ValueError(f"replicate method must be one of {', '.join(REPLICATE_METHODS)}, got {self.method!r}")
        if (self.method == "fay") != (self.rho is not None):
            raise ValueError("rho is Fay's factor: give it with method='fay' and only then")
        if self.rho is not None and not 0 <= self.rho < 1:
            raise ValueError(f"Fay's rho must be in [0, 1), got {self.rho}")
        if self.scale is not None and not (np.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"the replicate variance scale must be a positive number, got {self.scale}")

    @property
    def factor(self) -> float:
        """The factor ``c`` of ``c sum_r (theta_r - theta)^2``."""
        if self.scale is not None:
            return float(self.scale)
        R = len(self.columns)
        return {
            "sdr": 4.0 / R,
            "jk1": (R - 1.0) / R,
            "brr": 1.0 / R,
            "fay": 1.0 / (R * (1.0 - (self.rho or 0.0)) ** 2),
            "bootstrap": 1.0 / R,
        }[self.method]

    def to_dict(self) -> dict[str, object]:
        """The design as model.json records it."""
        return {"columns": list(self.columns), "method": self.method, "rho": self.rho, "factor": self.factor}


def replicate_variance(
    estimator: Callable[[pd.DataFrame, np.ndarray], float | np.ndarray],
    frame: pd.DataFrame,
    weight: str,
    design: ReplicateDesign,
) -> tuple[np.ndarray, np.ndarray]:
    """The estimate with the full-sample weight and its replicate variance ``c sum_r (theta_r - theta)^2``.

    Parameters
    ----------
    estimator
        ``estimator(frame, weights)`` returns the estimate (a number or a vector, e.g. regression coefficients)
        computed with the given weights.
    frame
        The records, with the weight and the replicate weight columns.
    weight
        The full-sample weight column.
    design
        The replicate columns and the variance rule.

    Returns
    -------
    estimate, covariance
        ``theta`` (1-d, length p) and ``c sum_r (theta_r - theta)(theta_r - theta)'`` (p x p).

    Raises
    ------
    ValueError
        A replicate column missing from the frame, or holding missing, infinite or negative values (a replicate
        weight of 0 is allowed: the jackknife and BRR drop units that way).

    Examples
    --------
    The delete-one jackknife (JK1) of an unweighted mean gives the textbook ``s^2 / n`` exactly:

    >>> import numpy as np, pandas as pd
    >>> y = np.array([1.0, 2.0, 4.0, 7.0])
    >>> frame = pd.DataFrame({"y": y, "w": 1.0})
    >>> for r in range(4):
    ...     frame[f"r{r}"] = np.where(np.arange(4) == r, 0.0, 4 / 3)
    >>> design = ReplicateDesign(tuple(f"r{r}" for r in range(4)), method="jk1")
    >>> mean = lambda f, w: np.average(f["y"], weights=w)
    >>> estimate, covariance = replicate_variance(mean, frame, "w", design)
    >>> bool(np.isclose(covariance[0, 0], y.var(ddof=1) / 4))
    True
    """
    missing = [c for c in (weight, *design.columns) if c not in frame.columns]
    if missing:
        raise ValueError(f"replicate weight column(s) not in the data: {', '.join(map(str, missing))}")
    for column in design.columns:
        bad = invalid_replicate_rows(frame[column])
        if len(bad):
            raise ValueError(
                f"replicate weight column {column!r} has missing, non-numeric or negative values at data row(s) "
                f"{', '.join(map(str, bad[:5]))}{', ...' if len(bad) > 5 else ''}"
            )
    full = np.atleast_1d(np.asarray(estimator(frame, frame[weight].to_numpy(dtype=float)), dtype=float))
    deviations = np.array(
        [np.atleast_1d(np.asarray(estimator(frame, frame[c].to_numpy(dtype=float)), dtype=float)) - full
         for c in design.columns]
    )  # fmt: skip
    return full, design.factor * deviations.T @ deviations


def invalid_replicate_rows(values: pd.Series) -> np.ndarray:
    """Positions of the values that are no replicate weight: missing, non-numeric, infinite or negative (0 is one:
    the jackknife and BRR drop units that way)."""
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    return np.flatnonzero(~np.isfinite(numbers) | (numbers < 0))


def replicate_columns(frame: pd.DataFrame, prefix: str) -> tuple[str, ...]:
    """The columns named ``prefix`` followed by a number, in the numbers' order (``PWGTP1`` .. ``PWGTP80``)."""
    found = []
    for column in frame.columns:
        rest = str(column)[len(prefix):] if str(column).startswith(prefix) else ""
        if rest.isdigit():
            found.append((int(rest), column))
    return tuple(column for _, column in sorted(found))
