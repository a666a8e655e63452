"""The measure objects: each figure equals its data-frame oracle, the summary is worked by hand, and a new
measure is one class and one registration."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.measures import Measure, MeasureInput, compute_measures, register, registry
from bayessdc.measures import base as measures_base
from bayessdc.risk.identification import attribute_disclosures, identification_risk, inherent_risk


def _categorical(n=300, m=4, seed=0):
    rng = np.random.default_rng(seed)
    original = pd.DataFrame({
        "sex": rng.choice(["f", "m"], n), "age": rng.choice(["young", "mid", "old"], n),
        "county": rng.choice([f"c{k}" for k in range(12)], n),
    })  # fmt: skip
    frames = []
    for k in range(m):
        frame = original.copy()
        redraw = rng.random(n) < 0.6
        frame.loc[redraw, "county"] = rng.choice([f"c{j}" for j in range(12)], redraw.sum())
        frames.append(frame.assign(synthetic=k + 1))
    return original, pd.concat(frames, ignore_index=True)[["synthetic", "sex", "age", "county"]]


@pytest.fixture(scope="module")
def categorical():
    original, synthetic = _categorical()
    known = [["sex", "county"], ["sex", "age", "county"]]
    data = MeasureInput(
        synthetic, original, released=["sex", "age", "county"], synthesized=["county"], kept=["sex", "age"],
        known_sets=known, partially_synthetic=True, repetitions=30, seed=3,
    )  # fmt: skip
    return original, synthetic, known, data, compute_measures(data)


def test_identification_and_attribute_equal_the_frame_oracle(categorical):
    original, synthetic, known, _, measured = categorical
    for number, frame in synthetic.groupby("synthetic"):
        frame = frame.drop(columns="synthetic").reset_index(drop=True)
        for columns in known:
            expected = identification_risk(original, frame, columns)
            for name in ("expected_match_risk", "true_match_rate", "false_match_rate"):
                values = measured[name].values
                got = values.loc[(values["subset"] == "+".join(columns)) & (values["dataset"] == number), "value"]
                assert got.item() == pytest.approx(expected[name], nan_ok=True)
        values = measured["attribute_disclosures"].values
        got = values.loc[values["dataset"] == number, "value"].item()
        assert got == attribute_disclosures(original, frame, ["county"])["disclosures"]


def test_inherent_references_are_the_scenarios_means(categorical):
    original, _, known, _, measured = categorical
    scenarios = inherent_risk(original, ["county"], ["sex", "age"], known, repetitions=30, seed=3)
    for columns in known:
        subset = "+".join(columns)
        for scenario in ("min", "max"):
            table = scenarios[scenario][scenarios[scenario]["known"] == subset]
            assert measured["expected_match_risk"].reference(subset, f"inherent_{scenario}") == pytest.approx(
                table["expected_match_risk"].mean()
            )
    maximum = scenarios["max"].drop_duplicates("repetition")["disclosures"]
    assert measured["attribute_disclosures"].reference("all", "inherent_max") == pytest.approx(maximum.mean())


def test_summary_worked_by_hand():
    class Toy(Measure):
        name, kind, better = "toy", "risk", "lower"

    result = Toy().result(
        [{"subset": "a", "dataset": d, "value": v} for d, v in zip([1, 2, 3, 4], [1.0, 2.0, 3.0, 6.0], strict=True)]
        + [{"subset": "b", "dataset": 0, "value": 0.5}],
        [{"subset": "a", "reference": "ceiling", "value": 5.0}],
    )
    summary = result.summary().set_index("subset")
    se = np.std([1, 2, 3, 6], ddof=1) / 2  # sd / sqrt(m)
    assert summary.loc["a", "pooled"] == 3.0
    assert summary.loc["a", "mc_se"] == pytest.approx(se)
    assert summary.loc["a", "upper"] == pytest.approx(3.0 + 3.182446305284263 * se)  # Student's t, m - 1 = 3
    assert summary.loc["a", "worst"] == 6.0
    assert summary.loc["a", "ceiling"] == 5.0
    assert summary.loc["b", "pooled"] == 0.5 and np.isnan(summary.loc["b", "mc_se"])  # one figure of all datasets
    assert summary.loc["b", "upper"] == 0.5 and np.isnan(summary.loc["b", "ceiling"])


def test_a_higher_is_better_measure_is_worst_at_its_lowest(categorical):
    summary = categorical[4]["false_match_rate"].summary()
    values = categorical[4]["false_match_rate"].values
    for _, row in summary.iterrows():
        finite = values.loc[values["subset"] == row["subset"], "value"].dropna()
        if len(finite):
            assert row["worst"] == finite.min()


def test_measures_that_do_not_apply_are_not_computed():
    synthetic = pd.DataFrame({"synthetic": [1, 1], "count": [3, 4]})
    items = pd.DataFrame({"correct": [True, False, False, True], "unique": [True, True, False, False],
                          "chance": [1 / 9] * 4})  # fmt: skip
    measured = compute_measures(MeasureInput(synthetic, items=items))
    assert list(measured) == ["intruder_correct"]
    summary = measured["intruder_correct"].summary().set_index("subset")
    assert summary.loc["all items", "pooled"] == 0.5 and summary.loc["unique items", "pooled"] == 0.5
    assert summary.loc["all items", "chance"] == pytest.approx(1 / 9)


def test_copied_records_and_replicated_uniques_by_hand():
    original = pd.DataFrame({"x": ["A", "A", "B", "C"]})
    synthetic = pd.DataFrame({"synthetic": [1, 1, 1, 1], "x": ["A", "B", "B", "D"]})
    measured = compute_measures(MeasureInput(synthetic, original, released=["x"]))
    assert measured["copied_records"].statistic("all", "pooled") == 0.75
    assert measured["copied_records"].reference("all", "held_out") == 0.5  # the two A's equal another record
    uniques = measured["replicated_uniques"]
    assert uniques.statistic("original uniques reappearing", "pooled") == 1  # B reappears, C does not
    assert uniques.statistic("unique in both", "pooled") == 0  # B appears twice in the synthetic dataset
    assert uniques.reference("unique in both", "original_uniques") == 2


def test_proximity_counts_values_within_the_band():
    from bayessdc.measures import ProximityInput

    truth = np.array([100.0, 200.0, 300.0, 400.0])
    released = np.array([[105.0, 250.0, 290.0, 500.0], [150.0, 201.0, 200.0, 399.0]])
    reference = truth[None, :].repeat(2, axis=0)  # every value on its truth
    data = MeasureInput(pd.DataFrame({"synthetic": [1, 2]}), proximity=ProximityInput(
        truth, released, at_risk=np.array([True, True, False, False]), band=0.1, reference=reference))
    result = compute_measures(data, ["proximity"])["proximity"]
    values = result.values.set_index(["subset", "dataset"])["value"]
    assert values[("at-risk records", 1)] == 0.5 and values[("at-risk records", 2)] == 0.5
    assert values[("other records", 1)] == 0.5 and values[("other records", 2)] == 0.5
    assert result.reference("at-risk records", "unsmoothed") == 1.0
    # the other records' share in the same datasets, 1/2 and 1/2: the at-risk records' reference, with its error
    assert result.reference("at-risk records", "other_records") == 0.5
    assert result.reference_error("at-risk records", "other_records") == (0.0, 2)
    assert result.reference("other records", "other_records") is None


@pytest.fixture
def toy_measure():
    """A new measure: one class, one registration (removed again after the test)."""

    @register
    class RowsReleased(Measure):
        name = "rows_released"
        kind = "risk"
        better = "lower"
        title = "rows released"
        description = "rows of each synthetic dataset"
        references = {"original_rows": "the rows of the original"}

        def applies(self, data):
            return data.original is not None

        def compute(self, data):
            counts = data.synthetic.groupby("synthetic").size()
            return self.result(
                [{"subset": "all", "dataset": int(k), "value": float(v)} for k, v in counts.items()],
                [{"subset": "all", "reference": "original_rows", "value": float(len(data.original))}],
            )

    yield RowsReleased
    measures_base._REGISTRY.pop("rows_released")


def test_a_new_measure_is_one_class_and_one_registration(toy_measure):
    assert "rows_released" in registry()
    original = pd.DataFrame({"x": ["A", "B", "C"]})
    synthetic = pd.DataFrame({"synthetic": [1, 1, 1, 2, 2], "x": ["A", "B", "C", "A", "B"]})
    measured = compute_measures(MeasureInput(synthetic, original, released=["x"]))
    row = measured.summary().set_index("measure").loc["rows_released"]
    assert row["pooled"] == 2.5 and row["worst"] == 3.0 and row["original_rows"] == 3.0  # worst: the largest


def test_a_new_measure_is_in_risk_the_report_and_a_policy_criterion(toy_measure, tmp_path):
    """One class and one registration: every release then has the measure in risk(), its report lays it out
    beside its reference, and a policy can judge it by name (and refuse a release on it)."""
    import bayessdc as bsd
    from bayessdc.models.cart import simulate_acs_persons

    persons = simulate_acs_persons(200, seed=1)
    within = bsd.Policy(name="toy within", criteria=(bsd.Criterion("rows_released", at_most="original_rows"),))
    release = bsd.synthesize(persons, bsd.CART(bootstrap=10), synthesize="education", keep="age,sex", m=2, seed=0,
                             policy=within, out=tmp_path / "out", progress=False)  # fmt: skip
    row = release.risk().set_index("measure").loc["rows_released"]
    assert row["pooled"] == len(persons) == row["original_rows"]
    (judgement,) = release.policy.judgements
    assert judgement.criterion.measure == "rows_released" and judgement.passed and judgement.threshold == len(persons)
    report = (tmp_path / "out" / "private" / "report.html").read_text()
    assert "rows released" in report and "rows of each synthetic dataset" in report and "original rows" in report
    fewer = bsd.Policy(name="toy fewer", criteria=(bsd.Criterion("rows_released", statistic="worst", at_most=100),))
    with pytest.raises(bsd.DisclosureRefused, match="rows_released"):
        bsd.synthesize(persons, bsd.CART(bootstrap=10), synthesize="education", keep="age,sex", m=2, seed=0,
                       policy=fewer, out=tmp_path / "refused", progress=False)  # fmt: skip
    assert not (tmp_path / "refused" / "release").exists()


def test_a_name_is_registered_once():
    class Copy(Measure):
        name = "copied_records"

    with pytest.raises(ValueError, match="already registered"):
        register(Copy)


def test_utility_measures_equal_the_frame_oracle(categorical):
    from bayessdc.synthesis.categorical import pmse, table_deviations

    original, synthetic, _, _, measured = categorical
    deviations = table_deviations(original, synthetic, ["county"], ["sex", "age"])
    values = measured["table_deviation"].values
    for subset, figures in deviations.items():
        got = values.loc[values["subset"] == subset].sort_values("dataset")["value"].tolist()
        assert got == pytest.approx(figures["per_dataset"])
    expected = pmse(original, synthetic, ["sex", "age", "county"], ["county"])["per_dataset"]["ratio"]
    got = measured["pmse_ratio"].values.sort_values("dataset")["value"].tolist()
    assert got == pytest.approx(expected, rel=1e-6)
    assert measured["pmse_ratio"].reference("all", "null") == 1.0
    assert measured["pmse_ratio"].kind == "utility"


def test_table_tau_by_hand_and_its_bootstrap_reference():
    from bayessdc.synthesis.tables import TableSpec

    original = pd.DataFrame({"a": ["x", "x", "y", "y"]})
    synthetic = pd.DataFrame({"synthetic": [1] * 4 + [2] * 4, "a": ["x", "x", "y", "y", "x", "x", "x", "y"]})
    data = MeasureInput(synthetic, original, tables=[TableSpec("A", ("a",))], bootstrap=200, seed=1)
    result = compute_measures(data, ["table_tau"])["table_tau"]
    values = result.values.set_index("dataset")["value"]
    assert values[1] == 1.0 and values[2] == 1 - 2 / 8  # L1 = |2-3| + |2-1| = 2, n = 4
    summary = result.summary().iloc[0]
    assert summary["worst"] == 0.75 and 0 < summary["bootstrap"] < 1


def test_count_tau_by_hand():
    original = pd.DataFrame({"count": [3, 1, 4]})
    synthetic = pd.DataFrame({"synthetic": [1, 1, 1], "count": [2, 1, 6]})
    result = compute_measures(MeasureInput(synthetic, original, count_column="count"), ["count_tau"])["count_tau"]
    assert result.values["value"].item() == pytest.approx(1 - 3 / 16)  # L1 = 1 + 0 + 2, n = 8
    # the totals of a margin: moving counts within an origin leaves its total, and its tau, whole
    original = pd.DataFrame({"origin": ["a", "a", "b"], "count": [3, 1, 4]})
    synthetic = pd.DataFrame({"synthetic": [1, 1, 1], "origin": ["a", "a", "b"], "count": [4, 0, 4]})
    data = MeasureInput(synthetic, original, count_column="count", count_margins=[["origin"]])
    values = compute_measures(data, ["count_tau"])["count_tau"].values.set_index("subset")["value"]
    assert values["all cells"] == pytest.approx(1 - 2 / 16) and values["totals by origin"] == pytest.approx(1.0)


def test_interval_overlap_of_a_copy_is_one():
    from bayessdc.measures import RegressionInput

    rng = np.random.default_rng(0)
    original = pd.DataFrame({"x": rng.normal(size=200)})
    original["y"] = 1 + 2 * original["x"] + rng.normal(size=200)
    copies = pd.concat([original.assign(synthetic=k) for k in (1, 2)], ignore_index=True)
    shifted = copies.assign(y=copies["y"] + 10)
    data = MeasureInput(copies, regression=RegressionInput(original, copies, "y", ["x"], reference=shifted))
    result = compute_measures(data, ["ci_overlap"])["ci_overlap"]
    summary = result.summary().set_index("subset")
    # identical datasets: the combined variance is the original's (b_m = 0), on a normal rather than a t(198)
    # quantile, so the intervals nearly coincide: overlap (1 + 1.960/1.972) / 2
    assert summary.loc["x", "pooled"] == pytest.approx((1 + 1.959964 / 1.971957) / 2, abs=2e-4)
    assert summary.loc["intercept", "unsmoothed"] < 0  # a shift of 10: disjoint intervals (Karr et al.: negative)


def test_interval_overlap_combines_by_the_kind_the_regression_names():
    from bayessdc.measures import RegressionInput

    rng = np.random.default_rng(0)
    original = pd.DataFrame({"x": rng.normal(size=200)})
    original["y"] = 1 + 2 * original["x"] + rng.normal(size=200)
    frames = [original.assign(synthetic=k, y=original["y"] + rng.normal(0, 0.3, 200)) for k in (1, 2, 3)]
    synthetic = pd.concat(frames, ignore_index=True)
    results = {
        kind: compute_measures(
            MeasureInput(synthetic, regression=RegressionInput(original, synthetic, "y", ["x"], kind=kind)),
            ["ci_overlap"],
        )["ci_overlap"]
        for kind in ("partial", "full")
    }
    # the details say which rules; the fully synthetic ones mark the estimands they adjusted
    assert set(results["partial"].details["combining_rules"]) == {"partial"}
    assert set(results["full"].details["combining_rules"]) == {"full"}
    assert "adjusted" not in results["partial"].details and "adjusted" in results["full"].details
    # the same datasets give other intervals under the other rules, hence other overlaps
    from bayessdc.synthesis.regression import regression_utility

    table = regression_utility(original, synthetic, "y", ["x"], kind="full")
    values = results["full"].values.set_index("subset")["value"]
    assert values.to_dict() == pytest.approx(table["ci_overlap"].to_dict())
    assert not np.allclose(values, results["partial"].values.set_index("subset")["value"])


def test_a_measure_of_many_subsets_shows_its_worst_on_a_page_and_a_terminal():
    """Hundreds of areas: the plot and the printed lines show the 12 worst subsets, worst first, and say so; the
    summary keeps every subset."""
    from bayessdc.measures.base import MeasureResult
    from bayessdc.report.plots import measure_panels
    from bayessdc.report.text import measure_lines

    values = pd.DataFrame({"measure": "m", "subset": [f"stratum {i}" for i in range(30) for _ in range(2)],
                           "dataset": [1, 2] * 30, "value": [float(i % 7) for i in range(30) for _ in range(2)]})
    references = pd.DataFrame(columns=["measure", "subset", "reference", "value", "lower", "upper", "mc_se",
                                       "repetitions"])  # fmt: skip
    result = MeasureResult("m", "risk", "lower", values, references, "copies per area")
    assert len(result.summary()) == 30
    shown = result.shown_subsets()
    assert len(shown) == 12 and shown[:4] == ["stratum 6", "stratum 13", "stratum 20", "stratum 27"]  # value 6
    lines = measure_lines({"m": result})
    assert len(lines) == 1 + 12 + 1 and lines[1].startswith("    [stratum 6] 6")
    assert lines[-1].strip().startswith("... the 12 worst of 30 subsets shown")
    figure = measure_panels(result)
    assert sum(ax.get_visible() for ax in figure.axes) == 12
    assert figure._suptitle.get_text() == "the 12 worst of 30 subsets"
    higher = MeasureResult("m", "utility", "higher", values, references, "tau per area")
    assert higher.shown_subsets()[:5] == ["stratum 0", "stratum 7", "stratum 14", "stratum 21", "stratum 28"]
