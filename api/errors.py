"""The errors the public API raises for a user's input and options."""

from __future__ import annotations

from bayessdc.models.errors import InputError

__all__ = ["InputError", "NotApplicableError"]


class NotApplicableError(TypeError):
    """A measure was asked of a release whose synthesizer has no such measure; the message names the
    alternative."""
