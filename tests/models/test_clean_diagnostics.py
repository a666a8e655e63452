"""Issue 22, item 4: the convergence gate on degenerate quantities, and PyTensor's numba dispatch loaded whole.

A quantity constant over every draw (the DPMPM's number of occupied components when all K are in use) made
ArviZ's r_hat 0/0: "RuntimeWarning: invalid value encountered in scalar divide" on every such run, and the
gate read the NaN as r_hat inf and failed. :func:`bayessdc.models.sampling.rank_r_hat` decides these cases
itself and equals ``az.rhat`` everywhere else.
"""

import subprocess
import sys
import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

from bayessdc.models.sampling import check_convergence, rank_r_hat


def _idata(**quantities):
    rng = np.random.default_rng(0)
    posterior = {"x": rng.normal(size=(4, 500))}
    posterior.update(quantities)
    return az.from_dict(posterior=posterior, sample_stats={"diverging": np.zeros((4, 500), dtype=bool)})


def test_a_constant_quantity_passes_the_gate_without_a_warning():
    idata = _idata(occupied=np.full((4, 500), 6.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning of ArviZ or NumPy fails the test
        report = check_convergence(idata)
    assert report.passed, report.problems()
    assert report.max_r_hat < 1.01 and report.min_ess_bulk > 1000
    assert rank_r_hat(idata.posterior["occupied"]).tolist() == [1.0]


def test_chains_each_constant_at_their_own_value_fail_on_r_hat_without_a_warning():
    stuck = np.repeat([[5.0], [5.0], [6.0], [6.0]], 500, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = check_convergence(_idata(occupied=stuck))
    assert not report.passed
    assert report.max_r_hat == np.inf and report.worst_r_hat == "occupied"


def test_rank_r_hat_equals_arviz_and_decides_the_degenerate_elements():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 101, 2, 3))  # an odd number of draws: the middle one is left out of the split
    x[3, :, 0, 0] += 2.0  # one chain apart: a large r_hat, computed
    x[:, :, 0, 1] = 3.0  # constant: 1
    x[:, :, 0, 2] = np.repeat([[1.0], [1.0], [1.0], [2.0]], 101, axis=1)  # chains stuck apart: inf
    x[:, :, 1, 0] = np.tile([0.0, 1.0], 51)[:101]  # 0/1 drawn (almost) as often: the tail part degenerate
    values = xr.DataArray(x, dims=("chain", "draw", "a", "b"), name="q")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = rank_r_hat(values)
    expected = az.rhat(xr.Dataset({"q": values.isel(a=1, b=[1, 2])}))["q"].to_numpy()
    np.testing.assert_array_equal(ours[4:], expected)  # regular elements: bitwise ArviZ's
    assert ours[0] > 1.1 and ours[0] == az.rhat(xr.Dataset({"q": values.isel(a=0, b=0)}))["q"].item()
    assert ours[1] == 1.0 and ours[2] == np.inf
    assert 0.9 < ours[3] < 1.1
    assert rank_r_hat(values.isel(b=slice(0, 0))).shape == (0,)


@pytest.mark.parametrize("chains, draws", [(1, 100), (4, 3)])
def test_too_few_chains_or_draws_give_nan_as_arviz_does(chains, draws):
    values = xr.DataArray(np.random.default_rng(2).normal(size=(chains, draws)), dims=("chain", "draw"))
    assert np.isnan(rank_r_hat(values)).all()


def test_importing_the_sampler_registers_every_numba_implementation_of_pytensor():
    """Before any thread compiles: a thread that compiled while another was still importing PyTensor's numba
    dispatch found no implementation for Add, Sum, Subtensor, ... and ran them in object mode (the flow demo's
    parallel groups: "Numba will use object mode to run ...", 61 ms per gradient instead of 26-60 us)."""
    code = (
        "import sys, bayessdc.models.sampling; "
        "from pytensor.link.numba.dispatch.basic import numba_funcify; "
        "from pytensor.scalar.basic import Add; "
        "from pytensor.tensor.subtensor import Subtensor; "
        "assert 'pytensor.link.numba.dispatch.subtensor' in sys.modules; "
        "assert numba_funcify.dispatch(Add) is not numba_funcify.dispatch(object); "
        "assert numba_funcify.dispatch(Subtensor) is not numba_funcify.dispatch(object)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
