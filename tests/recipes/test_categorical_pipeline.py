"""The categorical synthesizers' pipeline (``bsd.DPMPM``, ``bsd.DPAreal``) through the public API."""

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.dpmpm import GibbsSettings, simulate_latent_class
from bayessdc.synthesis.output import to_jsonable

KEEP = ["gender", "age"]
KNOWN = [["gender", "county"], ["gender", "age", "county"]]
SETTINGS = {"draws": 400, "burn": 100, "chains": 8, "thin": 2}
CLI_OPTIONS = ["--draws", "400", "--burn", "100", "--chains", "8", "--thin", "2", "--K", "6", "--repetitions", "5"]
CLI_OPTIONS += ["--risk-records", "20", "--risk-draws", "50", "--m", "3", "--seed", "3"]


def _table() -> pd.DataFrame:
    frame, _ = simulate_latent_class(200, [2, 4, 30], [0.5, 0.3, 0.2], seed=3, concentration=0.4)
    frame = frame.rename(columns={"x0": "gender", "x1": "age", "x2": "county"})
    frame["county"] = "c" + frame["county"].astype(str)
    # Columns that are neither kept nor synthesized: confidential, never released.
    frame["salary_secret"] = np.linspace(10_000.5, 99_999.5, len(frame))
    frame["name_secret"] = [f"person-{i:04d}-secret" for i in range(len(frame))]
    return frame


def _recipe() -> "bsd.DPMPM":
    return bsd.DPMPM(
        K=6, known=KNOWN, settings=GibbsSettings(**SETTINGS), repetitions=5, risk_records=20, risk_draws=50
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("categorical")
    table = _table()
    # seed 3: the released datasets hold true unique matches on age+county (seed 1's hold none since the named
    # random streams), which the by-hand test of the three identification figures needs
    release = bsd.synthesize(table, _recipe(), synthesize=["county"], keep=KEEP, m=3, seed=3, progress=False)
    table.to_csv(folder / "table.csv", index=False)
    argv = ["dpmpm", "--data", str(folder / "table.csv"), "--synthesize", "county", "--keep", "gender,age"]
    argv += ["--known", "gender,county", "--known", "gender,age,county", "--quiet", "--out", str(folder / "cli")]
    status = main([*argv, *CLI_OPTIONS])
    return folder, table, release, status


def test_the_api_gives_the_release_of_the_command_line(runs):
    folder, table, release, status = runs
    assert status == 0
    released = pd.read_parquet(folder / "cli" / "release" / "synthetic.parquet")
    pd.testing.assert_frame_equal(release.synthetic, released)
    assert list(release.synthetic.columns) == ["synthetic", "gender", "age", "county"]
    private = folder / "cli" / "private"
    measures = json.loads((private / "measures.json").read_text())
    assert set(measures) == set(release.measured)
    for kind in ("risk", "utility"):  # the measures' summaries by kind, the same for the API and the command line
        written = json.loads((private / f"{kind}.json").read_text())
        assert set(written) == {name for name, m in release.measured.items() if m.kind == kind}
    assert json.loads((private / "policy.json").read_text())["passed"] == release.policy.passed
    model = json.loads((folder / "cli" / "release" / "model.json").read_text())
    assert to_jsonable(release.description) == model
    assert release.facts["records"] == len(table) and release.diagnostics["n_records"] == len(table)
    assert set(release.diagnostics.posteriors) == {"all"}


def test_risk_for_a_knowledge_set_of_the_run_is_the_stored_figures(runs):
    _, _, release, _ = runs
    table = release.risk().set_index(["measure", "subset"])
    columns = ["pooled", "worst", "inherent_min", "inherent_max"]
    for known in KNOWN:
        subset = "+".join(known)
        recomputed = release.risk(known=[known]).set_index(["measure", "subset"])
        for name in ("expected_match_risk", "true_match_rate", "false_match_rate"):
            # recomputed with the run's inherent scenarios (same repetitions and seed): exactly the stored figures
            stored, again = table.loc[(name, subset), columns], recomputed.loc[(name, subset), columns]
            pd.testing.assert_series_equal(again.astype(float), stored.astype(float), rtol=1e-12)
        assert recomputed.loc[("attribute_disclosures", "all"), "pooled"] == table.loc[
            ("attribute_disclosures", "all"), "pooled"]
    # a knowledge set as a comma-separated string is the same set
    again = release.risk(known=["gender,age,county"]).set_index(["measure", "subset"])
    assert again.loc[("expected_match_risk", "gender+age+county"), "pooled"] == table.loc[
        ("expected_match_risk", "gender+age+county"), "pooled"]


def _by_hand(original: pd.DataFrame, synthetic: pd.DataFrame, known: list[str]) -> dict[str, float]:
    """eq. 15-18 by brute force: every target record against every released record of every dataset."""
    truth = original[known].astype(str).agg("|".join, axis=1).to_numpy()
    figures = {"expected_match_risk": [], "true_match_rate": [], "false_match_rate": [], "disclosures": []}
    for _, frame in synthetic.groupby("synthetic"):
        frame = frame.reset_index(drop=True)
        released = frame[known].astype(str).agg("|".join, axis=1).to_numpy()
        matches = truth[:, None] == released[None, :]  # target i matches released record j
        c = matches.sum(axis=1)
        t = np.diag(matches)
        figures["expected_match_risk"].append(sum(1 / c[i] for i in range(len(c)) if t[i]))
        figures["true_match_rate"].append(np.mean((c == 1) & t))
        unique = (c == 1).sum()
        if unique:
            figures["false_match_rate"].append(((c == 1) & ~t).sum() / unique)
        figures["disclosures"].append((frame["county"].to_numpy() == original["county"].to_numpy()).sum())
    return {k: float(np.mean(v)) for k, v in figures.items()}


def test_risk_for_another_knowledge_set_is_recomputed_from_the_records_in_memory(runs):
    _, table, release, _ = runs
    stored = release.risk()
    stored_sets = list(stored.loc[stored["measure"] == "expected_match_risk", "subset"])
    known = ["age", "county"]
    assert "age+county" not in stored_sets
    measured = release.risk(known=[known]).set_index(["measure", "subset"])
    # the replicated uniques were removed before release: the risk is of the datasets as drawn (row i record i),
    # like for like with the inherent bounds, and the release holds fewer rows
    drawn = release.measure_input.drawn
    assert drawn is not None and len(release.synthetic) < len(drawn) == release.m * len(table)
    expected = _by_hand(table, drawn, known)
    # the table is small enough for unique matches, true and false, so that every figure is tested
    assert expected["true_match_rate"] > 0 and 0 < expected["false_match_rate"] < 1
    for key in ("expected_match_risk", "true_match_rate", "false_match_rate"):
        assert measured.loc[(key, "age+county"), "pooled"] == pytest.approx(expected[key], rel=1e-12)
        assert {"inherent_min", "inherent_max"} <= set(measured.loc[(key, "age+county")].dropna().index)
    assert measured.loc[("attribute_disclosures", "all"), "pooled"] == pytest.approx(expected["disclosures"])
    # knowing more columns can only shrink the matching sets: the expected match risk grows
    emr = stored.set_index(["measure", "subset"]).loc[("expected_match_risk", "gender+age+county"), "pooled"]
    assert measured.loc[("expected_match_risk", "age+county"), "pooled"] <= emr + 1e-9
    # nothing stored changed
    pd.testing.assert_frame_equal(release.risk(), stored)
    # the Bayesian attribute risk of the chosen records (importance sampling) is read by the generic intruder
    # measures: each record's probability of its true label beside the uniform prior over the county's levels
    subsets = {"+".join(k) for k in KNOWN} | {"all", "unique in both", "original uniques reappearing", "all items"}
    assert set(release.risk()["subset"]) == subsets
    records = release.private_tables["risk_records.parquet"].dropna(subset=["true_probability"])
    probability = release.risk().set_index("measure").loc["true_value_probability"]
    assert probability["pooled"] == pytest.approx(records["true_probability"].mean(), rel=1e-12)
    assert probability["worst"] == pytest.approx(records["true_probability"].max(), rel=1e-12)
    assert probability["chance"] == pytest.approx(1 / table["county"].nunique())
    assert release.risk().set_index("measure").loc["intruder_correct", "pooled"] == pytest.approx(
        records["correct"].mean())


def test_unknown_options_are_refused_naming_the_accepted_ones(runs):
    _, _, release, _ = runs
    with pytest.raises(bsd.NotApplicableError, match="takes known; got intruder"):
        release.risk(intruder="all")
    with pytest.raises(bsd.NotApplicableError, match="takes no options"):
        release.utility(known=[["gender"]])
    with pytest.raises(bsd.InputError, match="'zip'.*neither kept nor synthesized"):
        release.risk(known=[["gender", "zip"]])


def test_release_holds_no_column_that_was_not_released(runs, tmp_path):
    _, table, release, _ = runs
    release.save(tmp_path / "out")
    files = sorted(p.name for p in (tmp_path / "out" / "release").iterdir())
    assert files == ["model.json", "synthetic.parquet"]
    synthetic = pd.read_parquet(tmp_path / "out" / "release" / "synthetic.parquet")
    assert list(synthetic.columns) == ["synthetic", "gender", "age", "county"]
    secrets = ["salary_secret", "name_secret", table["name_secret"].iloc[0], f"{table['salary_secret'].iloc[0]}"]
    for path in (tmp_path / "out" / "release").iterdir():
        content = path.read_bytes()
        assert not any(secret.encode() in content for secret in secrets), path.name
    # the private side holds the run's files, as the command line writes them
    private = {p.name for p in (tmp_path / "out" / "private").iterdir()}
    assert private == {
        "run.json", "diagnostics.json", "posterior.nc", "risk.json", "utility.json",
        "risk_records.parquet", "within_pattern.parquet", "risk_inherent.parquet", "risk_by_dataset.parquet",
        "report.html", "risk_utility.json", "measures.json", "policy.json", "release.json",
        "synthetic_as_drawn.parquet",
    }  # fmt: skip


def test_load_gives_back_the_release_the_run_saved(runs, tmp_path):
    """bsd.load: the synthetic datasets, the description, the diagnostics with the posterior, the measures and
    the policy's verdict equal the release held in memory."""
    _, _, release, _ = runs
    release.save(tmp_path / "out")
    loaded = bsd.load(tmp_path / "out")
    pd.testing.assert_frame_equal(loaded.synthetic, release.synthetic)
    assert loaded.description == json.loads(json.dumps(to_jsonable(release.description)))
    assert (loaded.synthesizer, loaded.m, loaded.seed) == (release.synthesizer, release.m, release.seed)
    assert loaded.facts == to_jsonable(release.facts) and loaded.seconds == pytest.approx(release.seconds)
    assert loaded.diagnostics.summary == to_jsonable(release.diagnostics.summary)
    assert loaded.diagnostics.passed == release.diagnostics.passed
    saved = loaded.diagnostics.posteriors["all"].posterior  # the quantities the run saved (alpha, pi, ...)
    assert {"alpha", "pi", "occupied", "marginal_county"} <= set(saved.data_vars)
    for name in saved.data_vars:
        np.testing.assert_array_equal(saved[name], release.diagnostics.posteriors["all"].posterior[name])
    pd.testing.assert_frame_equal(loaded.measure_table(), release.measure_table())
    pd.testing.assert_frame_equal(loaded.risk(), release.risk())
    assert loaded.policy.to_dict() == release.policy.to_dict()
    assert loaded.judge().to_dict() == release.judge().to_dict()
    pd.testing.assert_frame_equal(loaded.private_tables["risk_records.parquet"],
                                  release.private_tables["risk_records.parquet"])  # fmt: skip
    with pytest.raises(bsd.InputError, match="holds no release"):
        bsd.load(tmp_path / "nothing")


def test_bad_input_and_options_are_refused_before_sampling(tmp_path):
    table = _table()
    with pytest.raises(bsd.InputError, match="needs at least 5000 posterior draws"):
        bsd.synthesize(table, _recipe(), synthesize=["county"], keep=KEEP, m=5000, progress=False)
    with pytest.raises(bsd.InputError, match="repetitions= must be at least 1"):
        bsd.synthesize(table, bsd.DPMPM(repetitions=0), synthesize=["county"], keep=KEEP, progress=False)
    with pytest.raises(ValueError, match="both synthesized and kept"):
        bsd.synthesize(table, _recipe(), synthesize=["county"], keep=["county"], progress=False)
    with pytest.raises(ValueError, match="one label column"):
        bsd.synthesize(table, bsd.DPAreal(), synthesize=["county", "age"], keep=["gender"], progress=False)
    with pytest.raises(bsd.InputError, match="neither kept nor synthesized"):
        bsd.synthesize(table, bsd.DPAreal(known=["gender,zip"]), synthesize="county", keep=KEEP, progress=False)
    with pytest.raises(bsd.InputError, match="no synthesized column"):
        recipe = bsd.DPAreal(ordered_logits=[("age", ["gender"])])
        bsd.synthesize(table, recipe, synthesize="county", keep=KEEP, out=tmp_path / "o", progress=False)
    assert not (tmp_path / "o").exists()


def test_chains_that_disagree_beyond_tolerance_refuse_the_release_naming_figure_and_chains(tmp_path):
    # 8 chains x 10 datasets cannot bring a standard error below 1% of a figure's per-dataset sd (about 11% at
    # best): every utility figure fails, and the refusal says by how much and how many chains would do.
    recipe = _recipe()
    recipe.gate = bsd.ReleaseGatePolicy(datasets_per_chain=10, utility_tolerance=0.01)
    with pytest.raises(bsd.ConvergenceError) as refused:
        bsd.synthesize(_table(), recipe, synthesize=["county"], keep=KEEP, m=3, seed=1, out=tmp_path, progress=False)
    diagnostics = json.loads((tmp_path / "private" / "diagnostics.json").read_text())
    gate = diagnostics["release_gate"]
    assert diagnostics["passed"] is False is gate["passed"] and diagnostics["allow_unconverged"] is False
    assert gate["chains"] == 8 and gate["datasets_per_chain"] == 10
    assert "table_deviation[one-way]" in gate["failed"] and "pmse_ratio" in gate["failed"]
    # the gate reads the measure objects: one figure per subset of each gated measure, named after it
    identification = ("expected_match_risk", "true_match_rate", "false_match_rate")
    expected = {f"{name}[{'+'.join(k)}]" for name in identification for k in KNOWN}
    expected |= {f"table_deviation[{w}]" for w in ("one-way", "two-way", "three-way")}
    assert set(gate["figures"]) == expected | {"attribute_disclosures", "pmse_ratio"}
    figure = gate["figures"]["table_deviation[one-way]"]
    assert figure["between_chain_se"] > figure["tolerance"] == pytest.approx(0.01 * figure["per_dataset_sd"])
    needed = max(f["chains_needed"] for f in gate["figures"].values() if f["passed"] is False)
    assert gate["chains_needed"] == needed > 8
    message = str(refused.value)
    assert "the DPMPM failed the release gate" in message and "table_deviation[one-way]: between-chain SE" in message
    assert f"chains={needed}" in message and "--" not in message  # the library names parameters
    assert "parameter_gate" in diagnostics and diagnostics["parameter_gate"]["decides_release"] is False
    assert (tmp_path / "private" / "posterior.nc").exists()
    assert not (tmp_path / "release").exists() or not any((tmp_path / "release").iterdir())


def test_the_replicated_uniques_are_removed_and_the_removal_judged_against_the_inherent_maximum(runs):
    """A categorical release is a release of records too (synthpop's sdc(rm.replicated.uniques = TRUE)): the rows
    that replicate an original unique are gone from release/, exactly those of the datasets as drawn, the share
    removed is judged against the same removal from the inherent maximum's datasets, and the utility is that of
    the rows released."""
    from bayessdc.risk.copies import inherent_removed, remove_replicated_uniques, replicated_uniques
    from bayessdc.synthesis.categorical import table_deviations

    _, table, release, _ = runs
    columns = [*KEEP, "county"]
    original, drawn = table[columns], release.measure_input.drawn
    kept, removed = remove_replicated_uniques(original, drawn, columns)
    pd.testing.assert_frame_equal(release.synthetic, kept.reset_index(drop=True))
    assert release.facts["replicated_uniques_removed"] == removed["removed"].sum() > 0
    assert (replicated_uniques(original, release.synthetic, columns)["replicated_unique_in_both"] == 0).all()
    # the reference: the inherent maximum's S datasets under the same removal, with the run's repetitions and seed
    reference = inherent_removed(original, ["county"], KEEP, columns, repetitions=5, seed=3)
    shares = reference["removed"] / reference["rows"]
    result = release.measured["removed_records"]
    assert result.reference("all", "inherent_max") == pytest.approx(shares.mean(), rel=1e-12)
    judged = {j.criterion.measure: j for j in release.policy.judgements}
    assert judged["removed_records"].criterion.threshold == "inherent_max"
    assert judged["released_records"].figure == removed["kept"].min()
    # the utility measures describe the rows released
    deviations = table_deviations(original, release.synthetic, ["county"], KEEP)
    values = release.measured["table_deviation"].values
    one_way = values.loc[values["subset"] == "one-way", "value"].to_numpy()
    np.testing.assert_allclose(one_way, deviations["one-way"]["per_dataset"])
    details = release.measured["table_deviation"].details.set_index("table")["deviation"]
    assert details[details.index == "county"].item() == pytest.approx(one_way.mean())  # the one one-way table
