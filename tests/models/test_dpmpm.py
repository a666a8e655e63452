import numpy as np
import pandas as pd
import pytensor
import pytensor.tensor as pt
import pytest
import xarray as xr

from bayessdc.models.base import stack_draws
from bayessdc.models.dpmpm import (
    CategoricalDataError,
    DPMPMPriors,
    DPMPMSynthesizer,
    GibbsSettings,
    build_model,
    cell_log_likelihood,
    model_hyperparameters,
    prepare_categorical,
    simulate_ce_like,
    simulate_latent_class,
)
from bayessdc.synthesis.datasets import draw_synthetic

# ---------------------------------------------------------------------------------------------------
# Input checks


def _small_frame():
    return pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": ["x", "y", "x", "x", "y"], "g": [10, 11, 10, 12, 11]})


def test_a_column_both_synthesized_and_kept_is_refused():
    with pytest.raises(CategoricalDataError, match="both synthesized and kept"):
        prepare_categorical(_small_frame(), ["g"], ["a", "g"])


def test_continuous_and_many_level_columns_are_refused_with_a_binning_hint():
    frame = _small_frame().assign(income=[1.5, 2.25, 3.0, 4.1, 5.0])
    with pytest.raises(CategoricalDataError, match="continuous.*bin it"):
        prepare_categorical(frame, ["g"], ["a", "income"])
    frame = pd.DataFrame({"g": np.arange(50) % 3, "id": np.arange(50)})
    with pytest.raises(CategoricalDataError, match="50 distinct values, more than 20.*bin"):
        prepare_categorical(frame, ["g"], ["id"], max_levels=20)


def test_missing_values_are_refused_or_become_a_level():
    frame = _small_frame().astype({"b": object})
    frame.loc[3, "b"] = None
    with pytest.raises(CategoricalDataError, match="'b' has 1 missing value.*data rows 4"):
        prepare_categorical(frame, ["g"], ["a", "b"])
    data = prepare_categorical(frame, ["g"], ["a", "b"], missing="level")
    assert "<missing>" in list(data.levels["b"])
    assert data.frame()["b"].tolist() == ["x", "y", "x", "<missing>", "y"]


def test_cells_count_the_distinct_records_and_a_single_record_pattern_is_allowed():
    data = prepare_categorical(_small_frame(), ["g"], ["a", "b"])
    assert data.variables == ("a", "b", "g")
    assert data.cell_counts.sum() == 5
    # (1,x,10) (1,y,11) (2,x,10) (2,x,12) (3,y,11): all distinct; pattern (3, y) has one record
    assert len(data.cell_counts) == 5
    assert np.array_equal(data.cell_codes[data.record_cell], data.codes)
    assert data.frame().equals(_small_frame()[["a", "b", "g"]].astype({"a": data.frame()["a"].dtype}))


# ---------------------------------------------------------------------------------------------------
# The declaration and the sampler agree


def test_model_potential_is_the_record_level_likelihood_and_priors_are_read_back():
    frame, _ = simulate_latent_class(200, [2, 3, 4], [0.5, 0.5], seed=1)
    data = prepare_categorical(frame, ["x2"], ["x0", "x1"])
    priors = DPMPMPriors(a_alpha=0.5, b_alpha=2.0, theta_concentration=0.7)
    model = build_model(data, K=5, priors=priors)
    hyper = model_hyperparameters(model, data)
    assert hyper["K"] == 5 and hyper["a_alpha"] == pytest.approx(0.5) and hyper["b_alpha"] == pytest.approx(2.0)
    assert hyper["beta_a"] == 1.0
    assert all(
        np.allclose(c, 0.7) and c.shape == (5, d)
        for c, d in zip(hyper["theta_concentration"], data.n_levels, strict=True)
    )

    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(5))
    thetas = [rng.dirichlet(np.ones(d), size=5) for d in data.n_levels]
    # record by record: sum_i log sum_k pi_k prod_j theta_k^(j)[x_ij]
    per_record = np.log(
        (pi[None, :] * np.prod([t.T[data.codes[:, j]] for j, t in enumerate(thetas)], axis=0)).sum(axis=1)
    ).sum()
    assert cell_log_likelihood(pi, thetas, data) == pytest.approx(per_record, rel=1e-12)
    # the model's potential at the same point
    beta = pi[:-1] / (1 - np.concatenate([[0.0], np.cumsum(pi[:-2])]))
    values = {"alpha": 1.0, "beta": beta, **{f"theta_{v}": t for v, t in zip(data.variables, thetas, strict=True)}}
    point = {}
    for name, value in values.items():
        rv = model[name]
        transform = model.rvs_to_transforms[rv]
        point[model.rvs_to_values[rv].name] = transform.forward(pt.as_tensor(value), *rv.owner.inputs).eval()
    potential = pytensor.function(
        model.value_vars,
        model.replace_rvs_by_values([model.potentials[0]])[0],
        mode="FAST_COMPILE",
        on_unused_input="ignore",
    )
    assert float(potential(**point)) == pytest.approx(per_record, rel=1e-10)


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
    from bayessdc.models.dpmpm import model_hyperparameters, run_gibbs

    hyper = model_hyperparameters(build_model(data, K=20), data)
    short = GibbsSettings(draws=200, burn=50, chains=2, thin=1)
    one, two = run_gibbs(data, hyper, short, 5, cores=1), run_gibbs(data, hyper, short, 5, cores=2)
    assert np.array_equal(one["theta"], two["theta"]) and not np.array_equal(one["alpha"][0], one["alpha"][1])


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


def test_ce_like_simulator_has_the_papers_design():
    frame = simulate_ce_like(seed=0)
    assert len(frame) == 6208
    sizes = frame.groupby(["gender", "income", "age"]).size()
    assert len(sizes) == 40 and sizes.min() == 3 and (sizes == 3).sum() == 3 and sizes.max() > 300
    assert frame["county"].nunique() == 133
    # the county distribution differs by pattern: the largest pattern's top county share differs from the file's
    top = frame["county"].value_counts(normalize=True)
    biggest = frame.set_index(["gender", "income", "age"]).loc[sizes.idxmax(), "county"].value_counts(normalize=True)
    assert 0.5 * (top - biggest).abs().reindex(top.index, fill_value=0).sum() > 0.2


@pytest.mark.parametrize("alpha_update", ["collapsed", "conditional"])
def test_with_a_flat_likelihood_the_sampler_returns_the_prior(alpha_update):
    """One level per variable: the posterior of alpha and of the partition is the prior (eq. 2-5)."""
    from scipy import stats

    from bayessdc.models.dpmpm import model_hyperparameters, run_gibbs

    n, K = 60, 10
    data = prepare_categorical(pd.DataFrame({"a": np.zeros(n, int), "b": np.zeros(n, int)}), ["b"], ["a"])
    hyper = model_hyperparameters(build_model(data, K=K), data)
    settings = GibbsSettings(draws=60_000, burn=1000, chains=2, thin=5, alpha_update=alpha_update)
    draws = run_gibbs(data, hyper, settings, seed=3)
    # prior by direct simulation: alpha ~ Gamma(0.25, rate 0.25), sticks, n categorical draws
    rng = np.random.default_rng(0)
    alpha = rng.gamma(0.25, 4.0, 20_000)
    beta = np.column_stack([rng.beta(1.0, alpha[:, None], (20_000, K - 1)), np.ones(20_000)])
    pi = beta * np.column_stack([np.ones(20_000), np.cumprod(1 - beta[:, :-1], axis=1)])
    cdf = np.cumsum(pi, axis=1)
    z = (rng.random((20_000, n, 1)) * cdf[:, None, -1:] > cdf[:, None, :]).sum(axis=2)
    occupied = np.array([len(np.unique(row)) for row in z])
    for k in (1, 2, K):
        assert (draws["occupied"] == k).mean() == pytest.approx((occupied == k).mean(), abs=0.035)
    # alpha below the prior's median half of the time, within 4 Monte Carlo standard errors (from the ESS of
    # the indicator: the alpha | sticks update mixes about three times slower than the collapsed one)
    import arviz as az

    below = (draws["alpha"] < stats.gamma(0.25, scale=4.0).median()).astype(float)
    assert abs(below.mean() - 0.5) < 4 * np.sqrt(0.25 / float(az.ess(below)))
    assert np.median(draws["alpha"]) == pytest.approx(stats.gamma(0.25, scale=4.0).median(), rel=0.5)


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


# ---------------------------------------------------------------------------------------------------
# The compiled draws the sampler and the synthesis rest on


@pytest.mark.parametrize(
    "n, p",
    [(7, 0.3), (40, 0.5), (200, 0.3), (200, 0.85), (5000, 0.4), (100_003, 0.01), (18_000, 0.9995), (1, 0.5)],
)
def test_binomial_draws_follow_the_binomial_distribution(n, p):
    """Inversion (n min(p, 1-p) <= 30) and BTPE (above, every region of its envelope) against the pmf."""
    from scipy import stats

    from bayessdc.models.dpmpm import _draw_binomials

    size = 200_000
    x = _draw_binomials(np.full(size, n, dtype=np.int64), np.full(size, p), 17)
    sd = np.sqrt(n * p * (1 - p))
    assert abs(x.mean() - n * p) < 4 * sd / np.sqrt(size)
    assert x.var() / sd**2 == pytest.approx(1.0, abs=0.02)
    values, observed = np.unique(x, return_counts=True)
    expected = stats.binom.pmf(values, n, p) * size
    keep = expected > 10
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3
    assert observed[~keep].sum() < 10 + 4 * np.sqrt(expected[~keep].sum() + 1) + expected[~keep].sum()


@pytest.mark.parametrize("n", [1, 5, 8, 9, 60, 3000])
def test_multinomial_draws_have_the_multinomial_mean_and_covariance(n):
    """Conditional binomials largest-first, then single draws for the last few trials: exact, any n."""
    from bayessdc.models.dpmpm import _draw_multinomials

    weights = np.array([0.0, 3.0, 0.02, 1.0, 0.3, 0.3, 0.004, 2.0, 0.0, 0.5])  # not normalised, some zero
    p = weights / weights.sum()
    size = 100_000
    x = _draw_multinomials(n, weights, size, 8, 5)
    assert np.all(x.sum(axis=1) == n) and np.all(x[:, weights == 0] == 0)
    cov = n * (np.diag(p) - np.outer(p, p))
    se = np.sqrt(np.maximum(np.diag(cov), 1e-12) / size)
    assert np.all(np.abs(x.mean(axis=0) - n * p) < 4.5 * se)
    # every covariance within 5 of its Monte Carlo standard errors (estimated from the products themselves)
    centred = x - x.mean(axis=0)
    products = centred[:, :, None] * centred[:, None, :]
    se_cov = products.std(axis=0) / np.sqrt(size)
    positive = np.ix_(weights > 0, weights > 0)
    assert np.all(np.abs(products.mean(axis=0) - cov)[positive] < 5 * se_cov[positive] + 1e-12)


def test_multinomial_draws_have_the_multinomial_distribution():
    """Every outcome of Multinomial(12, p) over 3 components at its pmf (the tail path and the head path)."""
    from scipy import stats

    from bayessdc.models.dpmpm import _draw_multinomials

    p = np.array([0.5, 0.3, 0.2])
    size = 200_000
    for small in (1, 4, 20):
        x = _draw_multinomials(12, p, size, small, 9)
        outcomes, observed = np.unique(x, axis=0, return_counts=True)
        expected = stats.multinomial.pmf(outcomes, 12, p) * size
        keep = expected > 10
        chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
        assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3, small


def test_cells_are_the_sorted_distinct_rows_whichever_the_counting_path():
    from bayessdc.models.dpmpm import _cells

    rng = np.random.default_rng(0)
    for shape, n in (([3, 4, 5], 1000), ([3, 1000, 1000], 400), ([2], 3)):
        codes = rng.integers(0, shape, size=(n, len(shape)))
        expected = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        got = _cells(codes, shape)
        for e, g in zip(expected, got, strict=True):
            assert np.array_equal(e.ravel(), np.asarray(g).ravel())


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


def test_label_swap_ratio_is_the_change_of_the_allocation_probability():
    from bayessdc.models.dpmpm import _log_allocation_prob, _swap_log_ratio

    rng = np.random.default_rng(4)
    for _ in range(200):
        K = int(rng.integers(2, 12))
        n_k = rng.integers(0, 50, K) * (rng.random(K) < 0.7)
        j, l = rng.choice(K, 2, replace=False)
        alpha = float(rng.gamma(1.0, 2.0))
        swapped = n_k.copy()
        swapped[[j, l]] = swapped[[l, j]]
        full = _log_allocation_prob(swapped, alpha, 1.0) - _log_allocation_prob(n_k, alpha, 1.0)
        assert _swap_log_ratio(n_k, int(j), int(l), alpha, 1.0) == pytest.approx(full, abs=1e-9)


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


def _occupied_by_enumeration(data, K: int, alpha: float, power: float = 1.0) -> np.ndarray:
    """Posterior of the number of occupied components by summing over all K^n allocations (sticks and theta
    integrated out, flat Dirichlet priors; the likelihood to ``power``: ``Gamma(1 + power c)`` terms)."""
    import itertools

    from scipy.special import betaln, gammaln

    probability = np.zeros(K + 1)
    for z in itertools.product(range(K), repeat=data.n_records):
        z = np.array(z)
        n_k = np.bincount(z, minlength=K)
        tail = n_k[::-1].cumsum()[::-1] - n_k  # records in later components
        log_w = sum(betaln(1 + n_k[k], alpha + tail[k]) - betaln(1, alpha) for k in range(K - 1))
        for j, d in enumerate(data.n_levels):
            for k in range(K):
                c = np.bincount(data.codes[z == k, j], minlength=d)
                log_w += gammaln(d) - gammaln(d + power * c.sum()) + gammaln(1.0 + power * c).sum()
        probability[len(np.unique(z))] += np.exp(log_w)
    return probability / probability.sum()


@pytest.mark.parametrize(
    ("exchange_moves", "label_swaps", "split_merge_moves", "pattern_moves"),
    [(0, True, 0, 0), (2, True, 0, 0), (3, False, 0, 0), (0, False, 20, 0), (0, False, 0, 3)],
)
def test_number_of_occupied_components_matches_the_exact_posterior_by_enumeration(
    exchange_moves, label_swaps, split_merge_moves, pattern_moves
):
    """Seven records, K = 3, alpha pinned near 1 by its prior: the posterior of the partition (sticks and theta
    integrated out) by summing over all 3^7 allocations, against the sampler (allocations, label swaps,
    level exchanges, collapsed alpha, sticks, theta). Dropping the stick factor from the exchange's acceptance
    ratio moves these probabilities by 0.08-0.35; dropping the 1 / E of choosing the empty component from the
    split-merge ratio moves them by up to 0.18 (K = 4). The pattern exchanges are the level exchange on the
    cells of one value of ``a``."""

    from bayessdc.models.dpmpm import model_hyperparameters, run_gibbs

    frame = pd.DataFrame({"a": [0, 0, 0, 1, 1, 0, 1], "b": [0, 0, 1, 1, 1, 1, 2]})
    data = prepare_categorical(frame, ["b"], ["a"])
    K = 3
    probability = _occupied_by_enumeration(data, K, alpha=1.0)
    priors = DPMPMPriors(a_alpha=20_000.0, b_alpha=20_000.0)
    hyper = model_hyperparameters(build_model(data, K=K, priors=priors), data)
    settings = GibbsSettings(
        draws=300_000,
        burn=1000,
        chains=2,
        thin=1,
        exchange_moves=exchange_moves,
        label_swaps=label_swaps,
        split_merge_moves=split_merge_moves,
        pattern_moves=pattern_moves,
    )
    draws = run_gibbs(data, hyper, settings, seed=8)
    occupied = np.bincount(draws["occupied"].ravel(), minlength=K + 1) / draws["occupied"].size
    assert np.allclose(occupied, probability, atol=0.006), (occupied, probability)


def test_power_posterior_matches_enumeration():
    """The sampler at ``likelihood_power`` 0.4 against the power posterior by enumeration (seven records, K = 3):
    theta integrated out of ``prod theta^(0.4 c)`` gives ``Gamma(1 + 0.4 c)`` terms. At power 1 the same sums
    give other probabilities (checked here too), so a sampler that ignored the power would fail."""

    from bayessdc.models.dpmpm import model_hyperparameters, run_gibbs

    frame = pd.DataFrame({"a": [0, 0, 0, 1, 1, 0, 1], "b": [0, 0, 1, 1, 1, 1, 2]})
    data = prepare_categorical(frame, ["b"], ["a"])
    K = 3
    tempered = _occupied_by_enumeration(data, K, alpha=1.0, power=0.4)
    assert np.abs(tempered - _occupied_by_enumeration(data, K, alpha=1.0)).max() > 0.05
    hyper = model_hyperparameters(build_model(data, K=K, priors=DPMPMPriors(a_alpha=20_000.0, b_alpha=20_000.0)), data)
    # exchange moves are requested and must be skipped (their ratio is written for power 1)
    settings = GibbsSettings(draws=300_000, burn=1000, chains=2, thin=1, exchange_moves=2, likelihood_power=0.4)
    draws = run_gibbs(data, hyper, settings, seed=3)
    occupied = np.bincount(draws["occupied"].ravel(), minlength=K + 1) / draws["occupied"].size
    assert np.allclose(occupied, tempered, atol=0.006), (occupied, tempered)
    with pytest.raises(ValueError, match="likelihood_power"):
        GibbsSettings(likelihood_power=0.0)
    with pytest.raises(ValueError, match="must not feed a release"):
        DPMPMSynthesizer(settings=GibbsSettings(likelihood_power=0.5))


def test_split_merge_moves_keep_the_exact_posterior_with_a_large_cell():
    """A cell of ten records (above the small-cell threshold: one multinomial draw, the split-merge then
    splits it record by record) and three single records, K = 4: the posterior of the number of occupied
    components by summing over every allocation of the cells' counts (multinomial coefficients included),
    against a sampler driven mainly by split-merge moves (no level exchanges, no label swaps)."""
    import itertools

    from scipy.special import betaln, gammaln

    from bayessdc.models.dpmpm import SMALL_CELL, model_hyperparameters, run_gibbs

    frame = pd.DataFrame({"a": [0] * 10 + [1, 1, 0], "b": [0] * 10 + [1, 2, 2]})
    data = prepare_categorical(frame, ["b"], ["a"])
    assert data.cell_counts.max() > SMALL_CELL
    K, alpha = 4, 1.0

    def compositions(n, k):
        for cut in itertools.combinations(range(n + k - 1), k - 1):
            bounds = (-1, *cut, n + k - 1)
            yield np.array([bounds[i + 1] - bounds[i] - 1 for i in range(k)])

    probability = np.zeros(K + 1)
    for allocation in itertools.product(*[list(compositions(int(n), K)) for n in data.cell_counts]):
        allocation = np.array(allocation)  # (cell, component)
        n_k = allocation.sum(axis=0)
        tail = n_k[::-1].cumsum()[::-1] - n_k
        log_w = sum(betaln(1 + n_k[k], alpha + tail[k]) - betaln(1, alpha) for k in range(K - 1))
        log_w += sum(gammaln(n + 1) - gammaln(a + 1).sum() for n, a in zip(data.cell_counts, allocation, strict=True))
        for j, d in enumerate(data.n_levels):
            for k in range(K):
                c = np.bincount(data.cell_codes[:, j], weights=allocation[:, k], minlength=d)
                log_w += gammaln(d) - gammaln(d + c.sum()) + gammaln(1.0 + c).sum()
        probability[(n_k > 0).sum()] += np.exp(log_w)
    probability /= probability.sum()
    priors = DPMPMPriors(a_alpha=20_000.0, b_alpha=20_000.0)
    hyper = model_hyperparameters(build_model(data, K=K, priors=priors), data)
    settings = GibbsSettings(
        draws=200_000, burn=1000, chains=2, thin=1, exchange_moves=0, label_swaps=False, split_merge_moves=10
    )
    draws = run_gibbs(data, hyper, settings, seed=4)
    occupied = np.bincount(draws["occupied"].ravel(), minlength=K + 1) / draws["occupied"].size
    assert np.allclose(occupied, probability, atol=0.006), (occupied, probability)


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
