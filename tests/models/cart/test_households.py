"""Persons within households (:mod:`bayessdc.models.cart.households`): compositions drawn whole, members given their
household, the rules across members held (impossible households drawn again), the cross-fit by household, and bad
households refused naming them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayessdc.models.cart.data import CartDataError
from bayessdc.models.cart.households import COMPOSITION, HouseholdCart, relabel_households
from bayessdc.models.cart.synthesizer import CartSynthesizer
from bayessdc.models.cart.unlearned import cross_fitted_datasets
from bayessdc.models.households import cart_household_rules, rule_violations, simulate_households

SYNTHESIZE = ["tenure", "sex", "age", "education", "employed"]


def _synthesizer(min_leaf: int = 10, **kw) -> HouseholdCart:
    template = CartSynthesizer(SYNTHESIZE, ["area"], cart_household_rules(), min_samples_leaf=min_leaf)
    return HouseholdCart(template, "household", "relationship", **kw)


@pytest.fixture(scope="module")
def persons() -> pd.DataFrame:
    return simulate_households(600, 3, concentration=3.0, seed=2)[0]


@pytest.fixture(scope="module")
def fitted(persons) -> HouseholdCart:
    return _synthesizer().fit(persons, seed=4)


def _compositions(frame: pd.DataFrame, by: list[str]) -> pd.Series:
    others = frame[frame["relationship"] != "reference person"]
    joined = others.sort_values("relationship").groupby([*by, "household"], observed=True)["relationship"].agg(
        lambda r: " + ".join(map(str, r)))
    return joined


def test_every_household_is_whole_and_keeps_the_rules_across_its_members(persons, fitted):
    synthetic = fitted.synthesize_datasets(4)
    real = set(_compositions(persons, []).to_numpy())
    for _, dataset in synthetic.groupby("synthetic"):
        assert sum(rule_violations(dataset).values()) == 0
        # one household in the place of each, area by area, each with one area
        assert dataset.groupby("area", observed=True)["household"].nunique().to_dict() == \
            persons.groupby("area")["household"].nunique().to_dict()
        assert dataset.groupby("household")["area"].nunique().max() == 1
        # every composition drawn is one a real household has; the household columns are the household's
        assert set(_compositions(dataset, []).to_numpy()) <= real
        assert dataset.groupby("household")["tenure"].nunique().max() == 1
    assert not set(synthetic["household"]) & set(persons["household"])  # never the original ids


def test_the_composition_of_each_area_follows_the_area(persons, fitted):
    """Areas drawn far apart (concentration 3): each area's share of one-person households, in 20 datasets, within
    4 standard errors of its own share in the data, and the areas' shares differ as in the data."""
    synthetic = fitted.synthesize_datasets(20, seed=9)
    size = synthetic.groupby(["synthetic", "area", "household"], observed=True).size()
    alone = (size == 1).groupby(level="area").mean()
    real_size = persons.groupby(["area", "household"]).size()
    real = (real_size == 1).groupby(level="area").mean()
    n = real_size.groupby(level="area").size()
    se = np.sqrt(real * (1 - real) / n)
    assert (np.abs(alone - real) < 4 * se).all(), (alone, real)
    pooled = (real_size == 1).mean()  # one composition model for every area would draw this share everywhere
    assert (np.abs(pooled - real) > 4 * se).any()


def test_the_same_seed_gives_the_same_households(persons, fitted):
    again = _synthesizer().fit(persons, seed=4)
    pd.testing.assert_frame_equal(fitted.synthesize_datasets(2, seed=3), again.synthesize_datasets(2, seed=3))


def test_an_impossible_household_is_drawn_again_until_its_members_keep_the_rules():
    """By construction: one leaf of every column (min leaf above the records), so a reference person's age is drawn
    from the pool whatever the composition; old reference persons live alone, young ones with their parent, whose
    age must be 16 years above theirs and never exceeds 60. A household with a parent and an old reference person is
    impossible; it is rejected and drawn again."""
    rows = []
    for h in range(60):
        rows.append((f"h{h}", "a", "reference person", 85 + h % 10, "x"))
    for h in range(60, 120):
        rows.append((f"h{h}", "a", "reference person", 20 + h % 10, "x"))
        rows.append((f"h{h}", "a", "parent", 50 + h % 10, "x"))
    data = pd.DataFrame(rows, columns=["household", "area", "relationship", "age", "work"])
    rules = [{"name": "parents older by 16", "if": {"relationship": "parent"},
              "then": {"age": {"min": {"column": "reference age", "plus": 16}}}}]  # fmt: skip
    template = CartSynthesizer(["age"], ["area"], rules, min_samples_leaf=500)
    synthesizer = HouseholdCart(template, "household", "relationship").fit(data, seed=1)
    synthetic = synthesizer.synthesize_datasets(3)
    assert synthesizer.fallbacks[COMPOSITION]["rejected"] > 0
    for _, dataset in synthetic.groupby("synthetic"):
        ref = dataset[dataset["relationship"] == "reference person"].set_index("household")["age"]
        parent = dataset[dataset["relationship"] == "parent"].set_index("household")["age"]
        assert (parent >= ref.loc[parent.index] + 16).all()
        assert dataset["household"].nunique() == 120


def test_the_cross_fitted_release_leaves_whole_households_out(persons, fitted):
    unlearned = cross_fitted_datasets(fitted, persons, 2, seed=5, folds=5)
    for _, dataset in unlearned.groupby("synthetic"):
        assert dataset["household"].nunique() == persons["household"].nunique()
        assert dataset.groupby("household")["area"].nunique().max() == 1
        assert sum(rule_violations(dataset).values()) == 0


def test_relabelling_numbers_households_per_dataset_and_part():
    frame = pd.DataFrame({"synthetic": [1, 1, 1, 1, 2, 2], "household": ["H1", "H1", "H1", "H2", "H1", "H1"]})
    part = np.array([0, 0, 1, 1, 0, 0])
    assert relabel_households(frame, "household", part)["household"].tolist() == \
        ["H0000001", "H0000001", "H0000002", "H0000003", "H0000001", "H0000001"]


def test_bad_households_are_refused_naming_them(persons):
    sizes = persons.groupby("household").size()
    h = sizes[sizes >= 3].index[0]  # a household of three or more
    member = (persons["household"] == h) & (persons["relationship"] != "reference person")
    cases = [
        (persons.assign(relationship=persons["relationship"].where(persons["household"] != h, "child")),
         f"household '{h}' has no member"),
        (persons.assign(relationship=persons["relationship"].where(persons["household"] != h, "reference person")),
         f"household '{h}' has {sizes[h]} member"),
        (persons.assign(area=persons["area"].where(~member, "a09")), f"household '{h}' is shared across strata"),
        (persons.assign(household=persons["household"].where(~member, None)), "is missing at data row"),
    ]  # fmt: skip
    for data, message in cases:
        with pytest.raises(CartDataError, match=message):
            _synthesizer(areas="area").validate(data)


def test_a_household_larger_than_allowed_is_refused_naming_it(persons):
    sizes = persons.groupby("household").size()
    largest = sizes.idxmax()
    with pytest.raises(CartDataError, match=f"household '{largest}' has {sizes.max()} members, more than"):
        _synthesizer(max_size=int(sizes.max()) - 1).validate(persons)


def test_a_rule_of_neither_stage_is_refused(persons):
    rules = [{"name": "odd", "if": {"household size": 2}, "then": {"household composition": "spouse"}}]
    template = CartSynthesizer(["tenure", "age"], ["area"], rules)
    with pytest.raises(CartDataError, match="rule 'odd' names"):
        HouseholdCart(template, "household", "relationship").check(persons)
