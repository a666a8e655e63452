"""The persons-in-households simulator (issue 51): its rules across members hold in every household, a broken
household is named by the rule it breaks, and its known structure is recovered from a large draw (the household
types of every area, the sizes, the tenure model)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import bayessdc as bsd
from bayessdc.models.households import HOUSEHOLD_TYPES, household_rules, rule_violations, simulate_households


@pytest.fixture(scope="module")
def large():
    return simulate_households(30_000, n_areas=4, seed=7)


def test_every_household_keeps_the_rules_and_a_broken_one_is_counted_by_hand():
    persons, _ = bsd.examples.households(1500, 10, seed=2)
    assert set(rule_violations(persons).values()) == {0}
    assert [r["name"] for r in household_rules()] == list(rule_violations(persons))
    broken = persons.copy()
    first_child = broken.index[broken["relationship"] == "child"][0]
    household = broken.loc[first_child, "household"]
    ref_age = broken.loc[(broken["household"] == household) & (broken["relationship"] == "reference person"), "age"]
    broken.loc[first_child, "age"] = int(ref_age.iloc[0]) - 10  # 10 years younger: breaks the 16-year rule
    second = broken.index[broken["relationship"] == "spouse"][0]
    broken.loc[second, "relationship"] = "reference person"  # a second reference person
    counts = rule_violations(broken)
    assert counts["children younger by 16"] == 1 and counts["one reference person"] == 1
    assert sum(counts.values()) == 2
    again, _ = bsd.examples.households(1500, 10, seed=2)
    pd.testing.assert_frame_equal(again, persons)  # the same seed, the same file


def test_the_types_of_every_area_are_recovered(large):
    persons, truth = large
    kinds = truth["household_type"]
    area = persons.groupby("household")["area"].first()
    for a, probabilities in truth["types"].iterrows():
        own = kinds[area[area == a].index]
        observed = own.value_counts(normalize=True).reindex(list(HOUSEHOLD_TYPES), fill_value=0.0)
        se = np.sqrt(probabilities * (1 - probabilities) / len(own))
        assert (abs(observed - probabilities) < 4 * se + 1e-9).all(), (a, observed, probabilities)


def test_household_sizes_follow_the_types(large):
    persons, truth = large
    size = persons.groupby("household").size()
    by_type = size.groupby(truth["household_type"][size.index].to_numpy())
    kinds = truth["household_type"][size.index]
    assert set(size[kinds == "single"]) == {1} and set(size[kinds == "couple"]) == {2}
    for kind, base, mean in (("couple with children", 3, 0.8), ("lone parent", 2, 0.6), ("three generations", 4, 0.5),
                             ("shared", 2, 0.7)):  # fmt: skip
        sizes = by_type.get_group(kind)
        assert sizes.mean() == pytest.approx(base + mean, abs=4 * np.sqrt(mean / len(sizes)))


def test_the_tenure_model_is_recovered(large):
    persons, truth = large
    heads = persons[persons["relationship"] == "reference person"].set_index("household")
    kind = truth["household_type"][heads.index]
    design = pd.get_dummies(heads["area"], dtype=float)
    design["age"] = heads["age"] - 45
    design["couple"] = kind.isin(["couple", "couple with children", "three generations"]).to_numpy().astype(float)
    fit = sm.Logit((heads["tenure"] == "own").astype(float), design).fit(disp=False)
    expected = pd.concat([truth["tenure"]["intercept"], pd.Series({"age": 0.04, "couple": 0.8})])
    z = (fit.params - expected[fit.params.index]) / fit.bse
    assert (abs(z) < 4).all(), z
