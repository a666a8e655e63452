"""A record's own observation left out of its own draw (``donors="others"``), and the cross-fitted release whose
records were drawn by trees that never saw them: exact invariants and the draw's distribution worked by hand."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.models.cart import CartSynthesizer, acs_example_rules, simulate_acs_persons
from bayessdc.models.cart.rules import parse_rules
from bayessdc.models.cart.unlearned import cross_fitted_datasets


def _own_share(data, synthetic, column):
    """Per dataset, the share of rows whose ``column`` is their own record's value (rows in data order)."""
    return [float(np.mean(frame[column].to_numpy() == data[column].to_numpy()))
            for _, frame in synthetic.groupby("synthetic")]  # fmt: skip


def test_with_donors_others_no_record_is_given_its_own_value():
    """Every record unique in its value, one leaf per record (min_leaf 1, a kept column that tells them apart):
    the paper's bootstrap gives each row its own record's value, donors='others' never does."""
    data = pd.DataFrame({"x": np.arange(60.0), "y": [f"v{i}" for i in range(60)]})
    fitted = CartSynthesizer(["y"], ["x"], min_samples_leaf=1).fit(data, seed=0)
    assert _own_share(data, fitted.synthesize_datasets(3), "y") == [1.0, 1.0, 1.0]
    others = fitted.drawing("others")
    assert others._trees is fitted._trees  # the same trees, no refit
    drawn = others.synthesize_datasets(3)
    assert _own_share(data, drawn, "y") == [0.0, 0.0, 0.0]
    assert set(drawn["y"].astype(str)) <= set(data["y"])  # still observed values only
    # a leaf of one record has no other donor: each falls back to its parent node (counted)
    assert others.fallbacks["y"]["ancestor"] == 3 * 60


def test_donors_others_draws_from_the_other_observations_bootstrap():
    """One leaf (no predictor) of values x, y, y: leaving a record's own observation out, record 0 (x) always draws
    y; records 1 and 2 (y) draw x with probability E[Dirichlet(1, 1) weight] = 1/2."""
    data = pd.DataFrame({"v": ["x", "y", "y"]})
    fitted = CartSynthesizer(["v"], [], min_samples_leaf=3).fit(data, seed=0)
    drawn = fitted.drawing("others").synthesize_datasets(1500, seed=1)
    row = np.tile(np.arange(3), 1500)
    values = drawn["v"].astype(str).to_numpy()
    assert (values[row == 0] == "y").all()
    share = np.mean(values[row > 0] == "x")
    assert abs(share - 0.5) < 4 * np.sqrt(0.25 / 3000)  # 3,000 draws, within 4 standard errors of 1/2
    # with every observation a donor, record 0 keeps its own x with probability 1/3
    paper = fitted.synthesize_datasets(1500, seed=1)["v"].astype(str).to_numpy()
    assert abs(np.mean(paper[row == 0] == "x") - 1 / 3) < 4 * np.sqrt(2 / 9 / 1500)


def test_a_record_no_other_record_can_donate_to_keeps_its_own_value():
    data = pd.DataFrame({"v": ["only"]})
    fitted = CartSynthesizer(["v"], [], min_samples_leaf=1).fit(data, seed=0).drawing("others")
    assert fitted.synthesize_datasets(2)["v"].astype(str).tolist() == ["only", "only"]
    assert fitted.fallbacks["v"]["own"] == 2


def test_the_cross_fitted_release_never_draws_a_records_own_value():
    """The same records, each drawn by trees fitted without its fold: with one leaf per record and every value
    unique, no row has its own record's value (the release has all of them), in data order, every column kept."""
    data = pd.DataFrame({"x": np.arange(80.0), "y": [f"v{i}" for i in range(80)]})
    fitted = CartSynthesizer(["y"], ["x"], min_samples_leaf=1).fit(data, seed=0)
    unlearned = cross_fitted_datasets(fitted, data, m=2, seed=3, folds=8)
    assert list(unlearned.columns) == ["synthetic", "x", "y"] and len(unlearned) == 2 * len(data)
    for _, frame in unlearned.groupby("synthetic"):
        assert np.array_equal(frame["x"].to_numpy(), data["x"].to_numpy())
    assert _own_share(data, unlearned, "y") == [0.0, 0.0]
    assert fitted.synthesize_datasets(1)["y"].astype(str).tolist() == data["y"].tolist()  # the fit untouched
    again = cross_fitted_datasets(fitted, data, m=2, seed=3, folds=8)
    pd.testing.assert_frame_equal(unlearned, again)  # the same seed, the same reference
    with pytest.raises(ValueError, match="at least 2 records"):
        cross_fitted_datasets(fitted, data.head(1), m=1, seed=0)


def test_the_cross_fitted_release_keeps_the_rules():
    data = simulate_acs_persons(300, seed=4)
    columns = ["age", "sex", "relationship", "education", "marital"]
    rules = [r for r in parse_rules(acs_example_rules()) if r.columns <= set(columns)]
    assert len(rules) == 4  # attainment by age twice, marital status by relationship and by age
    fitted = CartSynthesizer(["education", "marital"], ["age", "sex", "relationship"], rules=rules,
                             min_samples_leaf=20).fit(data[columns], seed=0)  # fmt: skip
    unlearned = cross_fitted_datasets(fitted, data[columns], m=2, seed=0, folds=5)
    assert fitted.rule_violation_counts(unlearned.drop(columns="synthetic")) == dict.fromkeys(
        fitted.rule_violation_counts(data[columns]), 0)

