import os

import arviz as az
import numpy as np
import pytest

from bayessdc.models.sampling import ConvergenceCriteria, ConvergenceError, SamplerSettings, check_convergence


def _idata(means, n_draws=1000, divergent=0, seed=0):
    rng = np.random.default_rng(seed)
    chains = len(means)
    x = rng.normal(np.asarray(means)[:, None], 1.0, (chains, n_draws))
    diverging = np.zeros((chains, n_draws), dtype=bool)
    diverging.flat[:divergent] = True
    return az.from_dict(posterior={"x": x}, sample_stats={"diverging": diverging})


def test_independent_chains_pass_the_gate():
    report = check_convergence(_idata([0, 0, 0, 0]))
    assert report.passed
    assert report.max_r_hat < 1.01
    assert report.min_ess_bulk > 3000  # independent draws: ESS close to 4000


def test_chains_stuck_apart_fail_on_r_hat():
    report = check_convergence(_idata([0, 0, 0, 3]))
    assert not report.passed
    assert report.max_r_hat > 1.1
    assert "r_hat" in report.problems()[0]
    with pytest.raises(ConvergenceError, match="did not converge"):
        raise ConvergenceError(report)


def test_divergences_fail_the_gate_and_are_counted():
    report = check_convergence(_idata([0, 0, 0, 0], divergent=3))
    assert report.divergences == 3
    assert not report.passed
    assert check_convergence(_idata([0, 0, 0, 0], divergent=3), ConvergenceCriteria(max_divergences=5)).passed


def test_small_ess_fails_the_gate():
    report = check_convergence(_idata([0, 0], n_draws=100))
    assert report.min_ess_bulk < 400 and not report.passed


def test_derived_quantities_are_monitored_instead_of_parameters():
    idata = _idata([0, 0, 0, 5])
    good = _idata([0, 0, 0, 0], seed=1).posterior["x"].rename("good")
    report = check_convergence(idata, var_names=[], derived={"good": good})
    assert report.passed and report.worst_r_hat == "good"
    assert report.monitored == ("good",)  # what the gate judged: the derived quantity, not x
    assert check_convergence(idata, derived={"good": good}).monitored == ("x", "good")


@pytest.mark.parametrize(
    "kwargs", [{"draws": 0}, {"chains": -1}, {"backend": "stan"}, {"target_accept": 1.0}, {"draws": 2.5}]
)
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        SamplerSettings(**kwargs)


_GRADIENT_SCRIPT = """
import sys
import numpy as np
import bayessdc.models.sampling  # noqa: F401 - sets PyTensor's floating-point flags
from bayessdc.models.flows import build_model, simulate_group

group, _ = simulate_group(8, 9, 40, seed=3)
model = build_model(group)
point = model.initial_point()
rng = np.random.default_rng(0)
point = {k: v + rng.normal(size=np.shape(v)) for k, v in point.items()}
gradient = model.compile_dlogp(mode="NUMBA")(point)
sys.stdout.write(np.asarray(gradient, dtype=float).tobytes().hex())
"""


def test_compiled_gradient_is_bitwise_the_same_from_a_cold_and_a_warm_cache(tmp_path):
    """Same seed, same release: a gradient compiled afresh equals the one loaded from PyTensor's cache.

    With numba fast-math (PyTensor's default) the two differed in the last bit on the flow model, and NUTS
    released different counts on a fresh machine and on one that had run the model before.
    """
    import subprocess
    import sys

    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'pytensor'}"}
    cold, warm = (
        subprocess.run(
            [sys.executable, "-c", _GRADIENT_SCRIPT], env=env, check=True, capture_output=True, text=True
        ).stdout
        for _ in range(2)
    )
    assert cold and cold == warm
