"""``bsd.CART(strata=...)``: synthesis area by area (issue 51, item 1) through the one pipeline: every record stays
in its area and gets its area's values, the measures and the policy read the whole file and each area, and bad
strata are refused before anything is fitted."""

from __future__ import annotations

import numpy as np
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.cart import simulate_acs_persons

SYNTHESIZE, KEEP = ["education", "marital"], ["age", "sex"]


@pytest.fixture(scope="module")
def persons():
    """ACS-like persons in four areas; in area 'd' every record is the same person, so any release copies it."""
    data = simulate_acs_persons(600, seed=3)[[*KEEP, *SYNTHESIZE]]
    data["area"] = np.repeat(["a", "b", "c", "d"], [250, 180, 110, 60])
    clone = data.iloc[[0]].drop(columns="area").to_dict("records")[0]
    data.loc[data["area"] == "d", list(clone)] = list(clone.values())
    return data


@pytest.fixture(scope="module")
def release(persons):
    recipe = bsd.CART(strata="area", min_leaf=10, bootstrap=50)
    policy = bsd.Policy(name="areas", criteria=(bsd.Criterion("copied_records", subset="all", at_most=1.0),))
    return bsd.synthesize(persons, recipe, synthesize=SYNTHESIZE, keep=KEEP, m=3, seed=2, policy=policy,
                          progress=False)  # fmt: skip


def test_each_record_keeps_its_area_and_gets_values_of_its_area(persons, release):
    for _, dataset in release.synthetic.groupby("synthetic"):
        assert dataset["area"].astype(str).tolist() == persons["area"].tolist()
        assert dataset["age"].tolist() == persons["age"].tolist()
    # area d's trees learned one person: its records are that person in every dataset
    d = release.synthetic[release.synthetic["area"] == "d"]
    assert (d["education"].astype(str) == persons.loc[persons["area"] == "d", "education"].iloc[0]).all()
    # the other areas' values are their own: no value of a column outside the values its area takes
    for area in "abc":
        own = set(persons.loc[persons["area"] == area, "education"].astype(str))
        assert set(release.synthetic.loc[release.synthetic["area"] == area, "education"].astype(str)) <= own
    groups = release.description["strata"]["groups"]
    assert [(g["group"], g["records"]) for g in groups] == [("a", 250), ("b", 180), ("c", 110), ("d", 60)]
    assert release.description["kept"] == ["area", *KEEP]  # the areas are kept


def test_records_copied_per_area_worked_by_hand(persons, release):
    result = release.measured["stratum_copied_records"]
    released = ["area", *KEEP, *SYNTHESIZE]
    originals = set(map(tuple, persons[released].astype(str).to_numpy()))
    for (area, k), rows in release.synthetic.groupby(["area", "synthetic"], observed=True):
        share = np.mean([tuple(r) in originals for r in rows[released].astype(str).to_numpy()])
        figure = result.values.query(f"subset == 'stratum {area}' and dataset == {k}")["value"].item()
        assert figure == pytest.approx(share)
    assert result.summary().set_index("subset").loc["stratum d", "pooled"] == 1.0
    # the cross-fitted release of area d never saw its records, but they are all one person: it copies too
    assert result.reference("stratum d", "unlearned") == 1.0


def test_an_area_that_copies_is_refused_by_the_area_criterion(persons):
    policy = bsd.Policy(name="each area", criteria=(
        bsd.Criterion("stratum_copied_records", subset="*", statistic="pooled", at_most=0.9),))  # fmt: skip
    recipe = bsd.CART(strata="area", min_leaf=10, bootstrap=20, donors="others")
    with pytest.raises(bsd.DisclosureRefused, match=r"stratum_copied_records \[stratum d\]"):
        bsd.synthesize(persons, recipe, synthesize=SYNTHESIZE, keep=KEEP, m=2, seed=1, policy=policy, progress=False)


def test_small_areas_are_pooled_and_a_pool_too_small_is_refused_before_fitting(persons, tmp_path):
    recipe = bsd.CART(strata="area", min_stratum=115, min_leaf=10, bootstrap=20)
    release = bsd.synthesize(persons, recipe, synthesize=SYNTHESIZE, keep=KEEP, m=1, seed=0, progress=False,
                             policy=bsd.Policy(name="none", criteria=()))  # fmt: skip
    groups = {g["group"]: (g["strata"], g["records"]) for g in release.description["strata"]["groups"]}
    assert groups == {"a": (["a"], 250), "b": (["b"], 180), "pooled small strata": (["c", "d"], 170)}
    assert release.synthetic["area"].astype(str).value_counts().to_dict() == {"a": 250, "b": 180, "c": 110, "d": 60}
    data = persons.assign(area=persons["area"].replace({"c": "a"}))
    with pytest.raises(bsd.InputError, match=r"'d' \(60\) of 'area' have fewer than min_stratum=115"):
        bsd.synthesize(data, recipe, synthesize=SYNTHESIZE, keep=KEEP, m=1, seed=0, progress=False)
    with pytest.raises(bsd.InputError, match="strata='area' is among the columns to synthesize"):
        bsd.synthesize(persons, recipe, synthesize=["area", *SYNTHESIZE], keep=KEEP, m=1, progress=False)
    persons.to_csv(tmp_path / "persons.csv", index=False)
    argv = ["cart", "--data", str(tmp_path / "persons.csv"), "--out", str(tmp_path / "out"), "--synthesize",
            "education,marital", "--keep", "age,sex", "--strata", "area", "--min-stratum", "100", "--quiet"]
    assert main(argv) == 2
    assert not (tmp_path / "out").exists()
