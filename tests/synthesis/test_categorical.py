import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayessdc.synthesis.categorical import (
    combined_estimate,
    ordered_logit_combined,
    pmse,
    table_deviations,
    within_pattern_distributions,
)

ORIGINAL = pd.DataFrame({"g": ["M", "M", "F", "F"], "county": ["A", "B", "A", "A"]})
SYNTHETIC = pd.concat(
    [
        ORIGINAL.assign(county=["A", "A", "A", "A"], synthetic=1),
        ORIGINAL.assign(county=["B", "B", "A", "B"], synthetic=2),
    ],
    ignore_index=True,
)


def test_table_deviations_worked_by_hand():
    out = table_deviations(ORIGINAL, SYNTHETIC, ["county"], ["g"], ways=(1, 2))
    # one-way: original A 3, B 1. dataset 1: A 4, B 0 -> 2; dataset 2: A 1, B 3 -> 4
    assert out["one-way"]["per_dataset"] == [2.0, 4.0] and out["one-way"]["mean"] == 3.0
    # two-way county x g: original (A,M) 1 (B,M) 1 (A,F) 2. dataset 1: (A,M) 2 (A,F) 2 -> 1 + 1 = 2;
    # dataset 2: (B,M) 2 (A,F) 1 (B,F) 1 -> |0-1| + |2-1| + |1-2| + |1-0| = 4
    assert out["two-way"]["per_dataset"] == [2.0, 4.0]
    assert list(out["two-way"]["tables"]) == ["county x g"]


def test_within_pattern_distributions_worked_by_hand():
    cells, patterns = within_pattern_distributions(ORIGINAL, SYNTHETIC, ["county"], ["g"])
    m_a = cells[(cells["g"] == "M") & (cells["county"] == "A")].iloc[0]
    assert m_a["original_share"] == 0.5 and m_a["synthetic_share"] == pytest.approx((1.0 + 0.0) / 2)
    tv = patterns.set_index("g")["total_variation"]
    # M: original (1/2, 1/2); dataset 1 (1, 0) -> 1/2; dataset 2 (0, 1) -> 1/2.
    # F: original (1, 0); dataset 1 (1, 0) -> 0; dataset 2 (1/2, 1/2) -> 1/2
    assert tv["M"] == pytest.approx(0.5) and tv["F"] == pytest.approx(0.25)
    assert patterns.set_index("g")["records"].to_dict() == {"F": 2, "M": 2}


def test_combining_rules_worked_by_hand():
    out = combined_estimate([1.0, 2.0, 3.0], [0.5, 0.5, 0.5])
    assert out.q_bar == 2.0 and out.b_m == 1.0 and out.u_bar == 0.5
    assert out.T_p == pytest.approx(0.5 + 1 / 3)
    assert out.df == pytest.approx(2 * (1 + 3 * 0.5 / 1.0) ** 2)  # 12.5
    half = stats.t.ppf(0.975, 12.5) * np.sqrt(0.5 + 1 / 3)
    assert (out.lower, out.upper) == (pytest.approx(2 - half), pytest.approx(2 + half))
    # several estimands at once; identical estimates: no between variance, normal interval
    many = combined_estimate([[1.0, 5.0], [1.0, 7.0]], [[0.04, 1.0], [0.04, 1.0]])
    assert np.isinf(many.df[0]) and many.upper[0] == pytest.approx(1 + 1.959964 * 0.2, rel=1e-6)
    assert many.T_p[1] == pytest.approx(1.0 + 2.0 / 2)
    # the fully synthetic rules on the first numbers: T_f = (1 + 1/3) 1 - 0.5 = 5/6,
    # nu_f = 2 (1 - 3 * 0.5 / (4 * 1))^2 = 2 (5/8)^2 = 0.78125
    full = combined_estimate([1.0, 2.0, 3.0], [0.5, 0.5, 0.5], kind="full")
    assert full.T_f == pytest.approx(5 / 6) and full.df == pytest.approx(0.78125) and full.adjusted is False
    with pytest.raises(AttributeError, match="T_f"):
        _ = full.T_p
    assert list(full.to_frame().columns) == ["q_bar", "b_m", "u_bar", "T_f", "df", "lower", "upper", "adjusted"]
    assert list(out.to_frame().columns) == ["q_bar", "b_m", "u_bar", "T_p", "df", "lower", "upper"]


def test_pmse_separates_a_distorted_release_from_a_faithful_one():
    rng = np.random.default_rng(0)
    n = 2000
    g = rng.integers(0, 2, n)
    county = np.where(rng.random(n) < 0.8, g, 1 - g) + 10 * rng.integers(0, 3, n)
    original = pd.DataFrame({"g": g, "county": county})
    faithful = original.assign(synthetic=1)
    broken = original.assign(county=rng.permutation(county), synthetic=1)  # breaks county-g association
    good, bad = (
        pmse(original, faithful, ["g", "county"], ["county"]),
        pmse(original, broken, ["g", "county"], ["county"]),
    )
    assert good["pmse"] < 1e-8  # identical data: every propensity is 1/2
    assert bad["ratio"] > 20 and bad["pmse"] > 100 * good["pmse"]


def test_ordered_logit_on_copies_of_the_original_reproduces_its_intervals():
    rng = np.random.default_rng(1)
    n = 600
    frame = pd.DataFrame({"county": rng.integers(0, 3, n), "gender": rng.integers(0, 2, n)})
    latent = 0.8 * frame["county"] - 0.5 * frame["gender"] + rng.logistic(size=n)
    frame["income"] = np.digitize(latent, [-0.5, 0.5, 1.5])
    copies = pd.concat([frame.assign(synthetic=1), frame.assign(synthetic=2)], ignore_index=True)
    table = ordered_logit_combined(frame, copies, "income", ["county", "gender"])
    assert np.allclose(table["q_bar"], table["original"], atol=1e-5)
    assert np.allclose(table["b_m"], 0.0, atol=1e-8) and np.allclose(table["interval_overlap"], 1.0, atol=1e-4)
    assert table.loc["county_2", "q_bar"] == pytest.approx(1.6, abs=0.45)  # the simulated effect
    # the fully synthetic rules on the same copies: b_m = 0, so T_f < 0 and Reiter's (2002) (n_syn / n) u_bar = u_bar
    full = ordered_logit_combined(frame, copies, "income", ["county", "gender"], kind="full")
    assert full["adjusted"].all() and np.allclose(full["T_f"], full["u_bar"])
    assert np.allclose(full["interval_overlap"], 1.0, atol=1e-4)


def test_ordered_logit_fit_matches_statsmodels_and_recovers_the_simulated_effects():
    """Newton on distinct rows vs statsmodels' OrderedModel (numerical derivatives): same parameters and
    standard errors, same names; and the simulated coefficients are recovered."""
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    from bayessdc.synthesis.categorical import _ordered_logit

    rng = np.random.default_rng(3)
    n = 1500
    frame = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.choice(["x", "y"], n)})
    latent = 0.7 * (frame["a"] == 1) + 1.4 * (frame["a"] == 2) - 0.9 * (frame["b"] == "y") + rng.logistic(size=n)
    frame["y"] = np.digitize(latent, [-0.5, 0.4, 1.6]) + 1
    levels = {c: sorted(frame[c].unique()) for c in frame.columns}
    fit = _ordered_logit(frame, "y", ["a", "b"], levels)
    exog = pd.concat(
        [
            pd.get_dummies(pd.Categorical(frame[c], categories=levels[c]), prefix=c, drop_first=True, dtype=float)
            for c in ["a", "b"]
        ],
        axis=1,
    )
    endog = pd.Categorical(frame["y"], categories=levels["y"], ordered=True)
    reference = OrderedModel(endog, exog, distr="logit").fit(method="bfgs", disp=False, maxiter=5000, gtol=1e-8)
    assert fit.converged and list(fit.params.index) == list(reference.params.index)
    assert np.allclose(fit.params, reference.params, atol=1e-4)
    assert np.allclose(fit.bse, reference.bse, rtol=1e-3)
    assert fit.loglike >= reference.llf - 1e-6
    truth = {"a_1": 0.7, "a_2": 1.4, "b_y": -0.9}
    for name, value in truth.items():
        assert abs(fit.params[name] - value) < 3 * fit.bse[name]


def test_pmse_reports_each_datasets_own_number_of_parameters():
    """A synthetic dataset that fills a cell the original leaves empty has one parameter more (k), and its
    null expectation (k - 1) / (8 N) is its own (N = 200 stacked records)."""
    original = pd.DataFrame({"a": ["x"] * 50 + ["y"] * 50, "b": ["p"] * 30 + ["q"] * 70})
    first = original.assign(synthetic=1)
    first.loc[0, "b"] = "q"  # (x, q) exists in the original
    second = original.assign(synthetic=2)
    second.loc[60, "b"] = "p"  # (y, p) does not
    figures = pmse(original, pd.concat([first, second]), ["a", "b"], synthesized=["b"])
    assert figures["per_dataset"]["parameters"] == [5, 6]
    assert figures["per_dataset"]["null_expectation"] == pytest.approx([4 / 1600, 5 / 1600], rel=1e-12)
    assert figures["null_expectation"] == pytest.approx(4.5 / 1600, rel=1e-12)
    ratios = np.array(figures["per_dataset"]["pmse"]) / np.array([4 / 1600, 5 / 1600])
    assert figures["per_dataset"]["ratio"] == pytest.approx(ratios, rel=1e-12)
