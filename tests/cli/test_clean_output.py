"""Issue 22 (clean output): ArviZ's once-a-day announcement is not printed by a command.

Every command's whole run is checked for warnings in ``test_release_guarantees.py``
(``test_a_run_prints_no_warning_of_a_library``), but ArviZ 0.23 warns only at its first import of the day
(a stamp in the user's cache), which the suite's machines have long passed: here the command runs with an
empty cache, as a user's first run of the day.
"""

import os
import subprocess
import sys

import matplotlib
import pytest

from bayessdc import examples


def test_the_first_run_of_the_day_prints_no_arviz_announcement(tmp_path):
    examples.cox_table().to_csv(tmp_path / "cox.csv", index=False)
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(cache),  # ArviZ's stamp of the day's announcement (platformdirs)
        "MPLCONFIGDIR": matplotlib.get_cachedir(),  # matplotlib's font cache where it is, not rebuilt
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    args = ["cta", "--table", str(tmp_path / "cox.csv"), "--dims", "row,column", "--value", "value",
            "--protection", "protection", "--integer", "--out", str(tmp_path / "out")]  # fmt: skip
    code = "import sys; from bayessdc.cli import main; sys.exit(main())"
    run = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    if not (cache / "arviz" / "daily_warning").exists():
        pytest.skip("this ArviZ makes no daily announcement: the test (and bayessdc.cli's filter) can go")
    lines = [line for line in run.stderr.splitlines() if "Warning" in line or "ArviZ" in line]
    assert not lines, "\n".join(lines)


def test_every_command_documents_its_exit_statuses(capsys):
    from bayessdc.cli import SUBCOMMANDS, build_parser

    parser = build_parser()
    for name in SUBCOMMANDS:
        with pytest.raises(SystemExit) as done:
            parser.parse_args([name.replace("_", "-"), "--help"])
        assert done.value.code == 0
        text = capsys.readouterr().out
        # the three statuses as lines of their own block, after the options
        for status in ("\n  0  released", "\n  2  bad input", "\n  3  refused"):
            assert status in text, (name, status)
        assert text.index("exit status:") > text.index("options:")
