import numpy as np
import pandas as pd
import pytest

from bayessdc.synthesis.utility import margin_deviation, proportion_of_total_variation, total_variation_by_dataset


def test_tau_worked_by_hand():
    # L1 = |10-8| + |5-7| + |5-5| = 4, n = 20: tau = 1 - 4/40 = 0.9
    assert proportion_of_total_variation([10, 5, 5], [8, 7, 5]) == pytest.approx(0.9)
    assert proportion_of_total_variation([1, 2], [1, 2]) == 1.0
    assert proportion_of_total_variation([4, 0], [0, 4]) == 0.0


def test_tau_aligns_series_and_counts_missing_cells_as_zero():
    a = pd.Series({"x": 3, "y": 1})
    b = pd.Series({"x": 3, "z": 1})
    assert proportion_of_total_variation(a, b) == pytest.approx(1 - 2 / 8)


def test_margin_deviation_by_hand():
    original = pd.DataFrame({"o": ["a", "a", "b"], "n": [1, 2, 3]})
    synthetic = pd.concat(
        [
            original.assign(n=[2, 2, 3], synthetic=1),  # a total 4 vs 3, b 3 vs 3: deviation 1
            original.assign(n=[1, 2, 6], synthetic=2),  # b total 6 vs 3: deviation 3
        ]
    )
    out = margin_deviation(original, synthetic, ["o"], "n")
    assert out["per_dataset"]["total_absolute_deviation"] == [1.0, 3.0]
    assert out["total_absolute_deviation"] == 2.0
    assert out["relative_deviation"] == pytest.approx(2 / 6)
    taus = total_variation_by_dataset(original, synthetic, ["o"], "n")
    assert np.allclose(taus.to_numpy(), [1 - 1 / 12, 1 - 3 / 12])
