"""The ordered logits of a categorical release, combined by the rules of its kind (kept columns or none)."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.recipes.categorical.utility import ordered_logit_input, ordered_logit_summary
from bayessdc.synthesis.categorical import ordered_logit_combined


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(2)
    n = 500
    frame = pd.DataFrame({"county": rng.integers(0, 3, n), "gender": rng.integers(0, 2, n)})
    frame["income"] = np.digitize(0.8 * frame["county"] - 0.5 * frame["gender"] + rng.logistic(size=n), [0.0, 1.0])
    synthetic = pd.concat(
        [frame.assign(synthetic=k, county=np.where(rng.random(n) < 0.2, rng.integers(0, 3, n), frame["county"]))
         for k in (1, 2, 3)],
        ignore_index=True,
    )  # fmt: skip
    return frame, synthetic


def test_ordered_logit_summary_names_its_combining_rules(frames):
    original, synthetic = frames
    partial = ordered_logit_summary(original, synthetic, "income", ["county", "gender"])
    full = ordered_logit_summary(original, synthetic, "income", ["county", "gender"], kind="full")
    assert partial["combining_rules"] == "partial" and "Reiter's (2003) partially" in partial["model"]
    assert full["combining_rules"] == "full" and "fully synthetic rules" in full["model"]
    assert {"T_p"} <= set(partial["coefficients"]["county_1"]) and "adjusted" not in partial["coefficients"]["county_1"]
    assert {"T_f", "adjusted"} <= set(full["coefficients"]["county_1"])
    expected = ordered_logit_combined(original, synthetic, "income", ["county", "gender"], kind="full")
    for name, row in expected.iterrows():
        got = full["coefficients"][str(name)]
        assert got["T_f"] == pytest.approx(row["T_f"]) and got["adjusted"] == bool(row["adjusted"])


def test_ordered_logit_input_keeps_the_rules_of_its_fit(frames):
    original, synthetic = frames
    for kind in ("partial", "full"):
        fit = ordered_logit_summary(original, synthetic, "income", ["county", "gender"], kind=kind)
        regression = ordered_logit_input(original, synthetic, fit)
        assert regression.kind == kind
        assert list(regression.fit().index) == fit["averaged"]
    fit.pop("combining_rules")  # figures written before the rules were recorded: partially synthetic
    assert ordered_logit_input(original, synthetic, fit).kind == "partial"
