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


def test_inherent_maximum_draws_from_the_pattern_and_its_draws_are_pinned():
    rng = np.random.default_rng(0)
    high = inherent_datasets(PATTERNED, ["county"], ["p"], "max", 1500, rng)
    assert (high["p"].to_numpy() == np.tile(PATTERNED["p"], 1500)).all()  # patterns untouched
    assert set(high.loc[high["p"] == "x", "county"]) == {"C", "D"}  # only labels seen in the pattern
    assert set(high.loc[high["p"] == "y", "county"]) == {"A"}  # a one-record pattern keeps its label
    # empirical within-pattern shares (C 2/3)
    assert (high.loc[high["p"] == "x", "county"] == "C").mean() == pytest.approx(2 / 3, abs=0.025)
    # the maximum's draws, taken at the commit before the minimum became uniform over all levels (facb995):
    # one label, four repetitions; two labels drawn jointly (pairs of the pattern only), three repetitions
    pinned = inherent_datasets(PATTERNED, ["county"], ["p"], "max", 4, np.random.default_rng(0))
    assert "".join(pinned["county"]) == "CCCADDCACDDADCDA"
    two = pd.DataFrame({"p": ["x", "x", "x", "y", "y"], "b": ["u", "v", "u", "v", "w"], "c": [1, 2, 3, 2, 2]})
    pinned = inherent_datasets(two, ["b", "c"], ["p"], "max", 3, np.random.default_rng(0))
    assert list(zip(pinned["b"], pinned["c"], strict=True)) == [
        ("v", 2), ("u", 1), ("u", 1), ("v", 2), ("w", 2),
        ("u", 3), ("v", 2), ("u", 3), ("w", 2), ("w", 2),
        ("u", 3), ("u", 1), ("u", 3), ("v", 2), ("w", 2),
    ]  # fmt: skip
    # re-pinned on purpose when the scenarios moved to the named streams rng(seed, "inherent", "maximum") and
    # (..., "minimum") (before: SeedSequence([seed, 4, k]), disclosures [2, 2, 2, 3, 3, 3, 2, 1], expected match
    # risk [1.5, 1.5, 1.5, 2.5, 5/3, 2.5, 1.5, 1])
    out = inherent_risk(PATTERNED, ["county"], ["p"], [["p", "county"]], repetitions=8, seed=1)["max"]
    assert out["disclosures"].tolist() == [2, 1, 3, 4, 4, 3, 3, 3]
    assert out["expected_match_risk"].tolist() == pytest.approx([1.5, 1.0, 5 / 3, 3.0, 3.0, 5 / 3, 5 / 3, 5 / 3])


def test_weighted_inherent_maximum_resamples_each_pattern_by_the_survey_weights():
    # pattern x: C (weights 1, 1) and D (weight 2), so C and D each 1/2 of the pattern's weight (unweighted: C 2/3)
    weights = np.array([1.0, 1.0, 2.0, 5.0])
    high = inherent_datasets(PATTERNED, ["county"], ["p"], "max", 600, np.random.default_rng(0), weights)
    assert (high.loc[high["p"] == "x", "county"] == "C").mean() == pytest.approx(1 / 2, abs=0.05)  # 4 se
    assert set(high.loc[high["p"] == "y", "county"]) == {"A"}
    # expected exact disclosures: 1/2 + 1/2 (C records) + 1/2 (D record) + 1 (y) = 5/2, against 8/3 unweighted
    # (sd 0.87 per repetition; 0.1 is 5 standard errors of the mean of 2000)
    out = inherent_risk(PATTERNED, ["county"], ["p"], [["p", "county"]], repetitions=2000, seed=1, weights=weights)
    assert out["max"]["disclosures"].mean() == pytest.approx(5 / 2, abs=0.1)
    # equal weights: the unweighted draws (the pinned ones above); a donor of negligible weight is never drawn
    pinned = inherent_datasets(PATTERNED, ["county"], ["p"], "max", 4, np.random.default_rng(0), np.ones(4))
    assert "".join(pinned["county"]) == "CCCADDCACDDADCDA"
    skewed = inherent_datasets(PATTERNED, ["county"], ["p"], "max", 50, np.random.default_rng(1),
                               np.array([1e-12, 1e-12, 1.0, 1.0]))  # fmt: skip
    assert set(skewed.loc[skewed["p"] == "x", "county"]) == {"D"}
    with pytest.raises(ValueError, match="positive, finite"):
        inherent_risk(PATTERNED, ["county"], ["p"], [["p"]], repetitions=1, weights=np.array([1.0, 0.0, 1.0, 1.0]))


def test_inherent_minimum_draws_uniformly_over_all_levels_whatever_the_pattern():
    # Hu & Savitsky 4.1: "a uniform distribution over ... the 133 observed county labels within each pattern",
    # i.e. every label of the data, in every pattern: A never occurs in pattern x, nor C and D in pattern y
    low = inherent_datasets(PATTERNED, ["county"], ["p"], "min", 3000, np.random.default_rng(0))
    assert (low["p"].to_numpy() == np.tile(PATTERNED["p"], 3000)).all()  # patterns untouched
    for pattern, records in (("x", 3), ("y", 1)):
        drawn = low.loc[low["p"] == pattern, "county"]
        # each of the three labels with probability 1/3 (4 standard errors of 3000 * records draws)
        sd = np.sqrt(1 / 3 * 2 / 3 / (3000 * records))
        for label in ("A", "C", "D"):
            assert (drawn == label).mean() == pytest.approx(1 / 3, abs=4 * sd), (pattern, label)
    # each record's draws alike, whichever its pattern and label (record 3 alone in y, records 0-2 in x)
    by_record = low["county"].to_numpy().reshape(3000, 4)
    for record in range(4):
        assert (by_record[:, record] == "A").mean() == pytest.approx(1 / 3, abs=4 * np.sqrt(2 / 9 / 3000))


def test_inherent_minimum_exact_disclosures_are_n_over_the_number_of_levels():
    # 600 records, 12 labels, 6 patterns each showing only two labels (one of them in 90% of its records): a
    # draw within the pattern would disclose about half of the records or more; uniform over all 12 labels a
    # record is disclosed with probability 1/12, independently of the others: binomial(600, 1/12)
    rng = np.random.default_rng(3)
    p = np.repeat(np.arange(6), 100)
    label = np.where(rng.random(600) < 0.9, 2 * p, 2 * p + 1)
    data = pd.DataFrame({"p": p, "county": [f"c{v}" for v in label]})
    assert data["county"].nunique() == 12
    out = inherent_risk(data, ["county"], ["p"], [["p", "county"]], repetitions=400, seed=5)["min"]
    disclosures = out["disclosures"].to_numpy()
    mean, sd = 600 / 12, np.sqrt(600 * (1 / 12) * (11 / 12))  # 50 and 6.77
    assert disclosures.mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(400))  # within 1.35
    # the binomial's spread too (the sd of 400 repetitions has a relative standard error of 3.5%)
    assert disclosures.std(ddof=1) == pytest.approx(sd, rel=0.15)
    # the same through the datasets
    frames = inherent_datasets(data, ["county"], ["p"], "min", 400, np.random.default_rng(7))
    same = frames["county"].to_numpy() == np.tile(data["county"].to_numpy(), 400)
    assert same.reshape(400, 600).sum(axis=1).mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(400))


def test_inherent_minimum_draws_several_columns_independently():
    # b is a function of c in the data (pairs (u, 1), (u, 2), (v, 3) only); the minimum draws b uniformly over
    # {u, v} and c uniformly over {1, 2, 3} independently, so all six pairs occur, each with probability 1/6
    data = pd.DataFrame({"p": ["x", "x", "y", "y"], "b": ["u", "u", "v", "u"], "c": [1, 2, 3, 1]})
    low = inherent_datasets(data, ["b", "c"], ["p"], "min", 3000, np.random.default_rng(1))
    shares = low.groupby(["b", "c"]).size() / len(low)
    assert len(shares) == 6
    assert shares.to_numpy() == pytest.approx(np.full(6, 1 / 6), abs=4 * np.sqrt(1 / 6 * 5 / 6 / len(low)))
    # exact disclosures: both columns right, probability 1/2 * 1/3 per record
    out = inherent_risk(data, ["b", "c"], ["p"], [["p", "b"]], repetitions=2000, seed=2)["min"]
    sd = np.sqrt(4 * (1 / 6) * (5 / 6))
    assert out["disclosures"].mean() == pytest.approx(4 / 6, abs=4 * sd / np.sqrt(2000))
    # the maximum still draws the pair jointly: (v, 3) only ever with v
    high = inherent_datasets(data, ["b", "c"], ["p"], "max", 500, np.random.default_rng(1))
    assert set(zip(high["b"], high["c"], strict=True)) <= set(zip(data["b"], data["c"], strict=True))


def test_inherent_attribute_risk_matches_the_closed_form():
    out = inherent_risk(PATTERNED, ["county"], ["p"], [["p", "county"]], repetitions=2000, seed=1)
    # max: 2/3 + 2/3 + 1/3 + 1 = 8/3 expected exact disclosures; min: every record 1/3 (three labels in the
    # data), 4/3 (sd 0.82 and 0.94 per repetition: 0.12 is more than 5 standard errors of the mean of 2000)
    assert out["max"]["disclosures"].mean() == pytest.approx(8 / 3, abs=0.12)
    assert out["min"]["disclosures"].mean() == pytest.approx(4 / 3, abs=0.12)
    assert len(out["max"]) == 2000 and set(out["max"]["known"]) == {"p+county"}
    # true match rate, max: the one-record pattern is always uniquely and truly matched (1/4); an x record is
    # too only in the draws (C, D, D), (D, C, D) for a C record, (C, C, D) for the D record: disjoint, so the
    # rate is 1/4 or 1/2, the latter with probability 2/27 + 2/27 + 4/27 = 8/27 (sd 0.114 per repetition)
    rates = out["max"]["true_match_rate"]
    assert set(rates) == {0.25, 0.5}
    assert rates.mean() == pytest.approx(0.25 + 0.25 * 8 / 27, abs=0.022)
    # min, every record's county uniform over A, C, D: the y record is uniquely and truly matched when it draws
    # A (1/3); a C record of x when it draws C and the other two x records do not (1/3 * 2/3 * 2/3 = 4/27),
    # the D record likewise: 1/4 (1/3 + 3 * 4/27) = 7/36, the rate anywhere in {0, 1/4, 1/2, 3/4} (sd 0.196
    # per repetition, worked over the 81 equally likely draws; 0.022 is 5 standard errors of the mean of 2000)
    rates = out["min"]["true_match_rate"]
    assert set(rates) <= {0.0, 0.25, 0.5, 0.75} and {0.0, 0.75} <= set(rates)
    assert rates.mean() == pytest.approx(7 / 36, abs=0.022)


def test_place_among_reports_percentile_ranks():
    out = place_among([1, 2, 3], [0, 1, 2, 3, 4])
    assert out["min"] == 1 and out["mean"] == 2 and out["max"] == 3
    assert (out["min_percentile"], out["mean_percentile"], out["max_percentile"]) == (0.2, 0.4, 0.6)
    assert out["reference_mean"] == 2.0


def test_identification_from_cells_by_hand_and_as_records():
    """Three cells of 2, 3 and 1 records with c = 1, 2, 1 and 1, 2, 0 records whose own record is released with
    their true values: risk 1/1 + 2/2 + 0 = 2, true unique matches 1 of 6, false 2 of the 3 uniquely matched."""
    from bayessdc.risk.identification import identification_from_cells, identification_from_counts

    got = identification_from_cells(np.array([1, 2, 1]), np.array([1, 2, 0]), np.array([2, 3, 1]))
    assert got == {"expected_match_risk": 2.0, "true_match_rate": 1 / 6, "false_match_rate": 2 / 3,
                   "unique_matches": 3}  # fmt: skip
    # the same records one by one
    c = np.array([1, 1, 2, 2, 2, 1])
    t = np.array([True, False, True, True, False, False])
    assert identification_from_counts(c, t) == got
