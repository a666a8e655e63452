"""One home per synthesizer: each package holds its recipe (:class:`bayessdc.pipeline.Recipe`): the prepared
input and its checks, the fit, the draw, the description, the levers and the report content, and its command
(``command.py``, a :class:`bayessdc.command.Command`: the options, summary and demo of ``bayessdc NAME``); the
generic steps are :mod:`bayessdc.pipeline`'s. A recipe imports :mod:`bayessdc.pipeline`'s base and the model layer,
never another recipe but its base (the DPMPM and the DP-areal build on :mod:`bayessdc.recipes.categorical`); the
pipeline imports no recipe. A new synthesizer is its model folder, its package here and one line in
:data:`RECIPES`: ``bsd.NAME`` and ``bayessdc NAME`` come from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

#: Each synthesizer's public recipe class, by the name ``import bayessdc as bsd`` gives it, and its package, in the
#: order ``bayessdc --help`` and ``bayessdc demo`` take them.
RECIPES = {
    "Flows": "bayessdc.recipes.flows",
    "Spatial": "bayessdc.recipes.spatial",
    "DPMPM": "bayessdc.recipes.dpmpm",
    "DPAreal": "bayessdc.recipes.dp_areal",
    "CART": "bayessdc.recipes.cart",
}

__all__ = ["RECIPES", "area_recipe", "commands", "exports"]


def exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a recipe package: its public names loaded from their modules on first use.

    A package's ``command`` module is read by ``bayessdc --help`` without its recipe, which imports the models
    (PyMC, numba): the package itself imports nothing until a name of it is asked for.

    Parameters
    ----------
    package
        The package's ``__name__``.
    names
        Public name -> the package's module defining it (``{"DPMPM": "recipe"}``).

    Returns
    -------
    callable
        ``__getattr__(name)`` for the package (PEP 562).
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{names[name]}"), name)

    return __getattr__


def commands() -> tuple[Any, ...]:
    """Each registered synthesizer's command (its package's ``command.COMMAND``, a :class:`bayessdc.command.Command`),
    in the order of :data:`RECIPES`; read without the recipes, which import the models."""
    return tuple(importlib.import_module(f"{package}.command").COMMAND for package in RECIPES.values())


def area_recipe(area_model: Any) -> Any:
    """The area model of a release whose area is synthesized first (``area_model=``, :mod:`bayessdc.pipeline.areas`):
    ``"dpmpm"`` or ``"dp_areal"`` (the registry's ``bsd.DPMPM()``, ``bsd.DPAreal()`` at their defaults), or such a
    recipe as given, checked (:func:`~bayessdc.pipeline.areas.check_area_model`).

    Examples
    --------
    >>> area_recipe("dpmpm").name, area_recipe("dp_areal").gate.datasets_per_chain
    ('dpmpm', 200)

    Raises
    ------
    bayessdc.InputError
        Another name or object, a recipe with ``strata=`` of its own, or with missing values as a level.
    """
    from ..errors import InputError
    from ..pipeline.areas import AREA_MODELS, check_area_model

    if isinstance(area_model, str):
        if area_model not in AREA_MODELS:
            raise InputError(f"area_model= must be one of {', '.join(AREA_MODELS)}, or a bsd.DPMPM or bsd.DPAreal "
                             f"recipe; got {area_model!r}")  # fmt: skip
        name = AREA_MODELS[area_model]
        return getattr(importlib.import_module(RECIPES[name]), name)()
    return check_area_model(area_model)
