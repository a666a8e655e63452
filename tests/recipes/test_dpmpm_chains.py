"""The DPMPM's chains as parts of the part runner: the posterior of the in-process fit, and resume."""

import pandas as pd
import pytest
import xarray as xr
from distributed import LocalCluster

import bayessdc as bsd
from bayessdc.models.dpmpm import DPMPMSynthesizer, GibbsSettings, simulate_latent_class

SETTINGS = GibbsSettings(draws=200, burn=50, chains=3, thin=2)


@pytest.fixture(scope="module")
def prepared():
    frame, _ = simulate_latent_class(200, [2, 4, 30], [0.5, 0.3, 0.2], seed=3, concentration=0.4)
    frame = frame.rename(columns={"x0": "gender", "x1": "age", "x2": "county"})
    return frame, bsd.DPMPM(K=6, settings=SETTINGS).prepare(frame, ["county"], ["gender", "age"])


def _posterior(recipe, prepared, workdir=None):
    return recipe.fit(prepared, 3, 7, workdir, progress=False).state.idata


def _bitwise_equal(a, b) -> None:
    for group in ("posterior", "sample_stats"):
        xr.testing.assert_identical(a[group], b[group])
        for name, values in a[group].data_vars.items():
            assert values.to_numpy().tobytes() == b[group][name].to_numpy().tobytes(), name


def test_chains_through_the_runner_give_the_in_process_posterior_and_resume(prepared, tmp_path, monkeypatch):
    _, data = prepared
    in_process = _posterior(bsd.DPMPM(K=6, settings=SETTINGS), data)
    synchronous = bsd.DPMPM(K=6, settings=SETTINGS, scheduler="synchronous")
    _bitwise_equal(in_process, _posterior(synchronous, data, tmp_path))
    assert sorted(p.name for p in (tmp_path / "chains").iterdir()) == ["chain-0.nc", "chain-1.nc", "chain-2.nc"]
    # a rerun loads the stored chains; an interrupted one refits only the missing chain
    (tmp_path / "chains" / "chain-1.nc").unlink()
    fitted = []
    fit = DPMPMSynthesizer.fit
    monkeypatch.setattr(DPMPMSynthesizer, "fit", lambda self, *a, **k: fitted.append(k["chains"]) or fit(self, *a, **k))
    _bitwise_equal(in_process, _posterior(synchronous, data, tmp_path))
    assert fitted == [[1]]
    _bitwise_equal(in_process, _posterior(synchronous, data, tmp_path))
    assert fitted == [[1]]


def test_chains_on_a_cluster_of_processes_give_the_in_process_posterior(prepared):
    _, data = prepared
    in_process = _posterior(bsd.DPMPM(K=6, settings=SETTINGS), data)
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        spread = _posterior(bsd.DPMPM(K=6, settings=SETTINGS, scheduler=cluster.scheduler_address), data)
    _bitwise_equal(in_process, spread)


def test_a_release_from_chains_kept_in_the_output_folder_is_the_same_on_a_rerun(prepared, tmp_path):
    frame, _ = prepared
    recipe = bsd.DPMPM(K=6, settings=SETTINGS, scheduler="synchronous", repetitions=2, risk_records=0)
    options = {"synthesize": ["county"], "keep": ["gender", "age"], "m": 2, "seed": 7, "allow_unconverged": True}
    first = bsd.synthesize(frame, recipe, out=tmp_path / "out", progress=False, **options)
    assert (tmp_path / "out" / "private" / "chains" / "chain-2.nc").exists()
    again = bsd.synthesize(frame, recipe, out=tmp_path / "out", progress=False, **options)
    pd.testing.assert_frame_equal(first.synthetic, again.synthetic)
    plain = bsd.synthesize(frame, bsd.DPMPM(K=6, settings=SETTINGS, repetitions=2, risk_records=0), **options,
                           progress=False)  # fmt: skip
    pd.testing.assert_frame_equal(first.synthetic, plain.synthetic)


def test_stored_chains_with_mixed_level_types_come_back_as_the_in_process_posterior(prepared, tmp_path):
    """A numeric column with a missing value treated as a level has levels 0, 1, ..., "<missing>": netCDF
    cannot hold such a coordinate, so the store writes it as text and the recipe restores the data's own."""
    frame, _ = prepared
    frame = frame.astype({"age": float})
    frame.loc[[0, 5], "age"] = float("nan")
    recipe = bsd.DPMPM(K=6, settings=SETTINGS, missing="level")
    data = recipe.prepare(frame, ["county"], ["gender", "age"])
    in_process = _posterior(recipe, data)
    stored = bsd.DPMPM(K=6, settings=SETTINGS, missing="level", scheduler="synchronous")
    _posterior(stored, data, tmp_path)  # fits and stores the chains
    _bitwise_equal(in_process, _posterior(stored, data, tmp_path))  # reads them back
