"""``bayessdc NAME`` for every synthesizer, built from the command its recipe package declares.

The command line holds no synthesizer of its own: each package of :data:`bayessdc.recipes.RECIPES` declares its
:class:`bayessdc.command.Command` (options, help, the lines printed after a run, its demo) beside its recipe, and
this module turns it into a subcommand: every option absent unless given (:func:`bayessdc.cli.options.option`), its
help and messages with the library's ``name=`` shown as flags (:func:`bayessdc.cli.flags.as_flags`), the recipe
built from the options given and handed to :func:`bayessdc.synthesize`.
"""

from __future__ import annotations

import argparse
from functools import cache
from pathlib import Path
from typing import Any

from bayessdc import InputError
from bayessdc.command import Command, Option

from .failures import gate_refusal
from .flags import as_flags
from .options import build, given, option, shown

__all__ = ["add_parser", "commands", "run"]

#: Help of every synthesizer's input option (the formats :func:`bayessdc.read_table` reads).
DATA_HELP = "input table: CSV (also .csv.gz), .tsv, Parquet, Stata .dta or SAS .sas7bdat, by extension"


@cache
def commands() -> tuple[Command, ...]:
    """The synthesizers' commands, in the order of :data:`bayessdc.recipes.RECIPES` (read once per process)."""
    from bayessdc.recipes import commands as registered

    return registered()


def _register(where: Any, o: Option) -> None:
    """``o`` as an option of ``where`` (a parser or a group of it)."""
    kwargs = {k: v for k, v in (("type", o.type), ("choices", o.choices), ("nargs", o.nargs),
                                ("metavar", o.metavar)) if v is not None}  # fmt: skip
    if o.required:
        kwargs["required"] = True
    if "." not in o.to:  # the command's own choice, handed to its arrange step
        where.add_argument(*o.flags, dest=o.to, default=argparse.SUPPRESS, help=as_flags(o.help), **kwargs)
        return
    option(where, *o.flags, to=o.to, shows=o.shows, show=o.show or shown, action=o.action, help=as_flags(o.help),
           **kwargs)  # fmt: skip


def add_parser(subparsers: Any, command: Command) -> None:
    """Register ``bayessdc NAME`` from its declaration."""
    p = subparsers.add_parser(command.name, help=as_flags(command.help), description=as_flags(command.description))
    p.add_argument("--data", required=True, type=Path, help=DATA_HELP)
    p.add_argument("--out", required=True, type=Path, help="output folder (resumed if it holds the same run)")
    groups = {title: p.add_argument_group(title, as_flags(text)) for title, text in command.groups.items()}
    for o in command.options:
        _register(groups[o.group] if o.group else p, o)
    p.set_defaults(func=run, declared=command)


def _parsed(o: Option, value: Any, table: Any) -> Any:
    """The value of ``o`` as its parameter takes it (:attr:`Option.parse`); a ValueError said with the flag."""
    texts = value if o.action == "append" else [value]
    out = []
    for text in texts:
        try:
            out.append(o.parse(text, table) if o.reads_table else o.parse(text))
        except ValueError as err:
            raise InputError(f"{o.flags[0]} {text!r}: {err}") from None
    if o.action != "append":
        return out[0]
    return o.combine(out) if o.combine else out


def run(args: argparse.Namespace) -> int:
    """Run a synthesizer's command from parsed arguments: read the table, build the recipe from the options
    given, synthesize, print the command's lines."""
    import bayessdc as bsd

    command: Command = args.declared
    table = bsd.read_table(args.data)
    for o in command.options:
        if o.parse is not None and getattr(args, o.to, None) is not None:
            setattr(args, o.to, _parsed(o, getattr(args, o.to), table))
    options = given(args, command.recipe)
    choices = {o.to: getattr(args, o.to) for o in command.options if "." not in o.to and hasattr(args, o.to)}
    if command.arrange is not None:
        options = command.arrange({**options, **choices})
    recipe = build(command.recipe, options)  # a bad setting raises ValueError: exit status 2, said by main()
    where = {"holdout": args.holdout} if command.records else {}
    try:
        release = bsd.synthesize(table, recipe, out=args.out, policy=args.policy, progress=not args.quiet, **where,
                                 **given(args, "synthesize"))  # fmt: skip
    except bsd.ConvergenceError as err:
        return gate_refusal(command.name, str(err), args.out)
    report = args.out / "private" / "report.html"
    print("\n".join([*command.summary(release),
                     f"  written: {args.out / 'release'} and {args.out / 'private'} (the run's report: {report})"]))
    return 0


def demo(command: Command, out: Path, seed: int) -> list[dict[str, Any]]:
    """The rows of ``bayessdc demo``'s table from the synthesizer's demo."""
    return [{"synthesizer": command.name, "measure": k, "value": v} for k, v in command.demo(out, seed)]
