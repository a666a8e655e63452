"""The errors the public API raises for a user's input and options."""

from __future__ import annotations

__all__ = ["InputError", "NotApplicableError"]


class InputError(ValueError):
    """The input table or an option is wrong; the message names the column, row or constraint.

    Raised before any sampling. The command line prints the message and exits with status 2.
    """


class NotApplicableError(TypeError):
    """A measure was asked of a release whose synthesizer has no such measure; the message names the
    alternative."""
