"""The generic part runner (``run_parts``): backends, storage and resume."""

import arviz as az
import numpy as np
import pytest

from bayessdc.synthesis.runner import InferenceDataStore, run_parts


def _draws(name: str, seed: int) -> az.InferenceData:
    rng = np.random.default_rng(seed)
    return az.from_dict(posterior={"mu": rng.normal(size=(1, 50))}, attrs={"part": name})


PARTS = [(f"part-{k}", k) for k in range(4)]


def test_parts_are_stored_as_they_finish_and_loaded_by_a_rerun(tmp_path):
    calls = []

    def task(name, seed):
        calls.append(name)
        return _draws(name, seed)

    seen = []
    store = InferenceDataStore(tmp_path / "parts")
    first = run_parts(task, PARTS, store=store, scheduler="synchronous", progress=lambda *args: seen.append(args))
    assert calls == [name for name, _ in PARTS]
    assert [(done, total, name, resumed) for done, total, name, _, resumed in seen] == [
        (k + 1, 4, f"part-{k}", False) for k in range(4)
    ]
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == [f"part-{k}.nc" for k in range(4)]
    (tmp_path / "parts" / "part-2.nc").unlink()  # an interrupted run
    again = run_parts(task, PARTS, store=store, scheduler="synchronous")
    assert calls[4:] == ["part-2"]
    for a, b in zip(first, again, strict=True):
        assert a.posterior["mu"].to_numpy().tobytes() == b.posterior["mu"].to_numpy().tobytes()
        assert a.attrs["part"] == b.attrs["part"]
    with pytest.raises(ValueError, match="unique"):
        run_parts(task, [("a", 1), ("a", 2)], scheduler="synchronous")


def test_a_local_dask_cluster_gives_the_results_in_the_order_of_the_parts():
    seen = []
    results = run_parts(_draws, PARTS, workers=2, progress=lambda done, total, name, result, resumed: seen.append(done))
    assert sorted(seen) == [1, 2, 3, 4]
    for (name, seed), result in zip(PARTS, results, strict=True):
        np.testing.assert_array_equal(result.posterior["mu"], _draws(name, seed).posterior["mu"])
