"""``bsd.load``'s posteriors by file name (``bayessdc.loading``): a fit's, a group's and a stage's."""

import arviz as az
import numpy as np
import xarray as xr

from bayessdc.loading import _posteriors
from bayessdc.synthesis.output import write_inference_data


def test_each_posterior_file_is_listed_under_its_fit_and_read_as_it_was_written(tmp_path):
    def quantities(value: float) -> xr.Dataset:
        return xr.Dataset({"alpha": (("chain", "draw"), np.full((2, 3), value))})

    private = tmp_path / "private"
    (private / "groups").mkdir(parents=True)
    write_inference_data(az.InferenceData(posterior=quantities(1.0)), private / "groups" / "S1__S2.posterior.nc")
    for name, value in {"posterior.nc": 2.0, "posterior_g0.nc": 3.0, "area_model.posterior.nc": 4.0,
                        "area_model.posterior_g1.nc": 5.0}.items():  # fmt: skip
        quantities(value).to_netcdf(private / name, engine="h5netcdf")
    (private / "area_model").mkdir()  # the area model's finished parts: not a posterior of the release
    quantities(6.0).to_netcdf(private / "area_model" / "posterior.nc", engine="h5netcdf")
    posteriors = _posteriors(private)
    expected = {"S1__S2": 1.0, "all": 2.0, "g0": 3.0, "area_model": 4.0, "area_model/g1": 5.0}
    assert set(posteriors) == set(expected)
    for fit, value in expected.items():
        assert float(posteriors[fit].posterior["alpha"].mean()) == value
