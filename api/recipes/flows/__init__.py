"""The truncated-Poisson flows synthesizer's recipe (Hawala, Reiter & Wang): its prepared input, checks, fit, draw,
figures, description and report content."""

from .recipe import Flows

__all__ = ["Flows"]
