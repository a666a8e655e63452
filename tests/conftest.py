"""Shared test settings: one BLAS thread, small samplers."""

import io
import os
import sys

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
    alone took about 11 minutes under NUTS): run one after another by one worker at the end of the suite, as ``--dist
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


def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse to run when ``--dist loadgroup`` would not group: each test file's module-scoped fits would then run
    on both workers (pytest 9.2 with pytest-xdist 3.8 ignores the groups silently, pytest-dev/pytest-xdist#1386;
    pyproject.toml pins pytest below 9.2). A worker's items carry their group after the ``@`` of their node id."""
    config = session.config
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup") or not session.items:
        return
    if not all("@" in item.nodeid for item in session.items):
        message = (
            "pytest-xdist's --dist loadgroup did not group the tests (node ids without '@group'): module-scoped "
            f"fits would run on both workers; pytest {pytest.__version__} with this pytest-xdist is the known cause "
            "(pytest-dev/pytest-xdist#1386): install the versions pinned in pyproject.toml (make install-dev)"
        )
        print(message, file=sys.__stderr__, flush=True)  # a worker's exception reaches the terminal as a bare assert
        raise pytest.UsageError(message)
