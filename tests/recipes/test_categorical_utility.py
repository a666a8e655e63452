"""The ordered logits of a categorical release, combined by the rules of its kind (kept columns or none)."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.measures import MeasureInput, compute_measures
from bayessdc.measures.regression import judged_coefficients
from bayessdc.recipes.categorical.utility import ordered_logit_inputs
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


def test_the_ordered_logit_is_combined_by_the_rules_of_the_release_and_judges_its_identified_slopes(frames):
    original, synthetic = frames
    partial, full = (ordered_logit_inputs(original, synthetic, [("income", ["county", "gender"])], keep)[0]
                     for keep in (["gender"], []))  # fmt: skip
    assert (partial.kind, full.kind) == ("partial", "full")  # kept columns: Reiter's 2003 rules; none: fully synthetic
    assert "T_p" in partial.fit() and "adjusted" not in partial.fit()
    table = full.fit()
    expected = ordered_logit_combined(original, synthetic, "income", ["county", "gender"], kind="full")
    np.testing.assert_allclose(table["T_f"], expected["T_f"])
    assert (table["adjusted"] == expected["adjusted"]).all()
    # the slopes with a finite interval on the original are judged; the 2 cut points of 3 income levels are not
    assert list(table.index[table["judged"]]) == ["county_1", "county_2", "gender_1"]
    assert not table["judged"].iloc[-2:].any() and table["identified"].all()
    measured = compute_measures(MeasureInput(synthetic, original, regression=[partial]), ["ci_overlap"])["ci_overlap"]
    judged = partial.fit()
    assert measured.subsets() == [f"income: {name}" for name in judged.index[judged["judged"]]]
    # the details hold every coefficient, the cut points and whether each is judged
    assert len(measured.details) == len(judged) and measured.details["judged"].sum() == 3


def test_a_coefficient_without_a_finite_or_narrow_interval_is_not_identified_nor_judged():
    """A level seen with one response value only (separation) has no finite estimate on the original: listed in the
    details, not judged; neither is a cut point."""
    table = judged_coefficients(pd.DataFrame({
        "original_lower": [-1.0, -np.inf, -2.0, 0.1], "original_upper": [1.0, np.inf, 50.0, 0.5],
        "ci_overlap": [0.8, np.nan, 0.5, 0.9]}, index=["x_b", "x_c", "x_d", "0/1"]), thresholds=1)  # fmt: skip
    assert table["identified"].tolist() == [True, False, False, True]  # x_d: wider than 2 x 1.96 x 10
    assert table["judged"].tolist() == [True, False, False, False]  # the cut point 0/1 is not a slope
