"""Household measures (issue 51, item 3): signatures of households known by their members, unique households
reappearing and household secrets inferred, worked by hand on four households and checked on simulated ones."""

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.measures import MeasureInput, MeasureSet, compute_measures
from bayessdc.measures.base import Z95
from bayessdc.measures.households import household_signatures, known_columns
from bayessdc.policy import default_policy, judge
from bayessdc.risk.banding import band_edges

MEASURES = ["household_uniques_reappearing", "household_attribute_inference"]
KNOWN = ["area", "relationship", "sex", "age"]
BANDS = {"age": np.array([18.0, 65.0])}  # under 18, 18 to 64, 65 and over

# (household, area, relationship, sex, age, tenure), one row per member
ORIGINAL = [
    ("h1", "a", "ref", "f", 30, "own"),  # A: unique
    ("h2", "a", "ref", "m", 40, "rent"), ("h2", "a", "spouse", "f", 38, "rent"),  # B
    ("h3", "a", "ref", "m", 45, "own"), ("h3", "a", "spouse", "f", 36, "own"),  # B on the age bands, not exactly
    ("h4", "a", "ref", "f", 70, "rent"), ("h4", "a", "child", "m", 10, "rent"),  # C: unique
]  # fmt: skip
RELEASE = [
    (1, 1, "a", "spouse", "f", 37, "own"), (1, 1, "a", "ref", "m", 41, "own"),  # B, members in another order
    (1, 2, "a", "child", "m", 12, "own"), (1, 2, "a", "ref", "f", 80, "own"),  # C on the bands
    (1, 3, "b", "ref", "f", 30, "own"),  # A but in area b: another household
    (2, 1, "a", "ref", "f", 25, "rent"),  # A on the bands
    (2, 7, "a", "ref", "f", 70, "own"), (2, 7, "a", "child", "m", 10, "own"),  # C
    (2, 8, "b", "ref", "m", 50, "rent"),
]  # fmt: skip
UNLEARNED = [
    (1, 1, "a", "ref", "f", 30, "own"),  # A
    (1, 2, "a", "ref", "f", 70, "rent"), (1, 2, "a", "child", "m", 10, "rent"),  # C
    (1, 3, "a", "ref", "m", 40, "own"), (1, 3, "a", "spouse", "f", 38, "own"),  # B
    (2, 1, "a", "ref", "m", 20, "own"),
]  # fmt: skip


def _frame(rows, dataset=False):
    columns = ["household", "area", "relationship", "sex", "age", "tenure"]
    return pd.DataFrame(rows, columns=["synthetic", *columns] if dataset else columns)


def _input(synthetic=RELEASE, unlearned=UNLEARNED, bands=BANDS, original=ORIGINAL, **kw):
    original = _frame(original)
    kw = {"household_known": KNOWN, "household_secrets": ["tenure"], "households": "household", "seed": 1, **kw}
    return MeasureInput(_frame(synthetic, True), original, released=list(original.columns), bands=bands,
                        unlearned=None if unlearned is None else _frame(unlearned, True), **kw)  # fmt: skip


def _values(result, subset="all"):
    v = result.values
    return v.loc[v["subset"] == subset].sort_values("dataset")["value"].tolist()


def test_a_signature_is_the_multiset_of_members_whatever_their_order_ids_and_missing_values():
    a = pd.DataFrame({"household": [1, 1, 2, 2, 3], "sex": ["f", "m", "f", None, np.nan],
                      "age": [30.0, 32.0, np.nan, 5.0, 1.0]})  # fmt: skip
    b = a.iloc[[4, 3, 1, 0, 2]].assign(household=["z", "y", "x", "x", "y"])  # members reordered, ids renamed
    (first, second) = household_signatures([a, b], "household", ["sex", "age"])
    assert first["size"].tolist() == [2, 2, 1] and second["household"].tolist() == ["z", "y", "x"]
    same = dict(zip(first["household"], first["signature"], strict=True))
    assert second["signature"].tolist() == [same[3], same[2], same[1]]
    assert len(set(first["signature"])) == 3  # a missing value equals another missing value, not a value
    c = a.assign(sex=["f", "m", "f", "m", np.nan])  # household 2's missing sex now a value: another household
    (third,) = household_signatures([a.assign(synthetic=0), c.assign(synthetic=5)], "household", ["sex"])[1:]
    assert third["dataset"].tolist() == [5, 5, 5]
    together = household_signatures([a, c], "household", ["sex"])
    assert together[0]["signature"].iloc[1] != together[1]["signature"].iloc[1]
    assert together[0]["signature"].iloc[0] == together[1]["signature"].iloc[0]
    # the same household id in two datasets of a frame: two households
    two = pd.concat([a.assign(synthetic=1), a.assign(synthetic=2)])
    (both,) = household_signatures([two], "household", ["sex", "age"])
    assert both["dataset"].tolist() == [1, 1, 1, 2, 2, 2] and both["signature"].tolist() == [0, 1, 2, 0, 1, 2]
    # known by nothing: by its size alone
    (sizes,) = household_signatures([a], "household", [])
    assert sizes["signature"].iloc[0] == sizes["signature"].iloc[1] != sizes["signature"].iloc[2]


def test_signatures_equal_exactly_when_the_sorted_members_are_equal_on_many_columns():
    """Against the multiset written out, on twelve columns of many values (their codes' product passes 64 bits,
    so they are renumbered on the way) and households copied between frames with their members shuffled."""
    rng = np.random.default_rng(4)
    columns = [f"c{j}" for j in range(12)]

    def persons(households, start):
        size = rng.integers(1, 5, households)
        values = rng.integers(0, 400, (size.sum(), len(columns))) * 10**9  # codes whose product passes 2**62
        values[:, :3] %= 2 * 10**9  # and a few columns of two values
        return pd.DataFrame(values, columns=columns).assign(household=np.repeat(np.arange(start, start + households),
                                                                                size))  # fmt: skip

    a = persons(80, 0)
    b = pd.concat([a.sample(frac=1, random_state=1), persons(40, 1000)], ignore_index=True)  # a's households again
    tables = household_signatures([a, b], "household", columns)
    written = {}
    for frame, table in zip((a, b), tables, strict=True):
        members = frame.groupby("household")[columns].apply(lambda g: tuple(sorted(map(tuple, g.to_numpy()))))
        for household, signature in zip(table["household"], table["signature"], strict=True):
            written.setdefault(members[household], set()).add(signature)
    assert all(len(v) == 1 for v in written.values())  # the same members: one signature
    assert len(set().union(*written.values())) == len(written)  # other members: another
    assert tables[1]["signature"].isin(tables[0]["signature"]).sum() >= 80  # a's households found again in b


def test_uniques_reappearing_worked_by_hand():
    result = compute_measures(_input(), MEASURES)["household_uniques_reappearing"]
    # unique on the bands: h1 (A) and h4 (C); h2 and h3 share B. Dataset 1 has C (A only in area b), dataset 2 both
    assert _values(result) == [0.5, 1.0]
    assert _values(result, "size 1") == [0.0, 1.0] and _values(result, "size 2") == [1.0, 1.0]
    assert result.subsets() == ["all", "size 1", "size 2"]
    # the unlearned datasets: the first has A and C, the second neither
    assert result.reference("all", "unlearned") == 0.5
    assert result.reference("all", "unlearned_range") == pytest.approx(0.5 + Z95 * np.std([1.0, 0.0], ddof=1))
    assert result.reference("size 1", "unlearned") == 0.5
    summary = result.summary().set_index("subset").loc["all"]
    assert summary["pooled"] == 0.75 and summary["worst"] == 1.0
    details = result.details
    assert details.loc["size 1"].to_dict() == {"households": 1, "unique": 1, "reappearing": 0.5, "unlearned": 0.5}
    assert details.loc["size 2"].to_dict() == {"households": 3, "unique": 1, "reappearing": 1.0, "unlearned": 0.5}
    assert "age (3 bands)" in result.description


def test_exact_ages_make_other_households():
    result = compute_measures(_input(bands={}), MEASURES)["household_uniques_reappearing"]
    # every original household unique now (h2, h3 differ in age); only dataset 2's C (ages 70 and 10) reappears
    assert _values(result) == [0.0, 0.25]
    assert result.details["unique"].tolist() == [1, 3]


def test_attribute_inference_worked_by_hand():
    result = compute_measures(_input(), MEASURES)["household_attribute_inference"]
    # dataset 1 (mostly own): h1 A has no match, the dataset's most common (own) right; h2 B guessed own, wrong;
    # h3 B own, right; h4 C guessed own, wrong. Dataset 2 (mostly rent): h1 A rent, wrong; h2 and h3 B unmatched,
    # rent: h2 right, h3 wrong; h4 C own, wrong
    assert _values(result) == [0.5, 0.25]
    # the original itself: A own and C rent right, B a tie (one own, one rent): exactly one of h2, h3 right
    assert result.reference("all", "inherent_max") == 0.75
    # no release: area a's most common tenure is a tie (two own, two rent): either guess is right twice
    assert result.reference("all", "prior") == 0.5
    # unlearned: dataset 1 guesses A own, C rent, B own (3 right); dataset 2 only one household, own (2 right)
    assert result.reference("all", "unlearned") == 0.625
    assert result.reference("all", "unlearned_range") == pytest.approx(0.625 + Z95 * np.std([0.75, 0.5], ddof=1))
    assert result.reference_notes["prior"].endswith("; here the area is area")
    assert result.details.loc["size 1", "inherent_max"] == 1.0  # h1
    assert result.details.loc["size 2", "inherent_max"] == pytest.approx(2 / 3)  # one of h2, h3, and h4


def test_a_tie_is_broken_by_the_seed_and_no_more():
    # h2 (B, rent) among a dataset's two B households, one own and one rent: a tie, drawn by the seed; h1 (own) and
    # h4 (rent) have no match and are guessed the dataset's most common, rent (two households of three)
    original = [r for r in ORIGINAL if r[0] != "h3"]
    dataset = [(1, 1, "a", "ref", "m", 40, "own"), (1, 1, "a", "spouse", "f", 38, "own"),
               (1, 2, "a", "ref", "m", 40, "rent"), (1, 2, "a", "spouse", "f", 38, "rent"),
               (1, 3, "b", "ref", "m", 50, "rent")]  # fmt: skip
    guessed = {}
    for seed in range(12):
        data = _input(dataset, None, original=original, seed=seed)
        (value,) = _values(compute_measures(data, MEASURES)["household_attribute_inference"])
        assert value in (1 / 3, 2 / 3)  # h4 right, h1 wrong, h2 as drawn
        again = _input(dataset, None, original=original, seed=seed)
        assert _values(compute_measures(again, MEASURES)["household_attribute_inference"]) == [value]
        guessed[seed] = value
    assert set(guessed.values()) == {1 / 3, 2 / 3}  # both ends of the tie drawn over the seeds


def test_a_copy_of_the_original_households_scores_the_inherent_max_and_every_unique():
    persons, _ = bsd.examples.households(300, 3, seed=1)
    other, _ = bsd.examples.households(300, 3, seed=2)
    rng = np.random.default_rng(0)
    copies = []
    for d in (1, 2):  # the real households under new ids, their members shuffled
        frame = persons.iloc[rng.permutation(len(persons))].assign(synthetic=d)
        frame["household"] = "s" + frame["household"].str[1:]
        copies.append(frame)
    data = MeasureInput(
        pd.concat(copies, ignore_index=True), persons, released=list(persons.columns), households="household",
        household_known=KNOWN, household_secrets=["tenure"], bands={"age": band_edges(persons["age"])},
        unlearned=pd.concat([other.assign(synthetic=1), other.assign(synthetic=2)], ignore_index=True), seed=3,
    )  # fmt: skip
    (real,) = household_signatures([persons], "household", KNOWN, data.bands, carry=["tenure"])
    assert (real.groupby("signature")["tenure"].nunique() > 1).sum() > 3  # ties to break, alike in every dataset
    measured = compute_measures(data, MEASURES)
    uniques, inference = measured["household_uniques_reappearing"], measured["household_attribute_inference"]
    assert _values(uniques) == [1.0, 1.0]
    assert uniques.details["unique"].sum() > 100  # not vacuous: most households are unique on their members
    maximum = inference.reference("all", "inherent_max")
    assert _values(inference) == [maximum, maximum] and maximum > inference.reference("all", "prior") + 0.1
    # other simulated households reappear few of the uniques, and reveal less than the real ones
    assert uniques.reference("all", "unlearned") < 0.25
    assert inference.reference("all", "unlearned") < maximum - 0.2
    # the default policy refuses the copy on both, against the release that never saw them
    verdict = judge(default_policy(), measured, "cart")
    assert {j.criterion.measure for j in verdict.failed()} == set(MEASURES)


def test_only_a_release_of_households_is_measured_and_a_release_of_records_is_not_judged_on_households():
    records = _input(households=None)
    assert not any(m in compute_measures(records, MEASURES) for m in MEASURES)
    no_secret = compute_measures(_input(household_secrets=[]), MEASURES)
    assert list(no_secret) == ["household_uniques_reappearing"]
    measured = compute_measures(records, ["copied_records"])
    verdict = judge(default_policy(), measured, "cart")
    assert verdict.passed
    assert {n.split("[")[0] for n in verdict.not_applicable} >= set(MEASURES)
    assert not any(j.criterion.measure in MEASURES for j in verdict.judgements)
    # a household release judged: both criteria against the unlearned range, and both met here
    verdict = judge(default_policy(), MeasureSet(compute_measures(_input(), MEASURES).values()), "cart")
    judged = {j.criterion.measure: j for j in verdict.judgements}
    assert judged["household_uniques_reappearing"].passed and judged["household_attribute_inference"].passed
    assert judged["household_attribute_inference"].threshold == pytest.approx(0.625 + Z95 * np.std([0.75, 0.5],
                                                                                                    ddof=1))


def test_with_no_known_columns_given_every_released_column_but_the_id_the_weight_and_the_secrets():
    data = _input(household_known=[], weights="age")
    assert known_columns(data) == ["area", "relationship", "sex"]
