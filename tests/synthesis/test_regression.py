import numpy as np
import pandas as pd
import pytest

from bayessdc.synthesis.regression import interval_overlap, regression_utility


def test_interval_overlap_by_hand():
    # [0, 2] and [1, 5]: overlap 1, lengths 2 and 4 -> (1/2 + 1/4)/2 = 0.375
    assert interval_overlap(np.array([0.0]), np.array([2.0]), np.array([1.0]), np.array([5.0]))[0] == 0.375
    assert interval_overlap(np.array([0.0]), np.array([1.0]), np.array([0.0]), np.array([1.0]))[0] == 1.0
    assert interval_overlap(np.array([0.0]), np.array([1.0]), np.array([2.0]), np.array([3.0]))[0] < 0


def test_regression_utility_of_copies_matches_original():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    original = pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.normal(size=200)})
    copies = pd.concat([original.assign(synthetic=k) for k in (1, 2, 3)], ignore_index=True)
    table = regression_utility(original, copies, "y", ["x"])
    assert list(table.index) == ["intercept", "x"]
    # identical datasets: between variance 0, combined estimate and variance equal the original's
    assert np.allclose(table["estimate"], table["original"])
    assert np.allclose(table["between_variance"], 0)
    assert table.loc["x", "original"] == pytest.approx(2, abs=0.2)
    assert (table["ci_overlap"] > 0.95).all()


def test_regression_utility_combines_by_the_kind_of_release():
    rng = np.random.default_rng(1)
    x = rng.normal(size=200)
    original = pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.normal(size=200)})
    copies = pd.concat([original.assign(synthetic=k) for k in (1, 2, 3)], ignore_index=True)
    partial = regression_utility(original, copies, "y", ["x"])
    full = regression_utility(original, copies, "y", ["x"], kind="full")
    assert "adjusted" not in partial and full["adjusted"].all()
    # identical datasets: T_f = (1 + 1/3) 0 - u_bar < 0, so Reiter's (2002) (n_syn / n) u_bar with n_syn = n:
    # the same normal interval as the partially synthetic rules' T_p = u_bar + 0
    assert np.allclose(full["total_variance"], full["within_variance"])
    assert np.isinf(full["df"]).all()
    assert np.allclose(full[["ci_lower", "ci_upper"]], partial[["ci_lower", "ci_upper"]])
    # datasets twice the original's size (each record twice): n_syn / n = 2 doubles the adjusted variance
    doubled = pd.concat([copies, copies], ignore_index=True)
    twice = regression_utility(original, doubled, "y", ["x"], kind="full")
    assert np.allclose(twice["total_variance"], 2 * twice["within_variance"])
