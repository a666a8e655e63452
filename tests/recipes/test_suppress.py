"""``bsd.suppress``: complementary cell suppression of Cox's 4 x 9 table passes its own audit and the policy; a
pattern that leaves a primary cell recomputable is refused naming it; bad input is refused before solving."""

import json
import re

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc import cta
from bayessdc.recipes.suppress import recipe

TOTAL = "Total"


@pytest.fixture(scope="module")
def cox():
    frame = bsd.examples.cox_table()
    return frame, bsd.suppress(frame, "row,column", "value", protection="protection")


def small(**columns) -> pd.DataFrame:
    """A 2 x 2 table with its margins: a/x = 10 (protection 3), a/y 20, b/x 30, b/y 40; extra columns by row."""
    frame = pd.DataFrame({
        "r": ["a", "a", "b", "b", "a", "b", TOTAL, TOTAL, TOTAL],
        "c": ["x", "y", "x", "y", TOTAL, TOTAL, "x", "y", TOTAL],
        "v": [10.0, 20, 30, 40, 30, 70, 40, 60, 100],
        "p": [3.0, 0, 0, 0, 0, 0, 0, 0, 0],
    })  # fmt: skip
    return frame.assign(**columns)


@pytest.fixture
def no_solving(monkeypatch):
    """The MILP must not be reached: bad input is refused before it."""

    def fail(*args, **kwargs):
        raise AssertionError("suppress_table was called")

    monkeypatch.setattr(recipe, "suppress_table", fail)


def test_cox_passes_the_policy_and_its_own_audit(cox):
    frame, result = cox
    assert result.status == "optimal" and result.policy.passed and result.protected
    cells = result.table.merge(frame, on=["row", "column"], validate="one_to_one")
    assert (cells["original"] == cells["value"]).all()
    primary = cells["protection"] > 0
    assert (cells["primary"] == primary).all() and primary.sum() == 7
    assert cells.loc[primary, "suppressed"].all()  # every primary cell suppressed
    assert (cells["suppressed"] == (cells["primary"] | cells["secondary"])).all()
    assert cells.loc[~cells["suppressed"], "published"].equals(cells.loc[~cells["suppressed"], "original"])
    # every primary's audited interval covers its protection range (capped below at 0, the a-priori minimum)
    audited = cells[primary]
    assert (audited["audited_min"] <= np.maximum(audited["value"] - audited["protection_lower"], 0) + 1e-6).all()
    assert (audited["audited_max"] >= audited["value"] + audited["protection_upper"] - 1e-6).all()
    # the same audit, run again on the published values alone
    table = cta.table_from_long(frame, "row,column", "value", protection="protection")
    again = cta.audit_table(table, result.released_table["value"].to_numpy(dtype=float, na_value=np.nan))
    assert again["protected"].all() and len(again) == 7
    loss = result.quality["all_cells"]
    assert (loss["suppressed"], loss["primary"], loss["secondary"]) == (12, 7, 5)
    assert result.quality["solver"]["objective"] == pytest.approx(loss["value_secondary"], rel=1e-3)
    interior = result.quality["interior_cells"]
    assert interior["share_suppressed"] == pytest.approx(interior["value_suppressed"] / 36606022)
    assert "every primary protected: True" in repr(result) and "PASSED" in result._repr_html_()


def test_the_release_holds_no_suppressed_value_and_private_the_rest(cox, tmp_path):
    _, result = cox
    out = result.save(tmp_path / "out")
    assert sorted(p.name for p in (out / "release").iterdir()) == ["model.json", "suppressed.csv"]
    assert sorted(p.name for p in (out / "private").iterdir()) == [
        "audit.csv", "cells.csv", "policy.json", "quality.json", "report.html", "run.json"]  # fmt: skip
    released = pd.read_csv(out / "release" / "suppressed.csv", keep_default_na=False, dtype=str)
    assert list(released.columns) == ["row", "column", "value"]
    cells = pd.read_csv(out / "private" / "cells.csv")
    assert (released["value"].eq("") == cells["suppressed"]).all()  # a suppressed cell is empty
    shown = cells.loc[~cells["suppressed"], "original"]
    assert (released.loc[~cells["suppressed"], "value"].astype(float) == shown).all()
    # no value of a suppressed cell (that is not also some published cell's) anywhere in release/
    secret = set(cells.loc[cells["suppressed"], "original"]) - set(shown)
    assert secret
    for path in (out / "release").iterdir():
        numbers = {float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", path.read_text())}
        assert not numbers & secret, path.name
    model = json.loads((out / "release" / "model.json").read_text())
    assert model["synthesizer"] == "suppress" and model["sensitive_cells"].endswith("(not published)")
    assert "objective" not in json.dumps(model)  # the pattern's cost is the secondary cells' value
    audit = pd.read_csv(out / "private" / "audit.csv")
    assert len(audit) == 7 and audit["protected"].all()
    assert set(cells.columns) >= {"original", "published", "primary", "secondary", "protection_lower",
                                  "protection_upper", "audited_min", "audited_max", "protected"}  # fmt: skip
    policy = json.loads((out / "private" / "policy.json").read_text())
    assert policy["passed"] and any(j["criterion"].startswith("audited_cells") for j in policy["judgements"])
    quality = json.loads((out / "private" / "quality.json").read_text())
    assert quality["checks"]["protected"] and quality["solver"]["status"] == "optimal"


def test_the_same_inputs_give_the_same_release_bytes(cox, tmp_path):
    frame, result = cox
    again = bsd.suppress(frame, "row,column", "value", protection="protection")
    first, second = result.save(tmp_path / "a"), again.save(tmp_path / "b")
    for name in ("suppressed.csv", "model.json"):
        assert (first / "release" / name).read_bytes() == (second / "release" / name).read_bytes()


def test_a_pattern_leaving_the_primary_pinned_by_its_totals_is_refused_naming_it(tmp_path):
    frame = small(s=[True, False, False, False, False, False, False, False, False])
    result = bsd.suppress(frame, "r,c", "v", protection="p", pattern="s")
    assert result.status == "given" and not result.protected and not result.policy.passed
    assert result.audit.set_index("name").loc["r=a, c=x", ["min", "max"]].tolist() == [10.0, 10.0]
    with pytest.raises(bsd.DisclosureRefused, match=r"audited_cells \[r=a, c=x\]"):
        result.save(tmp_path / "out")
    assert not (tmp_path / "out" / "release").exists()
    assert (tmp_path / "out" / "private" / "audit.csv").exists()
    # under a policy that does not judge the audit, the audit still refuses it
    lenient = tmp_path / "lenient.toml"
    lenient.write_text('[policy]\nname = "lenient"\n\n[[criterion]]\nmeasure = "copied_records"\nat_most = 1\n'
                       'applies_to = ["cart"]\n')  # fmt: skip
    passed = bsd.suppress(frame, "r,c", "v", protection="p", pattern="s", policy=lenient)
    with pytest.raises(bsd.SuppressionNotSafeError, match=r"r=a, c=x"):
        passed.save(tmp_path / "lenient")
    assert not (tmp_path / "lenient" / "release").exists()
    # the rectangle of the four interior cells protects it: released as given
    rectangle = small(s=["yes", "yes", "yes", "yes", "no", "no", "no", "no", "no"])
    given = bsd.suppress(rectangle, "r,c", "v", protection="p", pattern="s")
    assert given.policy.passed and given.save(tmp_path / "rectangle").joinpath("release", "suppressed.csv").exists()


def test_costs_per_cell_choose_the_pattern(tmp_path):
    """Suppressing b/x and b/y cheap, the totals dear: the cheapest complement of a/x is its rectangle."""
    frame = small(k=[1.0, 1, 1, 1, 100, 100, 100, 100, 100])
    result = bsd.suppress(frame, "r,c", "v", protection="p", cost="k")
    costs = result.table.merge(frame, on=["r", "c"], validate="one_to_one")
    assert (costs["cost"] == costs["k"]).all()
    assert result.table.loc[result.table["suppressed"], ["r", "c"]].to_numpy().tolist() == [
        ["a", "x"], ["a", "y"], ["b", "x"], ["b", "y"]]  # fmt: skip
    assert result.quality["solver"]["objective"] == pytest.approx(3.0)
    assert json.loads(json.dumps(result.description))["cost"] == "per cell (not published)"


@pytest.mark.parametrize(
    ("columns", "options", "error", "message"),
    [
        ({"v": [10.0, 20, 30, 40, 31, 70, 40, 60, 100]}, {}, ValueError, r"r=a, c=Total: given 31, its cells add up"),
        ({"k": [1.0, 1, 1, -2, 1, 1, 1, 1, 1]}, {"cost": "k"}, bsd.InputError, r"r=b, c=y has a negative cost"),
        ({"k": [1.0, None, 1, 1, 1, 1, 1, 1, 1]}, {"cost": "k"}, bsd.InputError, r"r=a, c=y has no cost"),
        (
            {"lo": [None, None, 31, None, None, None, None, None, None]},
            {"lower": "lo"},
            bsd.InputError,
            r"a-priori range \[31, inf\] of r=b, c=x excludes its value \(30\)",
        ),
        (
            {"hi": [None, 5, None, None, None, None, None, None, None]},
            {"upper": "hi"},
            bsd.InputError,
            r"of r=a, c=y excludes its value \(20\)",
        ),
        ({"s": [1, 0, 0, 0, 0, 0, 0, 0, "maybe"]}, {"pattern": "s"}, bsd.InputError, r"'maybe' at r=Total, c=Total"),
        ({}, {"cost": "absent"}, bsd.InputError, r"column\(s\) not in the data: absent"),
    ],
)
def test_bad_input_is_refused_before_solving_naming_the_cell(no_solving, columns, options, error, message):
    with pytest.raises(error, match=message):
        bsd.suppress(small(**columns), "r,c", "v", protection="p", **options)


def test_options_that_cannot_apply_are_refused_before_anything_is_read(no_solving, tmp_path):
    with pytest.raises(TypeError, match=r"solver= takes SolverSettings\(...\), not str 'HIGHS'"):
        bsd.suppress(tmp_path / "absent.csv", "r,c", "v", protection="p", solver="HIGHS")
    with pytest.raises(bsd.InputError, match="protection=COLUMN or rule=RULE"):
        bsd.suppress(small(), "r,c", "v")
    with pytest.raises(bsd.InputError, match="not both"):
        bsd.suppress(small(), "r,c", "v", protection="p", rule="p%=15")
    micro = pd.DataFrame({"r": ["a", "a", "b"], "who": [1, 2, 3], "v": [5.0, 6.0, 7.0], "k": [1.0, 1.0, 1.0]})
    with pytest.raises(bsd.InputError, match="cost=: a column per cell of a long-form table"):
        bsd.suppress(micro, "r", "v", contributor="who", rule="p%=15", cost="k")


def test_no_pattern_protects_a_primary_the_intruder_knows_all_around():
    """Every other cell's a-priori range is its value: with all of them suppressed the totals still pin a/x."""
    frame = small()
    frame["bound"] = np.where((frame["r"] == "a") & (frame["c"] == "x"), np.nan, frame["v"])
    with pytest.raises(cta.InfeasibleError, match=r"no suppression pattern protects r=a, c=x"):
        bsd.suppress(frame, "r,c", "v", protection="p", lower="bound", upper="bound")
