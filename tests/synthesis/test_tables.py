import numpy as np
import pandas as pd
import pytest

from bayessdc.synthesis.tables import (
    TableSpec,
    count_table,
    relative_cell_errors,
    summarize_relative_errors,
    summarize_tau,
    tau_bootstrap,
    tau_distributions,
    tau_synthetic,
)
from bayessdc.synthesis.utility import proportion_of_total_variation

ORIGINAL = pd.DataFrame(
    {
        "age": [10, 20, 30, 40, 50, 60, 70, 15],
        "sex": ["f", "m", "f", "m", "f", "m", "f", "m"],
        "edu": ["lo", "lo", "hi", "hi", "hi", "lo", "lo", "lo"],
    }
)


def test_tau_of_a_table_worked_by_hand():
    # adults (age >= 18): 6 records; table sex x edu: f-hi 2, f-lo 1, m-hi 1, m-lo 2
    spec = TableSpec("T", ("sex", "edu"), "age >= 18")
    assert count_table(ORIGINAL, spec).to_dict() == {("f", "hi"): 2, ("f", "lo"): 1, ("m", "hi"): 1, ("m", "lo"): 2}
    one = ORIGINAL.assign(edu=["lo", "lo", "lo", "hi", "hi", "lo", "lo", "hi"], synthetic=1)
    # dataset 1: f-hi 1, f-lo 2, m-hi 1, m-lo 2 -> L1 = 2, n = 6: tau = 1 - 2/12
    two = ORIGINAL.assign(sex="f", synthetic=2)
    # dataset 2: f-hi 3, f-lo 3, m 0 -> L1 = 1 + 2 + 1 + 2 = 6: tau = 1 - 6/12
    taus = tau_synthetic(ORIGINAL, pd.concat([one, two]), spec)
    assert taus.to_dict() == pytest.approx({1: 1 - 2 / 12, 2: 0.5})


def test_tau_of_the_original_against_itself_is_one():
    spec = TableSpec("T", ("sex", "age", "edu"), None, {"age": [0, 18, 45, 100]})
    copies = pd.concat([ORIGINAL.assign(synthetic=k) for k in (1, 2)])
    copies["edu"] = copies["edu"].astype("category")  # categorical and plain columns align cell by cell
    assert tau_synthetic(ORIGINAL, copies, spec).tolist() == [1.0, 1.0]
    assert count_table(ORIGINAL, spec).sum() == 8


def test_bootstrap_tables_have_the_distribution_of_resampled_records():
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 60, p=[0.6, 0.3, 0.1]), "age": rng.integers(0, 90, 60)})
    spec = TableSpec("T", ("a",), "age >= 18")
    fast = tau_bootstrap(data, spec, 4000, np.random.default_rng(1))
    base = count_table(data, spec)
    direct = [
        proportion_of_total_variation(base, count_table(data.iloc[resample.integers(0, 60, 60)], spec))
        for resample in (np.random.default_rng(s) for s in range(200))
    ]
    assert fast.mean() == pytest.approx(np.mean(direct), abs=0.01)
    assert np.quantile(fast, 0.25) == pytest.approx(np.quantile(direct, 0.25), abs=0.02)
    assert (fast <= 1).all() and (fast > 0.5).all()
    # tau = 1 - L1 / (2 n) with n the adults of the data and L1 a whole number of records: 2 n tau is whole
    lattice = 2 * base.sum() * np.asarray(fast)
    assert np.allclose(lattice, np.round(lattice), rtol=0, atol=1e-9)
    assert (fast == 1).mean() < 0.05  # a resample rarely reproduces every cell count


def test_tau_distributions_and_summary():
    synthetic = pd.concat([ORIGINAL.assign(synthetic=k) for k in (1, 2, 3)])
    tables = [TableSpec("T1", ("sex",)), TableSpec("T2", ("sex", "edu"), "age >= 18")]
    taus = tau_distributions(ORIGINAL, synthetic, tables, n_bootstrap=50, seed=0)
    assert taus.groupby(["table", "source"]).size().to_dict() == {
        ("T1", "bootstrap"): 50,
        ("T1", "synthetic"): 3,
        ("T2", "bootstrap"): 50,
        ("T2", "synthetic"): 3,
    }
    summary = summarize_tau(taus)
    assert summary["T1"]["synthetic"]["median"] == 1.0 and summary["T1"]["synthetic"]["n"] == 3
    assert summary["T2"]["bootstrap"]["q1"] <= summary["T2"]["bootstrap"]["median"] <= summary["T2"]["bootstrap"]["q3"]
    again = tau_distributions(ORIGINAL, synthetic, tables, n_bootstrap=50, seed=0)
    pd.testing.assert_frame_equal(taus, again)


def test_relative_cell_errors_by_hand():
    one = ORIGINAL.assign(edu=["hi"] * 8, synthetic=1)  # adults: hi 6 vs 3 (+1), lo 0 vs 3 (-1)
    two = ORIGINAL.assign(synthetic=2)  # unchanged
    errors = relative_cell_errors(ORIGINAL, pd.concat([one, two]), "edu", "age >= 18")
    got = errors.set_index(["synthetic", "category"])["relative_error"].to_dict()
    assert got == {(1, "hi"): 1.0, (1, "lo"): -1.0, (2, "hi"): 0.0, (2, "lo"): 0.0}
    summary = summarize_relative_errors(errors)
    assert summary["hi"]["original"] == 3 and summary["hi"]["max"] == 1.0 and summary["lo"]["min"] == -1.0
