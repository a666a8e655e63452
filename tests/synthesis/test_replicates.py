"""Replicate-weight variances against the textbook formulas they must reproduce exactly."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.linalg import hadamard

from bayessdc.synthesis.replicates import ReplicateDesign, replicate_columns, replicate_variance


def _mean(frame, weights):
    return np.average(frame["y"], weights=weights)


def test_delete_one_jackknife_of_a_weighted_mean_is_the_jackknife_by_hand():
    rng = np.random.default_rng(0)
    n = 9
    frame = pd.DataFrame({"y": rng.normal(size=n), "w": rng.uniform(1, 3, n)})
    columns = []
    for r in range(n):  # JK1: unit r dropped, the others' weights scaled by n / (n - 1)
        frame[f"rep{r}"] = np.where(np.arange(n) == r, 0.0, frame["w"] * n / (n - 1))
        columns.append(f"rep{r}")
    estimate, covariance = replicate_variance(_mean, frame, "w", ReplicateDesign(tuple(columns), method="jk1"))
    full = np.average(frame.y, weights=frame.w)
    leave_one_out = [np.average(np.delete(frame.y, r), weights=np.delete(frame.w, r)) for r in range(n)]
    assert estimate[0] == pytest.approx(full)
    assert covariance[0, 0] == pytest.approx((n - 1) / n * sum((t - full) ** 2 for t in leave_one_out))


def test_balanced_half_samples_give_the_two_psus_per_stratum_variance_of_a_total():
    # 3 strata of 2 PSUs; the 4 half-samples of a 4 x 4 Hadamard matrix's columns 1-3 are balanced, so BRR's
    # variance of the weighted total is exactly sum_h (t_h1 - t_h2)^2, the textbook with-replacement estimator.
    totals = np.array([[3.0, 5.0], [10.0, 4.0], [7.0, 7.5]])
    frame = pd.DataFrame({"y": totals.ravel(), "w": 1.0})
    H = hadamard(4)[:, 1:]  # replicate r keeps PSU 1 of stratum h when H[r, h] = 1, else PSU 2
    columns = []
    for r in range(4):
        keep_first = H[r] == 1
        frame[f"brr{r}"] = np.column_stack([2.0 * keep_first, 2.0 * ~keep_first]).ravel()
        columns.append(f"brr{r}")
    total = lambda f, w: float(np.sum(w * f["y"]))  # noqa: E731
    estimate, covariance = replicate_variance(total, frame, "w", ReplicateDesign(tuple(columns), method="brr"))
    assert estimate[0] == totals.sum()
    assert covariance[0, 0] == pytest.approx(((totals[:, 0] - totals[:, 1]) ** 2).sum())
    # Fay's variant with rho = 0.5 (weights 1.5 and 0.5) gives the same variance of a linear estimator
    fay = frame.copy()
    for c in columns:
        fay[c] = np.where(frame[c] > 0, 1.5, 0.5)
    _, fay_covariance = replicate_variance(total, fay, "w", ReplicateDesign(tuple(columns), method="fay", rho=0.5))
    assert fay_covariance[0, 0] == pytest.approx(covariance[0, 0])


def test_successive_difference_factor_and_a_vector_estimate():
    rng = np.random.default_rng(1)
    n, R = 40, 4
    frame = pd.DataFrame({"x": rng.normal(size=n), "w": rng.uniform(1, 2, n)})
    frame["y"] = 1 + 2 * frame.x + rng.normal(size=n)
    for r in range(R):
        frame[f"PWGTP{r + 1}"] = frame.w * rng.choice([0.3, 1.7], size=n)
    columns = replicate_columns(frame, "PWGTP")
    assert columns == ("PWGTP1", "PWGTP2", "PWGTP3", "PWGTP4")

    def coefficients(f, w):
        return sm.WLS(f["y"], sm.add_constant(f["x"]), weights=w).fit().params.to_numpy()

    estimate, covariance = replicate_variance(coefficients, frame, "w", ReplicateDesign(columns, method="sdr"))
    full = coefficients(frame, frame.w)
    by_hand = sum(np.outer(d, d) for d in (coefficients(frame, frame[c]) - full for c in columns)) * 4 / R
    assert np.allclose(estimate, full) and np.allclose(covariance, by_hand)
    assert covariance.shape == (2, 2) and np.allclose(covariance, covariance.T)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"columns": ("a",)}, "at least 2 columns"),
        ({"columns": ("a", "a")}, "listed twice: a"),
        ({"columns": ("a", "b"), "method": "jkn"}, "must be one of"),
        ({"columns": ("a", "b"), "method": "fay"}, "rho is Fay's factor"),
        ({"columns": ("a", "b"), "method": "fay", "rho": 1.0}, r"in \[0, 1\)"),
        ({"columns": ("a", "b"), "scale": -1.0}, "positive number"),
    ],
)
def test_bad_designs_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ReplicateDesign(**kwargs)


def test_bad_replicate_values_are_refused_naming_the_column_and_rows():
    frame = pd.DataFrame({"y": [1.0, 2.0, 3.0], "w": 1.0, "r1": [1.0, np.nan, 1.0], "r2": [1.0, 1.0, -2.0]})
    design = ReplicateDesign(("r1", "r2"), method="jk1")
    with pytest.raises(ValueError, match="'r1' has missing, non-numeric or negative values at data row.s. 1"):
        replicate_variance(_mean, frame, "w", design)
    with pytest.raises(ValueError, match="not in the data: r3"):
        replicate_variance(_mean, frame, "w", ReplicateDesign(("r1", "r3"), method="jk1"))
    assert ReplicateDesign(("a", "b", "c", "d"), method="sdr").factor == 1.0
