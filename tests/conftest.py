"""Shared test settings: one BLAS thread, small samplers."""

import io
import os

import pytest

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")


@pytest.fixture
def terminal(monkeypatch):
    """Progress bars on, drawn into a string by a console that takes itself for a terminal; yields the string."""
    from rich.console import Console

    from bayessdc import progress

    monkeypatch.setenv("TERM", "xterm")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, force_interactive=True, width=120, color_system=None)
    with progress.enabled(True), progress.use_console(console):
        yield out
