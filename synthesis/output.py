"""The output folder: ``release/`` (may be published) and ``private/`` (never published).

``release/`` receives only synthetic data and a description of the model. Posterior draws, diagnostics,
per-record risk, utility and observed values go to ``private/``. Every file is written under a temporary
name in the same folder and renamed into place, so an interrupted run never leaves a half-written file;
a run's identity (input fingerprint and settings) is recorded so that a rerun into the same folder resumes
the same run and refuses a different one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "OutputFolder",
    "RunMismatchError",
    "atomic_path",
    "fingerprint_frame",
    "to_jsonable",
    "write_json",
]


class RunMismatchError(FileExistsError):
    """The output folder holds the outputs of a different run."""


@contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success rename it to ``target``, on error delete it."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def to_jsonable(value: Any) -> Any:
    """Convert numpy and pandas scalars and containers into plain JSON types (NaN becomes null)."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, Path):
        return str(value)
    return value


def write_json(target: str | os.PathLike[str], payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` as indented JSON, atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(json.dumps(to_jsonable(payload), indent=2, sort_keys=False) + "\n")
    return Path(target)


def fingerprint_frame(frame: pd.DataFrame) -> str:
    """A short content hash of a table (columns, order and values)."""
    digest = hashlib.sha256()
    digest.update("\x1f".join(map(str, frame.columns)).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


class OutputFolder:
    """An output folder with its ``release/`` and ``private/`` parts.

    Parameters
    ----------
    root
        The folder (created if needed).
    identity
        What defines the run (input fingerprint, synthesizer, settings, seed). A folder that already holds
        a run with another identity is refused with :class:`RunMismatchError`.
    """

    RUN_FILE = "run.json"

    def __init__(self, root: str | os.PathLike[str], identity: Mapping[str, Any]) -> None:
        self.root = Path(root)
        self.identity = to_jsonable(dict(identity))
        self.release = self.root / "release"
        self.private = self.root / "private"
        run_file = self.private / self.RUN_FILE
        if run_file.exists():
            previous = json.loads(run_file.read_text())
            if previous != self.identity:
                changed = sorted(
                    k for k in set(previous) | set(self.identity) if previous.get(k) != self.identity.get(k)
                )
                raise RunMismatchError(
                    f"{self.root} holds a different run (differs in: {', '.join(changed)}); "
                    "choose another --out folder or delete this one"
                )
        elif self.root.exists() and any(p for p in self.root.iterdir() if not p.name.startswith(".")):
            raise RunMismatchError(f"{self.root} is not empty and holds no bayessdc run; choose another --out folder")
        self.release.mkdir(parents=True, exist_ok=True)
        self.private.mkdir(parents=True, exist_ok=True)
        if not run_file.exists():
            write_json(run_file, self.identity)

    def write_release_table(self, name: str, frame: pd.DataFrame) -> Path:
        """Write a synthetic table to ``release/<name>`` (Parquet), atomically."""
        return self._write_table(self.release / name, frame)

    def write_private_table(self, name: str, frame: pd.DataFrame) -> Path:
        """Write a table to ``private/<name>`` (Parquet), atomically."""
        return self._write_table(self.private / name, frame)

    def write_release_json(self, name: str, payload: Mapping[str, Any]) -> Path:
        """Write ``release/<name>`` (JSON), atomically."""
        return write_json(self.release / name, payload)

    def write_private_json(self, name: str, payload: Mapping[str, Any]) -> Path:
        """Write ``private/<name>`` (JSON), atomically."""
        return write_json(self.private / name, payload)

    def write_private_file(self, name: str, write: Callable[[Path], None]) -> Path:
        """Call ``write(tmp_path)`` and rename the result to ``private/<name>``."""
        target = self.private / name
        with atomic_path(target) as tmp:
            write(tmp)
        return target

    @staticmethod
    def _write_table(target: Path, frame: pd.DataFrame) -> Path:
        with atomic_path(target) as tmp:
            frame.to_parquet(tmp, index=False)
        return target
