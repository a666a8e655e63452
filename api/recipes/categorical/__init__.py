"""The base recipe of the categorical synthesizers (the DPMPM and the DP-areal): their prepared input and checks, the
release gate on their posterior draws, their draw, utility and report content; the options and lines their commands
share (``command.py``)."""

from .. import exports

__all__ = [
    "CategoricalFit",
    "CategoricalPrepared",
    "CategoricalRecipe",
    "KnownSets",
    "check_known_sets",
    "stage_messages",
]
__getattr__ = exports(
    __name__,
    {"CategoricalFit": "recipe", "CategoricalPrepared": "input", "CategoricalRecipe": "recipe", "KnownSets": "input",
     "check_known_sets": "input", "stage_messages": "recipe"},
)  # fmt: skip
