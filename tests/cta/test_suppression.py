"""Complementary cell suppression (:mod:`bayessdc.cta.suppression`): least cost, protection on the audit, bad input."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from bayessdc import cta
from bayessdc.cta.audit import audit_table
from bayessdc.cta.suppression import suppress_table


def _two_by_two(protection=(3.0, 0, 0, 0)):
    frame = pd.DataFrame({"r": ["a", "a", "b", "b"], "c": ["x", "y", "x", "y"], "v": [10.0, 20, 30, 40],
                          "p": list(protection)})  # fmt: skip
    return cta.table_from_long(frame, "r,c", "v", protection="p")


def test_two_by_two_worked_by_hand():
    """One sensitive cell of a 2 x 2 table with margins: each of its row and column must hold another suppressed
    cell, so the pattern is a rectangle; the cheapest by value is the four interior cells (20 + 30 + 40 = 90; a
    rectangle through the totals costs 30 + 40 + 100 = 170), and the audit gives the cell [0, 30]."""
    table = _two_by_two()
    protection = cta.protection_from_table(table)
    result = suppress_table(table, protection)
    assert result.status == "optimal"
    assert np.flatnonzero(result.suppressed).tolist() == np.flatnonzero(table.cells["interior"]).tolist()
    assert result.objective == 90.0
    audit = audit_table(table, result.published, protection)
    assert audit[["min", "max"]].to_numpy().tolist() == [[0.0, 30.0]]
    by_cells = suppress_table(table, protection, cost="cells")  # three secondary cells either way; less value wins
    assert by_cells.objective == 3.0 and np.array_equal(by_cells.suppressed, result.suppressed)


def _protected(table, suppressed, protection):
    """An independent check: the intruder's LPs over the suppressed cells (published ones fixed)."""
    x = table.values
    T = table.additivity.toarray()
    cells = np.flatnonzero(suppressed)
    rhs = -T[:, ~suppressed] @ x[~suppressed]
    for i in np.flatnonzero(protection.sensitive):
        for sign, need in ((1.0, x[i] + protection.upper[i]), (-1.0, x[i] - protection.lower[i])):
            if i not in cells:
                return False
            c = np.zeros(len(cells))
            c[np.flatnonzero(cells == i)[0]] = -sign
            res = linprog(c, A_eq=T[:, cells], b_eq=rhs, bounds=(0, None), method="highs")
            end = -sign * res.fun if sign > 0 else res.fun
            if (sign > 0 and end < need - 1e-9) or (sign < 0 and end > max(need, 0.0) + 1e-9):
                return False
    return True


@pytest.mark.parametrize("cost", ["values", "cells"])
def test_least_cost_against_every_pattern(cost):
    """A 2 x 3 table with margins and two sensitive cells: no pattern cheaper than the one found protects both
    (every pattern of the other ten cells enumerated, cheapest first, each checked by its own LPs)."""
    frame = pd.DataFrame({"r": list("aaabbb"), "c": list("xyzxyz"), "v": [4.0, 25, 13, 31, 8, 19],
                          "p": [2.0, 0, 0, 0, 2.5, 0]})  # fmt: skip
    table = cta.table_from_long(frame, "r,c", "v", protection="p")
    protection = cta.protection_from_table(table)
    result = suppress_table(table, protection, cost=cost)
    assert _protected(table, result.suppressed, protection)
    primary = protection.sensitive
    others = np.flatnonzero(~primary)
    plain = table.values if cost == "values" else np.ones(table.n_cells)
    patterns = []
    for chosen in itertools.product([False, True], repeat=len(others)):
        mask = primary.copy()
        mask[others] = chosen
        patterns.append((float(plain[mask & ~primary].sum()), mask))
    patterns.sort(key=lambda p: p[0])
    cheapest = next(c for c, mask in patterns if _protected(table, mask, protection))
    assert result.objective == pytest.approx(cheapest)


def test_cox_table_passes_its_own_audit():
    """Cox's 4 x 9 table: both costs give patterns every primary cell's audit protects; by cells, no more cells
    than by value, and by value no more value than by cells."""
    table = cta.table_from_long(cta.cox_4x9_frame(), "row,column", "value", protection="protection")
    protection = cta.protection_from_table(table)
    results = {cost: suppress_table(table, protection, cost=cost) for cost in ("values", "cells")}
    for result in results.values():
        assert result.status == "optimal"
        assert audit_table(table, result.published, protection)["protected"].all()
        assert result.suppressed[protection.sensitive].all()
    value = {cost: table.values[r.secondary].sum() for cost, r in results.items()}
    count = {cost: r.secondary.sum() for cost, r in results.items()}
    assert count["cells"] <= count["values"] and value["values"] <= value["cells"]


def test_hierarchical_table():
    """Province > municipality by sector: a sensitive municipality cell is protected across both levels."""
    rng = np.random.default_rng(3)
    rows = [(p, f"{p}{m}", s) for p in "PQ" for m in "12" for s in "abc"]
    frame = pd.DataFrame(rows, columns=["province", "municipality", "sector"])
    frame["v"] = rng.integers(5, 50, len(frame)).astype(float)
    frame["p"] = 0.0
    frame.loc[[0, 7], "p"] = [2.0, 3.0]
    table = cta.table_from_long(frame, "province>municipality,sector", "v", protection="p")
    protection = cta.protection_from_table(table)
    result = suppress_table(table, protection)
    assert result.status == "optimal"
    assert audit_table(table, result.published, protection)["protected"].all()
    assert _protected(table, result.suppressed, protection)


def test_unprotectable_cell_is_named():
    """Every other cell known exactly a priori: suppressing them tells the intruder nothing he lacks, the totals
    pin the sensitive cell, and no pattern protects it: refused, naming the cell."""
    table = _two_by_two(protection=(3.0, 0, 0, 0))
    first = np.arange(table.n_cells) == 0
    lower = np.where(first, 0.0, table.values)
    upper = np.where(first, np.inf, table.values)
    with pytest.raises(cta.InfeasibleError, match="r=a, c=x"):
        suppress_table(table, cta.protection_from_table(table), bounds=(lower, upper))


def test_bad_input_named_before_solving():
    table = _two_by_two()
    protection = cta.protection_from_table(table)
    with pytest.raises(ValueError, match="r=a, c=y"):
        suppress_table(table, protection, cost=np.r_[1.0, -1.0, np.ones(table.n_cells - 2)])
    with pytest.raises(ValueError, match="r=a, c=x excludes its published value 10"):
        suppress_table(table, protection, bounds=(None, np.full(table.n_cells, 5.0)))
    with pytest.raises(ValueError, match="cost must be one of"):
        suppress_table(table, protection, cost="value")


def test_given_pattern_is_published_as_given():
    table = _two_by_two()
    protection = cta.protection_from_table(table)
    given = np.zeros(table.n_cells, dtype=bool)
    given[0] = True
    result = suppress_table(table, protection, given=given)
    assert result.status == "given" and result.suppressed.tolist() == given.tolist()
    assert not audit_table(table, result.published, protection)["protected"].any()  # row and column totals pin it


@pytest.mark.parametrize("kind", ["count", "magnitude"])
def test_bundled_household_tables_pass_their_own_audit(kind):
    """The bundled households' persons by area and education: a count table under the threshold rule, and the sum
    of ages with households as contributors under the p% rule; each pattern passes the intruder's audit."""
    import bayessdc as bsd

    persons, _ = bsd.examples.households(n_households=200, n_areas=20, seed=1)
    if kind == "count":
        table = cta.table_from_microdata(persons, "area,education", None, kind="count")
        protection = cta.protection_from_rules(table, ["threshold=3"])
    else:
        table = cta.table_from_microdata(persons, "area,education", "age", contributor="household")
        protection = cta.protection_from_rules(table, ["p%=15"])
    assert protection.sensitive.sum() >= 2
    result = suppress_table(table, protection)
    assert result.status == "optimal"
    audit = audit_table(table, result.published, protection)
    assert audit["protected"].all() and len(audit) == protection.sensitive.sum()


def test_linked_tables_suppressed_as_one_system():
    """Two tables sharing their row totals (r by c, r by s): a sensitive cell of each, the shared totals published
    once; the pattern protects both under the audit of the linked system, and by the independent LPs."""
    first = pd.DataFrame({"r": list("aabb"), "c": list("xyxy"), "v": [10.0, 20, 30, 40], "p": [3.0, 0, 0, 0]})
    second = pd.DataFrame({"r": list("aabb"), "s": list("mfmf"), "v": [12.0, 18, 50, 20], "p": [0.0, 0, 6, 0]})
    linked = cta.link_tables([cta.table_from_long(first, "r,c", "v", protection="p"),
                              cta.table_from_long(second, "r,s", "v", protection="p")])  # fmt: skip
    protection = cta.protection_from_table(linked)
    assert protection.sensitive.sum() == 2
    result = suppress_table(linked, protection)
    assert result.status == "optimal"
    assert audit_table(linked, result.published, protection)["protected"].all()
    assert _protected(linked, result.suppressed, protection)
    first_only = np.arange(linked.n_cells) == np.flatnonzero(protection.sensitive)[0]
    alone = suppress_table(linked, cta.Protection(np.where(first_only, protection.lower, 0.0),
                                                  np.where(first_only, protection.upper, 0.0)))  # fmt: skip
    assert alone.objective <= result.objective  # protecting one cell costs no more than protecting both
