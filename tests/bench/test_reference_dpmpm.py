"""``bench/reference_dpmpm.py``: NPBayesImputeCat run from Python, its draws read back in this project's layout.

Skipped when R or NPBayesImputeCat is not installed (``../shared/reference/README.md``), except the check that a
missing ``Rscript`` gives the skip sentence rather than an error.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from bayessdc.models.dpmpm import prepare_categorical, simulate_ce_like

BENCH = Path(__file__).resolve().parents[2] / "bench" / "reference_dpmpm.py"


def _module():
    spec = importlib.util.spec_from_file_location("reference_dpmpm", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


ref = _module()


def test_without_rscript_the_reference_is_skipped_with_a_sentence(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no Rscript on it
    assert ref.reference_unavailable() == ref.SKIP_MESSAGE
    with pytest.raises(ref.ReferenceUnavailable, match="not installed"):
        ref.run_reference(np.zeros((3, 2), dtype=int), ["a", "b"], [1, 1], 5)


@pytest.fixture(scope="module")
def fitted():
    missing = ref.reference_unavailable()
    if missing:
        pytest.skip(missing)
    data = prepare_categorical(simulate_ce_like(n=400, seed=2), ["county"], ["gender", "income", "age"])
    run = ref.run_reference(
        data.codes, data.variables, data.n_levels, 200, keep_every=25, keep_from=100, keep_z=True, seed=3
    )
    return data, run


def test_the_chain_and_the_kept_draws_are_read_back_aligned(fitted):
    data, run = fitted
    assert run.iterations == 200 and len(run.alpha) == 200
    assert run.kept_iterations.tolist() == [125, 150, 175, 200]
    assert np.allclose(run.nu.sum(axis=1), 1)
    for v, d in zip(data.variables, data.n_levels, strict=True):
        assert run.psi[v].shape == (4, 40, d)
        assert np.allclose(run.psi[v].sum(axis=2), 1)  # a level-major read would not sum to 1 per component
    # k_star traced at an iteration is the number of components holding a record in the z kept at that iteration
    occupied = [len(np.unique(z)) for z in run.z]
    assert occupied == run.k_star[run.kept_iterations - 1].tolist()


def test_the_level_order_is_the_projects(fitted):
    """The reference's posterior marginal of every kept variable is close to the data's: a reversed or shifted
    level order would put the mass of the largest income or age group on another level."""
    data, run = fitted
    posterior = ref.reference_posterior(run, data).posterior
    for j, v in enumerate(data.variables[:3]):
        empirical = np.bincount(data.codes[:, j], minlength=data.n_levels[j]) / data.n_records
        model = (posterior["pi"] * posterior[f"theta_{v}"]).sum("component").mean(("chain", "draw")).to_numpy()
        assert np.abs(model - empirical).max() < 0.05, (v, model, empirical)


def test_synthetic_data_from_the_reference_posterior_keep_the_kept_columns(fitted):
    data, run = fitted
    original = data.frame(data.codes)
    release = ref.reference_release(run, data, m=4, seed=1)
    assert sorted(release["synthetic"].unique()) == [1, 2, 3, 4]
    for _, synthetic in release.groupby("synthetic"):
        synthetic = synthetic.reset_index(drop=True)
        for column in ("gender", "income", "age"):
            assert (synthetic[column].to_numpy() == original[column].to_numpy()).all()
        assert set(synthetic["county"]) <= set(original["county"])
        assert (synthetic["county"].to_numpy() != original["county"].to_numpy()).mean() > 0.5  # synthesized
