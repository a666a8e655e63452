"""Reading tables from files and writing ``adjusted.csv`` and ``quality.json`` atomically."""

from __future__ import annotations

import json
import os
import pathlib
import tempfile

import pandas as pd

from .problem import Adjustment
from .quality import quality_report

ADJUSTED_FILE = "adjusted.csv"
QUALITY_FILE = "quality.json"


def read_data(path: str | os.PathLike) -> pd.DataFrame:
    """Read a CSV (optionally compressed) or Parquet file into a DataFrame.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    pandas.DataFrame
    """
    path = pathlib.Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix.lower() in (".parquet", ".pq"):
        return pd.read_parquet(path)
    return pd.read_csv(path, keep_default_na=True)


def write_outputs(result: Adjustment, out_dir: str | os.PathLike, quality: dict | None = None) -> dict:
    """Write ``out_dir/adjusted.csv`` and ``out_dir/quality.json``.

    Both files are first written under temporary names in ``out_dir`` and renamed only when both are
    complete; on any error the temporary files are removed, so a reader never sees a half-written output.

    Parameters
    ----------
    result : Adjustment
    out_dir : str or path-like
        Created if missing.
    quality : dict, optional
        The report to write (default: :func:`~bayessdc.cta.quality.quality_report` of ``result``).

    Returns
    -------
    dict
        The paths written, under ``"adjusted"`` and ``"quality"``.
    """
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = quality_report(result) if quality is None else quality
    frame = result.to_frame()
    temporaries: list[pathlib.Path] = []
    try:
        targets = []
        for name, write in (
            (ADJUSTED_FILE, lambda handle: frame.to_csv(handle, index=False)),
            (QUALITY_FILE, lambda handle: json.dump(report, handle, indent=2, allow_nan=False)),
        ):
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out)
            temporaries.append(pathlib.Path(tmp))
            with os.fdopen(fd, "w", newline="") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            targets.append(out / name)
        umask = os.umask(0)
        os.umask(umask)
        for tmp, target in zip(temporaries, targets, strict=True):
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, target)
    finally:
        for tmp in temporaries:
            if tmp.exists():
                tmp.unlink()
    return {"adjusted": out / ADJUSTED_FILE, "quality": out / QUALITY_FILE}
