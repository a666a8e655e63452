"""Progress bars and messages of bayessdc; public as :mod:`bayessdc.progress`.

It lives in models/, the lowest layer, so that the samplers (models/), the runner (synthesis/) and the risk
computations (risk/) report progress by importing downwards (``tests/test_layout.py``); ``bayessdc.progress``
re-exports it. It imports nothing from bayessdc.

Messages go through :mod:`logging`, under the logger ``"bayessdc"``; each module logs to its own child
(``bayessdc.synthesis.runner``, ``bayessdc.pipeline``, ...). The levels:

``WARNING``
    notices the user must see even when quiet: columns dropped, groups released unchanged, a group that did
    not converge;
``INFO``
    the stages of a run ("fitting ...", "drawing 5 synthetic datasets ...") and each group's figures;
``DEBUG``
    settings and timings.

The library adds only a :class:`logging.NullHandler`. The ``bayessdc`` command configures a handler on
standard error (:func:`cli_logging`: INFO by default, WARNING with ``--quiet``, DEBUG with ``--verbose``);
:func:`bayessdc.synthesize` attaches one for the duration of the call when logging is not configured at all
(:func:`call_logging`), so that a notebook sees the stages without any set-up.

Progress bars are drawn with rich on standard error, only when the switch is on (:class:`enabled`, on by
default; ``--quiet`` and ``bsd.synthesize(..., progress=False)`` turn it off) and standard error is a
terminal or a Jupyter kernel (with ipywidgets). Otherwise nothing of a bar is written: no carriage returns in
a log file. While a bayessdc bar is showing, further bars (a chain's iterations inside the runner's groups)
join it as rows, and the samplers' own bars (nutpie, PyMC, numpyro) stay off: they would draw over it.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

__all__ = [
    "Bar",
    "bar",
    "call_logging",
    "cli_logging",
    "enabled",
    "is_enabled",
    "logger",
    "sampler_bars",
    "shows_bars",
    "use_console",
]

#: The package's logger; modules log to its children (``logging.getLogger(__name__)``).
logger = logging.getLogger("bayessdc")
if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):  # once, even if reloaded
    logger.addHandler(logging.NullHandler())

_lock = threading.RLock()
_switch = {"on": True}
_console_override: list[Console] = []
_active: dict[str, Any] = {"progress": None, "depth": 0}


class enabled:  # noqa: N801 - used like a function: ``enabled(False)`` or ``with enabled(False):``
    """Switch progress bars on or off, for the process or (as a context manager) for a block.

    ``bayessdc.progress.enabled(False)`` switches them off until switched on again; ``with
    bayessdc.progress.enabled(False): ...`` switches them off for the block and restores the previous state
    after it. Log messages are not affected (their level is the logging configuration's).

    Parameters
    ----------
    on
        Whether bars may be shown (they still are only on a terminal or in a notebook).
    """

    def __init__(self, on: bool) -> None:
        with _lock:
            self._previous = _switch["on"]
            _switch["on"] = bool(on)

    def __enter__(self) -> enabled:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with _lock:
            _switch["on"] = self._previous


def is_enabled() -> bool:
    """Whether the progress switch is on (see :class:`enabled`)."""
    return _switch["on"]


class use_console:  # noqa: N801 - used like a function, as :class:`enabled`
    """Draw bars on ``console`` (a :class:`rich.console.Console`) instead of standard error.

    For tests (``Console(file=io.StringIO(), force_terminal=True)``) and for programs that draw their own
    rich output. Like :class:`enabled`, effective at once and, as a context manager, restored after the block.

    Parameters
    ----------
    console
        The console bars are drawn on; whether it is a terminal decides whether they are drawn.
    """

    def __init__(self, console: Console) -> None:
        with _lock:
            _console_override.append(console)
        self._console = console

    def __enter__(self) -> use_console:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with _lock:
            if self._console in _console_override:
                _console_override.remove(self._console)


def _console() -> Console:
    if _console_override:
        return _console_override[-1]
    from rich.console import Console

    return Console(stderr=True)  # made afresh: it reads whether standard error is a terminal now


def _terminal(console: Console) -> bool:
    return console.is_terminal and not console.is_dumb_terminal


def shows_bars() -> bool:
    """Whether a bar of :func:`bar` would be drawn now: the switch is on and standard error (or the console of
    :class:`use_console`) is a terminal, or a Jupyter kernel with ipywidgets installed."""
    if not is_enabled():
        return False
    if _active["progress"] is not None:
        return True
    console = _console()
    return _terminal(console) or (console.is_jupyter and importlib.util.find_spec("ipywidgets") is not None)


def sampler_bars(force: bool = False) -> bool:
    """Whether a NUTS backend should draw its own progress bar: the switch is on, standard error is a
    terminal or a notebook, and no bayessdc bar is showing (the backend's would draw over it).

    Parameters
    ----------
    force
        Ignore the switch (a sampler's ``progressbar=True`` setting); the other conditions still apply.
    """
    if not (force or is_enabled()) or _active["progress"] is not None:
        return False
    console = _console()
    return _terminal(console) or console.is_jupyter


class Bar:
    """One bar (a row of the display) as :func:`bar` yields it; does nothing when no bar is shown."""

    def __init__(self, progress: Progress | None = None, task: Any = None) -> None:
        self._progress = progress
        self._task = task

    @property
    def shown(self) -> bool:
        """Whether the bar is drawn."""
        return self._progress is not None

    def advance(self, amount: float = 1) -> None:
        """Move the bar on by ``amount`` steps."""
        if self._progress is not None:
            self._progress.advance(self._task, amount)

    def update(self, completed: float | None = None, description: str | None = None) -> None:
        """Set the steps completed so far and, optionally, a new description."""
        if self._progress is not None:
            self._progress.update(self._task, completed=completed, description=description)


@contextmanager
def bar(total: float | None, description: str) -> Iterator[Bar]:
    """A progress bar of ``total`` steps for the duration of the block.

    Drawn only when :func:`shows_bars` is true; otherwise the yielded :class:`Bar` does nothing. Inside
    another bayessdc bar (in this or another thread, for example a group of the group runner) it is a further
    row of the same display, removed when the block ends.

    Parameters
    ----------
    total
        Number of steps (``None``: unknown).
    description
        What is counted, shown left of the bar.

    Yields
    ------
    Bar
    """
    if not shows_bars():
        yield Bar()
        return
    with _lock:
        progress = _active["progress"]
        if progress is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            progress = Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=_console(),
                refresh_per_second=4,
                redirect_stdout=False,  # standard output is the data's and the summary's: never moved to the bar's
            )
            progress.start()
            _active["progress"] = progress
        _active["depth"] += 1
        task = progress.add_task(description, total=total)
    try:
        yield Bar(progress, task)
    finally:
        with _lock:
            _active["depth"] -= 1
            if _active["depth"] == 0:
                _active["progress"] = None
                progress.stop()
            else:
                progress.remove_task(task)


# -- log handlers --------------------------------------------------------------------------------------


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (so that records pass above a rich bar, and pytest's
    capture sees them)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


class _ShortFormatter(logging.Formatter):
    """``prefix: message`` for INFO, ``prefix: warning: message`` (the level in lower case) otherwise."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        text = f"{self.prefix}: {level}{message}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def _handler(prefix: str) -> logging.Handler:
    handler = _StderrHandler()
    handler.setFormatter(_ShortFormatter(prefix))
    return handler


def _configured() -> bool:
    """Whether the program configured logging: a handler on ``bayessdc`` (other than the library's
    NullHandler) or on the root logger."""
    own = any(not isinstance(h, logging.NullHandler) for h in logger.handlers)
    return own or bool(logging.getLogger().handlers)


@contextmanager
def cli_logging(*, quiet: bool = False, verbose: bool = False, prefix: str = "bayessdc") -> Iterator[None]:
    """The command line's configuration, for the duration of the block (restored after it).

    Messages of level INFO and above go to standard error as ``prefix: message`` (warnings as ``prefix:
    warning: message``) and bars are shown on a terminal. ``quiet``: no bars, only WARNING and above.
    ``verbose``: DEBUG messages as well.

    Parameters
    ----------
    quiet, verbose
        The ``--quiet`` and ``--verbose`` options.
    prefix
        What each line starts with (the command: ``bayessdc flows``).
    """
    level = logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO
    handler = _handler(prefix)
    saved = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        with enabled(not quiet):
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)


@contextmanager
def call_logging(progress: bool) -> Iterator[None]:
    """What :func:`bayessdc.synthesize` runs under: its ``progress`` argument applied for the call.

    ``progress=True``: bars when the switch is on (see :class:`enabled`); ``progress=False``: no bars and no
    INFO or DEBUG messages of bayessdc during the call (warnings still pass). When logging is not configured at
    all (no handler on ``bayessdc`` nor on the root logger, as in a fresh notebook), a handler on standard
    error is attached for the call, at INFO (``progress=True``) or WARNING level, and removed after it; a
    configured program's handlers and levels are left as they are.

    Parameters
    ----------
    progress
        The ``progress`` argument of :func:`bayessdc.synthesize`.
    """
    saved = logger.level
    handler = None
    if not _configured():
        handler = _handler("bayessdc")
        logger.addHandler(handler)
        if progress and logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
    if not progress and logger.getEffectiveLevel() < logging.WARNING:
        logger.setLevel(logging.WARNING)
    try:
        with enabled(progress and is_enabled()):
            yield
    finally:
        logger.setLevel(saved)
        if handler is not None:
            logger.removeHandler(handler)
