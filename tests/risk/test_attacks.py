"""The attacks against a control set and the distance to the closest record: small cases counted by hand, the
distance and predicate counts against plain-loop oracles, and the two ends of the scale (a synthetic copy of the
training records scores near the maximum, an independent draw from the same population near zero)."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import comb

from bayessdc.risk import attacks
from bayessdc.risk.attacks import (
    anonymeter_size_correction,
    control_size_correction,
    distance_to_closest_record,
    inference,
    linkability,
    residual_risk,
    singling_out,
    wilson,
)
from bayessdc.risk.neighbours import MixedFrames, nearest, two_nearest_distances

Z = 1.959963984540054


def population(n: int, seed: int) -> pd.DataFrame:
    """Records of one population: two continuous columns, a count, and two categorical ones tied to them."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    age = rng.integers(18, 90, n)
    group = np.where(x + rng.normal(scale=0.5, size=n) > 0, "high", "low")
    colour = rng.choice(["red", "green", "blue", "grey"], n, p=[0.4, 0.3, 0.2, 0.1])
    return pd.DataFrame({"x": x, "y": y, "age": age, "group": group, "colour": colour})


COLUMNS = ["x", "y", "age", "group", "colour"]


@pytest.fixture(scope="module")
def samples():
    """Training and control samples, a synthetic copy of the training records (2 datasets, rows shuffled) and
    2 independent synthetic draws of the same population."""
    training, control = population(800, 1), population(800, 2)
    rng = np.random.default_rng(3)
    copy = pd.concat([training.iloc[rng.permutation(800)].assign(synthetic=k) for k in (1, 2)], ignore_index=True)
    fresh = pd.concat([population(800, 10 + k).assign(synthetic=k) for k in (1, 2)], ignore_index=True)
    return training, control, copy, fresh


def pooled(table: pd.DataFrame) -> pd.Series:
    return table[table["dataset"] == 0].iloc[0]


# ----------------------------------------------------------------------------------------------------
# Rates and risk


def test_wilson_is_the_root_interval_of_the_score_test():
    """The Wilson interval is where (p_hat - p)^2 = z^2 p (1 - p) / n: the two roots of that quadratic."""
    for k, n in [(7, 7), (3, 10), (0, 25), (120, 500)]:
        p_hat = k / n
        # (1 + z^2/n) p^2 - (2 p_hat + z^2/n) p + p_hat^2 = 0
        roots = np.sort(np.roots([1 + Z**2 / n, -(2 * p_hat + Z**2 / n), p_hat**2]).real)
        rate, half = wilson(k, n)
        assert rate == pytest.approx(roots.mean()) and half == pytest.approx((roots[1] - roots[0]) / 2)


def test_residual_risk_and_its_propagated_error():
    value, error = residual_risk((0.5, 0.04), (0.25, 0.03))
    assert value == pytest.approx((0.5 - 0.25) / 0.75)
    f = lambda a, c: (a - c) / (1 - c)  # noqa: E731
    h = 1e-6
    d_a, d_c = (f(0.5 + h, 0.25) - f(0.5 - h, 0.25)) / (2 * h), (f(0.5, 0.25 + h) - f(0.5, 0.25 - h)) / (2 * h)
    assert error == pytest.approx(np.hypot(0.04 * d_a, 0.03 * d_c))


def test_rates_pool_the_datasets_counts_and_bound_the_risk():
    counts = pd.DataFrame({"dataset": [1, 2], "attacks": [40, 60], "successes": [4, 0], "control_attacks": 50,
                           "control_successes": [10, 30], "baseline_attacks": 50, "baseline_successes": 1})  # fmt: skip
    table = attacks.attack_rates(counts).set_index("dataset")
    assert table.loc[0, "successes"] == 4 and table.loc[0, "attacks"] == 100 and table.loc[0, "control_attacks"] == 100
    training, control = wilson(4, 100), wilson(40, 100)
    assert table.loc[0, "training"] == pytest.approx(training[0])
    assert table.loc[0, "control_upper"] == pytest.approx(control[0] + control[1])
    assert table.loc[0, "risk"] == 0.0 and table.loc[2, "risk_upper"] == 0.0  # training below control: bounded at 0


# ----------------------------------------------------------------------------------------------------
# The distance


def gower_oracle(a: dict, b: dict, columns: list[str], numeric: set[str], ranges: dict) -> float:
    total = 0.0
    for c in columns:
        u, v = a[c], b[c]
        if pd.isna(u) and pd.isna(v):
            continue
        if pd.isna(u) or pd.isna(v):
            total += 1.0
        elif c in numeric:
            total += abs(u - v) / ranges[c]
        else:
            total += float(u != v)
    return total


def test_nearest_records_equal_a_plain_loop_on_mixed_columns_with_missing_values():
    rng = np.random.default_rng(0)

    def frame(n):
        out = pd.DataFrame({"x": rng.normal(size=n).round(1), "k": rng.integers(0, 5, n),
                            "c": rng.choice(["a", "b", None], n), "flag": rng.random(n) < 0.5})  # fmt: skip
        out.loc[rng.random(n) < 0.15, "x"] = np.nan
        return out

    queries, candidates = frame(30), frame(40)
    columns = ["x", "k", "c", "flag"]
    coding = MixedFrames([queries, candidates], columns)
    both = pd.concat([queries, candidates])
    ranges = {c: both[c].max() - both[c].min() for c in ("x", "k")}
    d = np.array([[gower_oracle(q, c, columns, {"x", "k"}, ranges) for c in candidates.to_dict("records")]
                  for q in queries.to_dict("records")])  # fmt: skip
    two = two_nearest_distances(coding, coding[0], coding[1], columns)
    assert np.allclose(two, np.sort(d, axis=1)[:, :2], atol=1e-5)
    first = nearest(coding, coding[0], coding[1], columns, k=3)
    for i in range(len(queries)):
        order = np.lexsort((np.arange(40), np.round(d[i], 5)))  # by distance, ties to the first candidate
        assert first[i].tolist() == order[:3].tolist()


def test_predicate_counts_equal_a_plain_loop():
    rng = np.random.default_rng(1)
    codes = rng.integers(-1, 6, size=(500, 4)).astype(np.int32)
    col = np.stack([rng.choice(4, 3, replace=False) for _ in range(300)])
    code = rng.integers(-1, 7, size=col.shape)
    op = rng.integers(0, 6, size=col.shape)
    op[code == -1] = rng.integers(0, 2, size=(code == -1).sum())  # a missing value: == or != only
    ops = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.greater, 4: np.less_equal, 5: np.greater_equal}
    expected = []
    for cs, os_, vs in zip(col, op, code, strict=True):
        match = np.ones(len(codes), dtype=bool)
        for c, o, v in zip(cs, os_, vs, strict=True):
            g = codes[:, c]
            hit = (g == -1) if (o == 0 and v == -1) else (ops[o](g, v) & (g != -1))
            match &= hit
        expected.append(match.sum())
    assert attacks._count(codes, col, op, code).tolist() == expected
    single = attacks._count(codes, col[:, :1], op[:, :1], code[:, :1])
    assert single.tolist() == attacks._count(codes, np.repeat(col[:, :1], 2, axis=1), np.repeat(op[:, :1], 2, axis=1),
                                             np.repeat(code[:, :1], 2, axis=1)).tolist()  # fmt: skip


# ----------------------------------------------------------------------------------------------------
# Singling out

SIX = pd.DataFrame({"sex": ["f", "f", "m", "m", "f", "m"], "age": [23, 35, 35, 41, 52, 67],
                    "town": ["a", "a", "b", "b", "c", "a"]})  # fmt: skip


def test_univariate_singling_out_counted_by_hand():
    """The predicates of a copy of SIX: age <= 23, age >= 67, age == 23, 41, 52, 67 (the ages held once) and
    town == c; sex has no rare value. Seven attacks (ten asked for): in the control set age >= 67 (70) and
    age == 41 single out one record; age <= 23 and age == 23 match two, town == c two, age == 52 and 67 none."""
    control = pd.DataFrame({"sex": ["f", "m", "f", "m", "f", "m"], "age": [23, 23, 38, 41, 60, 70],
                            "town": ["a", "b", "b", "c", "c", "a"]})  # fmt: skip
    table = singling_out(SIX, SIX.assign(synthetic=1), control, ["sex", "age", "town"], mode="univariate",
                         n_attacks=10, seed=4)  # fmt: skip
    row = table.iloc[0]
    assert row["predicates"] == 7 and row["successes"] == 7 and row["control_successes"] == 2
    assert row["attacks"] == 7 and row["baseline_attacks"] == 10  # the predicates made; the naive ones asked for
    assert row["control_correction"] == 1.0  # the two sets have the same size
    training, held = wilson(7, 7), wilson(2, 7)
    value, half = residual_risk(training, held)
    assert row["risk"] == pytest.approx(value) and row["risk_upper"] == pytest.approx(min(value + half, 1.0))
    only_town = singling_out(SIX, SIX.assign(synthetic=1), control, ["sex", "age", "town"], mode="univariate",
                             n_attacks=10, required=["town"])  # fmt: skip
    assert only_town.iloc[0]["predicates"] == 1  # town == c


def test_multivariate_singling_out_counted_by_hand():
    """With three conditions on three columns each record gives one predicate: sex and town equal, age >= its
    value above the median age 38, <= it otherwise. Five single out in the copy (all but f & a & age <= 35,
    which matches the first two records); in the control set three do: f & a & age <= 23 (f, 20, a),
    m & b & age >= 41 (m, 50, b), m & a & age >= 67 (m, 70, a)."""
    control = pd.DataFrame({"sex": ["f", "m", "m", "m", "f", "m"], "age": [20, 30, 33, 50, 40, 70],
                            "town": ["a", "b", "b", "b", "c", "a"]})  # fmt: skip
    row = singling_out(SIX, SIX.assign(synthetic=1), control, ["sex", "age", "town"], n_attacks=5, seed=1).iloc[0]
    assert (row["predicates"], row["successes"], row["control_successes"]) == (5, 5, 3)


def test_multivariate_predicates_keep_a_required_column():
    """Pairs of columns: (sex, town) singles out f & c and m & a; (age, town) five records (all but the second:
    age <= 35 & a matches the first two); (sex, age) four more (f & age <= 23, m & age <= 35, f & age >= 52,
    m & age >= 67). Requiring town leaves the first seven."""
    every = dict(mode="multivariate", n_attacks=50, n_cols=2, max_attempts=3000, seed=2)
    free = singling_out(SIX, SIX.assign(synthetic=1), SIX, ["sex", "age", "town"], **every).iloc[0]
    town = singling_out(SIX, SIX.assign(synthetic=1), SIX, ["sex", "age", "town"], required=["town"], **every).iloc[0]
    assert free["predicates"] == 11 and town["predicates"] == 7


def test_control_size_correction_takes_the_control_count_to_the_training_size():
    """Predicates with weights spread evenly (the model's assumption): the control count of a small control
    set, corrected, estimates the expected count of singling-out predicates in the larger training set."""
    rng = np.random.default_rng(5)
    n_control, n_training = 600, 2400
    weights = rng.uniform(0, 3 / n_training, 4000)
    matches = rng.binomial(n_control, weights)
    factor = control_size_correction(matches, n_control, n_training)
    expected = np.sum(n_training * weights * (1 - weights) ** (n_training - 1))
    assert factor * np.sum(matches == 1) == pytest.approx(expected, rel=0.1)
    assert control_size_correction(matches, n_training, n_training) == 1.0


def test_anonymeter_size_correction_is_its_fit_to_a_constant_count():
    """Anonymeter 1.1 fits c (1 - (n w + 1)(1 - w)^n) / (n + 1) to the number of predicates evaluated, the same at
    every size: from its start (w = 1 / n_max, one success at n_max) curve_fit goes to a large w, where
    (1 - w)^n vanishes and the model is c / (n + 1), so the factor is (n_control + 1) / (n_training + 1): 5692 /
    25728 for the bench's first dataset, 100 / 400 for 99 control and 399 training records."""
    assert anonymeter_size_correction(5691, 25727, 500) == pytest.approx(5692 / 25728, rel=1e-6)
    assert anonymeter_size_correction(999, 3999, 500) == pytest.approx(0.25, rel=1e-6)
    assert anonymeter_size_correction(400, 400, 500) == 1.0
    # the same factor whatever the control count it scales: the predicates' counts play no part
    assert anonymeter_size_correction(999, 3999, 200) == pytest.approx(0.25, rel=1e-4)


def test_only_our_size_correction_follows_the_predicates():
    """The predicates of the correction test above (weights uniform on [0, 3 / 2400]): 600 control records,
    2400 training records. The expected count at 2400 is about 1.3 times the control count; anonymeter's factor
    601 / 2401 takes it to a quarter of the count, ours to within 10% of the expected count."""
    rng = np.random.default_rng(5)
    weights = rng.uniform(0, 3 / 2400, 4000)
    matches = rng.binomial(600, weights)
    expected = np.sum(2400 * weights * (1 - weights) ** 2399)
    count = np.sum(matches == 1)
    assert count * control_size_correction(matches, 600, 2400) == pytest.approx(expected, rel=0.1)
    assert count * anonymeter_size_correction(600, 2400) < expected / 4


def test_singling_out_in_anonymeter_form_counted_by_hand():
    """The univariate copy of SIX above: seven predicates made of ten asked for. In anonymeter's form the rates
    are over the ten (7 of 10 single out a training record). The control set here has 4 distinct records (ages
    23, 41, 60 and 70, all f and a), in which age <= 23, age >= 67, age == 23 and age == 41 single out one: 4
    scaled by anonymeter's fit to the constant 7 at the single size 4, 0.762 (at so small a size the fit stops
    short of its limit (4 + 1) / (6 + 1) = 0.714). The default form divides the same counts by the seven made
    and scales the control count by our fitted factor."""
    control = pd.DataFrame({"sex": "f", "age": [23, 23, 41, 60, 70, 70], "town": "a"})
    compatible = singling_out(SIX, SIX.assign(synthetic=1), control, ["sex", "age", "town"], mode="univariate",
                              n_attacks=10, seed=4, compatibility="anonymeter").iloc[0]  # fmt: skip
    assert (compatible["predicates"], compatible["attacks"], compatible["successes"]) == (7, 10, 7)
    assert compatible["control_attacks"] == 10
    assert compatible["control_correction"] == anonymeter_size_correction(4, 6, 7) == pytest.approx(0.762, abs=1e-3)
    assert compatible["control_successes"] == pytest.approx(4 * compatible["control_correction"])
    value, half = residual_risk(wilson(7, 10), wilson(4 * compatible["control_correction"], 10))
    assert compatible["risk"] == pytest.approx(value) and compatible["risk_lower"] == pytest.approx(value - half)
    default = singling_out(SIX, SIX.assign(synthetic=1), control, ["sex", "age", "town"], mode="univariate",
                           n_attacks=10, seed=4).iloc[0]  # fmt: skip
    assert (default["attacks"], default["control_attacks"], default["successes"]) == (7, 7, 7)
    factor = default["control_correction"]
    assert default["control_successes"] == pytest.approx(min(4 * factor, 7))
    with pytest.raises(ValueError, match="compatibility"):
        singling_out(SIX, SIX.assign(synthetic=1), control, ["age"], compatibility="anonymous")


def test_the_predicates_and_targets_are_given_for_another_tool():
    """The seven univariate predicates of the copy of SIX, decoded (column, operator, value), and the targets of
    linkability and inference: with as many attacks as records, every record of each set once."""
    table = singling_out(SIX, SIX.assign(synthetic=1), SIX, ["sex", "age", "town"], mode="univariate", n_attacks=10)
    made = sorted(tuple(map(tuple, p)) for p in table.attrs["predicates"][1])
    assert made == sorted([(("age", "<=", 23),), (("age", ">=", 67),), (("age", "==", 23),), (("age", "==", 41),),
                           (("age", "==", 52),), (("age", "==", 67),), (("town", "==", "c"),)])  # fmt: skip
    multivariate = singling_out(SIX, SIX.assign(synthetic=1), SIX, ["sex", "age", "town"], n_attacks=5, seed=1)
    assert (("age", "<=", 23), ("sex", "==", "f"), ("town", "==", "a")) in [
        tuple(sorted(map(tuple, p))) for p in multivariate.attrs["predicates"][1]]  # fmt: skip
    missing = pd.DataFrame({"age": [20.5, 30.0, np.nan], "town": ["a", None, "b"]})
    single = singling_out(missing, missing.assign(synthetic=1), missing, ["age", "town"], mode="univariate",
                          n_attacks=10).attrs["predicates"][1]  # fmt: skip
    assert [("age", "==", None)] in single and [("town", "==", None)] in single and [("age", "<=", 20.5)] in single
    link = linkability(FOUR, FOUR.assign(synthetic=1), FOUR_CONTROL, (["a"], ["b"]), n_attacks=4)
    training, held = link.attrs["targets"][1]
    assert sorted(training) == [0, 1, 2, 3] and sorted(held) == [0, 1, 2, 3]
    guessed = inference(FOUR, FOUR.assign(synthetic=1), FOUR_CONTROL, ["b"], ["a"], n_attacks=3)
    training, held = guessed.attrs["targets"][1]
    assert len(set(training)) == 3 and set(training) <= {0, 1, 2, 3} and len(set(held)) == 3


@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_singling_out_of_a_copy_is_near_the_maximum_and_of_an_independent_draw_near_zero(samples, mode):
    training, control, copy, fresh = samples
    settings = dict(mode=mode, n_attacks=200, seed=0)
    copied = pooled(singling_out(training, copy, control, COLUMNS, **settings))
    assert copied["predicates"] == 400 and copied["risk"] > 0.9
    independent = pooled(singling_out(training, fresh, control, COLUMNS, **settings))
    assert independent["risk_lower"] == 0.0 and independent["risk"] < 0.1
    assert independent["baseline"] < copied["training"]


# ----------------------------------------------------------------------------------------------------
# Linkability

FOUR = pd.DataFrame({"a": [0.0, 10.0, 20.0, 30.0], "b": [5.0, 15.0, 25.0, 35.0]})
FOUR_CONTROL = pd.DataFrame({"a": [1.0, 11.0, 21.0, 31.0], "b": [34.0, 24.0, 14.0, 4.0]})


def test_linkability_counted_by_hand():
    """A copy: each record's halves find its own row. The control's halves point at rows 0|3, 1|2, 2|1, 3|0 with
    one neighbour; with two, (11, 24) finds {1, 2} on a and {2, 1} on b, a link, the others none."""
    one = linkability(FOUR, FOUR.assign(synthetic=1), FOUR_CONTROL, (["a"], ["b"]), n_neighbors=1).iloc[0]
    two = linkability(FOUR, FOUR.assign(synthetic=1), FOUR_CONTROL, (["a"], ["b"]), n_neighbors=2).iloc[0]
    assert (one["successes"], one["control_successes"]) == (4, 0)
    assert (two["successes"], two["control_successes"]) == (4, 1)


def test_a_link_through_ties_counts_its_chance():
    """The target (0, 0): on a the synthetic rows 0 and 1 tie (a = 0), on b the rows 1 and 2 (b = 0). Ties broken
    at random link it when both halves draw row 1: 1/2 x 1/2 = 1/4 of a success. The control target (9, 5)
    finds row 2 alone on a and row 0 alone on b: no link."""
    target = pd.DataFrame({"a": [0.0], "b": [0.0]})
    synthetic = pd.DataFrame({"a": [0.0, 0.0, 9.0], "b": [5.0, 0.0, 0.0], "synthetic": 1})
    row = linkability(target, synthetic, pd.DataFrame({"a": [9.0], "b": [5.0]}), (["a"], ["b"])).iloc[0]
    assert row["successes"] == 0.25 and row["control_successes"] == 0.0
    value, half = residual_risk(wilson(0.25, 1), wilson(0.0, 1))
    assert row["risk"] == pytest.approx(max(value, 0.0))


def test_the_naive_linker_links_as_often_as_two_random_draws_meet():
    rng = np.random.default_rng(6)
    training = pd.DataFrame({"a": rng.normal(size=3000), "b": rng.normal(size=3000)})
    synthetic = training.iloc[:10].assign(synthetic=1)
    for k in (1, 3):
        row = linkability(training, synthetic, training, (["a"], ["b"]), n_attacks=3000, n_neighbors=k).iloc[0]
        p = 1 - comb(10 - k, k) / comb(10, k)  # two random k-sets of 10 records share one
        assert abs(row["baseline_successes"] - 3000 * p) < 4 * np.sqrt(3000 * p * (1 - p))


def test_linkability_of_a_copy_is_near_the_maximum_and_of_an_independent_draw_near_zero(samples):
    training, control, copy, fresh = samples
    sources = (["x", "group", "age"], ["y", "colour"])
    copied = pooled(linkability(training, copy, control, sources, n_attacks=300))
    assert copied["successes"] == 600 and copied["risk"] > 0.9
    independent = pooled(linkability(training, fresh, control, sources, n_attacks=300))
    assert independent["risk_lower"] == 0.0 and independent["risk"] < 0.1


# ----------------------------------------------------------------------------------------------------
# Inference


def test_inference_counted_by_hand():
    """A copy gives every secret back. On x alone the control records 1, 11, 21, 31 find the rows of 0, 10, 20,
    30, whose y (a, b, a, b) is right for the second and third (b, b, a, a). On x and y the control records
    (1, b) and (11, b) find the row (10, b) and guess v = 200, (21, a) and (31, a) the row (20, a) and guess 300:
    right within 5% of the guess for 209 (within 10 of 200) and 286 (within 15 of 300), not for 211 and 500."""
    original = pd.DataFrame({"x": [0.0, 10.0, 20.0, 30.0], "y": ["a", "b", "a", "b"], "v": [100.0, 200, 300, 400]})
    control = pd.DataFrame({"x": [1.0, 11.0, 21.0, 31.0], "y": ["b", "b", "a", "a"], "v": [209.0, 211, 286, 500]})
    copy = original.assign(synthetic=1)
    y = inference(original, copy, control, ["y"], ["x"]).iloc[0]
    v = inference(original, copy, control, ["v"], ["x", "y"]).iloc[0]
    assert (y["successes"], y["control_successes"]) == (4, 2)
    assert (v["successes"], v["control_successes"]) == (4, 2)


def test_a_secret_is_left_out_of_its_own_attack(samples):
    training, control, copy, _ = samples
    with_secret = inference(training, copy, control, ["colour"], COLUMNS, n_attacks=100, seed=3)
    without = inference(training, copy, control, ["colour"], [c for c in COLUMNS if c != "colour"], n_attacks=100,
                        seed=3)  # fmt: skip
    pd.testing.assert_frame_equal(with_secret, without)


def test_ties_between_synthetic_records_are_broken_at_random():
    """Every synthetic record ties on x: the guess is a random one, right for a quarter of the targets (the
    first record in order would always be right)."""
    training = pd.DataFrame({"x": np.zeros(400), "y": "a"})
    synthetic = pd.DataFrame({"x": np.zeros(40), "y": ["a", "b", "b", "b"] * 10, "synthetic": 1})
    row = inference(training, synthetic, training, ["y"], ["x"], n_attacks=400).iloc[0]
    assert abs(row["successes"] - 100) < 4 * np.sqrt(400 * 0.25 * 0.75)


def test_inference_of_a_copy_is_near_the_maximum_and_of_an_independent_draw_near_zero(samples):
    training, control, copy, fresh = samples
    copied = inference(training, copy, control, ["group", "colour", "y"], COLUMNS, n_attacks=300)
    independent = inference(training, fresh, control, ["group", "colour", "y"], COLUMNS, n_attacks=300)
    for secret in ("group", "colour", "y"):
        assert pooled(copied[copied["secret"] == secret])["risk"] > 0.85
        row = pooled(independent[independent["secret"] == secret])
        assert row["risk_lower"] == 0.0 and row["risk"] < 0.15
    # the naive guess of colour is right with probability sum p^2 = 0.3
    naive = pooled(independent[independent["secret"] == "colour"])
    assert abs(naive["baseline_successes"] - 600 * 0.3) < 4 * np.sqrt(600 * 0.3 * 0.7)


# ----------------------------------------------------------------------------------------------------
# Distance to the closest record


def test_distance_to_closest_record_counted_by_hand():
    """Training 0, 10, 20, 30 (range 31 with the holdout): holdout DCRs 2, 5, 4, 1 (/31), so the 5th percentile
    is 1 and the median 2 (the smallest distances with a quarter and half of the holdout at most them); the
    synthetic 1, 12, 29 lie 1, 2, 1 away: two thirds at most 1, all at most 2. NNDRs: 1/9, 2/8, 1/9 and the
    holdout's 2/8, 5/5, 4/6, 1/11."""
    holdout = pd.DataFrame({"x": [2.0, 15.0, 26.0, 31.0]})
    synthetic = pd.DataFrame({"x": [1.0, 12.0, 29.0], "synthetic": 1})
    row = distance_to_closest_record(FOUR[["a"]].rename(columns={"a": "x"}), synthetic, holdout, ["x"]).iloc[0]
    assert row["threshold_p5"] == pytest.approx(1 / 31) and row["threshold_p50"] == pytest.approx(2 / 31)
    assert row["share_p5"] == pytest.approx(2 / 3) and row["share_p50"] == 1.0
    assert row["holdout_share_p5"] == 0.25 and row["holdout_share_p50"] == 0.5
    assert row["nndr_mean"] == pytest.approx(np.mean([1 / 9, 2 / 8, 1 / 9]), rel=1e-5)
    assert row["holdout_nndr_mean"] == pytest.approx(np.mean([2 / 8, 1, 4 / 6, 1 / 11]), rel=1e-5)
    assert row["dcr_median"] == pytest.approx(1 / 31, rel=1e-5)


def test_distance_to_closest_record_of_a_copy_and_of_an_independent_draw(samples):
    training, control, copy, fresh = samples
    copied = distance_to_closest_record(training, copy, control, COLUMNS)
    assert (copied["share_p5"] == 1.0).all() and (copied["nndr_mean"] == 0.0).all()
    independent = distance_to_closest_record(training, fresh, control, COLUMNS)
    for q in ("p5", "p50"):
        share = independent[f"holdout_share_{q}"].iloc[0]
        assert (np.abs(independent[f"share_{q}"] - share) < 4 * np.sqrt(share * (1 - share) / 800)).all()
    se = independent["holdout_nndr_se"].iloc[0]
    assert (np.abs(independent["nndr_mean"] - independent["holdout_nndr_mean"]) < 4 * np.sqrt(2) * se).all()


def test_every_random_step_follows_the_seed(samples):
    training, control, _, fresh = samples
    runs = [singling_out(training, fresh, control, COLUMNS, n_attacks=50, seed=s) for s in (7, 7, 8)]
    pd.testing.assert_frame_equal(runs[0], runs[1])
    assert not runs[0].equals(runs[2])


def test_predicates_within_some_columns_single_out_records_distinct_on_all():
    """Issue 49: a partially synthetic release's predicates use its synthesized column, town; on town alone the
    copy has three distinct records (a, b, c), each "singled out" by its value, and town == a would count as an
    attack that singles out a training record. On the records distinct on every column, town == c alone matches
    one record (the fifth), as the SIX module docstring counts: town == a matches three, town == b two."""
    alone = singling_out(SIX, SIX.assign(synthetic=1), SIX, ["town"], mode="univariate", n_attacks=10).iloc[0]
    assert alone["predicates"] == 3 and alone["successes"] == 3  # the few distinct values of town: all "unique"
    within = singling_out(SIX, SIX.assign(synthetic=1), SIX, ["sex", "age", "town"], within=["town"],
                          mode="univariate", n_attacks=10).iloc[0]  # fmt: skip
    assert (within["predicates"], within["successes"]) == (1, 1)  # town == c
    with pytest.raises(KeyError, match="predicate columns \\['income'\\]"):
        singling_out(SIX, SIX.assign(synthetic=1), SIX, ["town"], within=["income"])
