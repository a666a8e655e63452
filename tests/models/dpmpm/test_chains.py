"""The DPMPM's chains fitted apart (``fit(..., chains=[c])``) and stacked (``combine_chains``)."""

import numpy as np
import pytest
import xarray as xr

from bayessdc.models.dpmpm import DPMPMSynthesizer, GibbsSettings, prepare_categorical, simulate_latent_class


def _bitwise_equal(a, b) -> None:
    for group in ("posterior", "sample_stats"):
        xr.testing.assert_identical(a[group], b[group])
        for name, values in a[group].data_vars.items():
            assert values.dtype == b[group][name].dtype
            assert values.to_numpy().tobytes() == b[group][name].to_numpy().tobytes(), name


def test_chains_fitted_apart_and_stacked_are_the_fit_of_all_chains():
    frame, _ = simulate_latent_class(300, [2, 3, 8], [0.5, 0.5], seed=2, concentration=0.3)
    data = prepare_categorical(frame, ["x2"], ["x0", "x1"])
    synth = DPMPMSynthesizer(K=6, settings=GibbsSettings(draws=120, burn=30, chains=3, thin=2))
    together = synth.fit(data, seed=4)
    apart = [synth.fit(data, seed=4, chains=[c]) for c in (2, 0, 1)]
    assert [int(part.posterior["chain"][0]) for part in apart] == [2, 0, 1]
    np.testing.assert_array_equal(apart[0].posterior["alpha"][0], together.posterior["alpha"][2])
    combined = DPMPMSynthesizer.combine_chains(apart)
    _bitwise_equal(together, combined)
    assert combined.attrs["sampler_seed"] == together.attrs["sampler_seed"] == 4
    assert combined.attrs["sampling_seconds"] == pytest.approx(sum(p.attrs["sampling_seconds"] for p in apart))
    # two chains at once, in the order asked
    pair = synth.fit(data, seed=4, chains=[1, 2])
    _bitwise_equal(together.isel(chain=[1, 2]), pair)
    with pytest.raises(ValueError, match="chains must be chosen from 0..2"):
        synth.fit(data, seed=4, chains=[3])
