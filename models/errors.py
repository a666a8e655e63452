"""The error every synthesizer raises for bad input: the table or an option, named by column, row or constraint.

It lives here, below every model, so that each model's own error (``FlowDataError``,
``CategoricalDataError``, ...) is one; the public API re-exports it as ``bayessdc.InputError``. Raised before
any sampling; the command line prints the message and exits with status 2.
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """The input table or an option is wrong; the message names the column, row or constraint."""
