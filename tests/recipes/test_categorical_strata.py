"""``bsd.DPMPM(strata=...)`` and ``bsd.DPAreal(strata=...)``: synthesis area by area (issue 51, item 1) through the one
pipeline. Each group of areas gets a model of its own, fitted on its records, with a release gate of its own (chains
added to the failing groups only); every record keeps its area; the measures read the whole file; bad strata are
refused before anything is sampled."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.dpmpm import GibbsSettings
from bayessdc.recipes.categorical.strata import StrataGateReport, group_targets
from bayessdc.synthesis.release_gate import ReleaseGateReport

SIZES = {"a": 240, "b": 240, "c": 30, "d": 30}
#: A policy that judges nothing: these tests are of the wiring, the default policy's judgements are tested elsewhere.
NO_CRITERIA = '[policy]\nname = "strata wiring: reported, not judged"\n'
GATE = {"datasets_per_chain": 10, "utility_tolerance": 0.2, "risk_tolerance": 0.05}
SETTINGS = {"draws": 200, "burn": 100, "chains": 4, "thin": 2}
OPTIONS = ["--K", "2", "--draws", "200", "--burn", "100", "--chains", "4", "--thin", "2", "--repetitions", "5",
           "--risk-records", "30", "--risk-draws", "50", "--gate-datasets", "10", "--utility-tolerance", "0.2",
           "--risk-tolerance", "0.05", "--m", "3", "--seed", "1", "--quiet"]  # fmt: skip


def _table(seed: int = 4) -> pd.DataFrame:
    """Four areas: in a, c and d the label y follows x (p -> u, q -> v), in b it is the opposite (p -> v, q -> u),
    10% of labels flipped (in b to a level w no other area has); z is noise."""
    rng = np.random.default_rng(seed)
    area = np.repeat(list(SIZES), list(SIZES.values()))
    x = rng.choice(["p", "q"], len(area))
    z = rng.choice(["r", "s", "t"], len(area))
    follows, opposite = np.where(x == "p", "u", "v"), np.where(x == "p", "v", "u")
    y = np.where(area == "b", opposite, follows)
    noise = rng.random(len(area)) < 0.1
    y = np.where(noise, np.where(area == "b", "w", np.where(y == "u", "v", "u")), y)
    return pd.DataFrame({"x": x, "area": area, "z": z, "y": y})


def _dpmpm(**options) -> bsd.DPMPM:
    # K = 2 classes hold one area's relation (y given x), not two opposite ones at once: what one model of the
    # whole file cannot do, one model per area can
    return bsd.DPMPM(K=2, settings=GibbsSettings(**SETTINGS), repetitions=5, risk_records=30, risk_draws=50,
                     gate=bsd.ReleaseGatePolicy(**GATE), **options)  # fmt: skip


def _follows(frame: pd.DataFrame) -> float:
    """The share of rows whose label follows x (p -> u, q -> v)."""
    return float((((frame["x"] == "p") & (frame["y"] == "u")) | ((frame["x"] == "q") & (frame["y"] == "v"))).mean())


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("strata")
    (folder / "policy.toml").write_text(NO_CRITERIA)
    return folder


@pytest.fixture(scope="module")
def refused(folder):
    """The run judged once (max_chains = chains): groups a and b fail their gates at 4 chains."""
    recipe = _dpmpm(strata="area", min_stratum=50)
    recipe.gate = bsd.ReleaseGatePolicy(**GATE, max_chains=SETTINGS["chains"])
    with pytest.raises(bsd.ConvergenceError) as refusal:
        bsd.synthesize(_table(), recipe, synthesize="y", keep="x,z", m=3, seed=1, policy=folder / "policy.toml",
                       out=folder / "refused", progress=False)  # fmt: skip
    return refusal.value


@pytest.fixture(scope="module")
def release(folder, refused):
    """The refused run resumed with the default budget of chains (the release of a run without resume: the
    command line's test)."""
    recipe = _dpmpm(strata="area", min_stratum=50)
    return bsd.synthesize(_table(), recipe, synthesize="y", keep="x,z", m=3, seed=1, policy=folder / "policy.toml",
                          out=folder / "api", resume=refused, progress=False)  # fmt: skip


def test_each_area_keeps_its_own_relation_which_one_model_of_the_file_loses(folder, release):
    table = _table()
    assert _follows(table[table["area"] == "a"]) > 0.85 and _follows(table[table["area"] == "b"]) < 0.05
    for _, dataset in release.synthetic.groupby("synthetic"):
        by_area = {area: _follows(rows) for area, rows in dataset.groupby("area")}
        assert by_area["a"] > 0.8 and by_area["c"] > 0.6 and by_area["d"] > 0.6  # the label follows x
        assert by_area["b"] < 0.15  # the opposite
    # a group's model draws only the levels its records take: w, a level of area b alone, in b only
    levels = release.synthetic.groupby("area")["y"].unique()
    assert "w" in set(levels["b"]) and all(set(levels[a]) <= {"u", "v"} for a in "acd")
    # the same DPMPM fitted to the whole file (the area a kept column) cannot hold both relations
    whole = bsd.synthesize(table, _dpmpm(), synthesize="y", keep="area,x,z", m=3, seed=1, allow_unconverged=True,
                           policy=folder / "policy.toml", progress=False)  # fmt: skip
    worst = min(min(_follows(d[d["area"] == "a"]), 1 - _follows(d[d["area"] == "b"]))
                for _, d in whole.synthetic.groupby("synthetic"))  # fmt: skip
    assert worst < 0.75


def test_every_record_keeps_its_area_and_its_kept_values_in_the_data_order(release):
    table = _table()
    assert len(release.synthetic) == 3 * len(table)  # nothing removed: the policy judges nothing
    for _, dataset in release.synthetic.groupby("synthetic"):
        assert dataset[["area", "x", "z"]].to_numpy().tolist() == table[["area", "x", "z"]].to_numpy().tolist()
    assert list(release.synthetic.columns) == ["synthetic", "area", "x", "z", "y"]
    assert release.description["kept"] == ["area", "x", "z"] and release.description["synthesized"] == ["y"]
    groups = [(g["group"], g["strata"], g["records"]) for g in release.description["strata"]["groups"]]
    # c and d (30 records each) are below min_stratum=50 and pooled, 60 records
    assert groups == [("a", ["a"], 240), ("b", ["b"], 240), ("pooled small strata", ["c", "d"], 60)]
    assert release.facts["strata"] == 4 and release.facts["strata_groups"] == 3


def test_each_group_is_gated_on_its_own_and_chains_go_to_the_failing_groups_only(folder, release):
    gate = release.diagnostics["release_gate"]
    assert gate["passed"] is True and set(gate["groups"]) == {"a", "b", "pooled small strata"}
    assert all(g["passed"] for g in gate["groups"].values())
    # every group's figures, named by the group, each judged against the group's own tolerance
    for name, own in gate["groups"].items():
        for figure, entry in own["figures"].items():
            assert gate["figures"][f"{name}: {figure}"] == entry
    rounds = gate["stopping_rule"]["rounds"]
    assert rounds, "the fixture's tolerances must make some group fail at its first judgement"
    failed = {figure.split(": ")[0] for r in rounds for figure in r["failed"]}
    chains = gate["chains_by_group"]
    assert failed and failed != set(chains)  # some groups failed first, some did not
    for name, count in chains.items():
        assert (count > SETTINGS["chains"]) == (name in failed), (name, count, failed)
    # each group's posterior holds its own chains, written as its own fit
    table = release.private_tables["strata.parquet"].set_index("group")
    for name, count in chains.items():
        fit = table.loc[name, "fit"]
        assert release.diagnostics.posteriors[fit].posterior.sizes["chain"] == count == table.loc[name, "chains"]
        assert (folder / "api" / "private" / f"posterior_{fit}.nc").exists()
        assert release.diagnostics["parameter_gate"]["fits"][fit]["max_r_hat"] == table.loc[name, "max_r_hat"]
    assert table["release_gate_passed"].all() and table["records"].to_dict() == {
        "a": 240, "b": 240, "pooled small strata": 60}  # fmt: skip
    model = json.loads((folder / "api" / "release" / "model.json").read_text())
    assert model["release_gate"]["chains_by_group"] == chains and model["strata"]["column"] == "area"
    assert pd.read_parquet(folder / "api" / "private" / "strata.parquet")["chains"].tolist() == list(chains.values())


def test_a_group_that_fails_its_gate_refuses_the_release_naming_the_group(folder, refused):
    message = str(refused)
    assert message.startswith("the DPMPM by 'area' (2 of 3 groups: a, b) failed the release gate: a: ")
    assert "b: expected_match_risk[area+x+z+y]: between-chain SE" in message and "pooled small strata:" not in message
    assert "--" not in message  # the library names parameters
    private = folder / "refused" / "private"
    table = pd.read_parquet(private / "strata.parquet").set_index("group")
    assert table["release_gate_passed"].to_dict() == {"a": False, "b": False, "pooled small strata": True}
    assert (table["chains"] == SETTINGS["chains"]).all() and (table.loc[["a", "b"], "figures_failed"] > 0).all()
    diagnostics = json.loads((private / "diagnostics.json").read_text())
    assert diagnostics["release_gate"]["failing_groups"] == ["a", "b"] and diagnostics["passed"] is False
    assert {p.name for p in private.glob("posterior_*.nc")} == {f"posterior_group-{i}.nc" for i in range(3)}
    assert not (folder / "refused" / "release").exists() or not any((folder / "refused" / "release").iterdir())


def test_the_gate_of_the_groups_passes_when_each_does_and_forecasts_the_failing_groups_worst():
    def report(passed: bool, chains: int, needed: int | None = None) -> ReleaseGateReport:
        figures = {} if passed else {"pmse_ratio": {"passed": False, "between_chain_se": 2.0, "tolerance": 1.0,
                                                    "chains_needed": needed}}  # fmt: skip
        return ReleaseGateReport(passed, chains, figures)

    gate = StrataGateReport.of({"a": report(True, 20), "b": report(False, 8, 12), "c": report(False, 4, 9)})
    assert not gate.passed and gate.failing() == ["b", "c"] and gate.failed() == ["b: pmse_ratio", "c: pmse_ratio"]
    assert gate.chains == 8 and gate.chains_needed() == 12  # the failing groups' worst, not a's 20 chains
    assert group_targets(gate, 18, max_chains=32) == {"b": 18, "c": 14}  # each its own forecast (ceil 1.5 x needed)
    assert gate.problems()[0].startswith("b: pmse_ratio: between-chain SE 2")
    assert StrataGateReport.of({"a": report(True, 4), "b": report(True, 6)}).passed
    assert StrataGateReport.of({"a": report(False, 4, None), "b": report(False, 4, 9)}).chains_needed() is None


def test_records_copied_are_reported_per_area_and_not_judged(release):
    table = _table()
    result = release.measured["stratum_copied_records"]
    columns = ["area", "x", "z", "y"]
    originals = set(map(tuple, table[columns].to_numpy()))
    for (area, k), rows in release.synthetic.groupby(["area", "synthetic"]):
        share = np.mean([tuple(r) in originals for r in rows[columns].to_numpy()])
        assert result.values.query(f"subset == 'stratum {area}' and dataset == {k}")["value"].item() == share
    # a categorical release has no cross-fitted datasets: the default policy's criterion (CART's) does not apply,
    # and one that does finds no reference to judge against
    assert all(j.criterion.measure != "stratum_copied_records" for j in release.judge().judgements)
    policy = bsd.Policy(name="areas", criteria=(
        bsd.Criterion("stratum_copied_records", subset="*", statistic="pooled", at_most="unlearned_range"),))
    judged = release.judge(policy).judgements
    assert [j.subset for j in judged] == [f"stratum {a}" for a in SIZES] and all(j.passed is None for j in judged)


def test_the_default_policy_judges_each_area_on_its_records_own_labels_reproduced(release):
    """Each area's exact attribute disclosures, worked from the datasets: the share of the area's records whose
    synthesized label in their own row is their own; the default policy judges every area on it (against the area's
    inherent maximum, tests/measures/test_strata.py)."""
    table = _table()
    result = release.measured["stratum_attribute_disclosures"]
    for k, dataset in release.synthetic.groupby("synthetic"):
        own = dataset["y"].to_numpy() == table["y"].to_numpy()
        for area in SIZES:
            share = own[(table["area"] == area).to_numpy()].mean()
            assert result.values.query(f"subset == 'stratum {area}' and dataset == {k}")["value"].item() == share
    judged = [j for j in release.judge().judgements if j.criterion.measure == "stratum_attribute_disclosures"]
    assert [j.subset for j in judged] == [f"stratum {a}" for a in SIZES] and all(j.passed is not None for j in judged)


def test_the_command_line_gives_the_release_of_the_resumed_run_for_the_same_seed(folder, release):
    _table().to_csv(folder / "areas.csv", index=False)
    argv = ["dpmpm", "--data", str(folder / "areas.csv"), "--synthesize", "y", "--keep", "x", "z", "--strata", "area",
            "--min-stratum", "50", "--policy", str(folder / "policy.toml"), "--out", str(folder / "cli"), *OPTIONS]
    assert main(argv) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(folder / "cli" / "release" / "synthetic.parquet"),
                                  pd.read_parquet(folder / "api" / "release" / "synthetic.parquet"))  # fmt: skip


def test_bad_strata_are_refused_before_anything_is_sampled(folder, tmp_path):
    table = _table()
    out = tmp_path / "out"

    def refused(frame, recipe, match, synthesize="y", keep="x,z"):
        with pytest.raises(bsd.InputError, match=match):
            bsd.synthesize(frame, recipe, synthesize=synthesize, keep=keep, m=2, out=out, progress=False)
        assert not out.exists()

    refused(table, _dpmpm(strata="area"), "strata='area' is among the columns to synthesize", synthesize="y,area")
    refused(table, _dpmpm(min_stratum=50), r"pool_by= and min_stratum= need strata=")
    refused(table, _dpmpm(pool_by="area"), r"pool_by= and min_stratum= need strata=")
    refused(table, _dpmpm(strata="region"), "strata='region' is not a column of the data")
    missing = table.assign(area=table["area"].where(table.index != 7))
    refused(missing, _dpmpm(strata="area"), r"strata='area' is missing at data row\(s\) 8 \(1 rows\)")
    # c and d pool to 60 records, under min_stratum=100
    refused(table, _dpmpm(strata="area", min_stratum=100), r"'c' \(30\), 'd' \(30\) of 'area' have fewer than "
            "min_stratum=100 records and pool to 60")  # fmt: skip
    rules = {"rules": [{"name": "no w in a", "if": {"area": "a"}, "then": {"y": {"not_in": ["w"]}}}]}
    refused(table, _dpmpm(strata="area", structural_zeros=rules), "structural_zeros= with strata='area'")
    areal = bsd.DPAreal(strata="area", min_stratum=50, max_cells=5)  # a group's own cells: 6 patterns x 2 labels
    refused(table, areal, r"group 'a' of strata='area' \(240 records\): .* more than 5")
    # the command line: exit 2, no output folder
    table.to_csv(folder / "bad.csv", index=False)
    argv = ["dpmpm", "--data", str(folder / "bad.csv"), "--synthesize", "y", "--keep", "x", "--strata", "area",
            "--pool-by", "region", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 2
    assert not out.exists()


def test_small_areas_are_pooled_within_their_parent_area():
    table = _table().assign(region=lambda t: t["area"].map({"a": "north", "b": "south", "c": "east", "d": "east"}))
    # area a split: a1 and a2 (30 records each) are small, both in the north
    table.loc[table["area"] == "a", "area"] = np.repeat(["a1", "a2", "a3"], [30, 30, 180])
    prepared = _dpmpm(strata="area", min_stratum=50, pool_by="region").prepare(table, ["y"], ["x"])
    assert prepared.strata.plan.groups == {"a3": ("a3",), "b": ("b",), "region=east (pooled: c, d)": ("c", "d"),
                                           "region=north (pooled: a1, a2)": ("a1", "a2")}  # fmt: skip
    # each group's records are prepared on their own: the levels they take, in the data's order
    part = prepared.strata.parts["region=east (pooled: c, d)"]
    assert part.original["area"].tolist() == table.loc[table["area"].isin(["c", "d"]), "area"].tolist()
    assert part.keep == ["area", "x"] and part.data.n_records == 60
    assert set(prepared.strata.parts["a3"].data.levels["y"]) == {"u", "v"}
    assert set(prepared.strata.parts["b"].data.levels["y"]) == {"u", "v", "w"}
    assert prepared.identity["strata"] == {"column": "area", "min_stratum": 50, "pool_by": "region"}
    # without pool_by, a1 and a2 pool with c and d
    plan = _dpmpm(strata="area", min_stratum=50).prepare(table, ["y"], ["x"]).strata.plan
    assert plan.groups["pooled small strata"] == ("a1", "a2", "c", "d")


def test_the_dp_areal_model_synthesizes_area_by_area_through_the_same_wiring(folder):
    table = _table()
    recipe = bsd.DPAreal(K=5, repetitions=5, settings=bsd.DPArealGibbsSettings(draws=100, burn=150, thin=2, chains=4),
                         gate=bsd.ReleaseGatePolicy(datasets_per_chain=10, utility_tolerance=0.5, risk_tolerance=0.2),
                         strata="area", min_stratum=50)  # fmt: skip
    release = bsd.synthesize(table, recipe, synthesize="y", keep="x,z", m=3, seed=1, policy=folder / "policy.toml",
                             progress=False)  # fmt: skip
    for _, dataset in release.synthetic.groupby("synthetic"):
        assert dataset["area"].tolist() == table["area"].tolist()
        assert _follows(dataset[dataset["area"] == "a"]) > 0.8 and _follows(dataset[dataset["area"] == "b"]) < 0.15
    levels = release.synthetic.groupby("area")["y"].unique()
    assert all(set(levels[a]) <= {"u", "v"} for a in "acd")
    gate = release.diagnostics["release_gate"]
    assert gate["passed"] and set(gate["groups"]) == {"a", "b", "pooled small strata"} and "divergences" in gate
    assert release.description["strata"]["groups"][2]["strata"] == ["c", "d"]
    assert set(release.measured["stratum_copied_records"].values["subset"]) == {f"stratum {a}" for a in SIZES}


def test_the_groups_fanned_out_over_a_local_cluster_give_the_release_of_the_groups_one_after_another(folder):
    """``workers=2``: the groups are parts of the part runner (a local dask cluster of two threads), each group's
    chains one after another within its part and kept under its folder; the datasets are those of the run without a
    cluster, bit for bit (every chain draws from its own stream)."""
    recipe = _dpmpm(strata="area", min_stratum=50)
    recipe.risk_records, recipe.gate = 0, bsd.ReleaseGatePolicy(**GATE, max_chains=SETTINGS["chains"])
    policy = folder / "policy.toml"
    here = bsd.synthesize(_table(), recipe, synthesize="y", keep="x,z", m=3, seed=5, policy=policy, progress=False,
                          allow_unconverged=True)  # fmt: skip
    recipe.workers = 2
    out = folder / "fanned"
    spread = bsd.synthesize(_table(), recipe, synthesize="y", keep="x,z", m=3, seed=5, policy=policy, out=out,
                            progress=False, allow_unconverged=True)  # fmt: skip
    pd.testing.assert_frame_equal(spread.synthetic, here.synthetic)
    stored = sorted(p.relative_to(out / "private" / "strata").as_posix()
                    for p in (out / "private" / "strata").rglob("chain-*.nc"))  # fmt: skip
    assert stored == [f"group-{g}/chains/chain-{c}.nc" for g in range(3) for c in range(SETTINGS["chains"])]
