"""Weighted estimates (``synthesis/survey.py``) and weighted tables (``synthesis/tables.py``), against hand-worked
values and closed forms."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.synthesis import streams
from bayessdc.synthesis.regression import regression_utility
from bayessdc.synthesis.survey import combined_weighted_mean, weighted_mean, weighted_regression
from bayessdc.synthesis.tables import TableSpec, count_table, relative_cell_errors, tau_bootstrap, tau_synthetic


def test_weighted_mean_and_its_linearization_variance_by_hand():
    estimate, variance = weighted_mean([1.0, 2.0, 4.0, 3.0], [1.0, 1.0, 2.0, 4.0])
    mu = (1 + 2 + 8 + 12) / 8
    z = np.array([1 * (1 - mu), 1 * (2 - mu), 2 * (4 - mu), 4 * (3 - mu)]) / 8
    assert estimate == pytest.approx(mu)
    assert variance == pytest.approx(4 / 3 * np.sum((z - z.mean()) ** 2))


def test_a_missing_value_is_outside_the_domain_and_still_counts_in_n():
    estimate, variance = weighted_mean([1.0, np.nan, 4.0], [1.0, 5.0, 2.0])
    mu = (1 + 8) / 3
    z = np.array([(1 - mu) / 3, 0.0, 2 * (4 - mu) / 3])  # z = 0 outside the domain, n = 3
    assert estimate == pytest.approx(mu)
    assert variance == pytest.approx(3 / 2 * np.sum((z - z.mean()) ** 2))


def _tiny() -> pd.DataFrame:
    return pd.DataFrame({"y": [1.0, 3.0, 2.0, 5.0, 4.0, 7.0], "x": [0.0, 1.0, 1.0, 2.0, 3.0, 3.0],
                         "wt": [1.0, 2.0, 1.0, 3.0, 2.0, 1.0]})  # fmt: skip


def test_weighted_regression_is_the_wls_closed_form_with_the_sandwich_variance():
    frame = _tiny()
    X = np.column_stack([np.ones(6), frame["x"]])
    W = np.diag(frame["wt"])
    y = frame["y"].to_numpy()
    bread = np.linalg.inv(X.T @ W @ X)
    beta = bread @ X.T @ W @ y
    e = y - X @ beta
    meat = X.T @ np.diag(frame["wt"] ** 2 * e**2) @ X
    sandwich = 6 / 5 * bread @ meat @ bread
    coefficients, variances = weighted_regression(frame, "y", ["x"], "wt")
    assert coefficients.to_numpy() == pytest.approx(beta)
    assert variances.to_numpy() == pytest.approx(np.diag(sandwich))


def test_the_regression_variance_matches_statsmodels_hc0():
    import statsmodels.api as sm

    frame = _tiny()
    fit = sm.WLS(frame["y"], sm.add_constant(frame["x"]), weights=frame["wt"]).fit(cov_type="HC0")
    _, variances = weighted_regression(frame, "y", ["x"], "wt")
    assert variances.to_numpy() == pytest.approx(np.diag(fit.cov_params()) * 6 / 5)


def test_regression_utility_with_weights_is_weighted_on_both_sides():
    frame = _tiny()
    synthetic = pd.concat([frame.assign(synthetic=k) for k in (1, 2)], ignore_index=True)
    table = regression_utility(frame, synthetic, "y", ["x"], weights="wt")
    coefficients, variances = weighted_regression(frame, "y", ["x"], "wt")
    assert table["original"].to_numpy() == pytest.approx(coefficients.to_numpy())
    assert table["estimate"].to_numpy() == pytest.approx(coefficients.to_numpy())
    assert table["total_variance"].to_numpy() == pytest.approx(variances.to_numpy())  # b_m = 0: T_p = u_bar
    from scipy import stats

    # the original's t(n - 1) interval holds the combined normal one (b_m = 0: infinite df)
    expected = 0.5 * (1 + stats.norm.ppf(0.975) / stats.t.ppf(0.975, 5))
    assert table["ci_overlap"].to_numpy() == pytest.approx(expected)


def test_combined_weighted_mean_of_identical_datasets_is_the_datasets_estimate():
    frame = _tiny()
    synthetic = pd.concat([frame.assign(synthetic=k) for k in (1, 2, 3)], ignore_index=True)
    table = combined_weighted_mean(synthetic, "y", "wt")
    estimate, variance = weighted_mean(frame["y"], frame["wt"])
    assert table.loc["y", "estimate"] == pytest.approx(estimate)
    assert table.loc["y", "total_variance"] == pytest.approx(variance)


def test_a_weighted_table_sums_the_weights_of_each_cell():
    frame = pd.DataFrame({"a": ["x", "y", "x", None, "y"], "wt": [1.5, 2.0, 3.0, 4.0, 0.5]})
    table = count_table(frame, TableSpec("t", ("a",)), weights="wt")
    assert table["x"] == 4.5 and table["y"] == 2.5
    assert [v for k, v in table.items() if pd.isna(k)] == [4.0]  # a missing value is a cell, weighted too
    synthetic = pd.DataFrame({"synthetic": [1, 1, 1, 1, 1], "a": ["x", "x", "x", "y", "y"],
                              "wt": [1.0, 1.0, 1.0, 1.0, 1.5]})  # fmt: skip
    # weighted totals x 3 (4.5), y 2.5 (2.5), NaN 0 (4): L1 = 1.5 + 0 + 4, N = 11
    assert tau_synthetic(frame, synthetic, TableSpec("t", ("a",)), "wt").iloc[0] == pytest.approx(1 - 5.5 / 22)
    errors = relative_cell_errors(frame, synthetic, "a", weights="wt")
    assert errors.set_index("category").loc["x", "relative_error"] == pytest.approx((3.0 - 4.5) / 4.5)


def test_weighted_bootstrap_with_equal_weights_moves_tables_as_the_count_bootstrap():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.choice(list("abcd"), 300), "wt": 7.0})
    spec = TableSpec("t", ("a",))
    weighted = tau_bootstrap(frame, spec, 400, streams.rng(0, "test"), weights="wt")
    counts = tau_bootstrap(frame, spec, 400, streams.rng(0, "test"))
    assert weighted.max() <= 1.0
    assert weighted.mean() == pytest.approx(counts.mean(), abs=0.01)


def test_the_weighted_pmse_is_the_record_level_weighted_fit():
    from bayessdc.risk.release_figures import CategoricalReleaseFigures
    from bayessdc.synthesis.categorical import weighted_pmse

    rng = np.random.default_rng(5)
    n = 200
    original = pd.DataFrame({"a": rng.choice(["p", "q"], n), "b": rng.choice(["x", "y", "z"], n),
                             "wt": rng.choice([1.0, 4.0], n)})  # fmt: skip
    dataset = original.assign(b=rng.permutation(original["b"].to_numpy()))
    figures = CategoricalReleaseFigures(original, ["b"], ["a"], [["a"]], ways=(), survey_weights=original["wt"])
    result = figures.of_dataset(dataset)
    w = original["wt"].to_numpy() * n / original["wt"].sum()
    stacked = pd.concat([original[["a", "b"]], dataset[["a", "b"]]], ignore_index=True)
    fit = weighted_pmse(stacked, np.repeat([0, 1], n), np.tile(w, 2), ["b"])
    assert result["pmse"] == pytest.approx(fit["pmse"], rel=1e-5)
    design_effect = np.mean(w**2)  # Kish: n sum w^2 / (sum w)^2
    assert result["pmse_ratio"] == pytest.approx(fit["pmse"] / (fit["null_expectation"] * design_effect), rel=1e-5)
    unweighted = CategoricalReleaseFigures(original, ["b"], ["a"], [["a"]], ways=()).of_dataset(dataset)
    assert unweighted["pmse"] != pytest.approx(result["pmse"], rel=1e-3)  # the weights change the figure
