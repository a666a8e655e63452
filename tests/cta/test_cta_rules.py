"""Sensitivity rules on hand-made contributor data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayessdc.cta import (
    DominanceRule,
    PPercentRule,
    ThresholdRule,
    parse_rule,
    protection_from_rules,
    table_from_long,
    table_from_microdata,
)

# Cell A: 100, 50, 30 (X = 180);  cell B: 60, 40 and eight of 25 (X = 300);  cell C: a single firm of 80.
MICRO = pd.DataFrame({
    "cell": ["A"] * 3 + ["B"] * 10 + ["C"],
    "firm": [f"f{i}" for i in range(14)],
    "v": [100.0, 50.0, 30.0, 60.0, 40.0] + [25.0] * 8 + [80.0],
})


def level(table, protection, label):
    i = int(np.flatnonzero(table.cells["cell"] == label)[0])
    return protection.lower[i], protection.upper[i]


def test_p_percent_rule():
    table = table_from_microdata(MICRO, "cell", "v", "firm")
    protection = PPercentRule(p=20).protection(table)
    # A: remainder 30 < 20% of 100 = 20?  No: 30 >= 20, so A is safe at p=20 ...
    assert level(table, protection, "A") == (0.0, 0.0)
    # ... but at p=40 it needs 40 - 30 = 10.
    assert level(table, PPercentRule(40).protection(table), "A") == (10.0, 10.0)
    # B: remainder 200 is far above 20% of 60.
    assert level(table, protection, "B") == (0.0, 0.0)
    # C: a single contributor, protection p% of its value.
    assert level(table, protection, "C") == (16.0, 16.0)


def test_dominance_rule():
    table = table_from_microdata(MICRO, "cell", "v", "firm")
    protection = DominanceRule(n=2, k=80).protection(table)
    # A: top two 150 > 0.8 * 180 = 144; protection 150 / 0.8 - 180 = 7.5.
    assert level(table, protection, "A") == pytest.approx((7.5, 7.5))
    # B: top two 100 <= 240.
    assert level(table, protection, "B") == (0.0, 0.0)
    # C: 80 > 64; protection 80 / 0.8 - 80 = 20.
    assert level(table, protection, "C") == pytest.approx((20.0, 20.0))
    # The grand total (560): top two 180 <= 448.
    assert level(table, protection, "Total") == (0.0, 0.0)


def test_threshold_rule_on_counts_moves_to_zero_or_threshold():
    counts = pd.DataFrame({"g": ["a", "b", "c", "d"], "n": [0, 1, 2, 7]})
    table = table_from_long(counts, "g", "n", kind="count")
    protection = ThresholdRule(3).protection(table)
    assert list(protection.lower[:4]) == [0, 1, 2, 0]
    assert list(protection.upper[:4]) == [0, 2, 1, 0]


def test_threshold_rule_on_magnitudes_counts_contributors():
    table = table_from_microdata(MICRO, "cell", "v", "firm")
    protection = ThresholdRule(3, fraction=0.1).protection(table)
    assert level(table, protection, "A") == (0.0, 0.0)  # three contributors
    assert level(table, protection, "C") == pytest.approx((8.0, 8.0))


def test_rules_combine_by_maximum_and_parse():
    table = table_from_microdata(MICRO, "cell", "v", "firm")
    combined = protection_from_rules(table, ["p%=40", "nk=2,80"])
    assert level(table, combined, "A") == pytest.approx((10.0, 10.0))
    assert parse_rule("p%=15") == PPercentRule(15.0)
    assert parse_rule("nk=2,85") == DominanceRule(2, 85.0)
    assert parse_rule("threshold=3") == ThresholdRule(3)
    with pytest.raises(ValueError, match="unknown rule 'median=3'"):
        parse_rule("median=3")
    with pytest.raises(ValueError, match="cannot read the rule"):
        parse_rule("p%=fifteen")


def test_rules_need_contributors():
    table = table_from_long(MICRO.groupby("cell", as_index=False)["v"].sum(), "cell", "v")
    with pytest.raises(ValueError, match="need contributor microdata"):
        PPercentRule(10).protection(table)
