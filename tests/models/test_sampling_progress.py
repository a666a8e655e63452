"""The NUTS backends' own progress bars follow bayessdc's switch: on a terminal, off when quiet, off in a file,
and off while a bayessdc bar is showing (the backend's would draw over it)."""

import io

import pytest
from rich.console import Console

from bayessdc import progress
from bayessdc.models.sampling import SamplerSettings, sample_model


class _Sampled(Exception):
    pass


@pytest.fixture(params=["nutpie", "pymc"])
def backend(request, monkeypatch):
    """The backend's sampler replaced by one that records whether it was asked for a bar."""
    asked = []
    if request.param == "nutpie":
        import nutpie

        def fake(compiled, **kwargs):
            asked.append(kwargs["progress_bar"])
            raise _Sampled

        monkeypatch.setattr(nutpie, "sample", fake)
    else:
        import pymc

        def fake(**kwargs):
            asked.append(kwargs["progressbar"])
            raise _Sampled

        monkeypatch.setattr(pymc, "sample", fake)
    return request.param, asked


def _console(monkeypatch, terminal: bool) -> Console:
    monkeypatch.setenv("TERM", "xterm")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    return Console(file=io.StringIO(), force_terminal=terminal or None, force_jupyter=False)


def _asks(name: str, asked: list, progressbar: bool = False) -> bool:
    with pytest.raises(_Sampled):
        sample_model(None, SamplerSettings(backend=name, progressbar=progressbar), 0, compiled=object())
    return asked.pop()


def test_backend_bars_follow_the_switch_and_the_terminal(backend, monkeypatch):
    name, asked = backend
    terminal, file = _console(monkeypatch, True), _console(monkeypatch, False)
    with progress.use_console(terminal):
        assert _asks(name, asked) is True
        with progress.enabled(False):
            assert _asks(name, asked) is False
            assert _asks(name, asked, progressbar=True) is True  # the setting forces it, on a terminal
        with progress.bar(3, "groups"):
            assert _asks(name, asked) is False  # a bayessdc bar is showing
    with progress.use_console(file):
        assert _asks(name, asked) is False
        assert _asks(name, asked, progressbar=True) is False  # never into a file


def test_pymc_info_lines_follow_bayessdc_level(monkeypatch):
    import logging

    import pymc

    levels = []

    def fake(**kwargs):
        levels.append(logging.getLogger("pymc").getEffectiveLevel())
        raise _Sampled

    monkeypatch.setattr(pymc, "sample", fake)
    pymc_log, ours = logging.getLogger("pymc"), logging.getLogger("bayessdc")
    saved = pymc_log.level, ours.level
    try:
        pymc_log.setLevel(logging.INFO)
        for level in (logging.WARNING, logging.INFO):
            ours.setLevel(level)
            with pytest.raises(_Sampled):
                sample_model(None, SamplerSettings(backend="pymc"), 0)
            assert pymc_log.level == logging.INFO  # restored after the call
    finally:
        pymc_log.setLevel(saved[0])
        ours.setLevel(saved[1])
    assert levels == [logging.WARNING, logging.INFO]  # held back while bayessdc is quiet
