"""How a command ends: every failure one ``bayessdc COMMAND:`` line and an exit status, never a traceback.

0 released; 2 bad input, options, paths or disks (the message names the column, row, constraint or path); 3
refused (a gate or the disclosure policy); 130 interrupted (Ctrl-C); 1 only for a fault of bayessdc itself, said
as one, with its traceback written to a log file whose path the line gives. A message of bayessdc's names the
parameter (``chains=17``); printed here, it names the flag (``--chains 17``): :func:`said`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bayessdc import InputError, __version__
from bayessdc.policy import DisclosureRefused

from .flags import as_flags

__all__ = ["gate_refusal", "run_handled", "said"]


def said(err: BaseException) -> str:
    """The message of ``err`` as the command line says it: a bayessdc error's (its class bayessdc's, or raised in
    bayessdc's code) with each parameter named as its flag; anyone else's (pandas, the operating system) as is."""
    frame = err.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    raised_in = frame.tb_frame.f_globals.get("__name__", "") if frame is not None else ""
    ours = type(err).__module__.startswith("bayessdc") or raised_in.startswith("bayessdc.")
    return as_flags(str(err)) if ours else str(err)


def gate_refusal(command: str, message: str, out: Path) -> int:
    """Print the refusal of a gate (its parameters named as flags) and where the diagnostics are; exit status 3."""
    print(f"bayessdc {command}: {as_flags(message)}\nDiagnostics: {out / 'private' / 'diagnostics.json'}",
          file=sys.stderr)  # fmt: skip
    return 3


def run_handled(args: argparse.Namespace) -> int:
    """Run the parsed command ``args.func(args)`` and turn each way it can fail into its line and exit status."""
    try:
        return int(args.func(args) or 0)
    except (InputError, ValueError, FileNotFoundError, FileExistsError) as err:
        print(f"bayessdc {args.command}: error: {said(err)}", file=sys.stderr)
        return 2
    except DisclosureRefused as err:
        out = getattr(args, "out", None)
        where = f"\nThe verdict: {out / 'private' / 'policy.json'}" if out is not None else ""
        print(f"bayessdc {args.command}: refused: {said(err)}{where}", file=sys.stderr)
        return 3
    except OSError as err:  # a path that cannot be written or read, a full disk: the machine's, not a bug
        print(f"bayessdc {args.command}: error: {_os_error(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bayessdc {args.command}: interrupted; nothing new was released (the same command resumes the "
              "finished parts)", file=sys.stderr)  # fmt: skip
        return 130
    except Exception as err:  # noqa: BLE001 - the only exit 1: a bug, said as one, its traceback in a log
        log = _error_log(args.command)
        print(f"bayessdc {args.command}: unexpected error (a fault in bayessdc, not in your input): "
              f"{type(err).__name__}: {err}\nThe traceback: {log}", file=sys.stderr)  # fmt: skip
        return 1


def _os_error(err: OSError) -> str:
    """An operating system's error in one sentence naming the path: permission, a full disk, a missing folder."""
    import errno

    path = err.filename if err.filename is not None else "a file"
    if err.errno == errno.ENOSPC:
        return f"no space left on the device writing {path}; free some space and rerun the same command"
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"permission denied: {path} cannot be written or read ({err.strerror})"
    return f"{path}: {err.strerror or err}"


def _error_log(command: str) -> str:
    """Write the traceback being handled to a log file of its own (in the temporary folder, never in an output
    folder) and return its path."""
    import tempfile
    import time
    import traceback

    folder = Path(tempfile.gettempdir()) / "bayessdc-errors"
    try:
        folder.mkdir(exist_ok=True)
        log = folder / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        log.write_text(f"bayessdc {__version__} {command}\n{traceback.format_exc()}")
        return str(log)
    except OSError:
        return "(not written: the temporary folder cannot be written)"

