"""The intruder's audit of a published table (issue 52, item 1): intervals worked by hand, the CTA intruder who
knows the method, the protection judged on the interval, the measure ``audited_cells`` and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

import bayessdc as bsd
from bayessdc import cta
from bayessdc.cta.audit import AuditInput, audit_table
from bayessdc.measures import MeasureInput, compute_measures
from bayessdc.policy import default_policy, judge

#: A 2 x 2 table: rows a, b; columns x, y (cells 10, 20 / 30, 40; row totals 30, 70; column totals 40, 60).
TWO_BY_TWO = pd.DataFrame({"r": ["a", "a", "b", "b"], "c": ["x", "y", "x", "y"], "v": [10.0, 20.0, 30.0, 40.0],
                           "p": [3.0, 0.0, 0.0, 0.0]})  # fmt: skip


@pytest.fixture(scope="module")
def two_by_two():
    return cta.table_from_long(TWO_BY_TWO, "r,c", "v", protection="p")


def _suppress(table, *names):
    """The table's values with the named cells (``"r=a, c=x"``) suppressed."""
    published = table.values.copy()
    for name in names:
        published[[table.describe_cell(i) for i in range(table.n_cells)].index(name)] = np.nan
    return published


def _row(audit, name):
    return audit.set_index("name").loc[name]


def test_one_cell_suppressed_alone_is_recomputed_exactly(two_by_two):
    """The issue says a cell suppressed alone has "the whole range" as its interval; with the margins published it
    has none: (a, x) = row total a - (a, y) = 30 - 20 = 10, an interval of width 0, the cell disclosed exactly
    (which is why suppression needs complements). Both sides of its protection range [7, 13] fail."""
    audit = audit_table(two_by_two, _suppress(two_by_two, "r=a, c=x"))
    row = _row(audit, "r=a, c=x")
    assert (row["min"], row["max"], row["true"]) == (10.0, 10.0, 10.0)
    assert np.isnan(row["published"]) and not row["protected"] and row["fails"] == "both"
    # a complement in the same row is not enough: (a, x) = column total x - (b, x) = 40 - 30
    row = _row(audit_table(two_by_two, _suppress(two_by_two, "r=a, c=x", "r=a, c=y")), "r=a, c=x")
    assert (row["min"], row["max"], row["protected"]) == (10.0, 10.0, False)


def test_four_interior_cells_suppressed_give_the_frechet_bounds(two_by_two):
    """Margins published (rows 30, 70; columns 40, 60; total 100), the four interior cells suppressed: each cell
    lies within its Frechet bounds, max(0, row + column - total) .. min(row, column): (a, x) [max(0, 30 + 40 - 100),
    min(30, 40)] = [0, 30]; (a, y) [max(0, 30 + 60 - 100), min(30, 60)] = [0, 30]; (b, x) [max(0, 70 + 40 - 100),
    min(70, 40)] = [10, 40]; (b, y) [max(0, 70 + 60 - 100), min(70, 60)] = [30, 60]. With protection 12 everywhere
    (ranges [-2, 22], [8, 32], [18, 42], [28, 52], the first capped at the a-priori 0): (a, x) is protected, (a, y)
    and (b, x) miss their upper end (30 < 32, 40 < 42), (b, y) its lower end (30 > 28)."""
    published = _suppress(two_by_two, "r=a, c=x", "r=a, c=y", "r=b, c=x", "r=b, c=y")
    protection = cta.Protection.symmetric(np.where(two_by_two.cells["interior"], 12.0, 0.0))
    audit = audit_table(two_by_two, published, protection).set_index("name")
    expected = {"r=a, c=x": (0, 30, ""), "r=a, c=y": (0, 30, "upper"), "r=b, c=x": (10, 40, "upper"),
                "r=b, c=y": (30, 60, "lower")}  # fmt: skip
    assert {name: (row["min"], row["max"], row["fails"]) for name, row in audit.iterrows()} == expected
    assert audit["exact"].all() and audit.attrs["lps"] == 8
    # the table's own protection (3 on (a, x)): its range [7, 13] lies within [0, 30]
    assert _row(audit_table(two_by_two, published), "r=a, c=x")["protected"]
    # a-priori ranges narrow the interval: (a, y) known to be at least 15 leaves (a, x) = 30 - (a, y) at most 15
    bounds = pd.DataFrame({"r": ["a"], "c": ["y"], "lower": [15.0]})
    assert _row(audit_table(two_by_two, published, bounds=bounds), "r=a, c=x")[["min", "max"]].tolist() == [0, 15]


def test_a_hierarchy_is_audited_across_its_levels():
    """Region > district: A = A1 + A2 (5 + 7), B = B1 + B2 (3 + 9), Total 24. Suppressed A1, A2, A, B1 and B with
    B2 = 9 and the total published: B >= 9, so A = 24 - B <= 15 and A1 = A - A2 <= 15: A1 in [0, 15]."""
    frame = pd.DataFrame({"region": ["A", "A", "B", "B"], "district": ["A1", "A2", "B1", "B2"],
                          "v": [5.0, 7.0, 3.0, 9.0], "p": [2.0, 0.0, 0.0, 0.0]})  # fmt: skip
    table = cta.table_from_long(frame, "region>district", "v", protection="p")
    published = _suppress(table, "region=A, district=A1", "region=A, district=A2", "region=A, district=Total",
                          "region=B, district=B1", "region=B, district=Total")  # fmt: skip
    row = _row(audit_table(table, published), "region=A, district=A1")
    assert (row["min"], row["max"], row["protected"]) == (0.0, 15.0, True)


def test_the_cta_intruder_worked_by_hand():
    """a + b + c = Total, a = 2 sensitive with protection 3 (it moved up: published 5, 20, 50, 75). The intruder
    knows each other cell moved by at most 20% of its true value x (b / 1.2 <= x <= b / 0.8): b in [16.667, 25],
    c in [41.667, 62.5], Total in [62.5, 93.75], so a = Total - b - c in [0, 93.75 - 16.667 - 41.667 = 35.417];
    and a moved by at least 3: a <= 5 - 3 or a >= 5 + 3, the hole (2, 8). Its range [max(2 - 3, 0), 5] = [0, 5] is
    covered. At capacity 0.025 (published 5, 20, 48.8, 73.8): a in [72 - 20/0.975 - 48.8/0.975, 73.8/0.975 -
    20/1.025 - 48.8/1.025] = [1.436, 8.570], short of 0: unprotected below. Knowing q = widen p = 3 too, the
    intruder knows a is 2 or 8: the hull [2, 8] ends at the true value."""
    frame = pd.DataFrame({"g": ["a", "b", "c"], "v": [2.0, 20.0, 50.0], "p": [3.0, 0.0, 0.0]})
    table = cta.table_from_long(frame, "g", "v", protection="p")
    wide = _row(audit_table(table, [5, 20, 50, 75], intruder="cta", capacity=0.2), "g=a")
    assert wide["min"] == 0 and wide["max"] == pytest.approx(93.75 - 20 / 1.2 - 50 / 1.2)
    assert (wide["hole_lower"], wide["hole_upper"], wide["protected"]) == (2, 8, True)
    narrow = _row(audit_table(table, [5, 20, 48.8, 73.8], intruder="cta", capacity=0.025), "g=a")
    assert narrow["min"] == pytest.approx(73.8 / 1.025 - 20 / 0.975 - 48.8 / 0.975)
    assert narrow["max"] == pytest.approx(73.8 / 0.975 - 20 / 1.025 - 48.8 / 1.025)
    assert not narrow["protected"] and narrow["fails"] == "lower"
    known_q = _row(audit_table(table, [5, 20, 50, 75], intruder="cta", capacity=0.2, widen=1.0), "g=a")
    assert (known_q["min"], known_q["max"], known_q["fails"]) == (2, 8, "lower")
    # no capacity known: a is anything in [0, inf) but the hole; the suppression intruder reads a = 5 as exact
    free = _row(audit_table(table, [5, 20, 50, 75], intruder="cta"), "g=a")
    assert (free["min"], free["max"]) == (0, np.inf) and free["protected"]


#: A 3 x 3 table adjusted by CTA (capacity 0.1, min sum |y|): (a, z) 39 -> 30, (b, y) 19 -> 14, (c, x) 55 -> 40.
THREE_BY_THREE = pd.DataFrame({
    "r": list("aaabbbccc"), "c": list("xyz") * 3, "v": [13.0, 43, 39, 41, 19, 8, 55, 43, 20],
    "p": [0.0, 0, 9, 0, 5, 0, 15, 0, 0],
    "published": [14.3, 43.7, 30, 45.1, 14, 8.8, 40, 47.3, 22],
})  # fmt: skip


def _every_direction(table, published, protection, capacity):
    """The full-knowledge intruder's hull by brute force: for each of the 2^s direction patterns of the sensitive
    cells, the two LPs of scipy's linprog over the true table; the hull over the feasible patterns."""
    T, n = table.additivity.toarray(), table.n_cells
    plain = ~protection.sensitive
    lo, hi = np.zeros(n), np.full(n, np.inf)
    lo[plain], hi[plain] = published[plain] / (1 + capacity), published[plain] / (1 - capacity)
    sensitive = np.flatnonzero(protection.sensitive)
    hulls = {}
    for i in sensitive:
        ends = []
        for pattern in itertools.product((False, True), repeat=len(sensitive)):
            low, high = lo.copy(), hi.copy()
            for j, up in zip(sensitive, pattern, strict=True):
                if up:  # moved up: x <= b - UPL
                    high[j] = published[j] - protection.upper[j]
                else:
                    low[j] = published[j] + protection.lower[j]
            box = list(zip(low, high, strict=True))
            found = [linprog(sign * np.eye(n)[i], A_eq=T, b_eq=np.zeros(len(T)), bounds=box) for sign in (1, -1)]
            if found[0].status == 0:
                ends.append((found[0].fun, -found[1].fun))
        hulls[table.describe_cell(i)] = (min(e[0] for e in ends), max(e[1] for e in ends))
    return hulls


def test_the_exact_hull_is_the_full_knowledge_intruders():
    """The LP relaxes the other sensitive cells' direction sets; where its optimum puts one inside its hole, the
    MILP (one binary per sensitive cell) gives the full-knowledge intruder's hull, the same as the brute force over
    the 8 direction patterns. Here the LP leaves (c, x) in [24.4, 56.4]; knowing every direction, the intruder pins
    it to [55, 56.4] (true 55, protection 15): unprotected, named. Every cell's true value lies in its interval."""
    table = cta.table_from_long(THREE_BY_THREE, "r,c", "v", protection="p")
    published = cta.table_from_long(THREE_BY_THREE, "r,c", "published").values  # the totals added up, same order
    protection = cta.protection_from_table(table)
    relaxed = audit_table(table, published, protection, intruder="cta", capacity=0.1, exact=False).set_index("name")
    exact = audit_table(table, published, protection, intruder="cta", capacity=0.1).set_index("name")
    brute = _every_direction(table, published, protection, 0.1)
    for name, (low, high) in brute.items():
        assert exact.loc[name, ["min", "max"]].tolist() == pytest.approx([low, high], abs=1e-6)
        assert relaxed.loc[name, "min"] <= low + 1e-6 and relaxed.loc[name, "max"] >= high - 1e-6
        assert low - 1e-6 <= exact.loc[name, "true"] <= high + 1e-6
    assert relaxed.loc["r=c, c=x", "min"] < 25 and not relaxed.loc["r=c, c=x", "exact"]
    assert exact.loc["r=c, c=x", ["min", "max"]].tolist() == pytest.approx([55, 56 + 4 / 9])
    assert exact["exact"].all() and not exact.loc["r=c, c=x", "protected"]


def test_counts_are_integral():
    """A count table (integral true values): the ends are rounded inward. Rows a (1, 2 | 3), b (4, 6 | 10),
    columns 5, 8, total 13, the four interior cells suppressed and (a, y) known to be at most 2.5: (a, x) =
    3 - (a, y) >= 0.5, at least 1 once integral, and at most min(3, 5) = 3. With protection 0.3 the range [0.7, 1.3]
    is covered by [0.5, 3] but not by [1, 3]: the integral intruder knows (a, x) >= 1."""
    frame = pd.DataFrame({"r": ["a", "a", "b", "b"], "c": ["x", "y", "x", "y"], "n": [1, 2, 4, 6]})
    table = cta.table_from_long(frame, "r,c", "n", kind="count")
    protection = cta.Protection.symmetric(np.where(np.arange(table.n_cells) == 0, 0.3, 0.0))
    published = _suppress(table, "r=a, c=x", "r=a, c=y", "r=b, c=x", "r=b, c=y")
    bounds = pd.DataFrame({"r": ["a"], "c": ["y"], "upper": [1.5]})
    with pytest.raises(ValueError, match=r"a-priori range \[0, 1.5\] of r=a, c=y excludes its true value 2"):
        audit_table(table, published, protection, bounds=bounds)
    bounds["upper"] = 2.5
    row = _row(audit_table(table, published, protection, bounds=bounds), "r=a, c=x")
    assert (row["min"], row["max"], row["protected"], row["fails"]) == (1, 3, False, "lower")
    continuous = _row(audit_table(table, published, protection, bounds=bounds, integer=False), "r=a, c=x")
    assert (continuous["min"], continuous["max"], continuous["protected"]) == (0.5, 3, True)


def test_the_measure_and_the_policy_name_every_failing_cell(two_by_two):
    """The 2 x 2 with its four interior cells suppressed and protection 12 (above): three cells fail; the measure
    counts them under "all" and gives each its own subset, which the default policy's criterion (worst <= 0 on
    every subset) names."""
    published = _suppress(two_by_two, "r=a, c=x", "r=a, c=y", "r=b, c=x", "r=b, c=y")
    protection = cta.Protection.symmetric(np.where(two_by_two.cells["interior"], 12.0, 0.0))
    data = MeasureInput(pd.DataFrame({"synthetic": [1]}), audit=AuditInput(two_by_two, published, protection))
    result = compute_measures(data, ["audited_cells"])["audited_cells"]
    summary = result.summary().set_index("subset")
    assert summary["pooled"].to_dict() == {"all": 3, "r=a, c=y": 1, "r=b, c=x": 1, "r=b, c=y": 1}
    assert result.reference("all", "sensitive_cells") == 4
    assert "misses the upper end" in summary.loc["r=a, c=y", "note"]
    assert result.details.set_index("name").loc["r=b, c=y", "min"] == 30
    verdict = judge(default_policy(), compute_measures(data, ["audited_cells"]), "cta")
    assert not verdict.passed
    assert {j.subset for j in verdict.failed() if j.criterion.measure == "audited_cells"} == {
        "all", "r=a, c=y", "r=b, c=x", "r=b, c=y"}  # fmt: skip
    safe = MeasureInput(pd.DataFrame({"synthetic": [1]}), audit=AuditInput(two_by_two, published))
    assert judge(default_policy(), compute_measures(safe, ["audited_cells"]), "cta").passed


def test_cox_adjusted_table_passes_its_audit():
    """bsd.adjust audits Cox's 4 x 9 table as the intruder who knows the method (capacity 0.2 of the true value,
    every sensitive cell moved by at least its protection): every sensitive cell's interval holds its true value
    and covers its protection range, and the policy passes; knowing widen (q = p) too, the intruder would know each
    sensitive value to be one of two, and every cell fails (the finding reported for issue 52)."""
    result = bsd.adjust(bsd.examples.cox_table(), "row,column", "value", protection="protection",
                        settings=bsd.AdjustmentSettings(integer=True))  # fmt: skip
    measured = result.measured["audited_cells"]
    assert measured.summary().set_index("subset").loc["all", "pooled"] == 0 and result.policy.passed
    audit = measured.details
    assert len(audit) == 7 and audit["protected"].all() and audit["exact"].all()
    assert ((audit["min"] <= audit["true"]) & (audit["true"] <= audit["max"])).all()
    solution = result.solution
    known_q = audit_table(solution.table, solution.adjusted, solution.protection, intruder="cta", capacity=0.2,
                          widen=1.0, integer=True)  # fmt: skip
    assert not known_q["protected"].any()
    assert ((known_q["min"] == known_q["true"]) | (known_q["max"] == known_q["true"])).all()


def test_bad_input_is_refused_before_solving_naming_the_cell(two_by_two, monkeypatch):
    from bayessdc.cta import audit

    monkeypatch.setattr(audit, "_Part", None)  # nothing may be solved
    published = _suppress(two_by_two, "r=a, c=x", "r=a, c=y", "r=b, c=x", "r=b, c=y")
    wrong = published.copy()
    wrong[[two_by_two.describe_cell(i) for i in range(9)].index("r=Total, c=x")] = 41.0
    with pytest.raises(ValueError, match=r"published total r=Total, c=Total does not add up \(off by -1\)"):
        audit_table(two_by_two, wrong)
    with pytest.raises(ValueError, match=r"a-priori range \[0, 25\] of r=Total, c=x excludes its published value 40"):
        audit_table(two_by_two, published, bounds=pd.DataFrame({"r": ["Total"], "c": ["x"], "upper": [25.0]}))
    with pytest.raises(ValueError, match="the bounds names the cell r=c, c=x, which the table has not got"):
        audit_table(two_by_two, published, bounds=pd.DataFrame({"r": ["c"], "c": ["x"], "lower": [1.0]}))
    frame = two_by_two.cells[["r", "c"]].assign(published=published)
    with pytest.raises(ValueError, match="the published table lacks r=b, c=y; give a suppressed cell"):
        audit_table(two_by_two, frame.iloc[:-5].pipe(lambda f: pd.concat([f, frame.iloc[-4:]])))
    swapped = two_by_two.values + np.array([1, -1, 0, -1, 1, 0, 0, 0, 0])  # every total unchanged
    with pytest.raises(ValueError, match="r=a, c=x is published as 11 but is 10: a suppressed table publishes"):
        audit_table(two_by_two, swapped)
    bad = cta.Table(two_by_two.cells.assign(original=np.where(np.arange(9) == 0, 11.0, two_by_two.values)),
                    two_by_two.additivity, two_by_two.total_cell, two_by_two.dimensions,
                    label_columns=two_by_two.label_columns)  # fmt: skip
    with pytest.raises(ValueError, match="true total r=a, c=Total does not add up"):
        audit_table(bad, published)
    with pytest.raises(ValueError, match="capacity: what the intruder knows of an adjustment, for intruder='cta'"):
        audit_table(two_by_two, published, capacity=0.2)
    with pytest.raises(ValueError, match="intruder must be one of"):
        audit_table(two_by_two, published, intruder="sdcTable")
    first = np.arange(9) == 0  # (a, x) = 10, known to lie in [9, 12], published 10: it cannot have moved by 3
    with pytest.raises(ValueError, match="the a-priori range of r=a, c=x leaves it no room to have moved by its"):
        audit_table(two_by_two, two_by_two.values, intruder="cta",
                    bounds=(np.where(first, 9, 0), np.where(first, 12, np.nan)))  # NaN: the default, no bound
