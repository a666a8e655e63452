"""``bsd.CART(households=...)`` with survey weights (issue 51, item 2): a household survey's weight is the household's.

Kept (a partially synthetic release), it is a kept household column: each synthetic household carries the weight of
the real household it stands in the place of; synthesized (``keep=[]``), it is drawn once per household in the
households' stage. The tables of households are then of weighted totals of households, against a bootstrap of whole
households carrying their weights; the household risk measures never take the weight as known. A weight differing
within a household (person weights) is refused before anything is fitted.

The data: simulated persons in households, the weight the household's, depending on its area (an oversampled area,
``a01``, has small weights) and strongly on its size (larger households carry larger weights), jittered per
household.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.measures import MeasureInput, compute_measures

SYNTHESIZE = ["tenure", "sex", "age"]
NO_CRITERIA = bsd.Policy(name="the wiring: reported, not judged", criteria=())
AREA_WEIGHT = {"a01": 40.0, "a02": 150.0, "a03": 400.0}


def _weighted(persons: pd.DataFrame, seed: int = 11) -> pd.DataFrame:
    """``persons`` with a household weight ``wt``: its area's base weight x (1 + size) x a jitter in [0.8, 1.25]."""
    rng = np.random.default_rng(seed)
    sizes = persons.groupby("household", sort=False).size()
    jitter = pd.Series(rng.uniform(0.8, 1.25, len(sizes)).round(2), index=sizes.index)
    weight = persons["area"].map(AREA_WEIGHT) * (1 + persons["household"].map(sizes)) * persons["household"].map(jitter)
    return persons.assign(wt=weight.round(1).to_numpy())


@pytest.fixture(scope="module")
def persons():
    return _weighted(bsd.examples.households(150, 3, seed=5)[0])


def _recipe(**kw):
    return bsd.CART(households="household", relationship="relationship", rules=bsd.examples.household_rules(),
                    min_leaf=10, bootstrap=50, **kw)  # fmt: skip


@pytest.fixture(scope="module")
def release(persons, tmp_path_factory):
    out = tmp_path_factory.mktemp("weighted_households") / "run"
    kept = bsd.synthesize(persons, _recipe(), synthesize=SYNTHESIZE, keep=["area"], weights="wt", m=3, seed=4,
                          out=out, policy=NO_CRITERIA, progress=False)  # fmt: skip
    return kept, out


def _households(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per household: its area, weight, size (6 and more as ``6+``), and how many weights its members hold."""
    grouped = frame.groupby([*by, "household"], sort=False)
    out = grouped.agg(area=("area", "first"), wt=("wt", "first"), weights=("wt", "nunique"), size=("wt", "size"))
    out["size"] = np.where(out["size"] >= 6, "6+", out["size"].astype(str))
    return out.reset_index()


def test_every_synthetic_household_carries_the_weight_of_the_household_it_stands_for(persons, release):
    """(a) Per dataset, the weights of the households of each area are exactly the original households' of that
    area (a multiset), and the members of a synthetic household share one weight."""
    release, _ = release
    original = _households(persons, [])
    expected = {a: sorted(w) for a, w in original.groupby("area")["wt"]}
    for d, dataset in _households(release.synthetic, ["synthetic"]).groupby("synthetic"):
        assert (dataset["weights"] == 1).all(), d
        assert {a: sorted(w) for a, w in dataset.groupby("area")["wt"]} == expected, d
    assert release.description["weights"]["role"] == "kept"
    stages = release.description["households"]["stages"]
    assert "wt" in stages["households"]["kept"] and "wt" in stages["members"]["kept"]  # every tree given it


def test_the_weighted_household_tau_is_worked_by_hand_on_three_households():
    """(b) Three households, each with its weight: h1 of one member (10), h2 a reference person and a child (20),
    h3 a reference person and a spouse (30); the weighted total N = 60, and by size: 1 -> 10, 2 -> 50.

    Dataset 1 swaps the compositions of h1 and h2 (each keeps its weight): by size 1 -> 20, 2 -> 10 + 30 = 40, so
    L1 = 10 + 10 = 20 and tau = 1 - 20/(2 x 60) = 5/6; by composition (child + ref: 10, ref: 20, ref + spouse: 30
    against 20, 10, 30) L1 = 20, tau = 5/6. Unweighted both tables are the original's: tau = 1.

    Dataset 2 makes h2 one member: by size 1 -> 10 + 20 = 30, 2 -> 30, L1 = 20 + 20 = 40, tau = 1 - 40/120 = 2/3; by
    composition (ref: 30, ref + spouse: 30) L1 = 20 + 20 + 0 = 40, tau = 2/3 (unweighted also 2/3: 1 - 2/6).

    The bootstrap draws three households with replacement, each with its weight: over the 27 equally likely draws,
    the mean tau of the table by size is their average, worked out below by enumeration."""
    original = pd.DataFrame({
        "household": ["h1", "h2", "h2", "h3", "h3"],
        "rel": ["ref", "ref", "child", "ref", "spouse"],
        "wt": [10.0, 20, 20, 30, 30],
    })  # fmt: skip
    synthetic = pd.DataFrame({
        "synthetic": [1, 1, 1, 1, 1, 2, 2, 2, 2],
        "household": ["H1", "H1", "H2", "H3", "H3", "H1", "H2", "H3", "H3"],
        "rel": ["ref", "child", "ref", "ref", "spouse", "ref", "ref", "ref", "spouse"],
        "wt": [10.0, 10, 20, 30, 30, 10, 20, 30, 30],
    })  # fmt: skip

    def measured(weights):
        data = MeasureInput(synthetic, original, released=list(original.columns), households="household",
                            household_relationship="rel", bootstrap=2000, seed=1, weights=weights)  # fmt: skip
        return compute_measures(data, names=["household_table_tau"])["household_table_tau"]

    result = measured("wt")
    values = result.values.set_index(["subset", "dataset"])["value"]
    assert values[("households by size", 1)] == pytest.approx(5 / 6, abs=1e-12)
    assert values[("households by composition", 1)] == pytest.approx(5 / 6, abs=1e-12)
    assert values[("households by size", 2)] == pytest.approx(2 / 3, abs=1e-12)
    assert values[("households by composition", 2)] == pytest.approx(2 / 3, abs=1e-12)
    assert "weighted by wt" in result.title and "2N" in result.unit
    unweighted = measured(None).values.set_index(["subset", "dataset"])["value"]
    assert unweighted[("households by size", 1)] == 1.0
    assert unweighted[("households by size", 2)] == pytest.approx(2 / 3)

    sizes, weights = np.array([1, 2, 2]), np.array([10.0, 20.0, 30.0])
    base = np.array([10.0, 50.0])
    taus = []
    for drawn in itertools.product(range(3), repeat=3):
        drawn = list(drawn)
        totals = np.array([weights[drawn][sizes[drawn] == s].sum() for s in (1, 2)])
        taus.append(1 - np.abs(totals - base).sum() / 120)
    boot = result.references.query("subset == 'households by size' and reference == 'bootstrap'").iloc[0]
    assert boot["value"] == pytest.approx(np.mean(taus), abs=0.02)  # 2,000 replicates: sd of the mean < 0.005
    assert min(taus) <= boot["lower"] <= boot["upper"] <= max(taus)


def test_the_weighted_tables_of_households_are_the_weighted_totals_of_the_datasets(persons, release):
    """(c) The figure of the table by size and by size x area, per dataset, is tau of the households' weighted totals
    worked out here from the release's datasets; with weights this related to size it is not the unweighted tau."""
    release, _ = release
    result = release.measured["household_table_tau"]
    assert "weighted by wt" in result.title
    values = result.values.set_index(["subset", "dataset"])["value"]
    original = _households(persons, [])
    differs = []
    for d, dataset in _households(release.synthetic, ["synthetic"]).groupby("synthetic"):
        for table, by in (("households by size", ["size"]), ("households by size x area", ["size", "area"])):
            o = original.groupby(by)["wt"].sum()
            s = dataset.groupby(by)["wt"].sum()
            o, s = o.align(s, fill_value=0.0)
            assert values[(table, d)] == pytest.approx(1 - np.abs(o - s).sum() / (2 * o.sum()), abs=1e-12)
            o, s = original.groupby(by).size().align(dataset.groupby(by).size(), fill_value=0)
            differs.append(abs(values[(table, d)] - (1 - np.abs(o - s).sum() / (2 * o.sum()))))
    assert max(differs) > 1e-3
    assert not any("wt" in subset for subset, _ in values.index)  # never a column the households are counted by


def test_the_household_risk_measures_never_take_the_weight_as_known(persons, release):
    """The intruder knows a household by its area and members, not by its weight, and the weight is no secret: the
    figures are those of the release without its weight column; had the weight been known, nearly every real
    household would be unique on its signature (the weights are nearly unique)."""
    release, _ = release
    data = release.measure_input
    assert "wt" not in data.household_known and "wt" not in data.household_secrets
    names = ["household_uniques_reappearing", "household_attribute_inference"]
    for name in names:
        assert "wt" not in release.measured[name].description
    measured = compute_measures(data, names=names)
    without = MeasureInput(**{**vars(data), "cache": {}, "weights": None,
                              "original": data.original.drop(columns="wt"),
                              "synthetic": data.synthetic.drop(columns="wt"),
                              "unlearned": data.unlearned.drop(columns="wt"),
                              "released": [c for c in data.released if c != "wt"]})  # fmt: skip
    unweighted = compute_measures(without, names=names)
    for name in names:
        pd.testing.assert_frame_equal(measured[name].values, unweighted[name].values)
    known = MeasureInput(**{**vars(data), "cache": {}, "household_known": [*data.household_known, "wt"]})
    unique = compute_measures(known, names=names[:1])[names[0]].details["unique"].sum()
    households = persons["household"].nunique()
    assert unique > 0.9 * households > measured[names[0]].details["unique"].sum() + 0.2 * households


def test_model_json_and_the_report_say_the_weight_is_a_kept_household_weight(release):
    release, out = release
    model = json.loads((out / "release" / "model.json").read_text())
    weights = model["weights"]
    assert weights["column"] == "wt" and weights["role"] == "kept" and weights["unit"] == "household"
    assert weights["households"] == "household" and "carries that household's collected weight" in weights["why"]
    assert "bootstrap of whole households" in weights["utility"]
    about = " ".join(release.report_content.about)
    assert "'wt' is a household weight kept as collected" in about


def test_a_weight_differing_within_a_household_is_refused_before_fitting(persons, tmp_path):
    """(d) Person weights (one member's calibrated apart): refused naming the household and the column, before any
    output, kept or synthesized."""
    households = persons.groupby("household", sort=False).size()
    target = households.index[(households >= 2).to_numpy()][2]
    second = np.flatnonzero((persons["household"] == target).to_numpy())[1]
    data = persons.copy()
    data.loc[data.index[second], "wt"] = data["wt"].iloc[second] * 1.1
    match = rf"weights='wt' differs between the members of household '{target}' \(.*1 household\(s\) so\).*base"
    with pytest.raises(bsd.InputError, match=match):
        bsd.synthesize(data, _recipe(), synthesize=SYNTHESIZE, keep=["area"], weights="wt", m=1, progress=False,
                       out=tmp_path / "kept")  # fmt: skip
    with pytest.raises(bsd.InputError, match=match):
        bsd.synthesize(data, _recipe(), synthesize=["area", *SYNTHESIZE], keep=[], weights="wt", m=1,
                       progress=False, out=tmp_path / "synthesized")  # fmt: skip
    assert not (tmp_path / "kept").exists() and not (tmp_path / "synthesized").exists()


def test_a_fully_synthetic_release_draws_the_weight_once_per_household_after_its_composition(persons):
    """``keep=[]``: the weight is synthesized as a household column of the households' stage, right after the
    composition, so every other column is drawn given it; each synthetic household's weight is an observed
    household's (a Bayesian bootstrap of a leaf), the same for all its members."""

    release = bsd.synthesize(persons, _recipe(), synthesize=["area", *SYNTHESIZE], keep=[], weights="wt", m=2,
                             seed=8, policy=NO_CRITERIA, progress=False)  # fmt: skip
    assert release.description["weights"]["role"] == "synthesized"
    assert release.description["weights"]["unit"] == "household"
    households = release.description["households"]
    assert households["stages"]["households"]["synthesized_in_order"][:2] == ["household composition", "wt"]
    assert "wt" in households["household_columns"] and "wt" in households["stages"]["members"]["kept"]
    drawn = _households(release.synthetic, ["synthetic"])
    assert (drawn["weights"] == 1).all()
    assert set(drawn["wt"]) <= set(persons["wt"])
    assert "wt" not in release.measure_input.household_secrets + release.measure_input.household_known
    assert "weighted by wt" in release.measured["household_table_tau"].title


def test_the_same_seed_gives_the_same_datasets(persons, release):
    """(e) The kept-weight release drawn again from the same seed: the same datasets, household ids included."""
    release, _ = release
    again = bsd.synthesize(persons, _recipe(), synthesize=SYNTHESIZE, keep=["area"], weights="wt", m=3, seed=4,
                           policy=NO_CRITERIA, progress=False)  # fmt: skip
    pd.testing.assert_frame_equal(again.synthetic, release.synthetic)
