"""The DP-areal synthesizer's recipe (a many-level geography label), on the categorical base recipe."""

from .recipe import DPAreal

__all__ = ["DPAreal"]
