"""The fast per-dataset release figures (``bayessdc.risk.release_figures``) against the data-frame functions."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.risk.identification import inherent_risk, risk_by_dataset
from bayessdc.risk.release_figures import CategoricalReleaseFigures
from bayessdc.synthesis.categorical import pmse, table_deviations

KEEP = ["sex", "age"]
KNOWN = [["sex", "county"], ["sex", "age", "county"]]


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    original = pd.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "age": rng.integers(1, 12, n),  # 1..11: string order (1, 10, 11, 2, ...) differs from numeric
            "county": rng.choice([f"c{i}" for i in range(25)], n, p=np.r_[0.3, np.full(24, 0.7 / 24)]),
        }
    )
    datasets = []
    for k in range(1, 4):
        frame = original.copy()
        swap = rng.random(n) < 0.4
        frame.loc[swap, "county"] = rng.permutation(original["county"].to_numpy())[swap]
        datasets.append(frame.assign(synthetic=k))
    return original, pd.concat(datasets, ignore_index=True)


def test_every_figure_equals_the_data_frame_functions():
    original, synthetic = _data()
    figures = CategoricalReleaseFigures(original, ["county"], KEEP, KNOWN)
    fast = figures.by_dataset(synthetic).set_index("synthetic")
    assert list(fast.columns) == figures.names()
    slow = risk_by_dataset(original, synthetic, KNOWN, ["county"])
    # the long form risk.json is built from equals the data-frame function's, column for column
    long = figures.risk_by_dataset(synthetic)
    pd.testing.assert_frame_equal(long, slow[long.columns], check_dtype=False, rtol=1e-12)
    for name in ("sex+county", "sex+age+county"):
        rows = slow[slow["known"] == name].set_index("synthetic")
        for measure in ("expected_match_risk", "true_match_rate", "false_match_rate"):
            np.testing.assert_allclose(fast[f"{measure}[{name}]"], rows[measure], rtol=1e-12)
    np.testing.assert_array_equal(fast["attribute_disclosures"], rows["disclosures"])
    deviations = table_deviations(original, synthetic, ["county"], KEEP)
    for way in ("one-way", "two-way", "three-way"):
        np.testing.assert_array_equal(fast[f"table_deviation[{way}]"], deviations[way]["per_dataset"])
    # the same regression on the same rows in the same order: equal to the last digits
    slow_pmse = pmse(original, synthetic, KEEP + ["county"], ["county"])["per_dataset"]
    np.testing.assert_allclose(fast["pmse"], slow_pmse["pmse"], rtol=1e-9)
    np.testing.assert_allclose(fast["pmse_ratio"], slow_pmse["ratio"], rtol=1e-9)


def test_a_faithful_dataset_has_no_deviation_and_every_record_disclosed():
    original, _ = _data()
    figures = CategoricalReleaseFigures(original, ["county"], KEEP, KNOWN)
    same = figures.of_dataset(original)
    assert same["attribute_disclosures"] == len(original)
    assert same["table_deviation[one-way]"] == same["table_deviation[three-way]"] == 0
    assert same["pmse"] < 1e-8
    # every record's own row matches: expected match risk = number of distinct (sex, county) combinations
    assert same["expected_match_risk[sex+county]"] == pytest.approx(original.groupby(["sex", "county"]).ngroups)


def test_gate_figures_read_from_the_measures_carry_their_inherent_range_and_unknown_values_are_refused():
    from bayessdc.measures import MeasureInput, compute_measures
    from bayessdc.synthesis.release_gate import measure_figures

    original, synthetic = _data()
    data = MeasureInput(synthetic, original, released=[*KEEP, "county"], synthesized=["county"], kept=KEEP,
                        known_sets=KNOWN, partially_synthetic=True, repetitions=5, seed=1)  # fmt: skip
    table, kinds = measure_figures(compute_measures(data, ["expected_match_risk", "table_deviation"]))
    inherent = inherent_risk(original, ["county"], KEEP, KNOWN, repetitions=5, seed=1)
    lo = inherent["min"].query("known == 'sex+county'")["expected_match_risk"].mean()
    hi = inherent["max"].query("known == 'sex+county'")["expected_match_risk"].mean()
    assert kinds["expected_match_risk[sex+county]"] == ("risk", pytest.approx(abs(hi - lo)))
    assert kinds["table_deviation[two-way]"] == ("utility", None) and "pmse_ratio" not in kinds
    fast = CategoricalReleaseFigures(original, ["county"], KEEP, KNOWN, pmse=False).by_dataset(synthetic)
    np.testing.assert_allclose(table["expected_match_risk[sex+county]"], fast["expected_match_risk[sex+county]"])
    assert list(table["synthetic"]) == [1, 2, 3]
    figures = CategoricalReleaseFigures(original, ["county"], KEEP, KNOWN, pmse=False)
    bad = original.assign(county="nowhere")
    with pytest.raises(ValueError, match="'county' holds 'nowhere'"):
        figures.of_dataset(bad)
