"""The adjustment problems: optimal values worked by hand, protection, additivity, statistics."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayessdc.cta import (
    AdjustmentSettings,
    InfeasibleError,
    Protection,
    SolverSettings,
    ThresholdRule,
    adjust_table,
    balanced_directions,
    problem,
    protection_from_rules,
    quality_report,
    table_from_long,
    table_from_microdata,
)
from bayessdc.cta.examples import COX_PROTECTION


def assert_safe_and_additive(result):
    table = result.table
    y = result.adjustment
    p_needed = np.where(y > 0, result.protection.upper, result.protection.lower)
    sensitive = result.sensitive
    assert np.all(np.abs(y[sensitive]) >= p_needed[sensitive] - 1e-6)
    residual = table.additivity @ result.adjusted
    assert np.abs(residual).max() <= 1e-9 * np.abs(table.values).max()
    assert np.all(result.adjusted >= -1e-9)
    checks = quality_report(result)["checks"]
    assert checks["protection_met"] and checks["totals_add_up"] and checks["non_negative"]


def test_minimum_total_adjustment_worked_by_hand(small_frame):
    # Moving (a, x) by 3 forces a second change of 3 in its row equation and in its column equation,
    # and each of those a fourth one: the optimum is 4 * 3 = 12.
    table = table_from_long(small_frame, "r,c", "v", protection="p")
    result = adjust_table(table, settings=AdjustmentSettings(capacity=1.0))
    assert result.objective_value == pytest.approx(12.0)
    assert np.abs(result.adjustment).sum() == pytest.approx(12.0)
    assert result.status == "optimal" and result.optimality_gap == pytest.approx(0.0, abs=1e-9)
    assert_safe_and_additive(result)


def test_relative_objective_moves_the_large_totals(small_frame):
    # Cost |y_i| / a_i: the cheapest compensation runs through row total a (30), column total x (40) and
    # the grand total (100): 3/10 + 3/30 + 3/40 + 3/100 = 0.505; any interior route costs more.
    table = table_from_long(small_frame, "r,c", "v", protection="p")
    result = adjust_table(table, settings=AdjustmentSettings(objective="relative", capacity=1.0))
    assert result.objective_value == pytest.approx(0.505)
    frame = result.to_frame().set_index(["r", "c"])
    assert frame.loc[("Total", "Total"), "adjustment"] == pytest.approx(frame.loc[("a", "x"), "adjustment"])
    assert frame.loc[("b", "y"), "adjustment"] == 0
    assert_safe_and_additive(result)


def test_weighted_objective_uses_costs(small_frame):
    table = table_from_long(small_frame, "r,c", "v", protection="p")
    cost = np.ones(table.n_cells)
    cost[~table.cells["interior"].to_numpy()] = 100.0  # make moving totals expensive
    result = adjust_table(table, cost=cost, settings=AdjustmentSettings(objective="weighted", capacity=1.0))
    assert np.all(result.adjustment[~table.cells["interior"].to_numpy()] == 0)
    assert result.objective_value == pytest.approx(12.0)


def test_cox_milp_protects_every_cell_and_keeps_totals(cox_table):
    result = adjust_table(cox_table, settings=AdjustmentSettings(integer=True))
    assert result.method == "milp"
    assert_safe_and_additive(result)
    assert result.sensitive.sum() == len(COX_PROTECTION)
    # Exact protection in Cox's MILP (q = p): every sensitive cell moves by exactly p.
    moves = np.abs(result.adjustment[result.sensitive])
    assert sorted(moves) == sorted(COX_PROTECTION.values())


def test_cox_table_2_and_3_shape(cox_table):
    """Cox's Table 3: min sum|y| (paper's directions), min L-bound, max L, min L; all cells stay at 1.00."""
    frame = cox_table.cells
    directions = np.zeros(cox_table.n_cells, dtype=int)
    paper = {(1, 9): 1, (2, 1): 1, (2, 9): -1, (3, 8): -1, (4, 2): 1, (4, 4): -1, (4, 9): -1}
    for (r, c), d in paper.items():
        directions[((frame["row"] == f"R{r}") & (frame["column"] == f"C{c}")).to_numpy()] = d
    l1 = quality_report(adjust_table(cox_table, directions=directions, settings=AdjustmentSettings(integer=True)))
    # With Cox's directions the sensitive cells are fully determined: his row "min sum|y|".
    assert l1["sensitive_cells"]["correlation"] == pytest.approx(0.98, abs=0.005)
    assert l1["sensitive_cells"]["slope"] == pytest.approx(0.82, abs=0.005)
    assert l1["sensitive_cells"]["variance_ratio"] == pytest.approx(0.70, abs=0.005)

    reports = {
        name: quality_report(
            adjust_table(cox_table, settings=AdjustmentSettings(objective=name, preserve_mean=True, integer=True))
        )
        for name in ("variance", "max_l", "compromise")
    }
    sens = {name: r["sensitive_cells"] for name, r in reports.items()}
    # Cox's rows: min L-bound 0.95 / 0.93 / 0.94; max L 0.97 / 1.20 / 1.52; min L 0.95 / 0.93 / 0.95.
    assert sens["compromise"]["slope"] == pytest.approx(0.93, abs=0.01)
    assert sens["compromise"]["variance_ratio"] == pytest.approx(0.95, abs=0.01)
    assert sens["variance"]["variance_ratio"] == pytest.approx(0.95, abs=0.015)
    assert sens["max_l"]["slope"] > 1.15 and sens["max_l"]["variance_ratio"] > 1.4
    assert abs(sens["compromise"]["L"]) <= min(abs(sens["max_l"]["L"]), abs(l1["sensitive_cells"]["L"]))
    for report in reports.values():
        assert report["sensitive_cells"]["net_adjustment"] == 0  # mean preserved exactly
        assert report["all_cells"]["correlation"] > 0.9995
        assert report["all_cells"]["slope"] == pytest.approx(1.0, abs=0.005)
        assert report["checks"]["protection_met"] and report["checks"]["totals_add_up"]


def test_zero_l_constraint_gives_unit_slope_and_variance_identity(cox_table):
    result = adjust_table(
        cox_table, settings=AdjustmentSettings(objective="l1", zero_l=True, preserve_mean=True, widen=3.0)
    )
    stats = quality_report(result)["sensitive_cells"]
    assert stats["slope"] == pytest.approx(1.0, abs=1e-9)
    assert stats["intercept"] == pytest.approx(0.0, abs=1e-6)
    # With L = 0 and mean(y) = 0: Var(a + y) = Var(a) + Var(y) and Corr = 1 / sqrt(variance ratio).
    y = result.adjustment[result.sensitive]
    a = cox_table.values[result.sensitive]
    assert stats["variance_ratio"] == pytest.approx(1 + y.var() / a.var(), rel=1e-9)
    assert stats["correlation"] == pytest.approx(1 / np.sqrt(stats["variance_ratio"]), rel=1e-9)
    assert_safe_and_additive(result)


def test_mean_subsets_are_preserved(cox_table):
    row_1 = (cox_table.cells["row"] == "R1").to_numpy() & cox_table.cells["interior"].to_numpy()
    result = adjust_table(cox_table, mean_subsets=[row_1], settings=AdjustmentSettings(integer=True))
    assert result.adjustment[row_1].sum() == 0
    assert_safe_and_additive(result)


def test_heuristic_directions_then_lp(cox_table):
    settings = AdjustmentSettings(method="heuristic", objective="compromise", preserve_mean=True, integer=False)
    result = adjust_table(cox_table, settings=settings)
    assert result.method == "heuristic+lp"
    assert abs(result.adjustment[result.sensitive].sum()) < 1e-6
    assert_safe_and_additive(result)
    milp = adjust_table(cox_table)
    heuristic_l1 = adjust_table(cox_table, settings=AdjustmentSettings(method="heuristic"))
    assert heuristic_l1.objective_value >= milp.objective_value - 1e-6


def test_count_table_threshold_rule_integer_and_non_negative():
    rng = np.random.default_rng(3)
    grid = pd.MultiIndex.from_product([list("abcd"), list("wxyz")], names=["r", "c"]).to_frame(index=False)
    grid["n"] = rng.integers(3, 30, len(grid))
    grid.loc[[1, 6, 11], "n"] = [1, 2, 1]
    table = table_from_long(grid, "r,c", "n", kind="count")
    protection = ThresholdRule(3).protection(table)
    result = adjust_table(table, protection, settings=AdjustmentSettings(capacity=0.5))
    assert result.settings["integer"]
    assert np.array_equal(result.adjustment, np.round(result.adjustment))
    assert np.all(table.additivity @ result.adjusted == 0)  # exact in integers
    small = np.flatnonzero(result.sensitive & table.cells["interior"].to_numpy())
    assert set(result.adjusted[small]) <= {0.0} | set(range(3, 100))
    assert_safe_and_additive(result)


def test_count_protection_larger_than_cell_is_an_error():
    counts = pd.DataFrame({"g": ["a", "b", "c"], "n": [2, 10, 12], "p": [3, 0, 0]})
    table = table_from_long(counts, "g", "n", kind="count", protection="p")
    with pytest.raises(ValueError, match=r"protection larger than the cell in a count table: g=a \(value 2"):
        adjust_table(table)


def test_infeasible_problem_names_cells_and_totals(small_frame):
    table = table_from_long(small_frame, "r,c", "v", protection="p")
    fixed = ~table.cells["interior"].to_numpy()
    with pytest.raises(InfeasibleError) as err:
        adjust_table(table, fixed_cells=fixed, settings=AdjustmentSettings(capacity=0.05))  # others may move 1..2 < 3
    message = str(err.value)
    assert "1 sensitive cell(s) cannot be protected" in message
    assert "r=a, c=x: needs a move of 3, at most 1 is possible" in message
    assert "[r=a, c=Total] other cells' capacity 1" in message
    assert "[r=Total, c=x] other cells' capacity 1.5" in message
    assert "raise the capacities" in message
    assert err.value.unprotectable[0]["cell"] == "r=a, c=x"


def test_infeasible_statistical_constraints_are_blamed(small_frame):
    frame = small_frame.assign(p=[3.0, 0.0, 0.0, 2.0])
    table = table_from_long(frame, "r,c", "v", protection="p")
    # Two sensitive cells with different values, moved by exactly p: L(y) = 0 needs y_1 = y_2 ... and the
    # mean constraint y_1 + y_2 = 0 then forces both to zero.
    with pytest.raises(InfeasibleError, match="not together with mean preservation") as err:
        adjust_table(table, settings=AdjustmentSettings(preserve_mean=True, zero_l=True, widen=1.0, capacity=1.0))
    assert "L(y) = 0" in str(err.value)
    assert err.value.unprotectable == []


def test_protection_object_and_bad_options(cox_table):
    with pytest.raises(ValueError, match="objective must be one of"):
        AdjustmentSettings(objective="median")
    with pytest.raises(ValueError, match="no sensitive cells"):
        adjust_table(cox_table, Protection.symmetric(np.zeros(cox_table.n_cells)))
    with pytest.raises(ValueError, match="widen must be >= 1"):
        AdjustmentSettings(widen=0.5)


def test_contradictory_heuristic_directions_are_repaired():
    """Capital gains by occupation x sex x race: the balancing heuristic sends a total and its two parts
    in directions that cannot add up; the LP is infeasible with them, and the repair flips cells until
    it is not."""
    path = Path(__file__).parents[2] / "notebooks" / "data" / "adult_capital_gain.csv.gz"
    adult = pd.read_csv(path).dropna(subset=["occupation"])
    gains = table_from_microdata(adult, "occupation,sex,race", "capital_gain", contributor="person")
    protection = protection_from_rules(gains, ["p%=15", "nk=2,85"])
    settings = AdjustmentSettings(widen=3.0, capacity=0.5)
    raw = balanced_directions(gains.additivity, protection.lower, protection.upper,
                              can_go_down=np.ones(gains.n_cells, dtype=bool))
    with pytest.raises(InfeasibleError):
        adjust_table(gains, protection, directions=raw, settings=settings)
    repaired = adjust_table(gains, protection, settings=dataclasses.replace(settings, method="heuristic"))
    assert repaired.method == "heuristic+lp"
    assert_safe_and_additive(repaired)
    milp = adjust_table(gains, protection, settings=settings)
    assert milp.objective_value <= repaired.objective_value + 1e-6


def test_linked_tables_adjusted_as_one_system(small_frame):
    from bayessdc.cta import link_tables

    other = pd.DataFrame({"r": list("aabb"), "s": list("mfmf"), "v": [12.0, 18.0, 50.0, 20.0],
                          "p": [0.0, 0.0, 6.0, 0.0]})
    t1 = table_from_long(small_frame, "r,c", "v", protection="p")
    t2 = table_from_long(other, "r,s", "v", protection="p")
    linked = link_tables([t1, t2])
    result = adjust_table(linked, settings=AdjustmentSettings(capacity=0.5))
    assert result.sensitive.sum() == 2
    assert_safe_and_additive(result)  # both tables' equations, with the shared row totals adjusted once
    frame = result.to_frame().set_index(["r", "c", "s"])
    row_a = frame.loc[("a", "Total", "Total"), "adjusted"]
    assert row_a == pytest.approx(frame.loc[("a", "x", "Total"), "adjusted"] + frame.loc[("a", "y", "Total"),
                                                                                           "adjusted"])
    assert row_a == pytest.approx(frame.loc[("a", "Total", "m"), "adjusted"] + frame.loc[("a", "Total", "f"),
                                                                                           "adjusted"])


@pytest.fixture
def one_way():
    """a + b + c = Total with a = 2 sensitive (protection 3, so it can only move up: 2 - 3 < 0), b = 20, c = 50."""
    frame = pd.DataFrame({"g": ["a", "b", "c"], "v": [2.0, 20.0, 50.0], "p": [3.0, 0.0, 0.0]})
    return table_from_long(frame, "g", "v", protection="p")


def test_the_settings_reach_the_solve_worked_by_hand(one_way):
    """min sum |y_i| / max(a_i, 1): a moves up by 3 and the equation a + b + c - Total = 0 takes 3 more, from the
    cheapest cells within their capacities: the total (1/72 a unit), then c (1/50), then b (1/20).

    Capacity 0.2 (the default): the total can take all 3 (its capacity 14.4): a 5, Total 75; cost 3/2 + 3/72.
    Capacity 0.025: the total takes its 1.8, c the other 1.2 (its capacity 1.25), b nothing: a 5, c 48.8, Total
    73.8; cost 3/2 + 1.8/72 + 1.2/50 = 1.549."""
    default = adjust_table(one_way, settings=AdjustmentSettings(objective="relative"))
    narrow = adjust_table(one_way, settings=AdjustmentSettings(objective="relative", capacity=0.025))
    cases = [(default, [5.0, 20.0, 50.0, 75.0], 1.5 + 3 / 72), (narrow, [5.0, 20.0, 48.8, 73.8], 1.549)]
    for result, values, cost in cases:
        adjusted = result.to_frame().set_index("g")["adjusted"]
        assert adjusted[["a", "b", "c", "Total"]].tolist() == pytest.approx(values)
        assert result.objective_value == pytest.approx(cost)
        assert_safe_and_additive(result)
    assert default.objective == narrow.objective == "relative"
    assert (default.settings["capacity"], narrow.settings["capacity"]) == (0.2, 0.025)


def test_the_solver_settings_reach_the_solver(cox_table, monkeypatch):
    calls = []

    def spy(model, solver, time_limit, mip_gap, verbose, solver_options=None):
        calls.append((solver, time_limit, mip_gap, verbose, solver_options))
        return solve(model, solver, time_limit, mip_gap, verbose, solver_options)

    solve = problem._solve
    monkeypatch.setattr(problem, "_solve", spy)
    given = SolverSettings(solver="highs", time_limit=60.0, mip_gap=0.01, solver_options={"random_seed": 1})
    result = adjust_table(cox_table, solver=given)
    assert calls and all(call == ("highs", 60.0, 0.01, False, {"random_seed": 1}) for call in calls)
    assert result.solver == "HIGHS" and (result.settings["time_limit"], result.settings["mip_gap"]) == (60.0, 0.01)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: AdjustmentSettings(objective="median"), "objective"),
        (lambda: AdjustmentSettings(method="exact"), "method"),
        (lambda: AdjustmentSettings(capacity=-0.1), "capacity"),
        (lambda: AdjustmentSettings(widen=0.5), "widen"),
        (lambda: SolverSettings(time_limit=-1.0), "time_limit"),
        (lambda: SolverSettings(mip_gap=-0.01), "mip_gap"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_field(make, field):
    with pytest.raises(ValueError, match=rf"^{field} must be"):
        make()


def test_settings_of_another_type_are_refused_before_anything_is_solved(cox_table, monkeypatch):
    def no_solve(*args, **kwargs):
        raise AssertionError("solved")

    monkeypatch.setattr(problem, "_solve", no_solve)
    with pytest.raises(TypeError, match=r"solver= takes SolverSettings\(...\), not str 'HIGHS'"):
        adjust_table(cox_table, solver="HIGHS")
    with pytest.raises(TypeError, match=r"settings= takes AdjustmentSettings\(...\), not dict"):
        adjust_table(cox_table, settings={"objective": "relative"})


def test_per_cell_capacities_are_held_as_a_tuple(one_way):
    """Frozen settings stay immutable and comparable with per-cell capacities; the solve takes them as given."""
    settings = AdjustmentSettings(objective="relative", capacity=np.array([0.0, 0.0, 5.0, 1.0]))
    assert settings.capacity == (0.0, 0.0, 5.0, 1.0)
    assert settings == AdjustmentSettings("relative", capacity=[0, 0, 5, 1])
    result = adjust_table(one_way, settings=settings)  # the total takes 1, c the other 2
    adjusted = result.to_frame().set_index("g")["adjusted"]
    assert adjusted[["a", "b", "c", "Total"]].tolist() == pytest.approx([5.0, 20.0, 48.0, 73.0])
    assert result.settings["capacity"] == "per cell"
