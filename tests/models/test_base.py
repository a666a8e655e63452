"""Tests for bayessdc.models.base: the contract's shared helpers."""

import numpy as np
import xarray as xr

from bayessdc.models.base import stack_draws


def test_stack_draws_is_xarrays_stack_with_an_integer_sample_index():
    """The reshaped stack equals xarray's (chain-major, ``sample`` last, coordinates and attributes kept,
    variables without draws unchanged), whatever the order of a variable's dimensions."""
    rng = np.random.default_rng(0)
    posterior = xr.Dataset(
        {
            "mu": (("chain", "draw"), rng.random((3, 50))),
            "effect": (("chain", "draw", "origin"), rng.random((3, 50, 4))),
            "flipped": (("origin", "draw", "chain"), rng.random((4, 50, 3))),
            "fixed": ("origin", np.arange(4.0)),
        },
        coords={"chain": [0, 1, 2], "draw": np.arange(50), "origin": list("abcd"), "label": ("origin", np.arange(4))},
        attrs={"group": "a -> b"},
    )
    posterior["effect"].attrs["units"] = "log rate"
    stacked = posterior.stack(sample=("chain", "draw"))
    expected = stacked.drop_vars(["sample", "chain", "draw"]).assign_coords(sample=np.arange(150))
    got = stack_draws(posterior)
    xr.testing.assert_identical(got, expected)
    assert got["effect"].dims == ("origin", "sample")
    # chain-major: sample 51 is chain 1, draw 1
    assert got["flipped"].sel(sample=51, origin="c") == posterior["flipped"].sel(chain=1, draw=1, origin="c")
