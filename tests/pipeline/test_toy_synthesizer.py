"""A synthesizer of a few lines goes through the one pipeline unchanged: bsd.synthesize, the measures, the
disclosure policy, the report, save and bsd.load (the acceptance test of the one contract)."""

from __future__ import annotations

from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import bayessdc as bsd
from bayessdc.pipeline import Prepared, Recipe
from bayessdc.synthesis.datasets import stack_datasets
from bayessdc.synthesis.output import fingerprint_frame


@dataclass
class BetaBernoulli:
    """smoker_i ~ Bernoulli(p[group_i]), p_g ~ Beta(a, b): the posterior Beta(a + yes_g, b + no_g), drawn exactly."""

    a: float = 1.0
    b: float = 1.0
    chains: int = 4
    draws: int = 500
    name: str = "beta_bernoulli"

    def fit(self, data: pd.DataFrame, seed: int) -> az.InferenceData:
        counts = data.groupby("group")["smoker"].agg(["sum", "size"])
        p = np.random.default_rng(seed).beta(
            self.a + counts["sum"], self.b + counts["size"] - counts["sum"], size=(self.chains, self.draws, len(counts))
        )
        diverging = np.zeros((self.chains, self.draws), bool)
        return az.from_dict(posterior={"p": p}, sample_stats={"diverging": diverging},
                            coords={"group": counts.index.to_numpy()}, dims={"p": ["group"]})  # fmt: skip

    def convergence_quantities(self, idata, data):
        return {"p": idata.posterior["p"]}

    def observed(self, data):
        return xr.DataArray(data["smoker"].to_numpy(), dims="item")

    def posterior_predictive(self, posterior, data, rng):
        p = posterior["p"].sel(group=xr.DataArray(data["group"].to_numpy(), dims="item")).transpose("sample", "item")
        return (rng.random(p.shape) < p).astype(int)

    def release_frame(self, data, values):
        rows = [data.assign(smoker=values.sel(synthetic=k).to_numpy()) for k in values["synthetic"].to_numpy()]
        return stack_datasets(rows).assign(synthetic=np.repeat(values["synthetic"].to_numpy(), len(data)))

    def describe(self):
        return {"synthesizer": self.name, "model": "smoker ~ Bernoulli(p[group]), p ~ Beta(a, b)",
                "priors": {"a": self.a, "b": self.b}}  # fmt: skip


class Toy(Recipe):
    name = "beta_bernoulli"

    def prepare(self, frame, synthesize, keep, seed=0):
        data = frame[["group", "smoker"]].reset_index(drop=True)
        return Prepared(data, {"synthesizer": self.name, "input": fingerprint_frame(data)})

    def synthesizer(self):
        return BetaBernoulli()


@pytest.fixture(scope="module")
def persons():
    rng = np.random.default_rng(3)
    group = rng.choice(["a", "b", "c"], size=600)
    rate = pd.Series({"a": 0.1, "b": 0.4, "c": 0.7})[group].to_numpy()
    return pd.DataFrame({"group": group, "smoker": (rng.random(600) < rate).astype(int)})


def test_a_toy_synthesizer_runs_through_the_pipeline_measures_policy_report_save_and_load(persons, tmp_path):
    out = tmp_path / "run"
    release = bsd.synthesize(persons, Toy(), m=4, seed=11, out=out, progress=False)

    # the pipeline drew m datasets of the input's rows from the toy's posterior predictive
    assert release.synthesizer == "beta_bernoulli" and release.m == 4
    assert release.synthetic["synthetic"].tolist() == np.repeat([1, 2, 3, 4], len(persons)).tolist()
    for _, dataset in release.synthetic.groupby("synthetic"):
        assert dataset["group"].tolist() == persons["group"].tolist()  # the kept column unchanged
    # the synthetic rates are the posterior predictive's: within 4 standard errors of each group's observed rate
    observed = persons.groupby("group")["smoker"].mean()
    synthetic = release.synthetic.groupby("group")["smoker"].mean()
    n = persons.groupby("group").size() * 4
    assert (abs(synthetic - observed) < 4 * np.sqrt(observed * (1 - observed) * (1 / n + 1 / (n / 4)))).all()
    assert release.diagnostics.passed  # exact posterior draws pass the parameter gate
    # the generic measures apply to it and the default policy judged them
    measured = set(release.risk()["measure"])
    assert {"copied_records", "replicated_uniques"} <= measured
    assert release.policy.passed and release.description["disclosure_policy"]["name"]
    assert release.description["model"].startswith("smoker ~ Bernoulli")
    # the report, and the posterior saved beside it
    report = (out / "private" / "report.html").read_text()
    assert "beta_bernoulli" in report and "records copied from the original" in report
    assert (out / "private" / "posterior.nc").exists()
    # bsd.load gives back the release the run wrote
    loaded = bsd.load(out)
    pd.testing.assert_frame_equal(loaded.synthetic, release.synthetic, check_dtype=False)
    assert loaded.description == release.description
    pd.testing.assert_frame_equal(loaded.risk(), release.risk())
    assert loaded.policy.passed
    # the same seed gives the same release
    again = bsd.synthesize(persons, Toy(), m=4, seed=11, progress=False)
    assert again.synthetic.equals(release.synthetic)


def test_a_policy_refuses_the_toy_release_by_the_same_code(persons):
    strict = bsd.Policy(name="no copies", criteria=(bsd.Criterion("copied_records", statistic="worst", at_most=0.0),))
    with pytest.raises(bsd.DisclosureRefused, match="copied_records"):
        bsd.synthesize(persons, Toy(), m=2, seed=1, policy=strict, progress=False)


class OneChainToy(Toy):
    """The toy drawn in one chain: below the gate's minimum of chains, refused by construction."""

    def synthesizer(self):
        return BetaBernoulli(chains=1)


def test_a_refused_rerun_withdraws_the_release_an_earlier_run_left(persons, tmp_path):
    """Issue 46: released under allow_unconverged, then rerun into the same folder without it (the same run: the
    flag is no part of its identity) and refused: the folder keeps the refusal's private/ and no release/."""
    out = tmp_path / "run"
    bsd.synthesize(persons, OneChainToy(), m=2, seed=5, out=out, allow_unconverged=True, progress=False)
    assert (out / "release" / "synthetic.parquet").exists()
    with pytest.raises(bsd.ConvergenceError):
        bsd.synthesize(persons, OneChainToy(), m=2, seed=5, out=out, progress=False)
    assert not (out / "release").exists()
    assert not [p.name for p in out.iterdir() if p.name.startswith(".release-")]
    assert (out / "private" / "report.html").exists() and (out / "private" / "run.json").exists()
