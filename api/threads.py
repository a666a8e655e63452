"""One BLAS thread per process, set when ``bayessdc`` is imported, whatever was imported before it.

Parallelism in bayessdc comes from chains and groups (nutpie's chain threads, dask's worker processes), never
from BLAS threads: two OpenBLAS threads on two busy cores made a GP gradient 14 times slower, and a DP-areal
release of the bundled demo took 537 s with OpenBLAS's default threads against 194 s with one (same code, seed
and machine; stop 42 of issue 35). Setting ``OPENBLAS_NUM_THREADS=1`` in :mod:`os.environ` is too late once numpy
is loaded, which it always is in a notebook that did ``import numpy`` or ``import pandas`` first: OpenBLAS reads the
variable when it loads. So :func:`limit_blas_threads` does both:

- it sets ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` to 1 where they are unset, for
  libraries not loaded yet and for child processes (dask workers);
- it limits the BLAS libraries already loaded to one thread through :func:`threadpoolctl.threadpool_limits`,
  the well-kept library for exactly this (scikit-learn's dependency).

A variable the user set is respected: ``OPENBLAS_NUM_THREADS=4 python ...`` keeps four threads, and so does any one
of the three (OpenBLAS reads ``OMP_NUM_THREADS`` when its own variable is unset).
"""

from __future__ import annotations

import os
import sys

__all__ = ["THREAD_VARIABLES", "limit_blas_threads"]

#: The environment variables that set the number of BLAS and OpenMP threads.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def limit_blas_threads() -> bool:
    """Run BLAS on one thread in this process and its children, unless the user chose otherwise.

    Returns
    -------
    bool
        Whether the BLAS libraries already loaded were limited (numpy had been imported and none of
        :data:`THREAD_VARIABLES` was set by the user).
    """
    user_set = any(variable in os.environ for variable in THREAD_VARIABLES)
    for variable in THREAD_VARIABLES:
        os.environ.setdefault(variable, "1")
    if user_set or "numpy" not in sys.modules:
        return False  # OpenBLAS reads the variables when it loads, or keeps the user's choice
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    return True
