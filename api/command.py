"""A synthesizer's command, declared beside its recipe: what ``bayessdc NAME`` takes, prints and demonstrates.

Each recipe package (:data:`bayessdc.recipes.RECIPES`) holds a module ``command`` with a :class:`Command`, so a
new synthesizer gets its command, its help and its demo from its own folder and one line of the registry; the
command line (:mod:`bayessdc.cli`) builds every synthesizer's subcommand from these declarations and holds no
synthesizer of its own.

An :class:`Option` names the library parameter it sets (``"DPMPM.settings.draws"``: the ``draws`` of the default
settings of ``bsd.DPMPM``; ``"synthesize.m"``: the parameter ``m`` of ``bsd.synthesize``), never a value: absent,
the parameter keeps the library's default. Its flag is the parameter's name (``--draws``) unless it declares
another. Help texts speak as the library does, naming parameters as ``name=``; the command line shows each as
its flag. This module imports nothing heavy: ``bayessdc --help`` reads these declarations without a model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .validation import column_list

__all__ = ["Command", "Option", "columns", "synthesize_options", "two_columns"]


def columns(text: str | Sequence[str] | None) -> list[str]:
    """Column names written ``A,B`` or as words (``["A", "B,C"]``): ``["A", "B", "C"]``; None gives an empty list
    (:func:`bayessdc.validation.column_list`, which ``bsd.synthesize`` reads its roles with)."""
    return column_list(text) or []


def two_columns(text: str) -> tuple[str, str]:
    """``"X,Y"`` as ``("X", "Y")``; any other number of names is a ValueError."""
    names = columns(text)
    if len(names) != 2:
        raise ValueError(f"takes two columns XCOL,YCOL, got {text!r}")
    return names[0], names[1]


@dataclass(frozen=True)
class Option:
    """One option of a synthesizer's command: the library parameter it sets and how its text becomes a value.

    Attributes
    ----------
    to
        ``"OWNER.PATH"``: a field of the recipe ``bsd.OWNER`` (nested fields by dots, ``"DPMPM.gate.max_chains"``)
        or a parameter of ``bsd.synthesize`` (``"synthesize.keep"``); a bare name (``"sampler"``) is a choice of
        the command, no parameter of the library, handed to :attr:`Command.arrange` with the recipe's options.
    help
        The help; ``{default}`` (and each name of ``shows``) stands for the library's value, read when the help
        is read; parameters named ``name=`` are shown as their flags.
    flag
        The flag without its dashes (default: the last name of ``to``, underscores as hyphens); ``aliases`` are
        further spellings accepted.
    type, choices, action, nargs, metavar, required
        As :meth:`argparse.ArgumentParser.add_argument` (``action``: ``"store"``, ``"append"`` or
        ``"store_true"``).
    shows, show
        The library's value ``{default}`` stands for (default ``to``; a mapping names several), and how it is
        written.
    parse, combine
        The text given as the parameter takes it (``columns``, a file read); a ``ValueError`` it raises is said
        with the flag and the text given. With ``reads_table``, called as ``parse(text, table)``. An option given
        several times (``action="append"``) is parsed text by text, and its list handed to ``combine``.
    group
        The title of the help's group of options it belongs to (:attr:`Command.groups`).
    """

    to: str
    help: str = ""
    flag: str | None = None
    aliases: tuple[str, ...] = ()
    type: Callable[[str], Any] | None = None
    choices: Sequence[str] | None = None
    action: str = "store"
    nargs: str | None = None
    metavar: str | None = None
    required: bool = False
    shows: str | Mapping[str, str] | None = None
    show: Callable[[Any], str] | None = None
    parse: Callable[..., Any] | None = None
    reads_table: bool = False
    combine: Callable[[list[Any]], Any] | None = None
    group: str | None = None

    @property
    def parameter(self) -> str:
        """The parameter's own name, the last of ``to`` (``"draws"``)."""
        return self.to.rsplit(".", 1)[-1]

    @property
    def flags(self) -> tuple[str, ...]:
        """The option strings (``("--draws",)``)."""
        return tuple(f"--{name}" for name in (self.flag or self.parameter.replace("_", "-"), *self.aliases))


@dataclass(frozen=True)
class Command:
    """``bayessdc NAME``: a synthesizer's options, its refusal advice, the lines it prints and its demo.

    Attributes
    ----------
    name
        The subcommand (``"dp-areal"``).
    recipe
        The public name of its recipe class (``"DPAreal"``), the owner of its options' ``to``.
    help, description
        One line for ``bayessdc --help``; the paragraph of ``bayessdc NAME --help`` (parameters as ``name=``).
    options
        Its options in the order the help lists them; ``--data``, ``--out``, ``--policy`` (and ``--holdout``
        when it releases records), ``--quiet`` and ``--verbose`` are every synthesizer's.
    groups
        Title -> description of the help's groups of options.
    records
        It releases records, which a control set (``holdout=``) can be compared with.
    arrange
        The recipe's keyword arguments from the options given (nested by field), rearranged before the recipe is
        built (the DP-areal's ``sampler`` picks the settings' class); a ValueError names the options.
    summary
        The lines printed after a run (the written folders are added), from the :class:`bayessdc.Release`.
    demo
        ``demo(out, seed)``: the synthesizer on its bundled example, small settings, written under ``out``;
        rows ``(figure, value)`` of ``bayessdc demo``'s table.
    """

    name: str
    recipe: str
    help: str
    description: str
    options: tuple[Option, ...]
    summary: Callable[[Any], list[str]]
    demo: Callable[[Path, int], list[tuple[str, Any]]]
    groups: Mapping[str, str] = field(default_factory=dict)
    records: bool = True
    arrange: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def synthesize_options(recipe: str) -> tuple[Option, Option]:
    """``m=`` and ``seed=`` of ``bsd.synthesize``, every synthesizer's (``m``'s default: the recipe's ``default_m``).

    Parameters
    ----------
    recipe
        The public name of the recipe class (``"DPMPM"``).

    Returns
    -------
    tuple of Option
    """
    return (
        Option("synthesize.m", "synthetic datasets (default {default}: the recipe's default_m)", type=int,
               shows=f"{recipe}.default_m"),
        Option("synthesize.seed", "seed of the whole run (default {default})", type=int),
    )  # fmt: skip
