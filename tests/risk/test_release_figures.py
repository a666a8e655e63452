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


def test_every_records_matches_equal_the_data_frame_function():
    """``record_risk``: T_i / c_i per record and knowledge set and the exact disclosures, as ``match_counts`` gives
    them from data frames (one knowledge set with a key space too large for dense keys)."""
    from bayessdc.risk.identification import match_counts

    original, synthetic = _data(seed=4)
    # sex x age x band x id x county: 2 x 11 x 10 x 600 x 25 = 3,300,000 cells, keyed through np.unique
    original["id"], original["band"] = np.arange(len(original)) * 7919 % 600, np.arange(len(original)) % 10
    synthetic["id"], synthetic["band"] = np.tile(original["id"].to_numpy(), 3), np.tile(original["band"].to_numpy(), 3)
    known = [*KNOWN, ["sex", "age", "band", "id", "county"]]
    figures = CategoricalReleaseFigures(original, ["county"], [*KEEP, "band", "id"], known, ways=(), pmse=False)
    for _, frame in synthetic.groupby("synthetic"):
        frame = frame.reset_index(drop=True)
        at_risk = figures.record_risk(figures.synthetic_codes(frame))
        np.testing.assert_array_equal(at_risk["exact"], frame["county"].to_numpy() == original["county"].to_numpy())
        for columns in known:
            counts = match_counts(original, frame, columns)
            expected = np.where(counts["T"], 1.0 / np.maximum(counts["c"], 1), 0.0)
            np.testing.assert_allclose(at_risk[f"match_risk[{'+'.join(columns)}]"], expected, rtol=1e-15)
        assert at_risk["match_risk[sex+age+band+id+county]"].sum() > at_risk["match_risk[sex+county]"].sum() > 0
    # the dataset's figures table by table (the full table is too large to count densely), the large knowledge
    # set through np.unique
    fast = figures.risk_by_dataset(synthetic)
    slow = risk_by_dataset(original, synthetic, known, ["county"])
    pd.testing.assert_frame_equal(fast, slow[fast.columns], check_dtype=False, rtol=1e-12)
    assert figures._dense_pass(figures.codes) == ({}, {})


def test_the_measured_datasets_give_the_data_frame_functions_utility_and_records():
    """``measure_datasets``: the table deviations (per order and per table) and the pMSE summary of utility.json,
    and the records' sums, as the data-frame functions give them."""
    from bayessdc.risk.identification import match_counts

    original, synthetic = _data(seed=6)
    figures = CategoricalReleaseFigures(original, ["county"], KEEP, KNOWN)
    measured = figures.measure_datasets(synthetic)
    assert measured.m == 3 and list(measured.figures["synthetic"]) == [1, 2, 3]
    deviations = table_deviations(original, synthetic, ["county"], KEEP)
    assert figures.table_deviations(measured.figures) == deviations  # counts and their means: exactly
    assert set(deviations["two-way"]["tables"]) == {"county x sex", "county x age"}
    slow = pmse(original, synthetic, KEEP + ["county"], ["county"])
    fast = figures.pmse_summary(measured.figures)
    assert fast["model"] == slow["model"] and fast["per_dataset"]["parameters"] == slow["per_dataset"]["parameters"]
    for key in ("pmse", "ratio", "null_expectation"):
        assert fast[key] == pytest.approx(slow[key], rel=1e-9)
    exact = sum((f["county"].to_numpy() == original["county"].to_numpy()) for _, f in synthetic.groupby("synthetic"))
    np.testing.assert_array_equal(measured.exact, exact)
    datasets = [frame.reset_index(drop=True) for _, frame in synthetic.groupby("synthetic")]
    for known in KNOWN:
        counts = [match_counts(original, frame, known) for frame in datasets]
        expected = sum(np.where(c["T"], 1.0 / np.maximum(c["c"], 1), 0.0) for c in counts)
        np.testing.assert_allclose(measured.match_risk["+".join(known)], expected, rtol=1e-14)


def _as_cells(original: pd.DataFrame, synthetic: pd.DataFrame, synthesize: list[str]):
    """A dataset as counts per cell of identical original records, in a coding of its own (levels reversed)."""
    columns = list(original.columns)
    levels = {c: np.sort(original[c].unique())[::-1] for c in columns}
    coded = {c: pd.Index(levels[c]).get_indexer(original[c]) for c in columns}
    cells, cell_of = np.unique(np.column_stack([coded[c] for c in columns]), axis=0, return_inverse=True)
    cell_of = cell_of.ravel()
    shape = tuple(len(levels[c]) for c in synthesize)
    value = np.ravel_multi_index(tuple(pd.Index(levels[c]).get_indexer(synthetic[c]) for c in synthesize), shape)
    counts = np.zeros((len(cells), int(np.prod(shape))), dtype=np.int64)
    np.add.at(counts, (cell_of, value), 1)
    joint = np.unravel_index(np.arange(counts.shape[1]), shape)
    return (
        {c: (levels[c], cells[:, j]) for j, c in enumerate(columns)},
        {c: (levels[c], part) for c, part in zip(synthesize, joint, strict=True)},
        np.bincount(cell_of),
        counts,
    )


@pytest.mark.parametrize("synthesize", [["county"], ["county", "age"]])
def test_datasets_as_counts_per_cell_give_the_figures_of_their_records(synthesize):
    original, synthetic = _data()
    keep = [c for c in ("sex", "age") if c not in synthesize]
    if "age" in synthesize:  # the synthetic ages of the records: drawn at random
        rng = np.random.default_rng(4)
        redrawn = rng.integers(1, 12, len(synthetic))
        synthetic["age"] = np.where(rng.random(len(synthetic)) < 0.5, synthetic["age"], redrawn)
    figures = CategoricalReleaseFigures(original, synthesize, keep, KNOWN)
    layout = None
    for _, frame in synthetic.groupby("synthetic"):
        frame = frame.reset_index(drop=True)
        cells, values, records, counts = _as_cells(original[keep + synthesize], frame, synthesize)
        layout = layout or figures.cell_layout(cells, values, records)
        by_cells, by_records = figures.of_cell_counts(layout, counts, details=True), figures.of_dataset(frame, True)
        assert by_cells.keys() == by_records.keys()
        for name, value in by_records.items():
            if name.startswith("expected_match_risk"):  # summed by cell, not by record
                assert by_cells[name] == pytest.approx(value, rel=1e-12), name
            else:
                assert by_cells[name] == value or (np.isnan(value) and np.isnan(by_cells[name])), name
        assert by_records["attribute_disclosures"] > 0 and by_records["unique_matches[sex+age+county]"] > 0


def test_counts_per_cell_that_are_not_the_originals_records_are_refused():
    original, synthetic = _data()
    figures = CategoricalReleaseFigures(original, ["county"], KEEP, KNOWN)
    cells, values, records, counts = _as_cells(original[KEEP + ["county"]], synthetic[synthetic.synthetic == 1],
                                               ["county"])  # fmt: skip
    with pytest.raises(ValueError, match="not the original records"):
        figures.cell_layout(cells, values, records + (np.arange(len(records)) == 0))
    layout = figures.cell_layout(cells, values, records)
    moved = counts.copy()
    moved[0, np.flatnonzero(moved[0])[0]] -= 1
    with pytest.raises(ValueError, match="do not hold each cell's records"):
        figures.of_cell_counts(layout, moved)
    levels, codes = values["county"]
    with pytest.raises(ValueError, match="column 'county' holds a value the original never takes"):
        figures.cell_layout(cells, {"county": (np.r_[levels[:-1], ["c99"]], codes)}, records)
    weighted = CategoricalReleaseFigures(original, ["county"], KEEP, KNOWN, survey_weights=np.ones(len(original)))
    with pytest.raises(ValueError, match="survey weights"):
        weighted.cell_layout(cells, values, records)
