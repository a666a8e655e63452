import numpy as np
import pandas as pd

from bayessdc.synthesis.runner import GroupResult, GroupTask, run_groups
from tests.conjugate import DirichletSynthesizer


def _groups():
    rng = np.random.default_rng(0)
    return [(f"g{k}", rng.integers(0, 4, 30 + 10 * k)) for k in range(4)]


def _assess(synthesizer, idata, data, synthetic, rng):
    same = (synthetic.to_numpy() == np.asarray(data)).mean(axis=0)
    return pd.DataFrame({"share_equal": same}), {"mean_share_equal": float(same.mean())}


def test_every_group_is_processed_stored_and_resumed(tmp_path):
    synth = DirichletSynthesizer(draws=2000)
    task = GroupTask(synth, tmp_path, m=3, seed=1, assess=_assess)
    results = run_groups(task, _groups(), scheduler="synchronous", progress=None)
    assert [r.name for r in results] == ["g0", "g1", "g2", "g3"]
    assert len(synth.fits) == 4
    for (name, data), result in zip(_groups(), results, strict=True):
        assert result.converged
        assert result.synthetic_values().shape == (3, len(data))
        assert (tmp_path / f"{name}.posterior.nc").exists()
        assert "mean_share_equal" in result.summary
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
