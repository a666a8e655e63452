"""``bsd.CART(strata=..., area_model=...)``: the area synthesized before the within-area trees (issue 51, item 1).

A DPMPM draws each record's area (and an area column) given its kept sex, its posterior judged by its own release
gate; then each record's other columns are drawn by the trees of its synthetic area. The synthetic area shares come
back within a tolerance worked from the area model's own posterior, a column that is a function of the area stays
one, the release states no area's count, the same seed gives the same bytes, and bad options are refused before
anything is fitted.
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

SIZES = {"a": 160, "b": 120, "c": 80, "d": 40}
#: P(tenure = own | area): the area column depends on the area.
OWN = {"a": 0.8, "b": 0.6, "c": 0.3, "d": 0.1}
REGION = {"a": "north", "b": "north", "c": "south", "d": "south"}
M = 5
NO_CRITERIA = bsd.Policy(name="the wiring: reported, not judged", criteria=())


def _persons(seed: int = 5) -> pd.DataFrame:
    """400 persons in four areas of known shares (0.4, 0.3, 0.2, 0.1): tenure depends on the area, region is a
    function of it, education and sex are noise, age a number."""
    rng = np.random.default_rng(seed)
    area = rng.permutation(np.repeat(list(SIZES), list(SIZES.values())))
    tenure = np.where(rng.random(len(area)) < pd.Series(area).map(OWN).to_numpy(), "own", "rent")
    return pd.DataFrame({
        "sex": rng.choice(["f", "m"], len(area)), "age": rng.integers(18, 90, len(area)), "area": area,
        "tenure": tenure, "region": pd.Series(area).map(REGION).to_numpy(),
        "education": rng.choice(["primary", "secondary", "tertiary"], len(area)),
    })  # fmt: skip


def _area_model(**gate) -> bsd.DPMPM:
    return bsd.DPMPM(K=8, settings=GibbsSettings(draws=200, burn=100, chains=4, thin=2), repetitions=5,
                     risk_records=0, gate=bsd.ReleaseGatePolicy(**{"datasets_per_chain": 10, "utility_tolerance": 0.5,
                                                                   "risk_tolerance": 0.1, **gate}))  # fmt: skip


def _recipe(**options) -> bsd.CART:
    return bsd.CART(strata="area", area_model=_area_model(), area_columns=["tenure"], area_given=["sex"], min_leaf=10,
                    bootstrap=20, **options)  # fmt: skip


def _run(persons, out, seed=1, **options):
    return bsd.synthesize(persons, _recipe(**options), synthesize=["region", "education"], keep=["sex", "age"], m=M,
                          seed=seed, out=out, policy=NO_CRITERIA, progress=False)  # fmt: skip


@pytest.fixture(scope="module")
def persons():
    return _persons()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("area_model")


@pytest.fixture(scope="module")
def release(persons, folder):
    return _run(persons, folder / "first")


def test_the_synthetic_area_shares_recover_the_real_ones_within_the_posterior_tolerance(persons, release):
    """Each dataset's share of area a is one posterior draw of the area's marginal share plus the multinomial draw of
    n records from it, so over M datasets drawn from draws far apart its mean is off the real share by a standard
    error sqrt((v_a + p(1 - p) / n) / M), v_a the posterior variance of the marginal (read from the area model's
    posterior). Allowed: 4 of them. Tenure within area a is drawn the same way around the model's P(own | a) =
    sum_k pi_k theta_k(a) theta_k(own) / sum_k pi_k theta_k(a), its n the area's records (the latent class drawn given
    the record's values makes the draw's spread a little smaller than this); and the model keeps tenure's dependence
    on the area, which it shrinks in the small area d (0.075 real, about 0.16 in the posterior)."""
    posterior = release.diagnostics.posteriors["area_model"].posterior
    levels = [str(v) for v in posterior["area_level"].values]
    marginal = posterior["marginal_area"].to_numpy().reshape(-1, len(levels))
    pi, theta = posterior["pi"].to_numpy(), posterior["theta_area"].to_numpy()
    own = posterior["theta_tenure"].sel(tenure_level="own").to_numpy()
    conditional = (np.einsum("cdk,cdka,cdk->cda", pi, theta, own) / np.einsum("cdk,cdka->cda", pi, theta))
    conditional = conditional.reshape(-1, len(levels))
    n, synthetic = len(persons), release.synthetic
    area, tenure = synthetic["area"].astype(str), synthetic["tenure"].astype(str)
    drawn = synthetic.groupby("synthetic")["area"].apply(lambda s: s.astype(str).value_counts(normalize=True))
    drawn = drawn.unstack(fill_value=0.0).mean()
    uniform, owners = [], {}
    for j, a in enumerate(levels):
        p = SIZES[a] / n
        tolerance = 4 * np.sqrt((marginal[:, j].var() + p * (1 - p) / n) / M)
        assert abs(drawn[a] - p) <= tolerance, (a, drawn[a], p, tolerance)
        uniform.append(abs(0.25 - p) / tolerance)
        q = conditional[:, j].mean()
        owners[a] = (tenure[area == a] == "own").mean()
        tolerance = 4 * np.sqrt((conditional[:, j].var() + q * (1 - q) / SIZES[a]) / M)
        assert abs(owners[a] - q) <= tolerance, (a, owners[a], q, tolerance)
    assert max(uniform) > 1.5  # tight enough to refuse areas drawn uniformly
    real = persons.groupby("area")["tenure"].apply(lambda s: (s == "own").mean())
    assert owners["a"] > owners["b"] > owners["c"] > owners["d"]
    assert owners["a"] - owners["d"] > (real["a"] - real["d"]) / 2
    # the counts are synthetic: not every dataset holds each area's real count
    counts = synthetic.groupby("synthetic")["area"].apply(lambda s: s.astype(str).value_counts()).unstack()
    assert (counts != pd.Series(SIZES)).to_numpy().any()


def test_within_area_relations_hold_and_kept_values_stay_row_by_row(persons, release):
    for _, dataset in release.synthetic.groupby("synthetic"):
        assert dataset["sex"].astype(str).tolist() == persons["sex"].tolist()  # row i is record i, kept values real
        assert dataset["age"].tolist() == persons["age"].tolist()
        # region, a function of the area in the data, drawn by the synthetic area's trees: still that function
        assert (dataset["region"].astype(str) == dataset["area"].astype(str).map(REGION)).all()
    assert release.description["kept"] == ["sex", "age"]
    assert release.description["combining_rules"] == "partial"


def test_the_release_states_no_area_count_and_private_holds_the_area_model(persons, release, folder):
    model = json.loads((folder / "first" / "release" / "model.json").read_text())
    assert [set(g) for g in model["strata"]["groups"]] == [{"group", "strata"}] * 4  # no records per area
    assert "no area's count" in model["area_model"]["records_per_area"]
    assert model["area_model"]["synthesizes"] == ["area", "tenure"] and model["area_model"]["given"] == ["sex"]
    assert model["area_model"]["synthesizer"] == "dpmpm" and "release_gate" in model["area_model"]
    private = folder / "first" / "private"
    assert (private / "area_model.posterior.nc").is_file()
    counts = pd.read_parquet(private / "area_counts.parquet")
    assert counts.groupby("area")["records"].first().to_dict() == SIZES
    assert (counts["drawn"] != counts["records"]).any()  # each area's records in a dataset are drawn
    assert counts.groupby("synthetic")["drawn"].sum().tolist() == [len(persons)] * M
    diagnostics = json.loads((private / "diagnostics.json").read_text())
    assert diagnostics["gate"] == "release" and diagnostics["release_gate"]["passed"]
    assert diagnostics["area_model"]["model"] == "dpmpm"
    # each area judged on its synthetic rows, against cross-fitted trees given the same synthetic areas
    per_area = release.measured["stratum_copied_records"]
    assert {f"stratum {a}" for a in SIZES} <= set(per_area.values["subset"])
    assert all(np.isfinite(per_area.reference(f"stratum {a}", "unlearned")) for a in SIZES)


def test_the_same_seed_gives_the_same_bytes(persons, release, folder):
    again = _run(persons, None)  # in memory (a folder's report takes longer than the run), written as the first was
    table_writer(again.synthetic)(folder / "synthetic.parquet")
    json_writer(again.description)(folder / "model.json")
    for name in ("synthetic.parquet", "model.json"):
        assert (folder / name).read_bytes() == (folder / "first" / "release" / name).read_bytes()


def test_an_area_model_that_fails_its_release_gate_refuses_the_release(persons, tmp_path):
    recipe = bsd.CART(strata="area", area_model=_area_model(utility_tolerance=1e-9, risk_tolerance=1e-9, max_chains=4),
                      area_given=["sex"], min_leaf=10, bootstrap=20)  # fmt: skip
    with pytest.raises(bsd.ConvergenceError, match="release gate"):
        bsd.synthesize(persons, recipe, synthesize=["region"], keep=["sex"], m=2, seed=0, out=tmp_path / "out",
                       policy=NO_CRITERIA, progress=False)  # fmt: skip
    assert not (tmp_path / "out" / "release").exists()
    assert (tmp_path / "out" / "private" / "area_model.posterior.nc").is_file()


def test_the_dp_areal_model_draws_the_area_too(persons):
    gate = bsd.ReleaseGatePolicy(datasets_per_chain=10, utility_tolerance=0.5, risk_tolerance=0.1)
    area_model = bsd.DPAreal(K=5, settings=bsd.DPArealGibbsSettings(draws=100, burn=100, chains=4), repetitions=5,
                             gate=gate)
    recipe = bsd.CART(strata="area", area_model=area_model, min_leaf=10, bootstrap=20)
    release = bsd.synthesize(persons, recipe, synthesize=["region"], keep=["sex"], m=2, seed=3, policy=NO_CRITERIA,
                             progress=False)  # fmt: skip
    assert release.description["area_model"]["synthesizer"] == "dp-areal"
    assert (release.synthetic["region"].astype(str) == release.synthetic["area"].astype(str).map(REGION)).all()
    assert release.synthetic["area"].astype(str).value_counts().to_dict() != {a: 2 * n for a, n in SIZES.items()}


def test_records_drawn_given_their_own_values_are_those_drawn_from_the_fitted_records(persons):
    """The within-area draw of a new record (``draw_given``) with its position among the fitted records is the draw of
    that record itself, its own observation left out under donors="others" alike."""
    from bayessdc.models.cart import CartSynthesizer
    from bayessdc.synthesis import streams
    from bayessdc.synthesis.streams import Stream

    trees = CartSynthesizer(["region", "education"], ["sex", "age", "tenure"], min_samples_leaf=2, donors="others")
    trees.fit(persons, seed=4)
    drawn = trees.synthesize_datasets(1, seed=4)
    given = trees.draw_given(persons[["sex", "age", "tenure"]], streams.rng(4, Stream.CART_DATASET, 1),
                             streams.rng(4, Stream.CART_SMOOTHING, 1), own=np.arange(len(persons)))  # fmt: skip
    for column in ("region", "education"):
        assert given[column].astype(str).tolist() == drawn[column].astype(str).tolist()
    strangers = trees.draw_given(persons[["sex", "age", "tenure"]], streams.rng(4, Stream.CART_DATASET, 1),
                                 streams.rng(4, Stream.CART_SMOOTHING, 1))  # fmt: skip
    assert strangers["education"].astype(str).tolist() != drawn["education"].astype(str).tolist()


@pytest.mark.parametrize("options, keep, match", [
    ({"strata": None}, ["sex"], "need strata="),
    ({"area_columns": ["nowhere"]}, ["sex"], "area_columns: 'nowhere' is not a column"),
    ({"area_columns": ["age"]}, ["sex"], "area_columns: 'age' is numeric"),
    ({"area_columns": ["tenure"]}, ["sex", "tenure"], "area_columns: 'tenure' is also kept"),
    ({"area_given": ["age"]}, ["sex"], "area_given: 'age' is not a kept column"),
    ({"area_model": "dp_areal", "area_columns": ["tenure"]}, ["sex"], "with the DP-areal model"),
    ({"area_model": "cart"}, ["sex"], "area_model= must be one of dpmpm, dp_areal"),
    ({"area_columns": ["tenure"], "rules": [{"name": "tenure in d", "if": {"area": "d"},
                                             "then": {"tenure": {"in": ["own", "rent"]}}}]}, ["sex"],
     "rule 'tenure in d' names the area or an area column"),
])  # fmt: skip
def test_bad_options_are_refused_before_anything_is_fitted(persons, tmp_path, options, keep, match):
    settings = {"strata": "area", "area_model": _area_model(), "area_given": None, **options}
    with pytest.raises(bsd.InputError, match=match):
        bsd.synthesize(persons, bsd.CART(**settings), synthesize=["region"], keep=keep, m=2, out=tmp_path / "out",
                       progress=False)  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_the_command_takes_the_area_model_and_refuses_it_without_strata(persons, tmp_path):
    persons.to_csv(tmp_path / "persons.csv", index=False)
    argv = ["cart", "--data", str(tmp_path / "persons.csv"), "--out", str(tmp_path / "out"), "--synthesize", "region",
            "--keep", "sex", "--area-model", "dpmpm", "--area-columns", "tenure", "--quiet"]  # fmt: skip
    assert main(argv) == 2
    assert not (tmp_path / "out").exists()


def test_load_lists_the_area_models_posterior_as_the_run_held_it(release, folder):
    """``bsd.load`` of a release whose area was synthesized: the area model's posterior under ``area_model`` (the
    quantities its recipe saved, as a categorical run's), read from ``private/``, none of it in ``release/``."""
    loaded = bsd.load(folder / "first")
    assert "area_model" in loaded.diagnostics.posteriors
    saved = loaded.diagnostics.posteriors["area_model"].posterior
    held = release.diagnostics.posteriors["area_model"].posterior
    assert {"alpha", "pi", "occupied", "marginal_area", "marginal_tenure"} <= set(saved.data_vars)
    for name in saved.data_vars:
        np.testing.assert_array_equal(saved[name], held[name])
    assert {str(v) for v in saved["area_level"].values} == set(SIZES)
    assert not list((folder / "first" / "release").glob("*.nc"))


def _children(seed: int = 5) -> pd.DataFrame:
    """The persons with a kept age group and a synthesized employment: area b has no child and every one of its
    records is employed, so b's trees can draw nothing but "yes", which the rule forbids a child."""
    persons = _persons(seed)
    rng = np.random.default_rng(seed + 1)
    b = (persons["area"] == "b").to_numpy()
    child = ~b & (rng.random(len(persons)) < 0.3)
    employed = np.where(b, "yes", rng.choice(["yes", "no"], len(persons)))
    return persons.assign(agegroup=np.where(child, "child", "adult"), employed=np.where(child, "no", employed))


CHILDREN_RULES = [{"name": "children are not employed", "if": {"agegroup": "child"}, "then": {"employed": "no"}}]


def _children_run(children, seed=1, **options):
    recipe = bsd.CART(strata="area", area_model=_area_model(), area_columns=["tenure"], area_given=["sex"],
                      min_leaf=10, bootstrap=20, rules=CHILDREN_RULES, **options)  # fmt: skip
    return bsd.synthesize(children, recipe, synthesize=["region", "employed"], keep=["sex", "agegroup"], m=M,
                          seed=seed, policy=NO_CRITERIA, progress=False)  # fmt: skip


def test_a_record_no_value_of_its_synthetic_areas_trees_admits_is_drawn_again_from_the_area_model():
    """A child placed by the area model in area b (whose trees hold no employment but "yes") has its area and tenure
    drawn again from the area model's posterior predictive, then its employment by its new area's trees: every
    rule holds, the redraws are counted, and the same seed gives the same release."""
    children = _children()
    release = _children_run(children)
    synthetic = release.synthetic
    child = synthetic["agegroup"].astype(str) == "child"
    assert (synthetic.loc[child, "employed"].astype(str) == "no").all()
    assert not (child & (synthetic["area"].astype(str) == "b")).any()
    assert (synthetic["region"].astype(str) == synthetic["area"].astype(str).map(REGION)).all()
    redrawn = release.diagnostics.summary["area_model"]["redrawn"]
    assert 0 < redrawn["rows"] <= redrawn["rejected"] and redrawn["most"] >= 1
    assert release.diagnostics.summary["area_model"]["model"] == "dpmpm"  # beside the area model's own figures
    again = _children_run(children)
    pd.testing.assert_frame_equal(again.synthetic, synthetic)
    assert again.diagnostics.summary["area_model"]["redrawn"] == redrawn
