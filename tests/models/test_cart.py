import numpy as np
import pandas as pd
import pytest

from bayessdc.models.cart import (
    CartDataError,
    CartSynthesisError,
    CartSynthesizer,
    acs_example_rules,
    simulate_acs_persons,
)
from bayessdc.models.cart.rules import (
    ColumnBound,
    ColumnSchema,
    Condition,
    IfThen,
    RuleError,
    load_rules,
    parse_rules,
    rule_violations,
)

ACS_SYNTHESIZE = ["enrolled", "grade", "education", "marital"]
ACS_KEEP = ["age", "sex", "relationship"]


def _encoded(frame, schema):
    """Encode a released frame with the synthesizer's schema (for checking rules on synthetic data)."""
    out = {}
    for column, spec in schema.items():
        if spec.categorical:
            out[column] = ColumnSchema(column, True, spec.levels).codes_of(frame[column].tolist(), "check")
        else:
            out[column] = frame[column].to_numpy(dtype=float)
    return out


@pytest.fixture(scope="module")
def acs():
    data = simulate_acs_persons(1500, seed=3)
    # coarse leaves (50 records) mix ages and enrolment states, so the rules have work to do
    synthesizer = CartSynthesizer(ACS_SYNTHESIZE, ACS_KEEP, acs_example_rules(), min_samples_leaf=50)
    synthesizer.fit(data, seed=11)
    return data, synthesizer, synthesizer.synthesize_datasets(30)


def test_one_leaf_bootstrap_matches_the_dirichlet_multinomial():
    # No predictors: the tree is one leaf holding a x6, b x3, c x1. Per dataset p ~ Dirichlet(6, 3, 1) and each
    # of the 10 records draws from p, so the count of "a" is Dirichlet-multinomial(10; 6, 3, 1):
    # mean 6 and variance n p (1 - p) (n + A) / (1 + A) = 10 * .6 * .4 * 20 / 11 = 4.36 (a plain multinomial
    # resample, without the Bayesian bootstrap, would give 2.4).
    data = pd.DataFrame({"y": list("aaaaaabbbc")})
    synthesizer = CartSynthesizer(["y"]).fit(data, seed=1)
    synthetic = synthesizer.synthesize_datasets(1000)
    assert set(synthetic["y"].astype(str)) <= {"a", "b", "c"}
    counts = synthetic.groupby("synthetic")["y"].value_counts().unstack(fill_value=0)
    assert counts.to_numpy().sum(axis=1).tolist() == [10] * 1000
    freq = counts.to_numpy().sum(axis=0) / counts.to_numpy().sum()
    assert np.allclose(freq, [0.6, 0.3, 0.1], atol=0.015)
    assert counts["a"].var() == pytest.approx(10 * 0.6 * 0.4 * 20 / 11, rel=0.12)
    assert counts["c"].var() == pytest.approx(10 * 0.1 * 0.9 * 20 / 11, rel=0.15)


def test_draws_come_only_from_the_values_seen_in_the_leaf():
    rng = np.random.default_rng(0)
    x = np.repeat([0, 1], 100)
    y = np.where(x == 0, rng.choice(["a", "b"], 200), rng.choice(["c", "d", "e"], 200))
    data = pd.DataFrame({"x": x, "y": y})
    synthesizer = CartSynthesizer(["y"], ["x"]).fit(data, seed=0)
    synthetic = synthesizer.synthesize_datasets(20)
    for group, allowed in ((0, {"a", "b"}), (1, {"c", "d", "e"})):
        drawn = set(synthetic.loc[synthetic["x"] == group, "y"].astype(str))
        assert drawn == allowed


def test_rules_hold_in_every_synthetic_dataset(acs):
    data, synthesizer, synthetic = acs
    schema = synthesizer._schema
    for _, frame in synthetic.groupby("synthetic"):
        assert rule_violations(synthesizer.rules, _encoded(frame, schema), schema) == {}
    assert set(synthesizer.rule_violation_counts(synthetic).values()) == {0}
    # the rules bind: without them, the trees alone do break some of them
    free = CartSynthesizer(ACS_SYNTHESIZE, ACS_KEEP, min_samples_leaf=50).fit(data, seed=11).synthesize_datasets(30)
    broken = sum(
        len(rule_violations(synthesizer.rules, _encoded(frame, schema), schema))
        for _, frame in free.groupby("synthetic")
    )
    assert broken > 0
    assert sum(synthesizer.rule_violation_counts(free).values()) == sum(
        len(rows) for rows in rule_violations(synthesizer.rules, _encoded(free, schema), schema).values()
    )


def test_kept_columns_pass_through_and_same_seed_gives_same_data(acs):
    data, synthesizer, synthetic = acs
    assert list(synthetic.columns) == ["synthetic", *data.columns]
    assert sorted(synthetic["synthetic"].unique()) == list(range(1, 31))
    for _, frame in synthetic.groupby("synthetic"):
        for column in ACS_KEEP:
            assert frame[column].astype(object).tolist() == data[column].tolist()
    again = CartSynthesizer(ACS_SYNTHESIZE, ACS_KEEP, acs_example_rules(), min_samples_leaf=50)
    again = again.fit(data, seed=11).synthesize_datasets(3)
    pd.testing.assert_frame_equal(again, synthetic[synthetic["synthetic"] <= 3].reset_index(drop=True))
    other = synthesizer.synthesize_datasets(3, seed=12)
    assert not other["education"].equals(again["education"])
    first = synthetic.loc[synthetic["synthetic"] == 1, "education"].astype(object).to_numpy()
    agree = (first == data["education"].to_numpy()).mean()
    assert agree < 0.9  # synthesized, not copied


def test_a_leaf_without_admissible_values_falls_back_to_an_ancestor():
    # y = "a" only for 4 records with x = 0, all with z = "p"; z = "p" exactly when x = 0. Pruning removes
    # y's weak split on x, so synthetic "a" lands on x = 1 records, whose z leaf holds only "q": the rule
    # sends those draws to the root, which holds "p".
    x = np.repeat([0, 1], 100)
    y = np.where(np.arange(200) < 4, "a", "b")
    z = np.where(x == 0, "p", "q")
    data = pd.DataFrame({"x": x, "y": y, "z": z})
    rule = {"name": "a implies p", "if": {"y": "a"}, "then": {"z": "p"}}
    synthesizer = CartSynthesizer(["y", "z"], ["x"], [rule], ccp_alpha=0.01).fit(data, seed=0)
    synthetic = synthesizer.synthesize_datasets(50)
    assert synthesizer.tree_summary()["y"]["leaves"] == 1 and synthesizer.tree_summary()["z"]["leaves"] == 2
    odd = synthetic[(synthetic["x"] == 1) & (synthetic["y"] == "a")]
    assert len(odd) > 10
    assert (odd["z"] == "p").all()
    assert (synthetic.loc[synthetic["y"] == "a", "z"] == "p").all()
    fallbacks = synthesizer.fallbacks["z"]
    assert fallbacks["ancestor"] == fallbacks["whole_column"] == len(odd)
    assert fallbacks["draws"] == 50 * 200


def test_rules_that_leave_no_admissible_value_are_reported():
    x = np.repeat([0, 1], 100)
    data = pd.DataFrame({"x": x, "y": np.where(np.arange(200) < 4, "a", "b"), "z": np.where(x == 0, "p", "q")})
    rules = [
        {"name": "a implies p", "if": {"y": "a"}, "then": {"z": "p"}},
        {"name": "x = 1 implies q", "if": {"x": 1}, "then": {"z": "q"}},
    ]
    synthesizer = CartSynthesizer(["y", "z"], ["x"], rules, ccp_alpha=0.01).fit(data, seed=0)
    with pytest.raises(CartSynthesisError, match="no observed value of 'z' satisfies the rules for a record with"):
        synthesizer.synthesize_datasets(20)


def test_numeric_column_uses_a_regression_tree_and_column_bounds():
    rng = np.random.default_rng(2)
    age = rng.integers(5, 60, 400)
    years = np.minimum(age - 3, rng.integers(0, 20, 400))
    data = pd.DataFrame({"age": age, "years": years})
    rules = [{"name": "schooling bounded by age", "then": {"years": {"max": {"column": "age", "plus": -3}}}}]
    synthesizer = CartSynthesizer(["years"], ["age"], rules).fit(data, seed=0)
    assert synthesizer.describe()["trees"]["years"] == "regression"
    synthetic = synthesizer.synthesize_datasets(10)
    assert synthetic["years"].dtype == data["years"].dtype
    assert set(synthetic["years"]) <= set(years)
    assert (synthetic["years"] <= synthetic["age"] - 3).all()


def test_bad_input_is_refused_before_fitting():
    data = simulate_acs_persons(200, seed=0)
    with pytest.raises(CartDataError, match="unknown column.*to synthesize: income"):
        CartSynthesizer(["income"], ["age"]).fit(data)
    with pytest.raises(CartDataError, match="unknown column.*to keep: AGE"):
        CartSynthesizer(["grade"], ["AGE"]).fit(data)
    with pytest.raises(CartDataError, match="both synthesized and kept: grade"):
        CartSynthesizer(["grade"], ["age", "grade"]).fit(data)
    with pytest.raises(RuleError, match="names column 'school'"):
        CartSynthesizer(["grade"], ["age"], [{"name": "r", "then": {"school": "yes"}}]).fit(data)
    with pytest.raises(RuleError, match="'kindergarten' is not a value of column 'grade'"):
        rule = {"name": "r", "if": {"grade": "kindergarten"}, "then": {"age": {"max": 6}}}
        CartSynthesizer(["grade"], ["age"], [rule]).fit(data)
    bad = data.copy()
    bad.loc[[4, 9], "grade"] = "graduate"
    bad.loc[[4, 9], "enrolled"] = "no"
    message = r"'grade attended only by those enrolled' is violated .* data rows 5, 10 \(2 rows\)"
    with pytest.raises(CartDataError, match=message):
        CartSynthesizer(ACS_SYNTHESIZE, ACS_KEEP, acs_example_rules()).fit(bad)
    missing = data.copy()
    missing.loc[7, "sex"] = None  # accepted: a level of its own (tests/models/test_cart_missing.py)
    assert CartSynthesizer(["grade"], ["sex"]).fit(missing).synthesize_datasets(1)["sex"].isna().sum() == 1
    with pytest.raises(CartDataError, match="missing-value code -8 is not a value of column 'age'"):
        CartSynthesizer(["grade"], ["age"], missing_codes={"age": [-8]}).fit(data)
    with pytest.raises(RuntimeError, match="fit the synthesizer first"):
        CartSynthesizer(["grade"], ["age"]).synthesize_datasets(2)


def test_rule_files_parse_json_and_yaml(tmp_path):
    (tmp_path / "r.json").write_text(
        '{"rules": [{"name": "g", "if": {"enrolled": "no"}, "then": {"grade": "not attending"}}]}'
    )
    (tmp_path / "r.yaml").write_text(
        "rules:\n  - name: g\n    if: {enrolled: 'no'}\n    then: {grade: 'not attending'}\n"
    )
    assert load_rules(tmp_path / "r.json") == load_rules(tmp_path / "r.yaml")
    rule = load_rules(tmp_path / "r.json")[0]
    assert rule == IfThen("g", (Condition("grade", ("not attending",)),), (Condition("enrolled", ("no",)),))
    assert parse_rules([rule.to_dict()]) == [rule]
    bound = parse_rules([{"name": "b", "then": {"x": {"min": 0, "max": {"column": "y", "plus": 1}}}}])[0]
    assert bound.then[0].maximum == ColumnBound("y", 1.0)
    with pytest.raises(RuleError, match="neither 'then' nor 'allowed'"):
        parse_rules([{"name": "x", "if": {"a": 1}}])
    with pytest.raises(RuleError, match="cannot read rules file"):
        (tmp_path / "bad.json").write_text("{not json")
        load_rules(tmp_path / "bad.json")


def test_trees_and_datasets_are_the_same_however_they_fan_out():
    """The trees are fitted on the confidential data alone and dataset k draws from its own stream, so running the
    parts in any order (here: last first, as a cluster may finish them) gives the same trees and release."""
    from bayessdc.models.cart.bootstrap import _draw_chunk, _draw_unrestricted

    def backwards(task, parts):
        return [task(name, part) for name, part in parts[::-1]][::-1]

    data = simulate_acs_persons(400, seed=5)
    data.loc[::7, "marital"] = None
    data["income"] = np.where(np.arange(400) % 5 == 0, 0.0, np.round(np.linspace(1, 90, 400) ** 2, 2))
    settings = {"synthesize": [*ACS_SYNTHESIZE, "income"], "keep": ACS_KEEP, "spikes": {"income": [0.0]}}
    one = CartSynthesizer(**settings, smoothing="density").fit(data, seed=2)
    other = CartSynthesizer(**settings, smoothing="density").fit(data, seed=2, fan_out=backwards)
    pd.testing.assert_frame_equal(one.synthesize_datasets(3), other.synthesize_datasets(3, fan_out=backwards))
    assert one.fallbacks == other.fallbacks
    # Without rules, the binary search over all pairs picks what the expansion per record picks.
    rng = np.random.default_rng(0)
    weights = rng.standard_gamma(rng.integers(1, 4, 60).astype(float))
    start = np.sort(rng.integers(0, 50, 200))
    end = np.minimum(start + rng.integers(1, 11, 200), 60)
    uniforms = rng.random(200)
    fitted = type("Fitted", (), {"rules": [], "pair_code": np.arange(60)})()
    expanded = _draw_chunk(fitted, start, end - start, np.arange(200), weights, {}, {}, uniforms)
    np.testing.assert_array_equal(_draw_unrestricted(start, end, weights, uniforms), expanded)
