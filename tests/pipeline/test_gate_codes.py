"""The release gate measures its datasets from their codes: the same figures as from their frames."""

import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayessdc.models.categorical import prepare_categorical
from bayessdc.models.dp_areal.data import prepare_areal
from bayessdc.models.dp_areal.synthesizer import DPArealSynthesizer
from bayessdc.models.dpmpm import simulate_ce_like
from bayessdc.models.dpmpm.synthesizer import DPMPMSynthesizer
from bayessdc.pipeline.categorical_gate import _figures_from_codes
from bayessdc.risk.release_figures import CategoricalReleaseFigures

KEEP = ["gender", "income", "age"]
KNOWN = [["gender", "county"], ["gender", "age", "county"]]


def _joint(size: int, records: int, m: int = 3, seed: int = 0) -> xr.DataArray:
    """Random joint codes of the synthesized columns, dims (synthetic, item), numbered 1..m."""
    codes = np.random.default_rng(seed).integers(0, size, (m, records))
    return xr.DataArray(codes, dims=("synthetic", "item"), coords={"synthetic": np.arange(1, m + 1)})


@pytest.mark.parametrize("synthesizer", ["dpmpm", "dp_areal"])
def test_the_figures_from_codes_are_the_figures_from_frames(synthesizer):
    frame = simulate_ce_like(n=500, n_counties=20, seed=2)
    if synthesizer == "dpmpm":
        # two synthesized columns: the joint code unravels into both, each in its own coding
        synthesize = ["county", "age"]
        data, model = prepare_categorical(frame, synthesize, KEEP[:2]), DPMPMSynthesizer()
        size, records = int(np.prod(data.synthesized_shape)), data.n_records
    else:
        data, model, synthesize = prepare_areal(frame, "county", KEEP), DPArealSynthesizer(), ["county"]
        size, records = len(data.records.levels["county"]), data.records.n_records
    keep = [c for c in KEEP if c not in synthesize]
    figures = CategoricalReleaseFigures(frame, synthesize, keep, KNOWN)
    joint = _joint(size, records)
    fast = _figures_from_codes(figures, model, data, joint)
    slow = figures.by_dataset(model.release_frame(data, joint)[["synthetic", *keep, *synthesize]])
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert len(fast) == 3 and fast["attribute_disclosures"].gt(0).all()


def test_a_level_the_original_never_takes_is_refused_naming_it():
    frame = simulate_ce_like(n=300, n_counties=10, seed=1)
    figures = CategoricalReleaseFigures(frame[frame["county"] != frame["county"].iloc[0]], ["county"], KEEP, KNOWN)
    data = prepare_areal(frame[frame["county"] != frame["county"].iloc[0]], "county", KEEP)
    wider = frame["county"].unique()  # a coding with the dropped county in it

    class Wider:
        def synthesized_codes(self, data, joint):
            return {"county": (wider, joint.to_numpy())}

    joint = xr.DataArray(np.zeros((1, data.records.n_records), dtype=np.int64), dims=("synthetic", "item"),
                         coords={"synthetic": [1]})  # fmt: skip
    with pytest.raises(ValueError, match=re.escape(f"synthetic column 'county' holds {wider[0].item()!r}, a value")):
        _figures_from_codes(figures, Wider(), data, joint)
