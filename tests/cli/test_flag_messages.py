"""Flags for parameters at the boundary only (issue 50, item 4): bayessdc's errors and log records name the flag
the user typed; nothing else on standard error (another library's warning, a traceback) is rewritten."""

from __future__ import annotations

import logging
import sys
import warnings

import pandas as pd

import bayessdc as bsd
from bayessdc.cli import main
from bayessdc.cli.flags import FlagRecords


def _run(tmp_path, monkeypatch, capsys, fake):
    pd.DataFrame({"a": [1, 2], "b": [1, 2]}).to_csv(tmp_path / "data.csv", index=False)
    monkeypatch.setattr(bsd, "synthesize", fake)
    argv = ["dpmpm", "--data", str(tmp_path / "data.csv"), "--synthesize", "b", "--keep", "a", "--out"]
    status = main([*argv, str(tmp_path / "out")])
    return status, capsys.readouterr().err


def test_a_library_error_and_log_record_name_flags_and_a_third_party_warning_is_left_as_it_is(
    tmp_path, monkeypatch, capsys
):
    def fake(*args, **kwargs):
        # what a third party's warning writes (warnings.showwarning): never rewritten
        sys.stderr.write(warnings.formatwarning("draws=10 is too few", UserWarning, "thirdparty/sampler.py", 7))
        logging.getLogger("bayessdc.pipeline").warning("raise draws=10 or lower thin=2")
        raise bsd.InputError("a gate needs chains=3 at least")

    status, err = _run(tmp_path, monkeypatch, capsys, fake)
    assert status == 2
    assert "thirdparty/sampler.py:7: UserWarning: draws=10 is too few" in err
    assert "bayessdc dpmpm: warning: raise --draws 10 or lower --thin 2" in err
    assert "bayessdc dpmpm: error: a gate needs --chains 3 at least" in err


def test_a_traceback_in_a_log_record_and_another_library_s_error_are_left_as_they_are(
    tmp_path, monkeypatch, capsys
):
    def fake(*args, **kwargs):
        try:
            raise RuntimeError("thin=2 inside")
        except RuntimeError:
            logging.getLogger("bayessdc.pipeline").warning("draws=10 failed", exc_info=True)
        raise ValueError("chains=3 from another library")  # raised here, not in bayessdc's code

    status, err = _run(tmp_path, monkeypatch, capsys, fake)
    assert status == 2
    assert "bayessdc dpmpm: warning: --draws 10 failed" in err
    assert "RuntimeError: thin=2 inside" in err
    assert "error: chains=3 from another library" in err


def test_the_filter_rewrites_bayessdc_records_only():
    record = logging.LogRecord("pymc", logging.WARNING, __file__, 1, "draws=%d", (10,), None)
    assert FlagRecords().filter(record) and record.getMessage() == "draws=10"
    ours = logging.LogRecord("bayessdc.models", logging.WARNING, __file__, 1, "draws=%d", (10,), None)
    shown = FlagRecords().filter(ours)
    shown = ours if shown is True else shown
    assert shown.getMessage() == "--draws 10"


def test_the_filter_is_removed_after_the_command(tmp_path, monkeypatch, capsys):
    logger = logging.getLogger("bayessdc")
    before = list(logger.handlers)

    def fake(*args, **kwargs):
        raise bsd.InputError("chains=3")

    _run(tmp_path, monkeypatch, capsys, fake)
    assert logger.handlers == before
    assert not any(isinstance(f, FlagRecords) for h in logger.handlers for f in h.filters)
