"""The DPMPM synthesizer (``bayessdc.models.dpmpm.synthesizer``): recovery, the gate, synthesis and risk hooks."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayessdc.models.base import stack_draws
from bayessdc.models.dpmpm import (
    DPMPMSynthesizer,
    GibbsSettings,
    build_model,
    model_hyperparameters,
    prepare_categorical,
    run_gibbs,
    simulate_latent_class,
)
from bayessdc.models.sampling import check_convergence
from bayessdc.synthesis.datasets import draw_synthetic

# ---------------------------------------------------------------------------------------------------
# Recovery


LEVELS = [3, 4, 3, 4, 3, 5]
RECOVERY_SETTINGS = GibbsSettings(draws=8000, burn=1000, chains=2, thin=4)


@pytest.fixture(scope="module")
def recovery():
    frame, truth = simulate_latent_class(3000, LEVELS, [0.5, 0.3, 0.2], seed=3, concentration=0.3)
    data = prepare_categorical(frame, ["x5"], ["x0", "x1", "x2", "x3", "x4"])
    synth = DPMPMSynthesizer(K=20, settings=RECOVERY_SETTINGS)
    idata = synth.fit(data, seed=11)
    return frame, truth, data, synth, idata


def test_recovers_cell_probabilities_and_passes_the_gate(recovery):
    frame, truth, data, synth, idata = recovery
    report = synth.check(idata, data)
    assert report.passed, report.problems()
    post = stack_draws(idata.posterior).isel(sample=slice(None, None, 10))
    pi = post["pi"].transpose("sample", "component").to_numpy()
    th = [post[f"theta_{v}"].transpose("sample", "component", f"{v}_level").to_numpy() for v in data.variables]
    joint = np.einsum("sk,ska,skb,skc,skd,ske,skf->sabcdef", pi, *th).mean(axis=0)
    # variables are ordered kept first (x0 .. x4) then synthesized (x5), as in the truth
    tv_model = 0.5 * np.abs(joint - truth["cell_probability"]).sum()
    empirical = np.zeros_like(joint)
    np.add.at(empirical, tuple(data.codes.T), 1.0 / data.n_records)
    tv_empirical = 0.5 * np.abs(empirical - truth["cell_probability"]).sum()
    assert tv_model < 0.1
    assert tv_model < tv_empirical / 2  # pooling through the latent classes beats the raw table
    marginal = post["marginal_x5"].mean("sample").to_numpy()
    assert np.allclose(marginal, truth["cell_probability"].sum(axis=(0, 1, 2, 3, 4)), atol=0.02)
    assert np.allclose(marginal, (post["theta_x5"] * post["pi"]).sum("component").mean("sample"), atol=1e-12)


def test_occupied_components_follow_the_number_of_true_classes(recovery):
    _, _, _, synth, idata = recovery
    few = idata.posterior["occupied"].to_numpy()
    frame, _ = simulate_latent_class(3000, LEVELS, np.ones(10), seed=3, concentration=0.3)
    data = prepare_categorical(frame, ["x5"], ["x0", "x1", "x2", "x3", "x4"])
    many = synth.fit(data, seed=12)
    # three true classes: three or four occupied; ten true classes: clearly more
    assert np.quantile(few, 0.9) <= 5 and np.median(many.posterior["occupied"].to_numpy()) >= 8
    assert float(idata.posterior["alpha"].mean()) < float(many.posterior["alpha"].mean())


def test_same_seed_same_posterior(recovery):
    _, _, data, _, idata = recovery
    synth = DPMPMSynthesizer(K=20, settings=RECOVERY_SETTINGS)
    again = synth.fit(data, seed=11)
    assert np.array_equal(again.posterior["alpha"], idata.posterior["alpha"])
    # chains in threads or one after another: the same draws
    hyper = model_hyperparameters(build_model(data, K=20), data)
    short = GibbsSettings(draws=200, burn=50, chains=2, thin=1)
    one, two = run_gibbs(data, hyper, short, 5, cores=1), run_gibbs(data, hyper, short, 5, cores=2)
    assert np.array_equal(one["theta"], two["theta"]) and not np.array_equal(one["alpha"][0], one["alpha"][1])


def test_the_gate_monitors_the_convergence_quantities(recovery):
    """One return type for the gate's quantities: what the group runner passes as ``derived`` gives the
    synthesizer's own verdict, with the same figures as the posterior variables monitored by name."""
    _, _, data, synth, idata = recovery
    quantities = synth.convergence_quantities(idata, data)
    assert list(quantities) == ["alpha", "occupied", "marginal_x5", "conditional_x5"]
    assert all(isinstance(q, xr.DataArray) and {"chain", "draw"} <= set(q.dims) for q in quantities.values())
    report = synth.check(idata, data)
    assert check_convergence(idata, synth.criteria, var_names=[], derived=quantities) == report
    by_name = check_convergence(
        idata,
        synth.criteria,
        var_names=["alpha", "occupied", "marginal_x5"],
        derived={"conditional_x5": quantities["conditional_x5"]},
    )
    assert by_name == report


# ---------------------------------------------------------------------------------------------------
# Synthesis conditionals, worked by hand on a fixed draw


def _fixed_posterior(data):
    """One posterior draw, K = 2: component 0 prefers a=0 and g=0, component 1 a=1 and g=2."""
    pi = np.array([0.6, 0.4])
    theta_a = np.array([[0.9, 0.1], [0.2, 0.8]])
    theta_g = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    return (
        xr.Dataset(
            {
                "pi": (("sample", "component"), pi[None]),
                "theta_a": (("sample", "component", "a_level"), theta_a[None]),
                "theta_g": (("sample", "component", "g_level"), theta_g[None]),
            },
            coords={"sample": [0], "component": [0, 1]},
        ),
        pi,
        theta_a,
        theta_g,
    )


def _hand_data(n_copies):
    frame = pd.DataFrame({"a": [0, 1, 0] * n_copies, "g": [0, 2, 1] * n_copies})
    return prepare_categorical(frame, ["g"], ["a"])


def _expected(conditioning, a, g, pi, theta_a, theta_g):
    if conditioning == "full":
        w = pi * theta_a[:, a] * theta_g[:, g]
    elif conditioning == "pattern":
        w = pi * theta_a[:, a]
    else:
        w = pi.copy()
    w = w / w.sum()
    return w @ theta_g


@pytest.mark.parametrize("conditioning", ["full", "pattern", "prior"])
def test_synthetic_values_follow_the_chosen_conditional(conditioning):
    data = _hand_data(20_000)
    posterior, pi, ta, tg = _fixed_posterior(data)
    synth = DPMPMSynthesizer(K=2, conditioning=conditioning)
    codes = synth.synthesize_codes(posterior, data, np.random.default_rng(5))[0]
    assert np.array_equal(codes[:, 0], data.codes[:, 0])  # kept values never change
    for record in (0, 1):
        a, g = data.codes[record]
        got = np.bincount(codes[record::3, 1], minlength=3) / 20_000
        assert np.allclose(got, _expected(conditioning, a, g, pi, ta, tg), atol=0.012)


def test_candidate_and_release_log_probabilities_by_hand():
    data = _hand_data(1)
    posterior, pi, ta, tg = _fixed_posterior(data)
    released = xr.DataArray([[1, 0, 2]], dims=("synthetic", "item"))
    for conditioning in ("full", "pattern", "prior"):
        synth = DPMPMSynthesizer(K=2, conditioning=conditioning)
        lp = synth.candidate_log_prob(posterior, data).sel(sample=0)
        rel = synth.release_log_prob(posterior, data, released).sel(synthetic=0, sample=0)
        for item in (0, 1):
            a = data.codes[item, 0]
            assert np.allclose(np.exp(lp.isel(item=item)), _expected("pattern", a, None, pi, ta, tg))
            for c in range(3):
                want = _expected(conditioning, a, c, pi, ta, tg)[int(released[0, item])]
                assert float(np.exp(rel.isel(item=item, candidate=c))) == pytest.approx(want)


def test_draw_synthetic_works_through_the_contract(recovery):
    _, _, data, synth, idata = recovery
    values = draw_synthetic(synth, idata, data, m=3, rng=np.random.default_rng(1))
    assert values.sizes == {"synthetic": 3, "item": data.n_records}
    observed = synth.observed(data).to_numpy()
    assert set(np.unique(values)) <= set(synth.candidates(data).to_numpy())
    agreement = (values.to_numpy() == observed).mean()
    assert 0.1 < agreement < 0.95  # synthesized, not copied


def test_several_synthesized_variables_use_one_class_per_record():
    frame, _ = simulate_latent_class(1500, [2, 3, 4], [0.5, 0.5], seed=8, concentration=0.3)
    data = prepare_categorical(frame, ["x1", "x2"], ["x0"])
    synth = DPMPMSynthesizer(K=8, settings=GibbsSettings(draws=300, burn=200, chains=2, thin=1))
    idata = synth.fit(data, seed=2)
    values = draw_synthetic(synth, idata, data, m=2, rng=np.random.default_rng(3))
    assert int(values.max()) < 12 and synth.candidates(data).size == 12
    post = stack_draws(idata.posterior).isel(sample=[0, 5])
    lp = synth.candidate_log_prob(post, data)
    assert np.allclose(np.exp(lp).sum("candidate"), 1.0)


def test_label_attribute_risk_with_pattern_conditioning_is_eq_8(recovery):
    from bayessdc.risk.attribute import attribute_risk
    from bayessdc.risk.identification import label_attribute_risk

    _, _, data, _, idata = recovery
    pattern = DPMPMSynthesizer(K=20, conditioning="pattern")
    values = draw_synthetic(pattern, idata, data, m=2, rng=np.random.default_rng(4))
    post = stack_draws(idata.posterior).isel(sample=slice(0, None, 20))
    rows = np.arange(60)
    records, summary = label_attribute_risk(pattern, post, data, values, rows, chunk_size=25)
    # pattern conditioning: the release term does not depend on the true value, so eq. 8 as written applies
    direct = attribute_risk(
        pattern.candidate_log_prob(post, data.take(rows)), pattern.observed(data.take(rows)), values.isel(item=rows)
    )
    assert np.allclose(records["true_probability"], direct["true_probability"], rtol=1e-10)
    assert summary["records_assessed"] == 60 and 0 < summary["mean_true_probability"] < 1
    # full conditioning: released labels lean towards the true one, so the intruder learns more on average
    full = DPMPMSynthesizer(K=20, conditioning="full")
    values = draw_synthetic(full, idata, data, m=5, rng=np.random.default_rng(5))
    _, full_summary = label_attribute_risk(full, post, data, values, rows)
    values = draw_synthetic(pattern, idata, data, m=5, rng=np.random.default_rng(5))
    _, pattern_summary = label_attribute_risk(pattern, post, data, values, rows)
    assert full_summary["mean_true_probability"] > pattern_summary["mean_true_probability"]


@pytest.mark.parametrize("copies", [1, 400])
def test_several_synthesized_variables_share_each_records_class_and_records_get_a_random_assignment(copies):
    """Component 0 puts g and h on {0, 1}, component 1 on {2, 3}: a record never mixes the two, and within a
    cell (large: counts by binomials and shuffles; single records: one draw each) the values land at random."""
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"a": np.zeros(50, int), "g": rng.integers(0, 4, 50), "h": rng.integers(0, 4, 50)})
    frame = pd.concat([base] * copies, ignore_index=True)
    data = prepare_categorical(frame, ["g", "h"], ["a"])
    half = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
    posterior = xr.Dataset(
        {
            "pi": (("sample", "component"), np.array([[0.3, 0.7]])),
            "theta_a": (("sample", "component", "a_level"), np.ones((1, 2, 1))),
            "theta_g": (("sample", "component", "g_level"), half[None]),
            "theta_h": (("sample", "component", "h_level"), half[None]),
        },
        coords={"sample": [0], "component": [0, 1]},
    )
    synth = DPMPMSynthesizer(K=2, conditioning="pattern")
    draws = [synth.synthesize_codes(posterior, data, np.random.default_rng(s))[0] for s in range(200 // copies + 1)]
    codes = np.concatenate(draws)
    g, h = codes[:, 1], codes[:, 2]
    assert np.all((g < 2) == (h < 2))  # one class per record for both variables
    assert (g < 2).mean() == pytest.approx(0.3, abs=0.01)
    joint = np.bincount(4 * g + h, minlength=16).reshape(4, 4) / len(g)
    assert np.allclose(joint[:2, :2], 0.3 / 4, atol=0.01) and np.allclose(joint[2:, 2:], 0.7 / 4, atol=0.01)
    # records of one cell: neighbours in the file are independent (not written class block by class block)
    first = draws[0]
    same = (first[:-50, 1] < 2) == (first[50:, 1] < 2)  # the same cell, 50 rows apart
    if copies > 1:
        assert same.mean() == pytest.approx(0.3**2 + 0.7**2, abs=0.03)
    again = synth.synthesize_codes(posterior, data, np.random.default_rng(0))[0]
    assert np.array_equal(again, draws[0])  # same seed, same synthetic data


def test_recovers_a_latent_class_model_from_large_cells():
    """200,000 records in at most 60 cells of a few thousand records each: every allocation goes through the
    binomial path of the multinomial draw; the fitted cell probabilities match the truth to sampling error."""
    frame, truth = simulate_latent_class(200_000, [3, 4, 5], [0.5, 0.3, 0.2], seed=21, concentration=0.5)
    data = prepare_categorical(frame, ["x2"], ["x0", "x1"])
    assert data.cell_counts.min() > 8 or len(data.cell_counts) <= 60
    synth = DPMPMSynthesizer(K=10, settings=GibbsSettings(draws=1500, burn=500, chains=2, thin=3))
    idata = synth.fit(data, seed=4)
    post = stack_draws(idata.posterior)
    pi = post["pi"].transpose("sample", "component").to_numpy()
    th = [post[f"theta_{v}"].transpose("sample", "component", f"{v}_level").to_numpy() for v in data.variables]
    joint = np.einsum("sk,ska,skb,skc->sabc", pi, *th).mean(axis=0)
    empirical = np.zeros_like(joint)
    np.add.at(empirical, tuple(data.codes.T), 1.0 / data.n_records)
    # the model's cell probabilities are as close to the truth as the raw table (both off by sampling error
    # only, about 0.5 * sum sqrt(p / n) ~ 0.01 in total variation); a biased allocation would show up here
    tv_model = 0.5 * np.abs(joint - truth["cell_probability"]).sum()
    tv_empirical = 0.5 * np.abs(empirical - truth["cell_probability"]).sum()
    assert tv_model < 1.5 * tv_empirical + 0.002 and tv_empirical < 0.02
    assert 0.5 * np.abs(joint - empirical).sum() < 0.01


def test_pattern_conditionals_by_hand():
    """p(county | pattern) from one posterior draw, against a loop over components written from eq. (1-2)."""
    frame = pd.DataFrame({"g": [1, 1, 2, 2, 2, 1, 2], "a": [1, 2, 1, 1, 2, 2, 2], "county": [1, 2, 3, 1, 2, 3, 3]})
    data = prepare_categorical(frame, ["county"], ["g", "a"])
    synth = DPMPMSynthesizer(K=3, settings=GibbsSettings(draws=3, burn=2, chains=2, thin=1))
    idata = synth.fit(data, seed=1)
    conditional = synth.pattern_conditionals(idata, data, min_records=2)["county"]
    # patterns with at least two records: (g=1, a=2) and (g=2, a=1), (g=2, a=2)
    assert list(conditional["pattern"].values) == ["g=1, a=2", "g=2, a=1", "g=2, a=2"]
    post = idata.posterior.isel(chain=1, draw=2)
    pi = post["pi"].values
    for b, (g, a) in enumerate([(1, 2), (2, 1), (2, 2)]):
        theta_g = post["theta_g"].sel(g_level=g).values
        theta_a = post["theta_a"].sel(a_level=a).values
        w = np.array([pi[k] * theta_g[k] * theta_a[k] for k in range(3)])
        expected = (w[:, None] * post["theta_county"].values).sum(axis=0) / w.sum()
        assert np.allclose(conditional.isel(chain=1, draw=2, pattern=b).values, expected, rtol=1e-10)



@pytest.mark.parametrize("copies", [1, 40])  # single draws per group; large groups counted by binomials
@pytest.mark.parametrize("synthesize", [["g"], ["g", "h"]])
def test_cell_counts_are_the_records_values_counted(copies, synthesize):
    """For a dataset of one cell, the counts drawn from a generator are exactly the counts of the records' values
    drawn from the same generator state (the same draws, without the assignment to records)."""
    n = 60 * copies
    frame = pd.DataFrame({"a": np.zeros(n, int), "g": np.zeros(n, int), "h": np.zeros(n, int)})
    frame.loc[:3, ["g", "h"]] = [[1, 2], [2, 1], [3, 3], [3, 0]]  # every level in the coding, then one cell
    keep = ["a"] + [c for c in ("h",) if c not in synthesize]
    data = prepare_categorical(frame, synthesize, keep).take(np.arange(4, n))
    assert len(data.cell_counts) == 1
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
    theta = {v: np.repeat(probs[None], 4, axis=0) if v in synthesize else np.ones((4, 2, 4)) for v in ("g", "h")}
    posterior = xr.Dataset(
        {"pi": (("sample", "component"), np.array([[0.35, 0.65]] * 4)),
         "theta_a": (("sample", "component", "a_level"), np.ones((4, 2, 1))),
         **{f"theta_{v}": (("sample", "component", f"{v}_level"), t) for v, t in theta.items()}},
        coords={"sample": np.arange(4), "component": [0, 1]},
    )  # fmt: skip
    synth = DPMPMSynthesizer(K=2, conditioning="pattern")
    counted = synth.synthesized_cell_counts(posterior, data, np.random.default_rng(11))
    size = 4 ** len(synthesize)
    assert counted.counts.shape == (4, 1, size) and np.array_equal(counted.records, [n - 4])
    for s in range(4):  # each draw from its own generator: the records' assignment draws after the values
        one = posterior.isel(sample=[s])
        values = synth.posterior_predictive(one, data, np.random.default_rng(s)).to_numpy()[0]
        counts = synth.synthesized_cell_counts(one, data, np.random.default_rng(s)).counts[0, 0]
        assert np.array_equal(counts, np.bincount(values, minlength=size))
    assert {v: list(codes) for v, (_, codes) in counted.values.items()} == {
        v: list(part)
        for v, part in zip(synthesize, np.unravel_index(np.arange(size), (4,) * len(synthesize)), strict=True)
    }


@pytest.mark.parametrize("conditioning", ["full", "pattern"])
def test_cell_counts_follow_each_cells_conditional(conditioning):
    """Many draws: each cell's mean counts are its records times p(g | its conditioning values), eq. (1)."""
    data = _hand_data(2_000)
    posterior, pi, ta, tg = _fixed_posterior(data)
    synth = DPMPMSynthesizer(K=2, conditioning=conditioning)
    draws = np.concatenate(
        [synth.synthesized_cell_counts(posterior, data, np.random.default_rng(s)).counts for s in range(30)]
    )
    assert np.all(draws.sum(axis=2) == data.cell_counts)  # every record once
    for c, (a, g) in enumerate(data.cell_codes):
        expected = data.cell_counts[c] * _expected(conditioning, a, g, pi, ta, tg)
        sd = np.sqrt(expected * (1 - expected / data.cell_counts[c]) / len(draws))
        assert np.all(np.abs(draws[:, c].mean(axis=0) - expected) < 5 * sd), (c, draws[:, c].mean(axis=0), expected)
