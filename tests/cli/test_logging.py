"""``--quiet`` and ``--verbose`` on the command line: what reaches standard error (issue 22, item 3).

Default: the stages as ``bayessdc COMMAND: message`` lines; ``--quiet``: warnings and errors only;
``--verbose``: debug lines too. Standard error is not a terminal here, so no bar may leave a trace in it.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from bayessdc.cli import main
from bayessdc.models.dpmpm import simulate_latent_class
from bayessdc.recipes.flows import Flows

#: The smallest dpmpm run that gets to the end (the release gate's four chains; --allow-unconverged).
TINY = ["--m", "2", "--K", "6", "--draws", "60", "--burn", "20", "--thin", "2", "--chains", "4", "--gate-datasets",
        "5", "--repetitions", "5", "--risk-records", "10", "--risk-draws", "20", "--allow-unconverged"]  # fmt: skip
SINGLE = "pattern(s) of the kept columns hold a single record"


@pytest.fixture(scope="module")
def ce(tmp_path_factory):
    folder = tmp_path_factory.mktemp("logging")
    frame, _ = simulate_latent_class(300, [2, 3, 6], [0.5, 0.5], seed=1, concentration=0.5)
    frame = frame.rename(columns={"x0": "gender", "x1": "age", "x2": "county"})
    # a pattern of a single record: a notice (WARNING) of every run
    frame = pd.concat([frame, pd.DataFrame({"gender": [9], "age": [9], "county": [0]})], ignore_index=True)
    frame.to_csv(folder / "ce.csv", index=False)
    return folder


def _dpmpm(folder, name, *options, capsys):
    argv = ["dpmpm", "--data", str(folder / "ce.csv"), "--synthesize", "county", "--keep", "gender,age"]
    status = main([*argv, "--out", str(folder / name), *TINY, *options])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "\r" not in captured.err and "\x1b" not in captured.err and "━" not in captured.err
    return captured.err.splitlines()


def test_quiet_prints_warnings_only(ce, capsys):
    lines = _dpmpm(ce, "quiet", "--quiet", capsys=capsys)
    assert lines, "the notice is a warning: said even when quiet"
    assert all(line.startswith("bayessdc dpmpm: warning: ") for line in lines), lines
    assert any(SINGLE in line for line in lines)


def test_default_prints_the_stages_and_verbose_the_debug_lines_too(ce, capsys):
    default = _dpmpm(ce, "default", capsys=capsys)
    verbose = _dpmpm(ce, "verbose", "-v", capsys=capsys)
    info = re.compile(r"^bayessdc dpmpm: (?!warning: |debug: )")
    for lines in (default, verbose):
        assert any(info.match(line) and "fitting K = 6" in line for line in lines), lines
        assert any(line.startswith("bayessdc dpmpm: warning: ") and SINGLE in line for line in lines)
    assert not [line for line in default if line.startswith("bayessdc dpmpm: debug: ")]
    debug = [line for line in verbose if line.startswith("bayessdc dpmpm: debug: ")]
    assert any("fitted in" in line for line in debug), verbose
    assert all(info.match(line) or line.startswith("bayessdc dpmpm: ") for line in verbose)


def test_quiet_and_verbose_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["cart", "-q", "-v", "--data", "x.csv", "--synthesize", "a", "--out", "o"])
    assert stopped.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_notice_is_a_warning_even_with_quiet(tmp_path, monkeypatch, capsys):
    """A group pair without sensitive cells is released unchanged: said before any fitting, even when quiet."""

    # not an Exception: main() turns every Exception into exit 1 (issue 48); a test's stop passes
    class Stop(BaseException):
        pass

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(Flows, "fit", stop)
    table = pd.DataFrame(
        {
            "origin": ["a1", "a1", "a2", "b1", "b2", "c1", "c1"],
            "destination": ["b1", "b2", "b1", "a1", "a2", "a1", "a2"],
            "origin_group": ["A", "A", "A", "B", "B", "C", "C"],
            "destination_group": ["B", "B", "B", "A", "A", "A", "A"],
            "count": [1, 3, 2, 2, 7, 40, 55],
        }
    )
    table.to_csv(tmp_path / "flows.csv", index=False)
    with pytest.raises(Stop):
        main(["flows", "--quiet", "--data", str(tmp_path / "flows.csv"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert err == "bayessdc flows: warning: group C -> A has no sensitive cells; released unchanged\n"
    # several such pairs are named in one warning, not one line each
    extra = pd.DataFrame({"origin": ["d1", "d1"], "destination": ["a1", "a2"], "origin_group": "D",
                          "destination_group": "A", "count": [60, 70]})  # fmt: skip
    more = pd.concat([table, extra], ignore_index=True)
    more.to_csv(tmp_path / "more.csv", index=False)
    with pytest.raises(Stop):
        main(["flows", "--quiet", "--data", str(tmp_path / "more.csv"), "--out", str(tmp_path / "more")])
    err = capsys.readouterr().err
    assert err == ("bayessdc flows: warning: 2 group pairs have no sensitive cells and are released unchanged "
                   "(C -> A, D -> A)\n")  # fmt: skip
