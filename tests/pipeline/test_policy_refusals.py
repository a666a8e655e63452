"""Every synthesizer, and CTA, judged by the same policy code: a policy its bundled example cannot meet refuses
the release (nothing in ``release/``), and the refusal names the criterion, the figure and the levers."""

import json

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.models.dpmpm import GibbsSettings, simulate_latent_class
from bayessdc.models.spatial import simulate_spatial


def _policy(tmp_path, measure, threshold, statistic="pooled", name="unmeetable", subset="*"):
    path = tmp_path / f"{measure}.toml"
    path.write_text(
        f'[policy]\nname = "{name}"\n\n[[criterion]]\nmeasure = "{measure}"\nstatistic = "{statistic}"\n'
        f'subset = "{subset}"\nat_most = {threshold}\n'
    )
    return path


def _refused(tmp_path, frame, recipe, measure, threshold, **options):
    out = tmp_path / "out"
    with pytest.raises(bsd.DisclosureRefused) as err:
        bsd.synthesize(frame, recipe, m=3, seed=1, out=out, policy=_policy(tmp_path, measure, threshold),
                       progress=False, **options)  # fmt: skip
    assert not (out / "release").exists()
    verdict = json.loads((out / "private" / "policy.json").read_text())
    assert verdict["passed"] is False and verdict["policy"]["name"] == "unmeetable"
    assert f"{measure} [" in str(err.value) and f"'at most {threshold}'" in str(err.value)
    return err.value


def _categorical_table():
    frame, _ = simulate_latent_class(200, [2, 4, 30], [0.5, 0.3, 0.2], seed=3, concentration=0.4)
    frame = frame.rename(columns={"x0": "gender", "x1": "age", "x2": "county"})
    frame["county"] = "c" + frame["county"].astype(str)
    return frame


def test_dpmpm_tries_each_conditioning_before_refusing(tmp_path):
    recipe = bsd.DPMPM(K=6, known=[["gender", "age", "county"]], repetitions=5, risk_records=0,
                       settings=GibbsSettings(draws=400, burn=100, chains=8, thin=2))  # fmt: skip
    err = _refused(tmp_path, _categorical_table(), recipe, "expected_match_risk", 0,
                   synthesize="county", keep="gender,age", allow_unconverged=True)  # fmt: skip
    assert [v.setting for v in err.tried] == [{}, {"conditioning": "pattern"}, {"conditioning": "prior"}]
    recorded = json.loads((tmp_path / "out" / "private" / "policy.json").read_text())
    assert recorded["setting"] == {"conditioning": "prior"}
    assert [v["setting"] for v in recorded["tried"]] == [{}, {"conditioning": "pattern"}]
    assert all(v.failed()[0].figure > 0 for v in err.tried)
    assert "settings tried from the same posterior: the run's settings, conditioning = pattern, " in str(err)
    assert "conditioning: draw each record's latent class given its kept values only" in str(err)


def test_dp_areal_refused(tmp_path):
    recipe = bsd.DPAreal(K=5, known=[["gender", "county"]], repetitions=5,
                         settings=bsd.DPArealGibbsSettings(draws=100, burn=150, thin=2, chains=4),
                         gate=bsd.ReleaseGatePolicy(datasets_per_chain=5))  # fmt: skip
    err = _refused(tmp_path, _categorical_table(), recipe, "attribute_disclosures", 0,
                   synthesize="county", keep="gender,age", allow_unconverged=True)  # fmt: skip
    assert len(err.tried) == 1  # the DP-areal has no lever without a refit
    assert "keep: fewer or coarser kept columns" in str(err)


def test_flows_refused(tmp_path):
    err = _refused(tmp_path, bsd.examples.flow_table(n_states=2, counties_per_state=8), bsd.Flows(),
                   "intruder_correct", 0, allow_unconverged=True)  # fmt: skip
    assert err.verdict.failed()[0].subset == "all items"
    assert "upper: a wider sensitive range" in str(err)


def test_spatial_refused(tmp_path):
    frame, _ = simulate_spatial(40, seed=5)
    recipe = bsd.Spatial(response="response", coords=("x", "y"), covariates=["d1", "d2"],
                         settings=bsd.SamplerSettings(draws=150, tune=150, chains=2, target_accept=0.95))  # fmt: skip
    err = _refused(tmp_path, frame, recipe, "proximity", -1, allow_unconverged=True)
    assert {j.subset for j in err.verdict.failed()} <= {
        "at-risk records", "other records", "at-risk records, absolute band", "other records, absolute band"
    }
    assert "gamma: a smaller global risk parameter" in str(err)


def test_cta_refused(tmp_path):
    policy = _policy(tmp_path, "unprotected_cells", -1, statistic="worst")
    result = bsd.adjust(bsd.examples.cox_table(), "row,column", "value", protection="protection",
                        settings=bsd.AdjustmentSettings(integer=True), policy=policy)  # fmt: skip
    assert result.policy.failed()[0].figure == 0  # every cell protected, but the policy asks for the impossible
    with pytest.raises(bsd.DisclosureRefused, match="unprotected_cells"):
        result.save(tmp_path / "out")
    assert not (tmp_path / "out" / "release").exists()
    assert json.loads((tmp_path / "out" / "private" / "policy.json").read_text())["passed"] is False


def test_the_default_policy_releases_the_cta_example(tmp_path):
    integer = bsd.AdjustmentSettings(integer=True)
    result = bsd.adjust(bsd.examples.cox_table(), "row,column", "value", protection="protection", settings=integer)
    assert result.policy.passed and result.policy.judgements[0].figure == 0
    result.save(tmp_path / "out")
    model = json.loads((tmp_path / "out" / "release" / "model.json").read_text())
    assert model["disclosure_policy"]["name"] == "bayessdc-default"


def test_measure_tables_have_one_shape(tmp_path):
    """The CTA and a categorical measure set give the same columns."""
    integer = bsd.AdjustmentSettings(integer=True)
    result = bsd.adjust(bsd.examples.cox_table(), "row,column", "value", protection="protection", settings=integer)
    table = result.measured.summary()
    assert list(table.columns[:9]) == ["measure", "kind", "subset", "datasets", "pooled", "mc_se", "lower",
                                       "upper", "worst"]  # fmt: skip
    assert isinstance(table, pd.DataFrame) and np.isfinite(table["pooled"]).all()


def test_cart_replicated_uniques_removed_without_a_refit_when_a_criterion_asks(tmp_path):
    """A criterion on replicated uniques: the pipeline removes them (synthpop's rule) before judging, and releases
    the rest; under a policy without one, nothing is removed."""
    from bayessdc.models.cart import simulate_acs_persons
    from bayessdc.risk.copies import replicated_uniques

    data = simulate_acs_persons(300, seed=2)
    policy = _policy(tmp_path, "replicated_uniques", 0, statistic="worst", name="no replicated uniques",
                     subset="unique in both")  # synthpop's rule, which its removal meets
    recipe = bsd.CART(bootstrap=10)
    kept = bsd.synthesize(data, recipe, synthesize="education,marital", keep="age,sex", m=3, seed=1,
                          policy=policy, out=tmp_path / "out", progress=False)  # fmt: skip
    plain = bsd.synthesize(data, recipe, synthesize="education,marital", keep="age,sex", m=3, seed=1,
                           policy=bsd.Policy(name="judges nothing", criteria=()), progress=False)  # fmt: skip
    columns = ["age", "sex", "education", "marital"]
    before = replicated_uniques(data[columns], plain.synthetic, columns)["replicated_unique_in_both"]
    assert before.sum() > 0  # the example's CART release replicates some uniques
    assert kept.policy.passed and kept.policy.setting == {}  # removed before judging: the run's own settings
    assert len(kept.synthetic) == len(plain.synthetic) - before.sum() == 3 * len(data) - before.sum()
    assert kept.facts["replicated_uniques_removed"] == before.sum() and "replicated_uniques_removed" not in plain.facts
    after = replicated_uniques(data[columns], kept.synthetic, columns)["replicated_unique_in_both"]
    assert after.sum() == 0
    model = json.loads((tmp_path / "out" / "release" / "model.json").read_text())
    assert model["disclosure_policy"]["released_under"] == {}
    released = pd.read_parquet(tmp_path / "out" / "release" / "synthetic.parquet")
    assert len(released) == len(kept.synthetic)
