"""Options that set a library parameter: given or absent, never a default of the command line's own.

An option registered by :func:`option` has no default (``argparse.SUPPRESS``): absent, it leaves its parameter to
the library. Its destination names what it sets, ``"OWNER.PATH"``: ``"DPMPM.K"`` (a field of ``bsd.DPMPM``),
``"DPMPM.settings.draws"`` (a field of the recipe's default settings), ``"synthesize.seed"`` (a parameter of
``bsd.synthesize``). :func:`given` collects the options the user gave for one owner and :func:`build` makes the
recipe from them. The help states the library's default, read from the dataclass field or the function's
signature (:func:`library_default`) when the help is read, so that ``bayessdc --help`` imports no synthesizer.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["build", "given", "library_default", "option", "shown"]


def _default_of(owner: Any, name: str) -> Any:
    """The default of ``name``: a dataclass field's (its factory called), a function's parameter's, or a class
    attribute (``default_m``)."""
    if dataclasses.is_dataclass(owner):
        for f in dataclasses.fields(owner):
            if f.name == name:
                if f.default is not dataclasses.MISSING:
                    return f.default
                if f.default_factory is not dataclasses.MISSING:
                    return f.default_factory()
                raise LookupError(f"{owner.__name__}.{name} has no default")
    if inspect.isclass(owner):
        return getattr(owner, name)
    parameter = inspect.signature(owner).parameters[name]
    if parameter.default is inspect.Parameter.empty:
        raise LookupError(f"{owner.__name__}({name}=) has no default")
    return parameter.default


def library_default(path: str) -> Any:
    """The library's default of a parameter.

    Parameters
    ----------
    path
        ``"OWNER.NAME[.ATTRIBUTE...]"``: a field or parameter ``NAME`` of ``bsd.OWNER`` (``"DPMPM.settings.draws"``:
        the ``draws`` of the default of ``bsd.DPMPM``'s field ``settings``).

    Returns
    -------
    Any
        The default, read from the dataclass field (its factory called) or the function's signature.
    """
    import bayessdc as bsd

    owner, first, *rest = path.split(".")
    value = _default_of(getattr(bsd, owner), first)
    for name in rest:
        value = getattr(value, name)
    return value


def shown(value: Any) -> str:
    """A default as the help states it: ``40``, ``0.02``, ``300,000``, ``inf``, ``none``, ``yes``/``no``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class _LibraryHelp:
    """An option's help with ``{default}`` (and any other ``{name}`` of :attr:`shows`) replaced by the library's
    value when the help is read (:attr:`shows` and :attr:`show` set by :func:`option`)."""

    @property
    def help(self) -> str | None:  # noqa: D102 - the property of argparse.Action's attribute
        text = self.__dict__.get("_help")
        for key, path in getattr(self, "shows", {}).items():
            if text is not None and f"{{{key}}}" in text:
                text = text.replace(f"{{{key}}}", self.show(library_default(path)).replace("%", "%%"))
        return text

    @help.setter
    def help(self, text: str | None) -> None:
        self.__dict__["_help"] = text


class _Store(_LibraryHelp, argparse.Action):
    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, values)


class _Append(_LibraryHelp, argparse.Action):
    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])


class _Flag(_LibraryHelp, argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, True)


_ACTIONS = {"store": _Store, "append": _Append, "store_true": _Flag}


def option(
    parser: Any,
    *flags: str,
    to: str,
    shows: str | Mapping[str, str] | None = None,
    show: Callable[[Any], str] = shown,
    action: str = "store",
    **kwargs: Any,
) -> argparse.Action:
    """Register an option of ``parser`` (or of a group) that sets the library's parameter ``to``.

    Parameters
    ----------
    parser
        An argument parser, argument group or mutually exclusive group.
    *flags
        The option strings (``"--draws"``).
    to
        ``"OWNER.PATH"``: what the option sets (its destination in the parsed arguments).
    shows
        The library's value ``{default}`` in the help stands for (default: ``to``); a mapping names several.
    show
        How that value is written (default :func:`shown`).
    action
        ``"store"``, ``"append"`` or ``"store_true"``.
    **kwargs
        Of :meth:`argparse.ArgumentParser.add_argument` (``type``, ``choices``, ``help``, ...); ``default`` only
        as ``None``, where the parameter's own default is ``None`` (``--m``).

    Returns
    -------
    argparse.Action
        The option; absent from the parsed arguments unless given.
    """
    if kwargs.setdefault("default", argparse.SUPPRESS) not in (argparse.SUPPRESS, None):
        raise ValueError(f"{flags[0]}: the library holds the default of {to}")
    if action != "store_true" and "choices" not in kwargs:  # named as before: by the flag, or by the choices
        kwargs.setdefault("metavar", flags[0].lstrip("-").replace("-", "_").upper())
    made = parser.add_argument(*flags, dest=to, action=_ACTIONS[action], **kwargs)
    made.shows = {"default": shows or to} if not isinstance(shows, Mapping) else dict(shows)
    made.show = show
    return made


def given(args: argparse.Namespace, owner: str) -> dict[str, Any]:
    """The options the user gave for ``owner`` (``"DPMPM"``, ``"synthesize"``).

    Parameters
    ----------
    args
        The parsed arguments.
    owner
        The public name of ``bsd`` the options set.

    Returns
    -------
    dict
        Keyword arguments nested by path (``{"K": 6, "settings": {"draws": 60}}``); an option not given (or
        ``None``) is left out.
    """
    out: dict[str, Any] = {}
    for key, value in vars(args).items():
        head, _, path = key.partition(".")
        if head != owner or not path or value is None:
            continue
        *parents, name = path.split(".")
        level = out
        for parent in parents:
            level = level.setdefault(parent, {})
        level[name] = value
    return out


def build(owner: str, options: Mapping[str, Any]) -> Any:
    """``bsd.OWNER(**options)``, each nested mapping of ``options`` applied to that field's default
    (``settings={"draws": 60}``: the recipe's default settings with 60 draws)."""
    import bayessdc as bsd

    cls, made = getattr(bsd, owner), dict(options)
    for name, value in options.items():
        default = _default_of(cls, name) if isinstance(value, Mapping) else None  # a nested option: its fields
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            made[name] = dataclasses.replace(default, **value)
    return cls(**made)

