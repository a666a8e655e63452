"""``bsd.CART(households=...)``: persons synthesized within households through the one pipeline (issue 51, item 2):
on the simulated households, every rule across members held in every dataset, the tables of households by size and
composition within their bootstrap ranges, the household risk measured and judged by the default policy, no
original household id released; bad households refused before anything is fitted, through the API and the CLI."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.households import rule_violations

SYNTHESIZE = ["tenure", "sex", "age", "education", "employed"]


@pytest.fixture(scope="module")
def persons():
    return bsd.examples.households(600, 3, seed=5)[0]


@pytest.fixture(scope="module")
def release(persons, tmp_path_factory):
    recipe = bsd.CART(households="household", relationship="relationship", rules=bsd.examples.household_rules(),
                      min_leaf=10, bootstrap=200)  # fmt: skip
    out = tmp_path_factory.mktemp("households") / "run"
    return bsd.synthesize(persons, recipe, synthesize=SYNTHESIZE, keep=["area"], m=4, seed=3, out=out,
                          progress=False), out  # fmt: skip


def test_every_rule_holds_in_every_dataset_and_every_household_is_whole(persons, release):
    release, _ = release
    for _, dataset in release.synthetic.groupby("synthetic"):
        assert rule_violations(dataset) == dict.fromkeys(rule_violations(persons), 0)
        assert dataset["household"].nunique() == persons["household"].nunique()


def test_the_tables_of_households_are_within_their_bootstrap_ranges(release):
    release, _ = release
    result = release.measured["household_table_tau"]
    summary = result.summary().set_index("subset")
    for table in ("households by size", "households by composition", "households by size x area"):
        bootstrap = result.references.query(f"subset == '{table}' and reference == 'bootstrap'").iloc[0]
        assert bootstrap["lower"] <= summary.loc[table, "pooled"] <= 1.0, table


def test_the_person_tables_are_set_beside_a_bootstrap_of_whole_households(persons, release):
    """The persons' tables (table_tau) move by sampling as households do: their bootstrap resamples households, the
    references those of :func:`~bayessdc.synthesis.tables.tau_distributions` with the household as the cluster,
    wider than a bootstrap of persons for a household column such as tenure (the same for every member)."""
    from bayessdc.synthesis.tables import tau_distributions

    release, _ = release
    result = release.measured["table_tau"]
    assert "whole households" in result.description
    tables = release.measure_input.tables
    taus = tau_distributions(release.measure_input.original, release.synthetic, tables, n_bootstrap=200,
                             seed=release.measure_input.seed, clusters="household")  # fmt: skip
    tenure = next(spec for spec in tables if "tenure" in spec.by)
    households = taus.query(f"table == '{tenure.name}' and source == 'bootstrap'")["tau"]
    reference = result.references.query(f"subset == '{tenure.name}' and reference == 'bootstrap'").iloc[0]
    assert reference["value"] == pytest.approx(households.mean(), abs=1e-12)
    persons_only = tau_distributions(release.measure_input.original, release.synthetic, [tenure], n_bootstrap=200,
                                     seed=release.measure_input.seed).query("source == 'bootstrap'")["tau"]
    assert households.quantile(0.025) < persons_only.quantile(0.025)


def test_the_household_risk_is_measured_and_judged_by_the_default_policy(release):
    release, _ = release
    judged = {j.criterion.measure for j in release.policy.judgements}
    assert {"household_uniques_reappearing", "household_attribute_inference", "copied_records"} <= judged
    assert "replicated_uniques" not in judged  # no member is taken out of its household
    assert release.policy.passed
    inference = release.measured["household_attribute_inference"]
    assert inference.reference("all", "inherent_max") > inference.reference("all", "prior")


def test_the_release_holds_new_household_ids_and_the_private_folder_the_sizes(persons, release):
    release, out = release
    synthetic = pd.read_parquet(out / "release" / "synthetic.parquet")
    assert not set(synthetic["household"].astype(str)) & set(persons["household"])
    model = json.loads((out / "release" / "model.json").read_text())
    assert model["households"]["household_columns"] == ["tenure"]
    assert (out / "private" / "households.parquet").exists()


def test_bad_households_are_refused_before_fitting(persons, tmp_path):
    recipe = bsd.CART(households="household", relationship="relationship")
    with pytest.raises(bsd.InputError, match="has members of different 'sex'"):
        bsd.synthesize(persons, recipe, synthesize=["tenure", "age"], keep=["area", "sex"], m=1, progress=False,
                       out=tmp_path / "a")  # fmt: skip
    with pytest.raises(bsd.InputError, match="needs relationship="):
        bsd.synthesize(persons, bsd.CART(households="household"), synthesize=["age"], keep=["area"], m=1,
                       progress=False)  # fmt: skip
    assert not (tmp_path / "a").exists()
    orphan = persons[persons["relationship"] != "reference person"].iloc[0]["household"]
    data = persons[~((persons["household"] == orphan) & (persons["relationship"] == "reference person"))]
    data.to_csv(tmp_path / "persons.csv", index=False)
    argv = ["cart", "--data", str(tmp_path / "persons.csv"), "--out", str(tmp_path / "out"), "--synthesize",
            "tenure,age", "--keep", "area", "--households", "household", "--relationship", "relationship", "--quiet"]
    assert main(argv) == 2
    assert not (tmp_path / "out").exists()
