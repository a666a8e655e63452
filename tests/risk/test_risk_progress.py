"""Bars over the long loops of the risk layer (the inherent scenarios' repetitions, the refits of the exact
attribute risk), drawn on a terminal only and without changing a figure."""


import numpy as np
import pandas as pd
import xarray as xr

from bayessdc import progress
from bayessdc.risk.attribute import exact_attribute_risk
from bayessdc.risk.identification import inherent_risk


def _records():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"p": rng.integers(0, 5, 300), "county": rng.integers(0, 12, 300)})


def test_the_inherent_scenarios_count_their_repetitions(terminal):
    original = _records()
    shown = inherent_risk(original, ["county"], ["p"], [["p", "county"]], repetitions=30, seed=2)
    text = terminal.getvalue()
    assert "inherent risk scenarios" in text and "60/60" in text  # both scenarios, 30 repetitions each
    with progress.enabled(False):
        quiet = inherent_risk(original, ["county"], ["p"], [["p", "county"]], repetitions=30, seed=2)
    for scenario in ("min", "max"):
        pd.testing.assert_frame_equal(shown[scenario], quiet[scenario])


def test_the_exact_attribute_risk_counts_its_refits(terminal):
    def refit(t, c):
        lp = np.log(np.full((20, 3), 1 / 3))
        return xr.DataArray(lp, dims=("sample", "candidate"))

    synthetic = xr.DataArray(np.array([[0, 1], [2, 1]]), dims=("synthetic", "item"))
    rho = exact_attribute_risk(refit, [0, 1], [0, 1, 2], synthetic)
    np.testing.assert_allclose(rho.to_numpy(), 1 / 3)
    assert "exact attribute risk, refits" in terminal.getvalue() and "6/6" in terminal.getvalue()
