import numpy as np
import pandas as pd
import pytest

from bayessdc.risk.identification import (
    attribute_disclosures,
    identification_risk,
    inherent_datasets,
    inherent_risk,
    match_counts,
    place_among,
    risk_by_dataset,
)

ORIGINAL = pd.DataFrame({"g": ["M", "M", "F", "F", "M"], "a": [1, 1, 1, 2, 2], "county": ["A", "B", "A", "C", "B"]})
SYNTHETIC = ORIGINAL.assign(county=["A", "A", "B", "C", "B"])


def test_match_counts_and_the_three_summaries_worked_by_hand():
    # known {g, county}: original keys (M,A) (M,B) (F,A) (F,C) (M,B); released (M,A) (M,A) (F,B) (F,C) (M,B)
    m = match_counts(ORIGINAL, SYNTHETIC, ["g", "county"])
    assert m["c"].tolist() == [2, 1, 0, 1, 1]
    assert m["T"].tolist() == [True, False, False, True, True]
    risk = identification_risk(ORIGINAL, SYNTHETIC, ["g", "county"])
    assert risk["expected_match_risk"] == pytest.approx(1 / 2 + 1 + 1)  # T/c over matched records
    assert risk["true_match_rate"] == pytest.approx(2 / 5)  # records 3 and 4
    assert risk["unique_matches"] == 3  # records 1, 3 and 4 have c = 1
    assert risk["false_match_rate"] == pytest.approx(1 / 3)  # record 1's unique match is someone else
    # knowing age too: record 1 (M,1,B) has no match any more (both (M,1) records were released as A), so
    # its false unique match is gone; record 0 still has two candidates
    risk = identification_risk(ORIGINAL, SYNTHETIC, ["g", "a", "county"])
    assert risk == {"expected_match_risk": 2.5, "true_match_rate": 0.4, "false_match_rate": 0.0, "unique_matches": 2}


def test_false_match_rate_is_undefined_without_unique_matches():
    original = pd.DataFrame({"g": ["M", "M"], "county": ["A", "A"]})
    risk = identification_risk(original, original, ["g", "county"])
    assert risk["expected_match_risk"] == 1.0  # two records, each one of c = 2 candidates
    assert risk["true_match_rate"] == 0.0 and np.isnan(risk["false_match_rate"])


def test_attribute_disclosures_and_per_dataset_table():
    assert attribute_disclosures(ORIGINAL, SYNTHETIC, ["county"]) == {"disclosures": 3, "share": 0.6}
    both = attribute_disclosures(ORIGINAL, SYNTHETIC.assign(a=[1, 1, 1, 2, 9]), ["county", "a"])
    assert both == {"disclosures": 2, "share": 0.4}  # record 4's age differs
    long = pd.concat([SYNTHETIC.assign(synthetic=1), ORIGINAL.assign(synthetic=2)], ignore_index=True)
    table = risk_by_dataset(ORIGINAL, long, [["g", "county"]], ["county"])
    assert table["expected_match_risk"].tolist() == [2.5, 4.0]  # the original itself: (M, B) twice
    assert table["disclosures"].tolist() == [3, 5]


PATTERNED = pd.DataFrame({"p": ["x", "x", "x", "y"], "county": ["C", "C", "D", "A"]})


def test_inherent_scenarios_draw_within_the_pattern():
    rng = np.random.default_rng(0)
    high = inherent_datasets(PATTERNED, ["county"], ["p"], "max", 1500, rng)
    low = inherent_datasets(PATTERNED, ["county"], ["p"], "min", 1500, rng)
    for frame in (high, low):
        assert (frame["p"].to_numpy() == np.tile(PATTERNED["p"], 1500)).all()  # patterns untouched
        assert set(frame.loc[frame["p"] == "x", "county"]) == {"C", "D"}  # only labels seen in the pattern
        assert set(frame.loc[frame["p"] == "y", "county"]) == {"A"}  # a one-record pattern keeps its label
    # max: empirical within-pattern shares (C 2/3); min: uniform over the pattern's labels (C 1/2)
    assert (high.loc[high["p"] == "x", "county"] == "C").mean() == pytest.approx(2 / 3, abs=0.025)
    assert (low.loc[low["p"] == "x", "county"] == "C").mean() == pytest.approx(1 / 2, abs=0.025)


def test_inherent_attribute_risk_matches_the_closed_form():
    out = inherent_risk(PATTERNED, ["county"], ["p"], [["p", "county"]], repetitions=500, seed=1)
    # max: 2/3 + 2/3 + 1/3 + 1 = 8/3 expected exact disclosures; min: 1/2 * 3 + 1 = 5/2 (sd 0.82 and 0.87
    # per repetition: 0.12 is more than 3 standard errors of the mean of 500)
    assert out["max"]["disclosures"].mean() == pytest.approx(8 / 3, abs=0.12)
    assert out["min"]["disclosures"].mean() == pytest.approx(5 / 2, abs=0.12)
    assert len(out["max"]) == 500 and set(out["max"]["known"]) == {"p+county"}
    # true match rate: the one-record pattern is always uniquely and truly matched (1/4); an x record is too
    # only in the draws (C, D, D), (D, C, D) for a C record, (C, C, D) for the D record: disjoint, so the rate
    # is 1/4 or 1/2, the latter with probability 2/27 + 2/27 + 4/27 = 8/27 (max) or 3/8 (min, each label 1/2);
    # 0.022 is 4 standard errors of the mean of 500 (sd 0.114 and 0.121 per repetition)
    for scenario, p_half in (("max", 8 / 27), ("min", 3 / 8)):
        rates = out[scenario]["true_match_rate"]
        assert set(rates) == {0.25, 0.5}, scenario
        assert rates.mean() == pytest.approx(0.25 + 0.25 * p_half, abs=0.022), scenario


def test_place_among_reports_percentile_ranks():
    out = place_among([1, 2, 3], [0, 1, 2, 3, 4])
    assert out["min"] == 1 and out["mean"] == 2 and out["max"] == 3
    assert (out["min_percentile"], out["mean_percentile"], out["max_percentile"]) == (0.2, 0.4, 0.6)
    assert out["reference_mean"] == 2.0
