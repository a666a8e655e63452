"""The truncated-Poisson flows synthesizer's recipe (Hawala, Reiter & Wang): its prepared input, checks, fit, draw,
figures, description and report content; its command (``command.py``)."""

from .. import exports

__all__ = ["Flows"]
__getattr__ = exports(__name__, {"Flows": "recipe"})
