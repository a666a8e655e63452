"""A content digest of a released synthetic table, pinned by the CLI tests.

The digest covers the column names, their dtypes, the row order and every value (``pandas``' own row
hashes), so it changes when anything a user would read changes and not when a library rewrites the
Parquet container's metadata (the file's bytes carry the writer's version). The pinned values were taken
at commit c6c3384, before the pipeline moved from ``cli/`` into the library (issue 18), except three: the
NUTS-sampled releases (flows, spatial, DP-areal) changed once, when PyTensor's numba code was compiled
without fast-math (see ``bayessdc.models.sampling``). With fast-math their draws depended on whether
``~/.pytensor`` held the compiled model already: the flows digest was 1f14abc2c8689231 from a cold cache
and 44f4c144a0c56eac from a warm one, for the same seed and code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd


def frame_digest(frame: pd.DataFrame) -> str:
    """sha256 (first 16 hex digits) of the names, dtypes and values of ``frame``, in order."""
    digest = hashlib.sha256()
    digest.update("\x1f".join(f"{c}:{t}" for c, t in frame.dtypes.astype(str).items()).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


def release_digest(out: Path) -> str:
    """The digest of ``out/release/synthetic.parquet``."""
    return frame_digest(pd.read_parquet(Path(out) / "release" / "synthetic.parquet"))
