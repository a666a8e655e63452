from dataclasses import dataclass, field

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayessdc.models.sampling import ConvergenceCriteria
from bayessdc.synthesis.output import read_inference_data
from bayessdc.synthesis.runner import GroupResult, GroupTask, run_groups
from tests.conjugate import DirichletSynthesizer


def _groups():
    """Four groups of categories 0..3, category 0 the common one (the uniform prior predictive is far off)."""
    rng = np.random.default_rng(0)
    return [(f"g{k}", rng.choice(4, 30 + 10 * k, p=[0.55, 0.25, 0.15, 0.05])) for k in range(4)]


def _assess(synthesizer, idata, data, synthetic, rng):
    same = (synthetic.to_numpy() == np.asarray(data)).mean(axis=0)
    return pd.DataFrame({"share_equal": same}), {"mean_share_equal": float(same.mean())}


def test_every_group_is_processed_stored_and_resumed(tmp_path):
    synth = DirichletSynthesizer(draws=2000)
    task = GroupTask(synth, tmp_path, m=3, seed=1, assess=_assess)
    results = run_groups(task, _groups(), scheduler="synchronous", progress=None)
    assert [r.name for r in results] == ["g0", "g1", "g2", "g3"]
    assert len(synth.fits) == 4
    alpha = synth.alpha
    zeros, expected, variance, total = 0, 0.0, 0.0, 0
    for (name, data), result in zip(_groups(), results, strict=True):
        synthetic = result.synthetic_values()
        assert synthetic.shape == (3, len(data))
        # the group's stored summary is the assessor's figure on this group's own synthetic values
        same = (synthetic == data).mean(axis=0)
        np.testing.assert_allclose(result.items["share_equal"], same, rtol=0, atol=1e-12)
        assert result.summary["mean_share_equal"] == pytest.approx(same.mean(), abs=1e-12)
        assert result.summary["draws_per_chain"] == 2000 and result.summary["fit_attempts"] == 1
        # the stored posterior is this group's Dirichlet(alpha + counts): its mean within 5 Monte Carlo SEs
        posterior = read_inference_data(tmp_path / f"{name}.posterior.nc").posterior["theta"].to_numpy()
        a = alpha + np.bincount(data, minlength=4)
        mean, sd = a / a.sum(), np.sqrt(a * (a.sum() - a) / (a.sum() ** 2 * (a.sum() + 1)))
        assert (np.abs(posterior.mean(axis=(0, 1)) - mean) < 5 * sd / np.sqrt(posterior[..., 0].size)).all()
        # exact draws: nothing for the gate to object to
        assert result.convergence["max_r_hat"] < 1.01 and result.convergence["divergences"] == 0
        # Dirichlet-multinomial posterior predictive of category 0 in one synthetic dataset of n items:
        # mean n p, variance n p (1 - p) (A + n) / (A + 1), p = a_0 / A, A = sum(a)
        n, p, big_a = len(data), a[0] / a.sum(), a.sum()
        zeros += (synthetic == 0).sum()
        expected += 3 * n * p
        variance += 3 * n * p * (1 - p) * (big_a + n) / (big_a + 1)
        total += 3 * n
    # category 0 is the common one: the synthetic values follow the posterior predictive within 4 standard
    # deviations, a band that leaves out the uniform prior predictive (a quarter of the values)
    assert abs(zeros - expected) < 4 * np.sqrt(variance) < expected - total / 4
    # an interrupted run: one group's marker is gone, so only that group is refitted
    (tmp_path / "g2.json").unlink()
    again = run_groups(task, _groups(), scheduler="synchronous", progress=None)
    assert len(synth.fits) == 5
    for a, b in zip(results, again, strict=True):
        pd.testing.assert_frame_equal(a.items, b.items)  # same seed: same synthetic values
    assert GroupResult.load(tmp_path, "missing") is None


def test_local_dask_cluster_gives_the_same_results(tmp_path):
    serial = run_groups(
        GroupTask(DirichletSynthesizer(draws=300), tmp_path / "a", m=2, seed=4),
        _groups(),
        scheduler="synchronous",
        progress=None,
    )
    seen = []
    parallel = run_groups(
        GroupTask(DirichletSynthesizer(draws=300), tmp_path / "b", m=2, seed=4),
        _groups(),
        workers=2,
        progress=lambda done, total, result, resumed: seen.append((done, total)),
    )
    assert sorted(seen) == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for a, b in zip(serial, parallel, strict=True):
        pd.testing.assert_frame_equal(a.items, b.items)


@dataclass(frozen=True)
class _Settings:
    draws: int = 100
    tune: int = 100
    target_accept: float = 0.8


@dataclass
class _NormalSynthesizer:
    """Exact draws of one normal quantity per chain (ESS about the number of draws), optionally with
    divergences, and a ``continue_fit`` that appends draws (or declines, with ``resumable=False``)."""

    settings: _Settings = field(default_factory=_Settings)
    divergent: int = 0
    resumable: bool = True
    continued_divergent: int = 0
    name: str = "normal"
    calls: list = field(default_factory=list)

    def _draws(self, seed, draws):
        rng = np.random.default_rng(seed)
        diverging = np.zeros((4, draws), dtype=bool)
        diverging.flat[: self.divergent] = True
        return az.from_dict(posterior={"x": rng.normal(size=(4, draws))}, sample_stats={"diverging": diverging})

    def fit(self, data, seed):
        self.calls.append(("fit", self.settings.draws, self.settings.target_accept))
        return self._draws(seed, self.settings.draws)

    def continue_fit(self, idata, data, draws, seed):
        self.calls.append(("continue", draws))
        if not self.resumable:
            return None
        more = self._draws(seed, draws)
        x = np.concatenate([idata.posterior["x"].to_numpy(), more.posterior["x"].to_numpy()], axis=1)
        diverging = np.zeros(x.shape, dtype=bool)
        diverging.flat[: self.continued_divergent] = True
        return az.from_dict(posterior={"x": x}, sample_stats={"diverging": diverging})

    def observed(self, data):
        return xr.DataArray(np.zeros(1), dims="item")

    def posterior_predictive(self, posterior, data, rng):
        return xr.DataArray(posterior["x"].to_numpy()[:, None], dims=("sample", "item"))


@pytest.mark.parametrize(
    ("synthesizer", "calls", "draws", "attempts", "extensions"),
    [
        # ESS of 400 draws misses 600: the chains are continued by 100 draws each and then pass
        (_NormalSynthesizer(), [("fit", 100, 0.8), ("continue", 100)], 200, 2, 2),
        # a synthesizer that cannot continue: refitted with 4x the draws, as before
        (_NormalSynthesizer(resumable=False), [("fit", 100, 0.8), ("continue", 100), ("fit", 400, 0.8)], 400, 2, 2),
        # divergences are not cured by more draws: refitted closer to acceptance 1 (and no continuation)
        (_NormalSynthesizer(divergent=2), [("fit", 100, 0.8), ("fit", 400, 0.9), ("fit", 400, 0.95)], 400, 3, 2),
        # continued chains that diverge: the refit gets the longer chains the first attempt needed as well
        (
            _NormalSynthesizer(continued_divergent=1),
            [("fit", 100, 0.8), ("continue", 100), ("fit", 400, 0.9)],
            400,
            3,
            2,
        ),
        # one extension only: a refit with fresh starts (a stuck chain keeps its mode when continued)
        (_NormalSynthesizer(), [("fit", 100, 0.8), ("fit", 400, 0.8)], 400, 2, 1),
    ],
)
def test_a_group_that_misses_r_hat_or_ess_continues_its_chains_before_a_refit(
    tmp_path, synthesizer, calls, draws, attempts, extensions
):
    criteria = ConvergenceCriteria(min_ess_bulk=600)
    task = GroupTask(synthesizer, tmp_path, m=1, seed=1, criteria=criteria, max_extensions=extensions)
    result = task("g", None)
    assert synthesizer.calls == calls
    assert result.summary["draws_per_chain"] == draws and result.summary["fit_attempts"] == attempts
    assert result.converged is (synthesizer.divergent == 0)
