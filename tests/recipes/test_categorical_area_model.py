"""``bsd.DPMPM(strata=..., area_model=...)``: the area synthesized before the within-area DPMPMs (issue 51, item 1).

A DPMPM draws each record's area (and tenure, an area column) given its kept x; then each record's label y is drawn
by the DPMPM of its synthetic area's group given its kept values. In area b the label is the opposite of x's
(p -> v), elsewhere it follows x (p -> u), so a record moved from one area to the other takes its new area's
relation only if the second stage reads the synthetic area: the test that fails if it read the real one. Area d's
records never take z = "t", so a record drawn into d brings a kept value d's model never saw.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.dpmpm import GibbsSettings
from bayessdc.synthesis.output import json_writer, table_writer

SIZES = {"a": 240, "b": 240, "c": 120, "d": 60}
#: P(tenure = own | area): the area column depends on the area.
OWN = {"a": 0.8, "b": 0.6, "c": 0.3, "d": 0.1}
M = 3
NO_CRITERIA = bsd.Policy(name="the wiring: reported, not judged", criteria=())
GATE = {"datasets_per_chain": 10, "utility_tolerance": 0.2, "risk_tolerance": 0.05}


def _table(seed: int = 4) -> pd.DataFrame:
    """660 records in four areas: y follows x (p -> u, q -> v) but in area b, where it is the opposite; 10% of labels
    flipped; tenure depends on the area; z is noise, never "t" in area d."""
    rng = np.random.default_rng(seed)
    area = rng.permutation(np.repeat(list(SIZES), list(SIZES.values())))
    x = rng.choice(["p", "q"], len(area))
    tenure = np.where(rng.random(len(area)) < pd.Series(area).map(OWN).to_numpy(), "own", "rent")
    follows, opposite = np.where(x == "p", "u", "v"), np.where(x == "p", "v", "u")
    y = np.where(area == "b", opposite, follows)
    y = np.where(rng.random(len(area)) < 0.1, np.where(y == "u", "v", "u"), y)
    z = np.where(area == "d", rng.choice(["r", "s"], len(area)), rng.choice(["r", "s", "t"], len(area)))
    return pd.DataFrame({"x": x, "area": area, "tenure": tenure, "z": z, "y": y})


def _dpmpm(**options) -> bsd.DPMPM:
    # K = 2 classes hold one area's relation (y given x), not two opposite ones at once
    gate = bsd.ReleaseGatePolicy(**{**GATE, **options.pop("gate", {})})
    options = {"K": 2, **options}
    return bsd.DPMPM(settings=GibbsSettings(draws=200, burn=100, chains=4, thin=2), repetitions=5, risk_records=0,
                     gate=gate, **options)  # fmt: skip


def _recipe(**options) -> bsd.DPMPM:
    return _dpmpm(strata="area", min_stratum=50, area_model=_dpmpm(K=4), area_columns=["tenure"], area_given=["x"],
                  **options)  # fmt: skip


def _run(out, seed=1, **options):
    return bsd.synthesize(_table(), _recipe(**options), synthesize="y", keep="x,z", m=M, seed=seed, out=out,
                          policy=NO_CRITERIA, progress=False)  # fmt: skip


def _follows(frame: pd.DataFrame) -> float:
    """The share of rows whose label follows x (p -> u, q -> v)."""
    return float((((frame["x"] == "p") & (frame["y"] == "u")) | ((frame["x"] == "q") & (frame["y"] == "v"))).mean())


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("categorical_area_model")


@pytest.fixture(scope="module")
def release(folder):
    return _run(folder / "first")


def test_a_record_drawn_into_another_area_takes_that_areas_relation(release):
    """Records whose synthetic area is b follow b's opposite relation whatever their real area, and records drawn out
    of b follow the other areas' (0.9 in the data either way; a second stage reading the real area would give about
    0.1 on the moved records)."""
    real = _table()
    synthetic = release.synthetic.astype(str)
    moved = synthetic["area"].to_numpy() != np.tile(real["area"].to_numpy(), M)
    into_b = synthetic[moved & (synthetic["area"] == "b").to_numpy()]
    out_of_b = synthetic[moved & np.tile(real["area"].to_numpy() == "b", M)]
    assert len(into_b) > 100 and len(out_of_b) > 100
    assert _follows(into_b) < 0.25 and _follows(out_of_b) > 0.75
    others = synthetic[(synthetic["area"] != "b").to_numpy()]
    assert _follows(others) > 0.75 and _follows(synthetic[(synthetic["area"] == "b").to_numpy()]) < 0.25


def test_the_area_and_its_column_are_drawn_and_the_kept_values_stay_row_by_row(release):
    real = _table()
    for _, dataset in release.synthetic.groupby("synthetic"):
        assert dataset["x"].astype(str).tolist() == real["x"].tolist()  # row i is record i, kept values real
        assert dataset["z"].astype(str).tolist() == real["z"].tolist()
    synthetic = release.synthetic.astype(str)
    assert (synthetic["area"].to_numpy() != np.tile(real["area"].to_numpy(), M)).mean() > 0.5  # drawn given x alone
    # z = "t" records (never in area d) drawn into d: d's model codes every kept level of the file
    assert ((synthetic["area"] == "d") & (synthetic["z"] == "t")).sum() > 0
    shares = synthetic.groupby("area")["tenure"].apply(lambda s: (s == "own").mean())
    assert shares["a"] > shares["b"] > shares["c"] > shares["d"]  # tenure drawn with its area
    counts = synthetic.groupby("synthetic")["area"].value_counts().unstack()
    assert (counts != pd.Series(SIZES)).to_numpy().any()  # each area's records in a dataset are drawn
    assert release.description["synthesized"] == ["area", "tenure", "y"] and release.description["kept"] == ["x", "z"]


def test_the_release_states_no_area_count_and_private_holds_both_stages(release, folder):
    model = json.loads((folder / "first" / "release" / "model.json").read_text())
    assert [set(g) for g in model["strata"]["groups"]] == [{"group", "strata"}] * 4  # no records per area
    assert "no area's count" in model["strata"]["records"]
    assert model["area_model"]["synthesizes"] == ["area", "tenure"] and model["area_model"]["given"] == ["x"]
    assert "DPMPM of its synthetic area" in model["area_model"]["stages"][1]
    assert sorted(p.name for p in (folder / "first" / "release").iterdir()) == ["model.json", "synthetic.parquet"]
    private = folder / "first" / "private"
    assert (private / "area_model.posterior.nc").is_file()
    assert all((private / f"posterior_group-{i}.nc").is_file() for i in range(4))
    counts = pd.read_parquet(private / "area_counts.parquet")
    assert counts.groupby("area")["records"].first().to_dict() == SIZES
    assert counts.groupby("synthetic")["drawn"].sum().tolist() == [sum(SIZES.values())] * M
    diagnostics = json.loads((private / "diagnostics.json").read_text())
    assert diagnostics["release_gate"]["passed"] and diagnostics["area_model"]["model"] == "dpmpm"
    assert "area model" in diagnostics["release_gate"]["chains_by_group"]
    # the risk figures read the area and tenure as synthesized: their inherent maximum redraws them within x + z
    assert set(release.measured["expected_match_risk"].values["subset"]) == {"x+z+area+tenure+y"}


def test_the_command_line_gives_the_same_release_for_the_same_seed(release, folder):
    out = folder / "cli"
    policy = folder / "none.toml"
    policy.write_text('[policy]\nname = "none"\n')
    code = main(["dpmpm", "--data", str(_write(folder)), "--synthesize", "y", "--keep", "x,z", "--strata", "area",
                 "--min-stratum", "50", "--area-model", "dpmpm", "--area-columns", "tenure", "--area-given", "x",
                 "--K", "2", "--draws", "200", "--burn", "100", "--chains", "4", "--thin", "2", "--repetitions", "5",
                 "--risk-records", "0", "--gate-datasets", "10", "--utility-tolerance", "0.2", "--risk-tolerance",
                 "0.05", "--m", str(M), "--seed", "1", "--policy", str(policy), "--quiet", "--out", str(out)])
    assert code == 0
    # the command line's area model has its defaults (K = 50, 8 chains ...): another release than the recipe's
    table_writer(release.synthetic)(folder / "api.parquet")
    again = _run(None)
    table_writer(again.synthetic)(folder / "again.parquet")
    json_writer(again.description)(folder / "model.json")
    assert (folder / "again.parquet").read_bytes() == (folder / "api.parquet").read_bytes()
    assert (folder / "model.json").read_bytes() == (folder / "first" / "release" / "model.json").read_bytes()
    assert pd.read_parquet(out / "release" / "synthetic.parquet")["area"].nunique() == 4


def _write(folder):
    path = folder / "table.csv"
    _table().to_csv(path, index=False)
    return path


def test_an_area_model_that_fails_its_release_gate_refuses_naming_it(tmp_path):
    """A tolerance of 1e-9 no spread of four chains meets: refused by construction, the area model named."""
    recipe = _dpmpm(strata="area", min_stratum=50, area_columns=["tenure"],
                    area_model=_dpmpm(K=4, gate={"utility_tolerance": 1e-9, "risk_tolerance": 1e-9, "max_chains": 4}))
    with pytest.raises(bsd.ConvergenceError, match="area model") as refusal:
        bsd.synthesize(_table(), recipe, synthesize="y", keep="x,z", m=2, seed=0, out=tmp_path / "out",
                       policy=NO_CRITERIA, progress=False)  # fmt: skip
    assert not (tmp_path / "out" / "release").exists()
    assert (tmp_path / "out" / "private" / "area_model.posterior.nc").is_file()
    assert "area model" in str(refusal.value)


@pytest.mark.parametrize("options, keep, match", [
    ({"strata": None, "min_stratum": None}, "x,z", "need strata="),
    ({"area_model": None}, "x,z", "need area_model="),
    ({"area_columns": ["tenure"]}, "x,z,tenure", "area_columns: 'tenure' is also kept"),
    ({"area_columns": ["y"]}, "x,z", "area_columns: 'y' is also among the columns"),
    ({"area_given": ["tenure"]}, "x,z", "area_given: 'tenure' is not a kept column"),
    ({"area_model": "dp_areal"}, "x,z", "with the DP-areal model"),
])  # fmt: skip
def test_bad_options_are_refused_before_anything_is_fitted(options, keep, match, tmp_path):
    recipe = _recipe()
    for name, value in options.items():
        setattr(recipe, name, value)
    with pytest.raises(bsd.InputError, match=match):
        bsd.synthesize(_table(), recipe, synthesize="y", keep=keep, m=2, seed=0, out=tmp_path / "out",
                       policy=NO_CRITERIA, progress=False)  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_more_chains_go_to_the_area_model_when_its_gate_fails_and_the_groups_keep_their_fits():
    """The recipe's own steps (the pipeline's stopping rule calls them): an area model whose gate fails by construction
    (a tolerance of 1e-9) is among the failing groups; asked for 6 chains, its posterior gets chains 4 and 5 from their
    own streams (its first four unchanged), and the groups that passed keep their fits (the same objects)."""
    recipe = _dpmpm(strata="area", min_stratum=50, area_columns=["tenure"], area_given=["x"],
                    area_model=_dpmpm(K=4, gate={"utility_tolerance": 1e-9, "risk_tolerance": 1e-9}))  # fmt: skip
    prepared = recipe.prepare(_table(), ["y"], ["x", "z"], seed=2)
    fitted = recipe.fit(prepared, 2, 2, None, False)
    failing = fitted.release_gate.failing()
    assert failing[0] == "area model"
    before = fitted.state.first.state.idata.posterior
    more = recipe.more_chains(prepared, fitted, 6, 2, None, False)
    after = more.state.first.state.idata.posterior
    assert before.sizes["chain"] == 4 and after.sizes["chain"] == 6
    assert after["alpha"].isel(chain=slice(0, 4)).equals(before["alpha"])
    assert all(more.state.parts[name] is fitted.state.parts[name] for name in fitted.state.parts if name not in failing)
    assert more.release_gate.groups["area model"].chains == 6
