"""The DP-areal synthesizer's recipe (a many-level geography label), on the categorical base recipe; its command
(``command.py``)."""

from .. import exports

__all__ = ["DPAreal"]
__getattr__ = exports(__name__, {"DPAreal": "recipe"})
