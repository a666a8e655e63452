import numpy as np
import pytest

from bayessdc.synthesis.datasets import choose_draws, draw_synthetic, group_seed
from tests.conjugate import DirichletSynthesizer


def test_draws_are_spaced_as_far_apart_as_possible():
    positions = choose_draws(4, 1000, 5, np.random.default_rng(0))
    assert len(set(positions)) == 5
    assert np.all(np.diff(positions) == 800)
    assert positions.min() >= 0 and positions.max() < 4000
    # with m <= chains every dataset comes from a different chain
    assert len(set(choose_draws(4, 1000, 4, np.random.default_rng(1)) // 1000)) == 4


def test_too_many_datasets_are_refused():
    with pytest.raises(ValueError, match="posterior draws"):
        choose_draws(1, 3, 4, np.random.default_rng(0))


def test_each_dataset_comes_from_one_posterior_draw():
    synth = DirichletSynthesizer(alpha=np.ones(3), chains=2, draws=50)
    data = np.array([0, 1, 2, 2, 2, 1] * 50)
    idata = synth.fit(data, seed=0)
    synthetic = draw_synthetic(synth, idata, data, 4, np.random.default_rng(3))
    assert synthetic.dims == ("synthetic", "item")
    assert list(synthetic["synthetic"].to_numpy()) == [1, 2, 3, 4]
    assert len(set(synthetic["posterior_draw"].to_numpy())) == 4
    # 300 draws per dataset from that draw's probabilities: close to the draw's theta
    theta = idata.posterior["theta"].stack(s=("chain", "draw")).transpose("s", ...).to_numpy()
    for k, position in enumerate(synthetic["posterior_draw"].to_numpy()):
        share = np.bincount(synthetic.isel(synthetic=k).to_numpy(), minlength=3) / 300
        assert np.abs(share - theta[position]).max() < 0.1


def test_same_seed_same_datasets_and_group_seeds_depend_on_name_only():
    synth = DirichletSynthesizer(alpha=np.ones(3), chains=2, draws=50)
    data = np.array([0, 1, 2] * 10)
    idata = synth.fit(data, seed=0)
    a = draw_synthetic(synth, idata, data, 3, np.random.default_rng(group_seed(7, "A")))
    b = draw_synthetic(synth, idata, data, 3, np.random.default_rng(group_seed(7, "A")))
    c = draw_synthetic(synth, idata, data, 3, np.random.default_rng(group_seed(7, "B")))
    assert a.equals(b)
    assert not a.equals(c)
