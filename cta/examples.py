"""The 4 x 9 magnitude table of Cox (2003), Table 1, with its seven sensitive cells and protections."""

from __future__ import annotations

import pandas as pd

_VALUES = [
    [167500, 317501, 1283751, 587501, 4490751, 3981001, 2442001, 1150000, 70000],
    [56250, 1487000, 172500, 667503, 1006253, 327500, 1683000, 1138250, 46000],
    [616752, 202750, 1899502, 1098751, 2172251, 3825251, 4372753, 300000, 787500],
    [0, 35000, 0, 16250, 0, 0, 65000, 0, 140000],
]
_ROW_TOTALS = [14490006, 6584256, 15275510, 256250]
_COLUMN_TOTALS = [840502, 2042251, 3355753, 2370005, 7669255, 8133752, 8562754, 2588250, 1043500]
_GRAND_TOTAL = 36606022
#: (row, column) -> protection p_i, rows and columns numbered from 1 as in the paper.
COX_PROTECTION = {(1, 9): 21000, (2, 1): 625, (2, 9): 7800, (3, 8): 40000, (4, 2): 10500, (4, 4): 4875,
                  (4, 9): 42000}


def cox_4x9_frame(total_label: str = "Total") -> pd.DataFrame:
    """Return Cox's 4 x 9 table in long form, totals included.

    Parameters
    ----------
    total_label : str, default "Total"

    Returns
    -------
    pandas.DataFrame
        Columns ``row`` ("R1".."R4"), ``column`` ("C1".."C9"), ``value`` and ``protection`` (0 for the
        non-sensitive cells); 50 rows: 36 interior cells, 4 row totals, 9 column totals and the grand total.
    """
    records = []
    for r, row in enumerate(_VALUES, start=1):
        for c, value in enumerate(row, start=1):
            records.append((f"R{r}", f"C{c}", value, COX_PROTECTION.get((r, c), 0)))
        records.append((f"R{r}", total_label, _ROW_TOTALS[r - 1], 0))
    for c, value in enumerate(_COLUMN_TOTALS, start=1):
        records.append((total_label, f"C{c}", value, 0))
    records.append((total_label, total_label, _GRAND_TOTAL, 0))
    return pd.DataFrame(records, columns=["row", "column", "value", "protection"])
