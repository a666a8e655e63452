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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """How the two xdist workers share the suite (``--dist loadgroup``, see pyproject.toml).

    A test file is one group, run whole by one worker, so that its module-scoped runs are made once; each
    notebook is a group of its own, and the notebooks go first. The notebooks are the longest tests (dp_areal_ce
    alone takes about 11 minutes): run one after another by one worker at the end of the suite, as ``--dist
    loadfile`` did, they made the suite's critical path.
    """
    notebooks, others = [], []
    for item in items:
        group = item.nodeid.split("::")[0]
        notebook = item.path.name == "test_notebooks.py" and hasattr(item, "callspec")
        if notebook:
            group = f"{group}[{item.callspec.id}]"
        item.add_marker(pytest.mark.xdist_group(group))
        (notebooks if notebook else others).append(item)
    items[:] = notebooks + others
