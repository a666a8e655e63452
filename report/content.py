"""What a synthesizer contributes to its report: what it did, its own diagnostics and the data to compare.

A synthesizer's pipeline builds one :class:`ReportContent` from its release: sentences on what it did, the
columns whose distributions are compared, and items that only its model has (the sizes of CART's trees, a map
of the locations). Risk, utility and their trade-off are not here: :func:`bayessdc.report.write_run_report`
lays them out from the release's measure objects (:mod:`bayessdc.measures`), the same way for every
synthesizer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from matplotlib.figure import Figure as MplFigure

__all__ = ["Figure", "ReportContent", "Table", "Text"]


@dataclass
class Figure:
    """A plot, drawn when the report is written.

    Attributes
    ----------
    draw
        Returns the matplotlib figure (usually a function of :mod:`bayessdc.report.plots` with its data bound).
    caption
        What the reader should see in it.
    """

    draw: Callable[[], MplFigure]
    caption: str = ""


@dataclass
class Table:
    """A table: a DataFrame, or a mapping shown as two columns."""

    data: pd.DataFrame | dict[str, Any]
    caption: str = ""
    index: bool = False


@dataclass
class Text:
    """A paragraph."""

    text: str


Item = Figure | Table | Text


@dataclass
class ReportContent:
    """A release's report material beyond what every release has.

    Attributes
    ----------
    original, synthetic, compared
        The confidential values (in memory only; the report is private) and the stacked synthetic datasets
        (column ``synthetic`` = 1..m) of the ``compared`` columns, whose distributions are compared.
    about
        Sentences on what was synthesized and how.
    diagnostics, comparison
        Further items of those sections (the trees, a map of the locations).
    """

    original: pd.DataFrame | None = None
    synthetic: pd.DataFrame | None = None
    compared: list[str] = field(default_factory=list)
    about: list[str] = field(default_factory=list)
    diagnostics: list[Item] = field(default_factory=list)
    comparison: list[Item] = field(default_factory=list)
