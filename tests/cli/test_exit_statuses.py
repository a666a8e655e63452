"""No traceback reaches a user (issue 48): every failure is one ``bayessdc COMMAND:`` line and an exit status.

2 for input, options, paths and disks; 3 for refusals (tested with each command); 130 for Ctrl-C; 1 only for a
fault of bayessdc itself, said as one, its traceback written to a log file whose path the line gives.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main


def _table(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"gender": rng.integers(1, 3, 300), "age": rng.integers(1, 5, 300),
                          "county": rng.integers(1, 6, 300)})  # fmt: skip
    frame.to_csv(folder / "t.csv", index=False)
    return folder / "t.csv"


def _argv(folder: Path) -> list[str]:
    return ["cart", "--data", str(_table(folder)), "--synthesize", "county", "--keep", "gender,age", "--out",
            str(folder / "out"), "--quiet"]  # fmt: skip


def _raising(error: BaseException):
    def fit(*args, **kwargs):
        raise error

    return fit


@pytest.mark.parametrize(
    ("error", "status", "message"),
    [
        (KeyboardInterrupt(), 130, r"^bayessdc cart: interrupted; nothing new was released"),
        (OSError(errno.ENOSPC, "No space left on device", "/data/out/private/x.nc"), 2,
         r"^bayessdc cart: error: no space left on the device writing /data/out/private/x\.nc"),
        (PermissionError(errno.EACCES, "Permission denied", "/data/out/private"), 2,
         r"^bayessdc cart: error: permission denied: /data/out/private cannot be written"),
        (OSError(errno.EROFS, "Read-only file system", "/mnt/ro/out"), 2,
         r"^bayessdc cart: error: permission denied: /mnt/ro/out"),
    ],
    ids=["ctrl-c", "full disk", "permission", "read-only file system"],
)  # fmt: skip
def test_interrupts_and_the_machines_errors_are_one_line(error, status, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bsd.CART, "fit", _raising(error))
    assert main(_argv(tmp_path)) == status
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_fault_of_bayessdc_exits_1_saying_so_with_its_traceback_in_a_log(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.setattr(bsd.CART, "fit", _raising(TypeError("unsupported operand type(s) for +: 'int' and 'str'")))
    assert main(_argv(tmp_path)) == 1
    err = capsys.readouterr().err
    assert err.startswith("bayessdc cart: unexpected error (a fault in bayessdc, not in your input): TypeError: "), err
    assert "Traceback" not in err
    log = Path(re.search(r"The traceback: (\S+)", err).group(1))
    assert log.parent == tmp_path / "tmp" / "bayessdc-errors"
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "unsupported operand" in text


def test_input_refused_after_the_output_folder_was_opened_leaves_no_run_behind(tmp_path, monkeypatch, capsys):
    """An exit-2 refusal after ``private/run.json`` was written: the corrected rerun into the same folder is
    not refused as "a different run" (issue 48), and the refused run leaves no folder."""
    monkeypatch.setattr(bsd.CART, "fit", _raising(bsd.InputError("a refusal found while fitting")))
    argv = _argv(tmp_path)
    assert main(argv) == 2
    assert "a refusal found while fitting" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    monkeypatch.undo()
    argv[argv.index("gender,age")] = "gender"  # the corrected run: other options
    assert main([*argv, "--bootstrap", "5"]) == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "release" / "synthetic.parquet").exists()


def test_a_run_that_wrote_its_parts_is_not_forgotten(tmp_path):
    from bayessdc.synthesis.output import OutputFolder

    folder = OutputFolder(tmp_path / "out", {"run": 1})
    folder.write_private_json("diagnostics.json", {"passed": True})
    assert folder.abandon() is False and (tmp_path / "out" / "private" / "run.json").exists()
    folder.close()
    again = OutputFolder(tmp_path / "out", {"run": 1})  # the same run reopened: not its first opening
    assert again.abandon() is False
    again.close()
    empty = tmp_path / "mine"
    empty.mkdir()
    fresh = OutputFolder(empty, {"run": 2})
    assert fresh.abandon() is True
    assert empty.exists() and list(empty.iterdir()) == []  # a folder the user made stays, empty


def test_an_output_folder_that_cannot_be_written_is_refused_before_anything_is_read(tmp_path, monkeypatch, capsys):
    """Root may write anywhere, so the permission is stubbed: a user's read-only folder is refused up front (exit
    2) instead of after the whole run."""
    import bayessdc.synthesis.output as output

    monkeypatch.setattr(output.os, "access", lambda path, mode: False)
    monkeypatch.setattr(bsd.CART, "fit", _raising(AssertionError("fitted")))
    assert main(_argv(tmp_path)) == 2
    err = capsys.readouterr().err
    assert re.search(r"^bayessdc cart: error: output folder .*out: .* cannot be written \(permission denied\)", err)
    assert not (tmp_path / "out").exists()
