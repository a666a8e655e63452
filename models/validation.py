"""Row-naming helpers shared by the input checks of every synthesizer.

Bad input is refused before any sampling with a message that names the column, the rows and the
constraint. Rows are named 1-based, as data row numbers (row 1 is the first line after a header, as in a
spreadsheet), in one of two wordings that the command-line messages already use:

* :func:`name_rows` (flows, spatial): ``"data rows 2, 5, 7 and 3 more"``, from a boolean mask;
* :func:`describe_rows` (CART and its rules): ``"data rows 3, 17 (2 rows)"``, from 0-based positions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["describe_rows", "name_rows"]


def name_rows(mask: np.ndarray | pd.Series, limit: int = 5) -> str:
    """Describe the offending rows as 1-based data row numbers (row 1 is the first line after a header).

    Parameters
    ----------
    mask
        True at the offending rows (positions of the table, not its index).
    limit
        Rows shown; the rest are counted (``"and 3 more"``).

    Returns
    -------
    str
        For example ``"data row 4"`` or ``"data rows 1, 3"``.
    """
    positions = np.flatnonzero(np.asarray(mask)) + 1
    shown = ", ".join(str(p) for p in positions[:limit])
    more = f" and {len(positions) - limit} more" if len(positions) > limit else ""
    return f"data row{'s' if len(positions) > 1 else ''} {shown}{more}"


def describe_rows(positions: np.ndarray, limit: int = 10) -> str:
    """``"data rows 3, 17 (2 rows)"`` for 0-based positions (shown 1-based, as in a spreadsheet).

    Parameters
    ----------
    positions
        0-based positions of the offending rows.
    limit
        Rows shown; more are elided (``", ..."``) but counted in the parenthesis.
    """
    shown = ", ".join(str(int(p) + 1) for p in positions[:limit])
    more = ", ..." if len(positions) > limit else ""
    plural = "s" if len(positions) > 1 else ""
    return f"data row{plural} {shown}{more} ({len(positions)} row{plural})"
