"""The contract: every synthesizer through the same pipeline on a tiny example, with the same guarantees.

One parametrized test per property, so that a synthesizer that breaks the contract fails by name. The
examples are tiny and the samplers short: the gate need not pass (``allow_unconverged``), the properties
below hold whatever the posterior.
"""

from __future__ import annotations

import json

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import bayessdc as bsd
from bayessdc.models.base import FIT_ATTRS, Synthesizer
from bayessdc.models.dp_areal import simulate_areal
from bayessdc.models.dpmpm import GibbsSettings, simulate_latent_class
from bayessdc.models.flows import simulate_group
from bayessdc.models.spatial import SpatialPriors, SpatialSynthesizer, simulate_spatial

M, SEED = 3, 11
#: The properties below hold whatever the posterior and whatever a policy decides on such tiny examples, so each
#: release is judged by a policy that reports every figure and judges none (verdicts are tested in test_policy.py
#: and test_policy_refusals.py): the default policy's verdict on 200 records, m = 3 and 3 inherent repetitions
#: turns on one or two matched records and changes with the random stream.
REPORT_ONLY = bsd.Policy(name="contract: every figure reported, none judged", criteria=())


def _flows() -> tuple[pd.DataFrame, bsd.Recipe, dict]:
    frames = []
    for k, key in enumerate((("A", "B"), ("B", "A"))):
        group, _ = simulate_group(6, 6, 25, seed=k, mu=0.9, key=key)
        frames.append(
            pd.DataFrame(
                {
                    "origin": [f"{key[0]}-{o}" for o in group.origins[group.origin_index]],
                    "destination": [f"{key[1]}-{d}" for d in group.destinations[group.destination_index]],
                    "origin_group": key[0],
                    "destination_group": key[1],
                    "count": group.y + 1,
                }
            )
        )
    big = pd.DataFrame({"origin": ["A-o000"], "destination": ["A-o001"], "origin_group": ["A"],
                        "destination_group": ["A"], "count": [40]})  # fmt: skip
    settings = bsd.SamplerSettings(draws=150, tune=150, chains=2, low_rank_mass_matrix=True)
    recipe = bsd.Flows(settings=settings, risk_draws=100, max_extensions=0, scheduler="synchronous")
    return pd.concat([*frames, big], ignore_index=True), recipe, {}


def _spatial() -> tuple[pd.DataFrame, bsd.Recipe, dict]:
    frame, _ = simulate_spatial(30, seed=2)
    settings = bsd.SamplerSettings(draws=150, tune=150, chains=2, target_accept=0.95)
    return frame, bsd.Spatial(coords=("x", "y"), settings=settings), {"synthesize": ["response"], "keep": ["d1"]}


def _dpmpm() -> tuple[pd.DataFrame, bsd.Recipe, dict]:
    frame, _ = simulate_latent_class(200, [2, 3, 6], [0.5, 0.5], seed=1)
    recipe = bsd.DPMPM(K=5, settings=GibbsSettings(draws=300, burn=100, chains=2, thin=2), repetitions=3,
                       risk_records=10, risk_draws=20)  # fmt: skip
    return frame, recipe, {"synthesize": ["x2"], "keep": ["x0", "x1"]}


def _dp_areal() -> tuple[pd.DataFrame, bsd.Recipe, dict]:
    frame, _ = simulate_areal(50, (2, 3), tau_lambda=4.0, seed=7)  # the CLI test's table and K
    settings = bsd.DPArealGibbsSettings(draws=100, burn=100, thin=2, chains=2)
    # the gate's datasets each from a draw of their own: 50 per chain of the 100 kept
    recipe = bsd.DPAreal(K=8, settings=settings, repetitions=3, gate=bsd.ReleaseGatePolicy(datasets_per_chain=50))
    return frame, recipe, {"synthesize": ["label"], "keep": ["v0", "v1"]}


def _cart() -> tuple[pd.DataFrame, bsd.Recipe, dict]:
    frame = bsd.examples.acs_persons(300, seed=4)
    recipe = bsd.CART(rules=bsd.examples.acs_rules(), bootstrap=20)
    roles = {"synthesize": ["enrolled", "grade", "education", "marital"], "keep": ["age", "sex", "relationship"]}
    return frame, recipe, roles


EXAMPLES = {"flows": _flows, "spatial": _spatial, "dpmpm": _dpmpm, "dp_areal": _dp_areal, "cart": _cart}


@pytest.fixture(scope="module", params=list(EXAMPLES))
def run(request, tmp_path_factory):
    frame, recipe, roles = EXAMPLES[request.param]()
    release = bsd.synthesize(frame, recipe, **roles, m=M, seed=SEED, allow_unconverged=True, policy=REPORT_ONLY,
                             progress=False)  # fmt: skip
    out = release.save(tmp_path_factory.mktemp(request.param) / "out")
    return request.param, frame, recipe, roles, release, out


def _released_columns(name: str, frame: pd.DataFrame, roles: dict) -> list[str]:
    if name in ("flows", "spatial"):
        return list(frame.columns)
    return [c for c in frame.columns if c in roles["keep"] + roles["synthesize"]]


def test_the_release_stacks_m_datasets_of_the_input_rows(run):
    name, frame, _, roles, release, _ = run
    synthetic = release.synthetic
    assert synthetic.columns[0] == "synthetic"
    assert synthetic["synthetic"].tolist() == np.repeat(np.arange(1, M + 1), len(frame)).tolist()
    assert set(synthetic.columns[1:]) == set(_released_columns(name, frame, roles))


def test_only_the_synthesized_values_change(run):
    name, frame, recipe, roles, release, _ = run
    synthesized = ["count"] if name == "flows" else roles["synthesize"]
    unchanged = [c for c in release.synthetic.columns[1:] if c not in synthesized]
    for _, dataset in release.synthetic.groupby("synthetic"):
        dataset = dataset.reset_index(drop=True)
        for column in unchanged:  # values, whatever the dtype the synthesizer releases them in
            assert dataset[column].astype(object).tolist() == frame[column].astype(object).tolist(), column
    if name == "flows":  # counts outside 1..9 pass through; the sensitive ones stay in 1..9
        sensitive = frame["count"].between(recipe.lower, recipe.upper).to_numpy()
        for _, dataset in release.synthetic.groupby("synthetic"):
            counts = dataset["count"].to_numpy()
            assert (counts[~sensitive] == frame["count"].to_numpy()[~sensitive]).all()
            assert counts[sensitive].min() >= recipe.lower and counts[sensitive].max() <= recipe.upper


def test_save_writes_exactly_the_release_and_it_is_the_object_in_memory(run):
    _, _, _, _, release, out = run
    assert sorted(p.name for p in (out / "release").iterdir()) == ["model.json", "synthetic.parquet"]
    pd.testing.assert_frame_equal(pd.read_parquet(out / "release" / "synthetic.parquet"), release.synthetic)
    model = json.loads((out / "release" / "model.json").read_text())
    assert model["m"] == M and model["seed"] == SEED and model["allow_unconverged"] is True
    assert (out / "private" / "diagnostics.json").exists()
    assert json.loads((out / "private" / "diagnostics.json").read_text())["allow_unconverged"] is True


def test_posterior_synthesizers_honour_the_contract(run):
    name, _, _, _, release, _ = run
    if name == "cart":  # no posterior draws: the trees and the Bayesian bootstrap in the leaves
        assert release.diagnostics.posteriors == {} and release.diagnostics.passed
        return
    assert len(release.diagnostics.posteriors) >= 1
    for idata in release.diagnostics.posteriors.values():
        assert isinstance(idata, az.InferenceData)
        assert {"chain", "draw"} <= set(idata.posterior.dims)
        missing = [k for k in FIT_ATTRS if k not in idata.attrs]
        assert not missing, f"{name}: idata.attrs lacks {missing}"
        assert isinstance(json.loads(idata.attrs["sampler_settings"]), dict)  # JSON, read back by any tool


def test_the_gate_quantities_have_one_type(run):
    name, frame, recipe, roles, release, _ = run
    if name == "cart":
        pytest.skip("CART has no posterior draws to gate")
    prepared = recipe.prepare(frame, roles.get("synthesize"), roles.get("keep"), SEED)
    if name == "spatial":  # two stages; the first is the unrestricted model
        synthesizer = SpatialSynthesizer(SpatialPriors(), recipe.settings)
    else:
        synthesizer = recipe.synthesizer()
    assert isinstance(synthesizer, Synthesizer)
    data = prepared.groups[0] if name == "flows" else prepared.data
    idata = next(iter(release.diagnostics.posteriors.values()))
    quantities = synthesizer.convergence_quantities(idata, data)
    assert isinstance(quantities, dict) and quantities
    for value in quantities.values():
        assert isinstance(value, xr.DataArray) and {"chain", "draw"} <= set(value.dims)


def test_every_synthesizer_gives_its_measures_in_one_table_shape(run):
    name, _, _, _, release, _ = run
    from bayessdc.measures import SUMMARY_COLUMNS

    risk, utility = release.risk(), release.utility()
    for table, kind in ((risk, "risk"), (utility, "utility")):
        assert list(table.columns[: len(SUMMARY_COLUMNS)]) == list(SUMMARY_COLUMNS)
        assert len(table) and set(table["kind"]) == {kind}
        assert np.isfinite(table["pooled"].to_numpy(float)).any()
    expected = {"flows": "intruder_correct", "spatial": "proximity", "dpmpm": "expected_match_risk",
                "dp_areal": "expected_match_risk", "cart": "copied_records"}  # fmt: skip
    assert expected[name] in set(risk["measure"])
    assert release.policy.policy.name == REPORT_ONLY.name and release.policy.judgements == []
    assert set(release.policy.reported) == set(release.measured)  # every figure reported, none judged
    with pytest.raises(bsd.NotApplicableError, match="got no_such_option"):
        release.risk(no_such_option=1)


def test_diagnostics_share_one_schema(run):
    name, _, _, _, release, out = run
    written = json.loads((out / "private" / "diagnostics.json").read_text())
    gate = written["parameter_gate"]
    assert gate["passed"] == release.diagnostics.passed and written["allow_unconverged"] is True
    assert gate["criteria"] == {"max_r_hat": 1.01, "min_ess_bulk": 400.0, "max_divergences": 0}
    assert set(gate["fits"]) == set(release.diagnostics.posteriors)
    for report in gate["fits"].values():
        assert {"max_r_hat", "min_ess_bulk", "divergences", "passed"} <= set(report)
    assert gate["passed"] == all(r["passed"] for r in gate["fits"].values())

