"""A content digest of a released synthetic table, pinned by the CLI tests.

The digest covers the column names, their dtypes, the row order and every value (``pandas``' own row
hashes), so it changes when anything a user would read changes and not when a library rewrites the
Parquet container's metadata (the file's bytes carry the writer's version). The pinned values were taken
at commit c6c3384, before the pipeline moved from ``cli/`` into the library (issue 18), except three: the
NUTS-sampled releases (flows, spatial, DP-areal) changed once, when PyTensor's numba code was compiled
without fast-math (see ``bayessdc.models.sampling``). With fast-math their draws depended on whether
``~/.pytensor`` held the compiled model already: the flows digest was 1f14abc2c8689231 from a cold cache
and 44f4c144a0c56eac from a warm one, for the same seed and code.

The NUTS-sampled releases are pinned per platform (:func:`assert_pinned`): their draws depend on the CPU's
kernels, because a NUTS trajectory amplifies a difference in the last bit of a log density or a Cholesky
factor into a different draw. Measured on 2026-11-26 with the spatial test's run on one machine (AMD EPYC,
AVX2, no AVX-512): OpenBLAS's Haswell kernels gave 2a3a3f64e2d4dae8, the same run with
``OPENBLAS_CORETYPE=Sandybridge`` c78a286117d02a52; the digest pinned on 2026-11-24 on the machine of
that day (19a24999287aa510) is reproduced here neither by main nor by the code of 2026-11-25 (2b1d8fe).
The same seed on the same platform gives the same release (the kill-and-rerun tests of
tests/cli/test_release_guarantees.py); across platforms the release is another draw of the same
posterior predictive distribution.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest


def frame_digest(frame: pd.DataFrame) -> str:
    """sha256 (first 16 hex digits) of the names, dtypes and values of ``frame``, in order."""
    digest = hashlib.sha256()
    digest.update("\x1f".join(f"{c}:{t}" for c, t in frame.dtypes.astype(str).items()).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


def release_digest(out: Path) -> str:
    """The digest of ``out/release/synthetic.parquet``."""
    return frame_digest(pd.read_parquet(Path(out) / "release" / "synthetic.parquet"))


def platform_key() -> str:
    """The CPU kernels a NUTS-sampled release depends on: OpenBLAS's architecture and numpy's best SIMD level.

    For example ``"openblas Haswell, X86_V3"`` on an AVX2 machine.
    """
    # numpy's and scipy's OpenBLAS (scipy-openblas builds) only: cvxpy's solvers (scs, sparsediffpy) bundle an
    # older OpenBLAS, loaded once a CTA test has run in the process, which calls this CPU "Zen"; the samplers
    # never call it, and counting it made the key depend on which tests had run before. scipy.linalg is loaded
    # so that scipy's own build is always counted beside numpy's.
    import scipy.linalg  # noqa: F401
    from numpy._core._multiarray_umath import __cpu_features__
    from threadpoolctl import threadpool_info

    blas = [
        f"{i['internal_api']} {i.get('architecture')}"
        for i in threadpool_info()
        if i["user_api"] == "blas" and "scipy_openblas" in i.get("filepath", "")
    ]
    levels = [level for level in ("X86_V4", "X86_V3", "X86_V2") if __cpu_features__.get(level)]
    return ", ".join([*sorted(set(blas)), *levels[:1]])


def assert_pinned(digest: str, pins: dict[str, str]) -> None:
    """Assert ``digest`` equals the one pinned for this platform (:func:`platform_key`); skip, naming the
    platform and the digest seen, where none was pinned."""
    key = platform_key()
    if key not in pins:
        pytest.skip(f"no release digest pinned for the platform {key!r} (here: {digest}; pinned: {pins})")
    assert digest == pins[key], f"release digest {digest} on {key!r}, pinned {pins[key]}"
