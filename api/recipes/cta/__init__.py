"""Controlled tabular adjustment (``bsd.adjust``): its input, checks, the adjustment and its verdict."""

from .adjustment import Adjustment, ProtectionNotMetError
from .recipe import adjust

__all__ = ["Adjustment", "ProtectionNotMetError", "adjust"]
