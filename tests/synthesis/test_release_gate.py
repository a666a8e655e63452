"""The release gate (``bayessdc.synthesis.release_gate``): figures worked by hand, verdicts, chains needed."""

import math

import numpy as np
import pandas as pd
import pytest

from bayessdc.synthesis.release_gate import ReleaseGatePolicy, between_chain_summary, judge_release


def test_between_chain_summary_by_hand():
    # chains 0..3 with means 1, 2, 3, 4 (two datasets each, values mean -/+ 1: within variance 2)
    values = np.array([0, 2, 1, 3, 2, 4, 3, 5], dtype=float)
    chain = np.repeat(np.arange(4), 2)
    s = between_chain_summary(values, chain)
    # pooled 2.5; B = var(1, 2, 3, 4; ddof 1) = 5/3; SE = sqrt(B / 4)
    assert s["pooled"] == pytest.approx(2.5)
    assert s["between_chain_se"] == pytest.approx(math.sqrt(5 / 3 / 4))
    assert s["per_dataset_sd"] == pytest.approx(math.sqrt(2.0))
    assert s["chains"] == 4


def test_undefined_values_are_left_out_and_too_few_chains_are_not_judged():
    values = np.array([np.nan, np.nan, 1.0, 3.0, 5.0, np.nan])
    chain = np.array([0, 0, 1, 1, 2, 2])
    s = between_chain_summary(values, chain)
    assert s["chains"] == 2 and s["pooled"] == pytest.approx((2.0 + 5.0) / 2)
    assert between_chain_summary(np.array([1.0, np.nan]), np.array([0, 1]))["between_chain_se"] is None


def _frame(chain_means, per_chain=10, spread=1.0, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for c, mu in enumerate(chain_means):
        noise = rng.standard_normal(per_chain)
        noise = (noise - noise.mean()) / noise.std(ddof=1) * spread  # chain mean exactly mu, sd exactly spread
        rows += [{"chain": c, "utility": mu + e, "risk": 10 * mu + e} for e in noise]
    return pd.DataFrame(rows)


def test_agreeing_chains_pass_and_a_chain_in_another_regime_fails_with_the_chains_needed():
    policy = ReleaseGatePolicy(datasets_per_chain=10, risk_tolerance=0.02, utility_tolerance=0.1)
    kinds = {"utility": ("utility", None), "risk": ("risk", 100.0)}
    agree = judge_release(_frame([0.0, 0.01, -0.01, 0.0]), kinds, policy)
    assert agree.passed and agree.problems() == []
    # one chain of four 1 sd away: chain means 0, 0, 0, 1 -> B = 0.25, SE = sqrt(0.25 / 4) = 0.25 > 0.1 sd
    stuck = judge_release(_frame([0.0, 0.0, 0.0, 1.0]), kinds, policy)
    figure = stuck.figures["utility"]
    assert not stuck.passed and stuck.failed() == ["utility", "risk"]
    assert figure["between_chain_se"] == pytest.approx(0.25)
    assert figure["tolerance"] == pytest.approx(0.1)
    # SE falls as 1/sqrt(C): C (SE / tol)^2 = 4 x 6.25 = 25 chains
    assert figure["chains_needed"] == 25
    # the risk figure: chain means 0, 0, 0, 10 -> SE 2.5 against 2% of a range of 100 = 2 -> 4 x 1.5625 = 7 chains
    assert stuck.figures["risk"]["tolerance"] == pytest.approx(2.0)
    assert stuck.figures["risk"]["tolerance_rule"] == "inherent range"
    assert stuck.figures["risk"]["chains_needed"] == 7
    assert stuck.chains_needed() == 25
    assert any("utility: between-chain SE 0.25 > tolerance 0.1" in p and "25 chains" in p for p in stuck.problems())
    written = stuck.to_dict()
    assert written["passed"] is False and written["chains"] == 4 and set(written["figures"]) == {"utility", "risk"}
    assert {"pooled", "between_chain_se", "tolerance"} <= set(written["figures"]["risk"])


def test_a_risk_figure_with_a_narrow_inherent_range_is_judged_by_its_per_dataset_sd():
    policy = ReleaseGatePolicy(datasets_per_chain=10)
    report = judge_release(_frame([0.0, 0.0, 0.0, 0.0], spread=2.0), {"risk": ("risk", 1.0)}, policy)
    # 2% of 1 = 0.02 is below 0.1 x sd = 0.2: the floor applies
    assert report.figures["risk"]["tolerance"] == pytest.approx(0.2)
    assert report.figures["risk"]["tolerance_rule"].startswith("per-dataset sd")


def test_fewer_than_four_chains_or_any_divergence_fails():
    policy = ReleaseGatePolicy(datasets_per_chain=10)
    kinds = {"utility": ("utility", None)}
    assert not judge_release(_frame([0.0, 0.0, 0.0]), kinds, policy).passed
    diverged = judge_release(_frame([0.0] * 4), kinds, policy, divergences=2)
    assert not diverged.passed and diverged.failed() == [] and "2 divergent" in diverged.problems()[0]


def test_policy_checks_and_states_itself():
    with pytest.raises(ValueError, match="at least 2 datasets"):
        ReleaseGatePolicy(datasets_per_chain=1)
    with pytest.raises(ValueError, match="risk_tolerance"):
        ReleaseGatePolicy(risk_tolerance=0)
    stated = ReleaseGatePolicy().describe(chains=8, divergences=True)
    assert stated["chains"] == 8 and "0.02" in stated["risk_tolerance"] and "divergences" in stated
