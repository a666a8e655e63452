"""``bayessdc.progress``: the switch, bars only on a terminal, nested bars, and the logging set-ups of the
command line and of ``bsd.synthesize`` (issue 22, item 3)."""

from __future__ import annotations

import io
import logging
import subprocess
import sys

from rich.console import Console

from bayessdc import progress

BAR = "━"  # rich's bar character


def terminal_console(monkeypatch) -> tuple[Console, io.StringIO]:
    """A console that takes itself for a terminal, writing into a string."""
    monkeypatch.setenv("TERM", "xterm")
    out = io.StringIO()
    return Console(file=out, force_terminal=True, force_interactive=True, width=120, color_system=None), out


def file_console(monkeypatch) -> tuple[Console, io.StringIO]:
    """A console writing to a file (not a terminal), whatever the environment says."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    out = io.StringIO()
    return Console(file=out, force_jupyter=False), out


def test_a_bar_is_drawn_on_a_terminal_and_counts_its_steps(monkeypatch):
    console, out = terminal_console(monkeypatch)
    with progress.enabled(True), progress.use_console(console):
        assert progress.shows_bars()
        with progress.bar(7, "steps of the test") as bar:
            assert bar.shown
            for _ in range(7):
                bar.advance()
    text = out.getvalue()
    assert "steps of the test" in text and "7/7" in text and BAR in text


def test_nothing_of_a_bar_is_written_when_the_output_is_not_a_terminal(monkeypatch, capsys):
    console, out = file_console(monkeypatch)
    with progress.enabled(True), progress.use_console(console):
        assert not progress.shows_bars() and not progress.sampler_bars()
        with progress.bar(5, "steps") as bar:
            assert not bar.shown
            bar.advance(5)
    assert out.getvalue() == ""
    # the default console writes to standard error, which pytest captures: not a terminal either
    with progress.enabled(True), progress.bar(3, "steps") as bar:
        bar.advance(3)
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b" not in err and BAR not in err


def test_the_switch_turns_bars_off_and_is_restored_after_a_block(monkeypatch):
    console, out = terminal_console(monkeypatch)
    with progress.use_console(console):
        assert progress.is_enabled()
        with progress.enabled(False):
            assert not progress.is_enabled() and not progress.shows_bars() and not progress.sampler_bars()
            with progress.bar(3, "hidden") as bar:
                bar.advance(3)
        assert progress.is_enabled() and progress.shows_bars() and progress.sampler_bars()
        # a sampler's own progressbar=True setting overrides the switch, not the terminal test
        with progress.enabled(False):
            assert progress.sampler_bars(force=True)
    assert "hidden" not in out.getvalue()


def test_inner_bars_join_the_outer_display_and_sampler_bars_stay_off(monkeypatch):
    console, out = terminal_console(monkeypatch)
    with progress.use_console(console), progress.bar(2, "outer parts") as outer:
        assert not progress.sampler_bars()  # nutpie's or PyMC's bar would draw over this one
        with progress.bar(4, "inner iterations") as inner:
            assert inner.shown
            inner.advance(4)
        outer.advance(2)
    with progress.use_console(console):
        assert progress.sampler_bars()  # the display is gone: a sampler may draw its own again
    text = out.getvalue()
    assert "outer parts" in text and "inner iterations" in text and "2/2" in text


def test_the_library_adds_only_a_null_handler_on_import():
    code = (
        "import logging, bayessdc, bayessdc.progress, bayessdc.cli; "
        "print([type(h).__name__ for h in logging.getLogger('bayessdc').handlers], logging.getLogger().handlers)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['NullHandler'] []"


def unconfigured(monkeypatch) -> logging.Logger:
    """Logging as in a fresh notebook: no handler on the root logger (pytest's own, added for the test's call,
    taken away until it ends)."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    log = logging.getLogger("bayessdc")
    assert [type(h) for h in log.handlers] == [logging.NullHandler] and log.level == logging.NOTSET
    return log


def test_synthesize_shows_its_stages_in_an_unconfigured_notebook(monkeypatch, capsys):
    log = unconfigured(monkeypatch)
    child = logging.getLogger("bayessdc.pipeline")
    with progress.call_logging(True):
        child.info("fitting the model ...")
        child.debug("a setting")
    assert capsys.readouterr().err == "bayessdc: fitting the model ...\n"
    # after the call: the handler is gone and the level restored
    assert [type(h) for h in log.handlers] == [logging.NullHandler] and log.level == logging.NOTSET


def test_progress_false_keeps_the_warnings_only(monkeypatch, capsys):
    unconfigured(monkeypatch)
    child = logging.getLogger("bayessdc.pipeline")
    with progress.call_logging(False):
        assert not progress.is_enabled()
        child.info("fitting the model ...")
        child.warning("column x is neither kept nor synthesized: not released")
    assert progress.is_enabled()
    assert capsys.readouterr().err == "bayessdc: warning: column x is neither kept nor synthesized: not released\n"


def test_a_configured_program_keeps_its_handlers(caplog):
    log = logging.getLogger("bayessdc")
    before = list(log.handlers)
    with caplog.at_level(logging.DEBUG, logger="bayessdc"), progress.call_logging(True):
        assert log.handlers == before  # pytest's root handlers count as a configuration
        logging.getLogger("bayessdc.pipeline").debug("a setting")
    assert [r.getMessage() for r in caplog.records] == ["a setting"]


def test_cli_logging_levels_and_format(capsys):
    child = logging.getLogger("bayessdc.synthesis.runner")
    for options, shown in [
        ({"quiet": True}, ["bayessdc flows: warning: w"]),
        ({}, ["bayessdc flows: i", "bayessdc flows: warning: w"]),
        ({"verbose": True}, ["bayessdc flows: debug: d", "bayessdc flows: i", "bayessdc flows: warning: w"]),
    ]:
        with progress.cli_logging(prefix="bayessdc flows", **options):
            assert progress.is_enabled() is not options.get("quiet", False)
            child.debug("d")
            child.info("i")
            child.warning("w")
        assert capsys.readouterr().err.splitlines() == shown, options
    assert [type(h) for h in logging.getLogger("bayessdc").handlers] == [logging.NullHandler]
