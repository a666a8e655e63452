"""One BLAS thread once bayessdc is imported, even after numpy: api/threads.py."""

import json
import os
import subprocess
import sys

import pytest

from bayessdc.threads import THREAD_VARIABLES

PROBE = """
import json, numpy, scipy.linalg
from threadpoolctl import threadpool_info
before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
import bayessdc
after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
import os
print(json.dumps({"before": before, "after": after, "env": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""


def _probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    clean.update(env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=clean, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS starts one thread on one core: nothing to limit")
def test_numpy_imported_first_still_gets_one_blas_thread():
    seen = _probe()
    assert seen["before"] and max(seen["before"]) > 1  # OpenBLAS's default on this machine: one per core
    assert seen["after"] == [1] * len(seen["after"])
    assert seen["env"] == "1"  # for child processes (dask workers)


def test_a_thread_count_the_user_set_is_kept():
    seen = _probe(OPENBLAS_NUM_THREADS="2")
    assert seen["after"] == seen["before"] == [2] * len(seen["before"])
    assert seen["env"] == "2"
