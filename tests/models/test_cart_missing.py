"""CART with missing values, missing-value codes, spikes and density smoothing (issue 34, item 1)."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.models.cart import CartDataError, CartSynthesizer, bandwidth_nrd0, simulate_acs_persons
from bayessdc.models.cart.rules import RuleError
from bayessdc.models.cart.states import state_column_name

SYNTHESIZE = ["employed", "hours", "marital", "income"]
KEEP = ["age", "sex"]
CODES, SPIKES = {"income": [-8]}, {"income": [0]}
M = 3


def holes_frame(n=600, seed=4):
    """An ACS-like person file with values missing by design (hours iff not employed), missing at random
    (marital), a missing-value code (-8: income refused) and a spike (income 0)."""
    data = simulate_acs_persons(n, seed=seed)[["age", "sex", "marital"]].copy()
    rng = np.random.default_rng(seed)
    employed = np.where((data["age"] >= 18) & (rng.random(n) < 0.6), "yes", "no")
    data["employed"] = employed
    data["hours"] = np.where(employed == "yes", np.round(rng.normal(38, 8, n)).clip(1, 80), np.nan)
    income = np.round(rng.lognormal(10, 1, n), 2)
    income[rng.random(n) < 0.2] = 0.0
    income[rng.random(n) < 0.08] = -8.0
    data["income"] = income
    data.loc[rng.random(n) < 0.1, "marital"] = None
    return data


@pytest.fixture(scope="module")
def fitted():
    data = holes_frame()
    synthesizer = CartSynthesizer(SYNTHESIZE, KEEP, missing_codes=CODES, spikes=SPIKES).fit(data, seed=7)
    return data, synthesizer, synthesizer.synthesize_datasets(M)


def _indicators(frame):
    """Per record, 0/1 indicators whose means are the rates compared: each column missing, each missingness
    pattern over the released columns, the income code and spike."""
    missing = frame[[*KEEP, *SYNTHESIZE]].isna().to_numpy()
    pattern = missing @ (1 << np.arange(missing.shape[1]))
    columns = {f"missing {c}": missing[:, k] for k, c in enumerate([*KEEP, *SYNTHESIZE])}
    columns |= {f"pattern {p}": pattern == p for p in range(1 << missing.shape[1])}
    columns |= {"code -8": frame["income"].to_numpy() == -8, "spike 0": frame["income"].to_numpy() == 0}
    return pd.DataFrame(columns).astype(float)


def _bootstrap_range(indicators, replicates=200, level=0.99, seed=0):
    """The ``level`` bootstrap interval of the mean of each indicator over ``replicates`` resamples."""
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(indicators), np.full(len(indicators), 1 / len(indicators)), size=replicates)
    rates = counts @ indicators.to_numpy() / len(indicators)
    tail = (1 - level) / 2
    return np.quantile(rates, tail, axis=0), np.quantile(rates, 1 - tail, axis=0)


def test_no_record_dropped_and_structural_missingness_reproduced_exactly(fitted):
    data, _, synthetic = fitted
    assert len(synthetic) == M * len(data)
    for _, frame in synthetic.groupby("synthetic"):
        assert len(frame) == len(data)
        # the state tree of hours splits on employed: hours is missing exactly for those not employed
        assert (frame["hours"].isna() == (frame["employed"] == "no")).all()
        assert frame["marital"].isna().any()  # a categorical column's missing level is drawn


def test_missingness_rates_and_patterns_lie_within_the_bootstrap_range(fitted):
    data, _, synthetic = fitted
    original = _indicators(data)
    low, high = _bootstrap_range(original)
    for _, frame in synthetic.groupby("synthetic"):
        rates = _indicators(frame).mean().to_numpy()
        assert not (rates[high == 0] > 0).any()  # no missingness pattern the original lacks
        outside = original.columns[(rates < low - 1e-12) | (rates > high + 1e-12)]
        assert outside.empty, f"outside the 99% bootstrap range: {list(outside)}"


def test_codes_and_spikes_come_back_exactly_and_drawn_values_are_never_codes(fitted):
    data, synthesizer, synthetic = fitted
    observed = set(data["income"])
    for _, frame in synthetic.groupby("synthetic"):
        income = frame["income"].to_numpy()
        assert not np.isnan(income).any()  # income has no missing value, only a code
        assert set(income) <= observed  # donors' values, codes and spikes exactly
        assert (income == -8).any() and (income == 0).any()
    states = synthesizer.states["income"]
    assert states.levels == ("value", "code -8", "spike 0")
    assert synthesizer.tree_summary()[state_column_name("income")]["leaves"] >= 1
    # the value tree is fitted on the records in the "value" state only: its leaves hold no code nor spike
    value_tree = next(t for t in synthesizer._trees if t.column == "income")
    drawn = synthesizer._schema["income"].levels[value_tree.pair_code]
    assert not np.isin(drawn, [-8.0, 0.0]).any()


def test_same_seed_same_release_with_missing_values(fitted):
    data, synthesizer, synthetic = fitted
    again = CartSynthesizer(SYNTHESIZE, KEEP, missing_codes=CODES, spikes=SPIKES).fit(data, seed=7)
    pd.testing.assert_frame_equal(synthetic, again.synthesize_datasets(M))  # NaN-aware equality
    other = CartSynthesizer(SYNTHESIZE, KEEP, missing_codes=CODES, spikes=SPIKES).fit(data, seed=8)
    assert not other.synthesize_datasets(M)["hours"].equals(synthetic["hours"])


def test_a_missing_numeric_predictor_enters_as_value_and_state():
    # y depends only on whether x is missing: a tree can learn it only through x's state column
    rng = np.random.default_rng(1)
    x = rng.normal(size=400)
    x[:200] = np.nan
    data = pd.DataFrame({"x": x, "y": np.where(np.isnan(x), "absent", "present")})
    synthesizer = CartSynthesizer(["y"], ["x"]).fit(data, seed=0)
    synthetic = synthesizer.synthesize_datasets(2)
    assert ((synthetic["y"] == "absent") == synthetic["x"].isna()).all()
    assert synthesizer.describe()["predictors"]["y"] == ["x"]
    assert synthesizer._trees[0].predictors == ["x", state_column_name("x")]


def test_smoothing_moves_values_off_the_donors_within_the_observed_range():
    rng = np.random.default_rng(2)
    n = 500
    group = rng.choice(["a", "b"], n)
    value = np.round(np.where(group == "a", rng.normal(10, 2, n), rng.normal(30, 5, n)), 3)
    value[rng.random(n) < 0.1] = np.nan
    data = pd.DataFrame({"group": group, "value": value})
    plain = CartSynthesizer(["value"], ["group"]).fit(data, seed=3).synthesize_datasets(2)
    smooth = CartSynthesizer(["value"], ["group"], smoothing="density").fit(data, seed=3)
    smoothed = smooth.synthesize_datasets(2)
    donors = set(value[~np.isnan(value)])
    drawn, unsmoothed = smoothed["value"].dropna(), plain["value"].dropna()
    assert set(unsmoothed) <= donors  # without smoothing every value is a donor's
    assert np.isin(drawn, list(donors)).mean() < 0.1  # few exact copies
    assert drawn.min() >= np.nanmin(value) and drawn.max() <= np.nanmax(value)
    assert np.allclose(drawn, drawn.round(3))  # the observed decimal places
    # the same seed draws the same donors and states: smoothing changes only the values drawn
    assert (smoothed["value"].isna() == plain["value"].isna()).all()
    assert float(np.abs(smoothed["value"] - plain["value"]).max()) < 15
    again = CartSynthesizer(["value"], ["group"], smoothing="density").fit(data, seed=3)
    pd.testing.assert_frame_equal(smoothed, again.synthesize_datasets(2))
    assert smooth.describe()["smoothing"]["columns"] == ["value"]


def test_the_bandwidth_is_r_bw_nrd0():
    x = np.array([1.0, 2.0, 2.0, 3.0, 7.0, 9.0])
    sd, iqr = np.std(x, ddof=1), np.subtract(*np.quantile(x, [0.75, 0.25]))
    assert bandwidth_nrd0(x) == pytest.approx(0.9 * min(sd, iqr / 1.34) * 6**-0.2)
    assert bandwidth_nrd0(np.array([4.0, 4.0, 4.0])) == 0.0  # no spread: not smoothed


def test_rules_with_missing_values_a_condition_on_a_missing_value_is_false():
    data = holes_frame(400, seed=5)
    # holds in the data: the employed report hours, so a missing value in the 'then' column would violate it
    reported = {"name": "the employed report hours", "if": {"employed": "yes"}, "then": {"hours": {"min": 1}}}
    # a missing 'if' value: the rule does not apply (marital missing never forces anything)
    married = {"name": "no hours check for married", "if": {"marital": "married"}, "then": {"age": {"min": 15}}}
    synthesizer = CartSynthesizer(SYNTHESIZE, KEEP, [reported, married], missing_codes=CODES, spikes=SPIKES)
    synthetic = synthesizer.fit(data, seed=1).synthesize_datasets(2)
    assert synthesizer.rule_violation_counts(synthetic) == {reported["name"]: 0, married["name"]: 0}
    assert not synthetic.loc[synthetic["employed"] == "yes", "hours"].isna().any()
    # a rule the data break through a missing value: not_in is false for a missing value too
    broken = {"name": "marital reported", "then": {"marital": {"not_in": ["widowed"]}}}
    with pytest.raises(CartDataError, match="'marital reported' is violated by the original data"):
        CartSynthesizer(SYNTHESIZE, KEEP, [broken], missing_codes=CODES, spikes=SPIKES).fit(data)
    with pytest.raises(RuleError, match="None is not a value of column 'marital'"):
        CartSynthesizer(SYNTHESIZE, KEEP, [{"name": "n", "then": {"marital": [None, "married"]}}]).fit(data)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"missing_codes": {"income": [-9]}}, "missing-value code -9 is not a value of column 'income'"),
        ({"spikes": {"hours": [0]}}, "spike 0 is not a value of column 'hours'"),
        ({"missing_codes": {"marital": [-8]}}, "missing-value codes given for categorical column 'marital'"),
        ({"spikes": {"employed": [1]}}, "spikes given for categorical column 'employed'"),
        ({"missing_codes": {"wage": [-8]}}, "missing-value codes given for column 'wage', which is neither kept"),
        ({"missing_codes": {"income": [-8]}, "spikes": {"income": [-8]}}, "spike -8 of column 'income' is already"),
        ({"spikes": {"income": ["zero"]}}, "spike 'zero' of column 'income' is not a number"),
        ({"smoothing": "spline"}, "smoothing must be None or 'density', got 'spline'"),
    ],
)
def test_bad_codes_and_spikes_are_refused_before_fitting(options, message):
    data = holes_frame(100)
    with pytest.raises((CartDataError, ValueError), match=message):
        CartSynthesizer(SYNTHESIZE, KEEP, **options).fit(data)
