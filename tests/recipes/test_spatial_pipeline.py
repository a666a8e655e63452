"""The spatial synthesizer through the public API: the same release in memory as the command line writes."""

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.spatial import simulate_spatial
from bayessdc.synthesis.output import to_jsonable
from tests.release_digest import frame_digest, release_digest

#: Small sampler settings: the gate need not pass (both runs allow it), the two runs must agree.
SMALL = {"draws": 250, "tune": 250, "chains": 2}


def _recipe(**changes):
    settings = bsd.SamplerSettings(**SMALL, target_accept=0.95)
    arguments = {"response": "income", "coords": ("x", "y"), "covariates": ["d1", "d2"], "log_response": True}
    return bsd.Spatial(**{**arguments, "settings": settings, **changes})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spatial-api")
    frame, truth = simulate_spatial(40, seed=5)
    frame["income"] = np.exp(frame.pop("response"))
    frame["region"] = np.where(frame["x"] < 0.5, "west", "east")  # a passenger column
    frame.to_csv(folder / "data.csv", index=False)
    args = ["spatial", "--data", str(folder / "data.csv"), "--out", str(folder / "cli"), "--response", "income"]
    args += ["--coords", "x,y", "--covariates", "d1,d2", "--log-response", "--m", "3", "--seed", "4", "--quiet"]
    args += ["--draws", "250", "--tune", "250", "--chains", "2", "--allow-unconverged"]
    assert main(args) == 0
    table = bsd.read_table(folder / "data.csv")
    release = bsd.synthesize(table, _recipe(), m=3, seed=4, allow_unconverged=True, progress=False)
    return folder, table, release


def test_in_memory_release_is_the_cli_release(runs):
    folder, table, release = runs
    written = pd.read_parquet(folder / "cli" / "release" / "synthetic.parquet")
    pd.testing.assert_frame_equal(release.synthetic, written)
    assert frame_digest(release.synthetic) == release_digest(folder / "cli")
    assert list(release.synthetic.columns) == ["synthetic", *table.columns]
    assert release.m == 3 and release.facts["records"] == 40
    model = json.loads((folder / "cli" / "release" / "model.json").read_text())
    assert to_jsonable(release.description) == model


def test_risk_and_utility_are_the_stored_figures(runs):
    folder, _, release = runs
    stored = json.loads((folder / "cli" / "private" / "measures.json").read_text())
    assert to_jsonable(release.measured.to_dict()) == stored
    for kind in ("risk", "utility"):
        written = json.loads((folder / "cli" / "private" / f"{kind}.json").read_text())
        assert set(written) == {name for name, m in stored.items() if m["kind"] == kind}
    assert release.facts["at_risk_records"] == len(release.facts["at_risk_rows"])
    # the proximity measure: per dataset, beside the unsmoothed stage, worked from the records' shares
    table = release.risk().set_index("subset")
    records = release.private_tables["risk_records.parquet"]
    at_risk = records["at_risk"].to_numpy()
    for subset, mask in (("at-risk records", at_risk), ("other records", ~at_risk)):
        if mask.any():
            assert table.loc[subset, "pooled"] == pytest.approx(records["restricted_within_band"][mask].mean())
            assert table.loc[subset, "unsmoothed"] == pytest.approx(records["unrestricted_within_band"][mask].mean())
    # issue 46: the default policy judges the at-risk records' share against the other records' (no longer
    # "no criterion applies"): an isolated record no more exposed after differential smoothing than a typical one
    judged = [j for j in release.policy.judgements if j.criterion.measure == "proximity"]
    if at_risk.any():
        assert len(judged) == 1 and judged[0].subset == "at-risk records" and judged[0].passed is not None
        assert judged[0].threshold == pytest.approx(table.loc["other records", "pooled"])
    overlap = release.utility().set_index("subset")["pooled"]
    details = release.measured["ci_overlap"].details
    for coefficient, row in details[details["fit"] == "release"].iterrows():
        assert overlap[coefficient] == pytest.approx(row["ci_overlap"])
    assert set(release.diagnostics.posteriors) == {"unrestricted", "restricted"}


def test_save_writes_the_cli_files(runs, tmp_path):
    folder, _, release = runs
    release.save(tmp_path / "out")
    names = sorted(p.relative_to(folder / "cli").as_posix() for p in (folder / "cli").rglob("*") if p.is_file())
    assert (
        sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
        == names
    )
    assert release_digest(tmp_path / "out") == release_digest(folder / "cli")
    for name in ("private/risk.json", "private/utility.json", "private/measures.json", "release/model.json",
                 "private/run.json"):
        assert (tmp_path / "out" / name).read_text() == (folder / "cli" / name).read_text(), name
    saved = json.loads((tmp_path / "out" / "private" / "diagnostics.json").read_text())
    assert saved["allow_unconverged"] is True
    for name in ("risk_records.parquet", "synthetic_unrestricted.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "out" / "private" / name), pd.read_parquet(folder / "cli" / "private" / name)
        )


def test_measures_with_other_options(runs):
    _, _, release = runs
    stored, wider = release.risk().set_index("subset"), release.risk(band=0.5).set_index("subset")
    records = release.private_tables["risk_records.parquet"]
    assert (wider["pooled"] >= stored["pooled"] - 1e-12).all()  # a wider band holds every value the narrow one does
    # the absolute band is the run's: its figures do not move
    for subset in ("other records, absolute band", "at-risk records, absolute band"):
        if subset in stored.index:
            assert wider.loc[subset, "pooled"] == pytest.approx(stored.loc[subset, "pooled"], abs=1e-12)
    assert wider.loc["other records", "pooled"] >= records.loc[~records["at_risk"], "restricted_within_band"].mean()
    assert list(release.utility(predictors=["x"])["subset"]) == ["intercept", "x"]

def test_column_roles_from_synthesize_and_keep(runs):
    _, table, _ = runs
    explicit = _recipe().prepare(table, None, None)
    by_role = _recipe(response=None, covariates=None).prepare(table, ["income"], ["d1", "d2"])
    assert by_role.identity == explicit.identity
    assert _recipe().prepare(table, ["income"], ["d1", "d2"]).identity == explicit.identity
    bad = [
        ({}, ["income", "d1"], None, "one continuous response"),
        ({}, ["d1"], None, "contradicts"),
        ({}, None, ["d1"], "contradicts"),
        ({"response": None}, None, None, "name the response"),
    ]
    for changes, synthesize, keep, message in bad:
        with pytest.raises(bsd.InputError, match=message):
            bsd.synthesize(table, _recipe(**changes), synthesize=synthesize, keep=keep, m=3, progress=False)


@pytest.mark.parametrize(
    ("changes", "m", "message"),
    [
        ({"coords": ("x",)}, 3, "XCOL,YCOL"),
        ({"gamma": -1.0}, 3, "gamma= must be non-negative"),
        ({"risk_weights": "continuous"}, 3, "finite gamma="),
        ({"analysis_predictors": ["nope"]}, 3, "not columns"),
        ({"neighbours": 0}, 3, "neighbours="),
        ({}, 1, "at least 2"),
        ({"response": "nope"}, 3, "'nope' is not in the table"),
    ],
)
def test_bad_input_is_refused_before_sampling(runs, tmp_path, changes, m, message):
    _, table, _ = runs
    with pytest.raises(bsd.InputError, match=message):
        bsd.synthesize(table, _recipe(**changes), m=m, out=tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "private" / "diagnostics.json").exists()


def test_failed_gate_writes_diagnostics_and_refuses(runs, tmp_path):
    _, table, _ = runs
    recipe = _recipe(settings=bsd.SamplerSettings(draws=20, tune=20, chains=2, target_accept=0.95))
    with pytest.raises(bsd.ConvergenceError, match="model did not converge"):
        bsd.synthesize(table, recipe, m=3, seed=1, out=tmp_path / "out", progress=False)
    diagnostics = json.loads((tmp_path / "out" / "private" / "diagnostics.json").read_text())
    assert diagnostics["all_converged"] is False and diagnostics["allow_unconverged"] is False
    assert (tmp_path / "out" / "private" / "posterior_restricted.nc").exists()
    assert not (tmp_path / "out" / "release" / "synthetic.parquet").exists()
