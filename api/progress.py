"""Progress bars and messages of bayessdc: the public name of :mod:`bayessdc.models.progress`.

Messages go through :mod:`logging` under the logger ``"bayessdc"``; progress bars are drawn with rich on standard
error when the switch is on (:class:`enabled`) and standard error is a terminal or a Jupyter kernel. The
implementation, and its full description, is in :mod:`bayessdc.models.progress`, below every layer that reports
progress; this module re-exports it (the same objects, the same state).
"""

from bayessdc.models.progress import (
    Bar,
    bar,
    call_logging,
    cli_logging,
    enabled,
    is_enabled,
    logger,
    sampler_bars,
    shows_bars,
    use_console,
)

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
