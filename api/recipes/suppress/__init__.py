"""Complementary cell suppression (``bsd.suppress``): its input, checks, the suppressed table and its verdict."""

from .recipe import suppress
from .suppression import Suppression, SuppressionNotSafeError

__all__ = ["Suppression", "SuppressionNotSafeError", "suppress"]
