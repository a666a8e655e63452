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
from bayessdc.recipes.categorical.gate import _figures_from_codes
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


def test_the_gate_draws_counts_per_cell_where_there_are_fewer_pairs_than_records(monkeypatch):
    """4,000 records in at most 30 cells x 5 counties: the gate measures counts per cell, and its figures agree
    with those of the same posterior's datasets drawn as records (other draws: within a few standard errors)."""
    import bayessdc as bsd
    from bayessdc.models.dpmpm import GibbsSettings, simulate_latent_class

    frame, _ = simulate_latent_class(4000, [2, 3, 5], [0.5, 0.3, 0.2], seed=3, concentration=0.4)
    frame = frame.rename(columns={"x0": "gender", "x1": "age", "x2": "county"})
    known = [["gender", "county"], ["gender", "age", "county"]]

    def gate(**patched):
        for name, value in patched.items():
            monkeypatch.setattr(name, value)
        recipe = bsd.DPMPM(K=6, known=known, settings=GibbsSettings(draws=200, burn=100, chains=4, thin=2),
                           repetitions=5, risk_records=0)  # fmt: skip
        release = bsd.synthesize(frame, recipe, synthesize=["county"], keep=["gender", "age"], m=2, seed=3,
                                 progress=False, allow_unconverged=True)  # fmt: skip
        monkeypatch.undo()
        return release.diagnostics.summary["release_gate"]["figures"]

    counted = []
    of_cell_counts = CategoricalReleaseFigures.of_cell_counts

    def spy(self, layout, counts, details=False):
        counted.append(int(counts.sum()))
        return of_cell_counts(self, layout, counts, details)

    by_cells = gate(**{"bayessdc.risk.release_figures.CategoricalReleaseFigures.of_cell_counts": spy})
    assert len(counted) == 4 * 50 and set(counted) == {4000}  # the DPMPM's 50 datasets of every chain, as counts
    by_records = gate(**{"bayessdc.models.dpmpm.synthesizer.DPMPMSynthesizer.synthesized_cell_counts":
                         lambda self, posterior, data, rng: None})  # fmt: skip
    # both runs measure datasets drawn from the same 200 posterior draws (the same fit, the same positions): the
    # pooled figures differ by the synthesis noise alone, whose sd per dataset is below the figures' per-dataset sd
    compared = 0
    for name, a in by_cells.items():
        b = by_records[name]
        if None in (a["pooled"], b["pooled"], a["per_dataset_sd"]) or not np.isfinite(a["pooled"]):
            continue  # a rate with no unique match
        spread = np.hypot(a["per_dataset_sd"], b["per_dataset_sd"]) / np.sqrt(len(counted))
        assert abs(a["pooled"] - b["pooled"]) <= 4 * spread, name
        compared += 1
    assert compared >= 8
    # sharper for the disclosures: given a draw, a dataset's count is a sum of independent indicators over the 4,000
    # records (variance at most 4,000 / 4), so the two pooled means over 200 datasets differ by an sd of at most 4.5
    a, b = by_cells["attribute_disclosures"]["pooled"], by_records["attribute_disclosures"]["pooled"]
    assert a != b and abs(a - b) <= 4 * np.sqrt(2 * (4000 / 4) / len(counted))
