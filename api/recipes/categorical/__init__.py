"""The base recipe of the categorical synthesizers (the DPMPM and the DP-areal): their prepared input and checks, the
release gate on their posterior draws, their draw, utility and report content."""

from .input import CategoricalPrepared, KnownSets, check_known_sets
from .recipe import CategoricalFit, CategoricalRecipe, stage_messages

__all__ = [
    "CategoricalFit",
    "CategoricalPrepared",
    "CategoricalRecipe",
    "KnownSets",
    "check_known_sets",
    "stage_messages",
]
