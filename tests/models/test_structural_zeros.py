"""Structural zeros of the categorical synthesizers (``bayessdc.models.structural_zeros``) and the bad input of
issue 34 for them: rules refused before fitting, numeric columns with many values, missing values.

Cheap by design: the DPMPM's rejection is checked on a hand-made posterior draw against exact enumeration and on
one tiny fit; the DP-areal model's exclusion of impossible cells on hand-made parameters (no NUTS fit).
"""

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.models.cart.rules import RuleError
from bayessdc.models.categorical import CategoricalDataError, prepare_categorical
from bayessdc.models.dp_areal import DPArealSynthesizer, prepare_areal
from bayessdc.models.dpmpm import DPMPMSynthesizer, GibbsSettings
from bayessdc.models.structural_zeros import allowed_records, check_structural_zeros, read_structural_zeros
from bayessdc.synthesis.datasets import draw_synthetic

#: a = 0 makes g = 0 impossible; the hand-made posterior puts most of a = 0's mass on g = 0.
NO_G0 = [{"name": "no g=0 when a=0", "if": {"a": 0}, "then": {"g": {"not_in": [0]}}}]
PI = np.array([0.6, 0.4])
THETA_A = np.array([[0.9, 0.1], [0.2, 0.8]])
THETA_G = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])


def _hand(copies):
    frame = pd.DataFrame({"a": [0, 1, 0, 1] * copies, "g": [1, 2, 2, 0] * copies})
    data = prepare_categorical(frame, ["g"], ["a"])
    posterior = xr.Dataset(
        {
            "pi": (("sample", "component"), PI[None]),
            "theta_a": (("sample", "component", "a_level"), THETA_A[None]),
            "theta_g": (("sample", "component", "g_level"), THETA_G[None]),
        },
        coords={"sample": [0], "component": [0, 1]},
    )
    return frame, data, posterior


def _allowed_probabilities(conditioning, a, g):
    """p(g~ | conditioning values) of the untruncated draw, then restricted to the allowed g~ and renormalised."""
    w = PI * THETA_A[:, a] * (THETA_G[:, g] if conditioning == "full" else 1.0)
    if conditioning == "prior":
        w = PI.copy()
    p = (w / w.sum()) @ THETA_G
    if a == 0:
        p[0] = 0.0
    return p / p.sum()


@pytest.mark.parametrize("conditioning", ["full", "pattern", "prior"])
def test_dpmpm_rejection_releases_no_impossible_record_and_keeps_the_allowed_proportions(conditioning):
    copies = 20_000
    _, data, posterior = _hand(copies)
    rules = tuple(check_structural_zeros(read_structural_zeros(NO_G0), data))
    synth = DPMPMSynthesizer(K=2, conditioning=conditioning, structural_zeros=rules)
    codes = synth.synthesize_codes(posterior, data, np.random.default_rng(5))[0]
    assert np.array_equal(codes[:, 0], data.codes[:, 0])  # kept values never change
    assert allowed_records(rules, data, codes).all()
    assert not ((codes[:, 0] == 0) & (codes[:, 1] == 0)).any()  # the same, said directly
    for record in (0, 2):  # the two a = 0 records, true g = 1 and g = 2
        a, g = data.codes[record]
        got = np.bincount(codes[record::4, 1], minlength=3) / copies
        assert np.allclose(got, _allowed_probabilities(conditioning, a, g), atol=0.012)
    # the a = 1 records are untouched by the rule: the untruncated conditional
    a, g = data.codes[1]
    want = _allowed_probabilities(conditioning, a, g)
    assert np.allclose(np.bincount(codes[1::4, 1], minlength=3) / copies, want, atol=0.012)
    # the rejection rate: about half of the a = 0 records' first draws are g = 0
    drawn, rejected = synth.rejections["drawn"], synth.rejections["rejected"]
    assert drawn == data.n_records + rejected and 0.15 < rejected / drawn < 0.6
    described = synth.describe()["structural_zeros"]
    assert described["rules"][0]["name"] == "no g=0 when a=0" and "rejection" in described["method"]
    assert described["rejection_rate"] == pytest.approx(rejected / drawn)
    # the same stream gives the same release
    again = DPMPMSynthesizer(K=2, conditioning=conditioning, structural_zeros=rules)
    assert np.array_equal(again.synthesize_codes(posterior, data, np.random.default_rng(5))[0], codes)


@pytest.mark.parametrize("conditioning", ["full", "pattern", "prior"])
def test_the_release_likelihood_of_the_risk_is_that_of_the_rejection(conditioning):
    _, data, posterior = _hand(1)
    rules = tuple(check_structural_zeros(read_structural_zeros(NO_G0), data))
    synth = DPMPMSynthesizer(K=2, conditioning=conditioning, structural_zeros=rules)
    released = xr.DataArray([[1, 0, 2, 2]], dims=("synthetic", "item"))
    got = np.exp(synth.release_log_prob(posterior, data, released).sel(synthetic=0, sample=0).to_numpy())
    for item in range(4):
        a = data.codes[item, 0]
        for c in range(3):
            want = _allowed_probabilities(conditioning, a, c)[int(released[0, item])]
            assert got[item, c] == pytest.approx(want)


def test_dpmpm_fit_and_draws_never_release_an_impossible_record():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, 400)
    g = np.where(a == 0, rng.integers(1, 3, 400), rng.integers(0, 3, 400))
    data = prepare_categorical(pd.DataFrame({"a": a, "g": g}), ["g"], ["a"])
    rules = tuple(check_structural_zeros(read_structural_zeros(NO_G0), data))
    synth = DPMPMSynthesizer(K=3, settings=GibbsSettings(draws=200, burn=50, chains=2, thin=2), structural_zeros=rules)
    idata = synth.fit(data, seed=4)
    values = draw_synthetic(synth, idata, data, m=20, rng=np.random.default_rng(2))
    assert not ((values.to_numpy() == 0) & (data.codes[:, 0] == 0)[None, :]).any()
    assert synth.rejections["rejected"] > 0  # the untruncated model did propose impossible records
    again = draw_synthetic(synth, idata, data, m=20, rng=np.random.default_rng(2))
    assert np.array_equal(values.to_numpy(), again.to_numpy())


def test_dp_areal_leaves_impossible_cells_out_of_the_likelihood_and_never_draws_them():
    frame = pd.DataFrame({"a": [0, 0, 0, 1, 1, 1, 1], "county": [1, 2, 2, 1, 3, 4, 4]})
    rules = [{"name": "a=0 only in counties 1-2", "if": {"a": 0}, "then": {"county": {"in": [1, 2]}}}]
    free = prepare_areal(frame, "county", ["a"])
    data = prepare_areal(frame, "county", ["a"], structural_zeros=read_structural_zeros(rules))
    assert data.possible.tolist() == [[True, True, False, False], [True, True, True, True]]
    # pattern a=0 has two zero-count cells, both impossible: its (a=0, count 0) pair weighs nothing
    zero_pair = data.cell_distinct[0, 2]
    assert free.distinct_weight[zero_pair] == 2 and data.distinct_weight[zero_pair] == 0
    assert data.distinct_weight.sum() == data.possible.sum() == free.distinct_weight.sum() - 2
    # hand-made parameters: 2 components, 2 patterns
    posterior = xr.Dataset(
        {
            "location": (("sample", "component", "pattern"), np.array([[[0.5, 1.0], [2.0, -0.5]]] * 3)),
            "rho": (("sample", "component"), np.array([[0.7, 0.3]] * 3)),
            "tau_lambda": (("sample",), np.array([2.0, 1.0, 4.0])),
        },
        coords={"sample": [0, 1, 2]},
    )
    synth = DPArealSynthesizer(K=2, structural_zeros=tuple(data.structural_zeros))
    probs = synth.label_probabilities(posterior, data, np.random.default_rng(3))
    unconstrained = DPArealSynthesizer(K=2).label_probabilities(posterior, free, np.random.default_rng(3))
    assert (probs[:, 0, 2:] == 0).all()
    # the same log rates (same stream), renormalised over the possible labels: the allowed ratios unchanged
    allowed = unconstrained[:, 0, :2] / unconstrained[:, 0, :2].sum(axis=1, keepdims=True)
    assert np.allclose(probs[:, 0, :2], allowed) and np.allclose(probs[:, 1], unconstrained[:, 1])
    many = xr.Dataset({k: v.isel(sample=[0] * 400) for k, v in posterior.items()}).assign_coords(sample=range(400))
    labels = synth.posterior_predictive(many, data, np.random.default_rng(4)).to_numpy()
    assert not np.isin(labels[:, data.pattern_of_record == 0], [2, 3]).any()
    assert "truncated model" in synth.describe()["structural_zeros"]["method"]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"name": "bad level", "if": {"a": 0}, "then": {"g": {"not_in": [7]}}}, r"rule 'bad level': 7 is not a value"),
        ({"name": "bad column", "if": {"zip": 0}, "then": {"g": 1}}, r"rule 'bad column' names column 'zip'"),
        ({"name": "a bound", "then": {"g": {"max": 1}}}, r"rule 'a bound'.*categorical.*band"),
        ({"name": "broken", "if": {"a": 1}, "then": {"g": {"not_in": [0]}}}, r"'broken' is violated.*data rows 4, 8"),
    ],
)
@pytest.mark.parametrize("recipe", [bsd.DPMPM, bsd.DPAreal])
def test_bad_rules_are_refused_before_any_fitting_naming_the_rule(recipe, rule, message):
    frame, _, _ = _hand(2)
    with pytest.raises((RuleError, CategoricalDataError), match=message):
        recipe(structural_zeros=[rule]).prepare(frame, ["g"], ["a"])


def test_the_rules_are_recorded_in_the_run_identity(tmp_path):
    frame, _, _ = _hand(2)
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": NO_G0}))
    for recipe in (bsd.DPMPM, bsd.DPAreal):
        prepared = recipe(structural_zeros=path).prepare(frame, ["g"], ["a"])
        assert prepared.identity["structural_zeros"] == [
            {"name": "no g=0 when a=0", "if": {"a": {"in": [0]}}, "then": {"g": {"not_in": [0]}}}
        ]
        assert [r.name for r in prepared.structural_zeros] == ["no g=0 when a=0"]


def _incomes():
    rng = np.random.default_rng(0)
    income = np.resize(rng.permutation(np.arange(266) * 250 + 5_000), 600)  # dollars: 266 values, 5,000 .. 71,250
    return pd.DataFrame({"gender": rng.integers(1, 3, 600), "income": income, "county": rng.integers(1, 134, 600)})


@pytest.mark.parametrize("recipe", [bsd.DPMPM, bsd.DPAreal])
def test_a_numeric_column_with_many_values_is_refused_with_how_to_band_it(recipe):
    frame = _incomes()
    n = frame["income"].nunique()
    for roles in ((["county"], ["gender", "income"]), (["income"], ["gender"])):
        with pytest.raises(CategoricalDataError, match=rf"'income' is numeric with {n} distinct values.*qcut"):
            recipe().prepare(frame, *roles)
    # county codes 1..133 are a label, not a measurement; banded incomes pass; so do incomes as labels
    recipe().prepare(frame.assign(income=pd.qcut(frame["income"], 10).astype(str)), ["county"], ["gender", "income"])
    recipe(max_numeric_levels=None).prepare(frame, ["county"], ["gender", "income"])


@pytest.mark.parametrize("recipe", [bsd.DPMPM, bsd.DPAreal])
def test_missing_values_are_refused_with_the_reason_or_kept_as_a_level(recipe):
    frame = pd.DataFrame({"a": [0, 1, 0, 1, np.nan, 1], "g": ["x", "y", None, "y", "x", "x"]})
    with pytest.raises(CategoricalDataError, match=r"'a' has 1 missing value.*data row 5.*missing=level"):
        recipe().prepare(frame, ["g"], ["a"])  # kept column
    with pytest.raises(CategoricalDataError, match=r"'g' has 1 missing value.*data row 3.*missing=level"):
        recipe().prepare(frame.assign(a=frame["a"].fillna(0)), ["g"], ["a"])  # synthesized column
    prepared = recipe(missing="level").prepare(frame, ["g"], ["a"])  # a level of its own, kept and synthesized
    assert "<missing>" in set(prepared.original["a"]) and "<missing>" in set(prepared.original["g"])


def test_the_command_line_takes_rules_and_refuses_a_bad_one_before_fitting(tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("fitted")

    monkeypatch.setattr(bsd.DPMPM, "fit", refuse)
    frame, _, _ = _hand(3)
    frame.to_csv(tmp_path / "t.csv", index=False)
    bad = [{"name": "unknown level", "if": {"a": 0}, "then": {"g": {"not_in": [9]}}}]
    (tmp_path / "rules.json").write_text(json.dumps(bad))
    argv = ["dpmpm", "--data", str(tmp_path / "t.csv"), "--synthesize", "g", "--keep", "a", "--quiet"]
    assert main([*argv, "--rules", str(tmp_path / "rules.json"), "--out", str(tmp_path / "o")]) == 2
    assert "rule 'unknown level': 9 is not a value of column 'g'" in capsys.readouterr().err
    _incomes().to_csv(tmp_path / "i.csv", index=False)
    argv = ["dpmpm", "--data", str(tmp_path / "i.csv"), "--synthesize", "county", "--keep", "gender,income"]
    assert main([*argv, "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "'income' is numeric with 266 distinct values" in err and "--max-numeric-levels" in err
    assert not (tmp_path / "o").exists()


def test_no_dpmpm_cell_counts_under_structural_zeros():
    """The release gate's counts per cell skip the rejection of records, so under structural zeros there are none
    (the gate draws records)."""
    _, data, posterior = _hand(10)
    rules = tuple(check_structural_zeros(read_structural_zeros(NO_G0), data))
    synth = DPMPMSynthesizer(K=2, structural_zeros=rules)
    assert synth.synthesized_cell_counts(posterior, data, np.random.default_rng(0)) is None
    assert DPMPMSynthesizer(K=2).synthesized_cell_counts(posterior, data, np.random.default_rng(0)) is not None
