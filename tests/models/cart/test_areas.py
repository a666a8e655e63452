"""The within-area trees given a first stage's areas (:class:`~bayessdc.models.cart.areas.SynthesizedAreaCart`): a
record whose synthetic area's trees hold no value the rules admit has its first stage drawn again, counted, and is
refused, naming its row, the rules and its area, only when the redraws are exhausted (or none is given)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayessdc.models.cart.areas as areas_module
from bayessdc.models.cart import CartSynthesisError, CartSynthesizer
from bayessdc.models.cart.areas import SynthesizedAreaCart
from bayessdc.models.cart.strata import StratifiedCart, plan_strata

RULE = {"name": "children are not employed", "if": {"age": "child"}, "then": {"employed": "no"}}


@pytest.fixture(scope="module")
def trees():
    """Areas A and B of 100 records: B has no child and every one of its records is employed, so B's trees can draw
    a child nothing the rule admits; A's children are not employed."""
    rng = np.random.default_rng(3)
    area = np.repeat(["A", "B"], 100)
    child = (area == "A") & (rng.random(200) < 0.4)
    employed = np.where(child, "no", np.where(area == "B", "yes", rng.choice(["yes", "no"], 200)))
    frame = pd.DataFrame({"area": area, "age": np.where(child, "child", "adult"), "employed": employed})
    template = CartSynthesizer(["employed"], ["area", "age"], min_samples_leaf=5, rules=[RULE])
    synthesizer = SynthesizedAreaCart(StratifiedCart(template, plan_strata(frame, "area", 20)), ["area"])
    return frame, synthesizer.fit(frame, seed=1)


def _first_stage(frame: pd.DataFrame, m: int) -> pd.DataFrame:
    """Every record in its own area but the children, all placed in B."""
    area = np.where(frame["age"] == "child", "B", frame["area"])
    return pd.DataFrame({"synthetic": np.repeat(np.arange(1, m + 1), len(frame)), "area": np.tile(area, m)})


def test_without_a_redraw_the_record_is_refused_naming_its_row_the_rule_and_its_area(trees):
    frame, synthesizer = trees
    first = int(np.flatnonzero(frame["age"] == "child")[0])
    with pytest.raises(CartSynthesisError, match=rf"row {first} of the data, in synthetic dataset 1: no value of its "
                       r"synthetic area 'B' satisfies the rules 'children are not employed' \(drawing 'employed'\)"):
        synthesizer.with_areas(_first_stage(frame, 2)).synthesize_datasets(2)


def test_a_redraw_places_the_record_where_the_rules_hold_and_is_counted(trees):
    """The redraw is asked for the rejected records of each dataset, attempt by attempt; here it places a child in B
    twice, then in A."""
    frame, synthesizer = trees
    asked = []

    def redraw(k: int, records: np.ndarray, attempt: int) -> pd.DataFrame:
        asked.append((k, len(records), attempt))
        return pd.DataFrame({"area": ["B" if attempt < 3 else "A"] * len(records)})

    drawn = synthesizer.with_areas(_first_stage(frame, 2), redraw)
    synthetic = drawn.synthesize_datasets(2)
    children = int((frame["age"] == "child").sum())
    assert asked == [(k, children, attempt) for attempt in (1, 2, 3) for k in (1, 2)]
    child = synthetic["age"].astype(str) == "child"
    assert (synthetic.loc[child, "employed"].astype(str) == "no").all()
    assert (synthetic.loc[child, "area"].astype(str) == "A").all()
    assert drawn.redrawn == {"rows": 2 * children, "rejected": 3 * 2 * children, "most": 3}
    # the first stage of the release (what the cross-fit draws given) holds the redrawn areas
    assert drawn.areas["area"].tolist() == synthetic["area"].astype(str).tolist()
    again = synthesizer.with_areas(_first_stage(frame, 2), redraw).synthesize_datasets(2)
    pd.testing.assert_frame_equal(again, synthetic)


def test_the_redraws_are_bounded(trees, monkeypatch):
    frame, synthesizer = trees
    monkeypatch.setattr(areas_module, "MAX_REDRAWS", 2)
    stuck = synthesizer.with_areas(_first_stage(frame, 1), lambda k, records, attempt: pd.DataFrame(
        {"area": ["B"] * len(records)}))  # fmt: skip
    with pytest.raises(CartSynthesisError, match=r"synthetic area 'B' .* in 3 draws of its area"):
        stuck.synthesize_datasets(1)
