import math

import numpy as np
import pandas as pd
import pytest

from bayessdc.synthesis.combining import combine_partially_synthetic


def test_reiter_rules_worked_by_hand():
    # m = 3 datasets, two coefficients
    estimates = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [10.0, 12.0, 14.0]})
    variances = pd.DataFrame({"a": [0.5, 0.7, 0.9], "b": [1.0, 1.0, 1.0]})
    table = combine_partially_synthetic(estimates, variances)
    assert list(table.index) == ["a", "b"]
    # a: q_bar = 2, b_m = (1 + 0 + 1)/2 = 1, u_bar = 0.7, T_p = 0.7 + 1/3, df = 2 (1 + 3 * 0.7 / 1)^2 = 19.22
    a = table.loc["a"]
    assert a["estimate"] == pytest.approx(2.0)
    assert a["between_variance"] == pytest.approx(1.0)
    assert a["within_variance"] == pytest.approx(0.7)
    assert a["total_variance"] == pytest.approx(0.7 + 1 / 3)
    assert a["df"] == pytest.approx(19.22)
    # t quantile 0.975 at 19.22 df: 2.0914 (tables 2.0930 at 19, 2.0860 at 20, interpolated in 1/df)
    half = a["ci_upper"] - a["estimate"]
    assert half == pytest.approx(2.0914 * math.sqrt(0.7 + 1 / 3), rel=1e-3)
    assert a["estimate"] - a["ci_lower"] == pytest.approx(half)
    # b: q_bar = 12, b_m = (4 + 0 + 4)/2 = 4, u_bar = 1, T_p = 1 + 4/3, df = 2 (1 + 3/4)^2 = 6.125
    b = table.loc["b"]
    assert (b["estimate"], b["between_variance"], b["within_variance"]) == pytest.approx((12.0, 4.0, 1.0))
    assert b["total_variance"] == pytest.approx(7 / 3)
    assert b["df"] == pytest.approx(6.125)
    # t quantile 0.975 at 6.125 df: 2.4351 (tables 2.4469 at 6, 2.3646 at 7, interpolated in 1/df)
    assert b["ci_upper"] - b["estimate"] == pytest.approx(2.4351 * math.sqrt(7 / 3), rel=1e-3)


def test_identical_estimates_give_infinite_df_and_normal_interval():
    table = combine_partially_synthetic(np.full((4, 1), 5.0), np.full((4, 1), 0.25), level=0.9)
    row = table.iloc[0]
    assert row["between_variance"] == 0 and math.isinf(row["df"])
    assert row["total_variance"] == pytest.approx(0.25)
    assert row["ci_upper"] == pytest.approx(5 + 1.644854 * 0.5, rel=1e-6)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="shape"):
        combine_partially_synthetic(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="m = 2"):
        combine_partially_synthetic(np.zeros((1, 2)), np.zeros((1, 2)))
