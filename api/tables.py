"""Controlled tabular adjustment beside complementary cell suppression of the same table (Cox 2003, Example 1a):
:func:`compare_tables` and the :class:`TableComparison` it returns.

Cox sets the two methods side by side on one table with the same sensitive cells and asks what each costs the
table's users and whether each protects. The comparison puts, for each method, one figure per row:

* the information lost: the cells suppressed (cell suppression) or adjusted (CTA), among the interior cells and
  the totals, and those besides the sensitive cells; the value suppressed or the sum of the absolute adjustments,
  and its share of the table's interior value;
* Cox's preserved statistics (:func:`bayessdc.cta.quality_report`, over the interior cells and over the sensitive
  cells): the mean of the published values, their variance over the original's, and the correlation and
  regression slope of published on original values. A suppressed table publishes the cells it publishes exactly
  and the others not at all, so what it leaves of these statistics is what an analyst computes from the published
  cells alone: their mean and variance (beside the original's of every cell), and a correlation and slope of 1
  over those cells only (none where no cell of the set is published, as for the sensitive cells);
* the protection: one row per sensitive cell with the interval each release's intruder derives, taken from the
  release's own audit (:func:`bayessdc.cta.audit_table`: the suppression intruder for the suppressed table, the
  intruder who knows CTA for the adjusted one, as each release's disclosure policy judged it), and whether that
  interval covers the cell's protection range.

Either release may be the object in memory (:class:`bayessdc.Adjustment`, :class:`bayessdc.Suppression`) or the
output folder its ``save`` wrote (its ``private/`` files: ``run.json``, ``cells.csv``, ``quality.json`` and
``audit.csv``); ``bayessdc report CTA_DIR SUPPRESS_DIR`` compares two folders. Two releases of different tables (other
cells, other original values) or with different sensitive cells or protection levels are refused, naming what
differs. The comparison shows original values: it is for the agency, not for publication, and
:meth:`TableComparison.save` refuses a path inside a ``release/`` folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayessdc import cta

from .errors import InputError
from .recipes.cta import Adjustment
from .recipes.suppress import Suppression

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["METHODS", "TableComparison", "compare_tables", "table_runs"]

#: The two methods, as the comparison's columns name them, and the ``synthesizer`` of their runs' ``run.json``.
METHODS = {"suppression": "suppress", "cta": "cta"}

#: The words of each method.
TITLES = {"suppression": "cell suppression", "cta": "controlled tabular adjustment"}

#: The rows of :attr:`TableComparison.measures`: key -> what the row says (each method's figure in its own words).
MEASURES = {
    "sensitive_cells": "sensitive (primary) cells",
    "cells_changed": "cells suppressed / adjusted",
    "interior_cells_changed": "... of them interior cells",
    "totals_changed": "... of them totals",
    "other_cells_changed": "... besides the sensitive cells (secondary suppressions / rebalancing)",
    "interior_value_changed": "interior value suppressed / sum of absolute adjustments",
    "interior_value_share": "... share of the table's interior value",
    "totals_value_changed": "totals' value suppressed / sum of their absolute adjustments",
    "interior_published": "interior cells with a published value",
    "interior_mean": "interior cells: mean of the published values",
    "interior_variance_ratio": "interior cells: variance of the published values / the original's",
    "interior_correlation": "interior cells: correlation of published with original (published cells)",
    "interior_slope": "interior cells: regression slope of published on original (published cells)",
    "sensitive_published": "sensitive cells with a published value",
    "sensitive_mean": "sensitive cells: mean of the published values",
    "sensitive_variance_ratio": "sensitive cells: variance of the published values / the original's",
    "sensitive_correlation": "sensitive cells: correlation of published with original",
    "sensitive_slope": "sensitive cells: regression slope of published on original",
    "protected": "sensitive cells protected under the release's audit",
    "status": "solver status",
}

#: Relative tolerance (times the largest absolute value, at least 1) under which a cell counts as not adjusted.
ADJUSTED_TOLERANCE = 1e-9


@dataclass(frozen=True)
class _Release:
    """One method's release of the table, as the comparison reads it."""

    method: str
    labels: list[str]
    cells: pd.DataFrame  # label columns, name, original, published (NaN: suppressed), interior, sensitive
    quality: dict[str, Any]
    audit: pd.DataFrame
    status: str
    source: str


@dataclass(frozen=True)
class TableComparison:
    """Controlled tabular adjustment beside cell suppression of the same table (:func:`compare_tables`).

    Attributes
    ----------
    measures
        One row per figure (index: the keys of :data:`MEASURES`): ``measure`` (what it is), ``suppression`` and
        ``cta`` (each method's figure) and ``original`` (the original table's: the count or value a figure is out
        of, or the statistic itself).
    cells
        One row per sensitive cell, in the table's order: the table's label columns, ``name``, ``true`` (its
        original value), ``required_lower`` and ``required_upper`` (its protection), then per method (``suppression_``
        and ``cta_``) the ``published`` value (NaN: suppressed), the audited interval ``min``, ``max`` and whether
        it is ``protected`` (it covers ``[true - required_lower, true + required_upper]``); for CTA also the hole
        ``cta_hole_lower``, ``cta_hole_upper`` the intruder knows the true value is not in (the method moved the
        cell by at least its protection).
    n_cells, n_interior
        The table's cells (totals included) and interior cells.
    sources
        Where each release was read: ``"in memory"`` or its output folder.
    intruders
        Each release's intruder model in words.
    """

    measures: pd.DataFrame
    cells: pd.DataFrame
    n_cells: int
    n_interior: int
    sources: dict[str, str] = field(default_factory=dict)
    intruders: dict[str, str] = field(default_factory=dict)

    @property
    def protected(self) -> dict[str, bool]:
        """Per method, whether its audit protects every sensitive cell."""
        return {method: bool(self.cells[f"{method}_protected"].all()) for method in METHODS}

    def sentence(self) -> str:
        """The comparison in one sentence: what each method protects and what it costs."""
        m = self.measures
        n = int(m.loc["sensitive_cells", "cta"])
        protected = self.protected
        if all(protected.values()):
            head = f"Both releases protect every one of the {n} sensitive cells under their own intruder's audit"
        else:
            failing = [
                f"{TITLES[method]} leaves {n - int(m.loc['protected', method])} of {n} sensitive cells unprotected"
                for method in METHODS
                if not protected[method]
            ]
            head = " and ".join(failing).capitalize()
        return (
            f"{head}. Cell suppression suppresses {m.loc['cells_changed', 'suppression']} of the {self.n_cells} cells, "
            f"{_percent(m.loc['interior_value_share', 'suppression'])} of the interior value; controlled tabular "
            f"adjustment moves {m.loc['cells_changed', 'cta']}, its adjustments of the interior cells summing to "
            f"{_percent(m.loc['interior_value_share', 'cta'])} of that value."
        )

    def plot(self, limit: int = 40) -> Figure:
        """The audited intervals of the sensitive cells (the first ``limit``), each relative to the cell's true value,
        beside its protection range.

        Parameters
        ----------
        limit
            The most cells drawn.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from matplotlib.figure import Figure

        cells = self.cells.head(limit)
        k = len(cells)
        figure = Figure(figsize=(7.5, 1.2 + 0.32 * max(k, 1)))
        ax = figure.add_subplot()
        true = cells["true"].to_numpy(float)
        scale = np.where(np.abs(true) > 0, np.abs(true), 1.0)
        right = 3.0
        for row, (_, cell) in enumerate(cells.iterrows()):
            y = k - 1 - row
            low = (cell["true"] - cell["required_lower"]) / scale[row]
            high = (cell["true"] + cell["required_upper"]) / scale[row]
            ax.plot([low, high], [y, y], color="#bbbbbb", linewidth=9, solid_capstyle="butt",
                    label="protection range" if row == 0 else None)  # fmt: skip
            for offset, method, colour in ((0.18, "suppression", "#1f5fa8"), (-0.18, "cta", "#c0661b")):
                lo = cell[f"{method}_min"] / scale[row]
                hi = min(cell[f"{method}_max"] / scale[row], right)
                ax.plot([lo, hi], [y + offset] * 2, color=colour, linewidth=2.2,
                        label=f"{TITLES[method]}: audited interval" if row == 0 else None)  # fmt: skip
                if not cell[f"{method}_protected"]:
                    ax.plot([hi], [y + offset], marker="x", color="#b3261e", markersize=7)
            if np.isfinite(cell["cta_hole_lower"]):
                ax.plot(
                    [cell["cta_hole_lower"] / scale[row], cell["cta_hole_upper"] / scale[row]],
                    [y - 0.18] * 2,
                    color="#f3d3b8",
                    linewidth=2.2,
                    label="CTA: the hole the method leaves" if row == 0 else None,
                )
            ax.plot([1.0], [y], marker="|", color="black", markersize=12)
        ax.set_yticks(range(k))
        ax.set_yticklabels(list(cells["name"])[::-1], fontsize=7)
        ax.set_xlim(-0.05, right)
        ax.set_xlabel("value / the cell's true value (true value at 1; cut at 3)")
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, fontsize=7, frameon=False)
        figure.tight_layout()
        return figure

    def render(self) -> str:
        """The HTML page :meth:`save` writes."""
        from bayessdc.report.html import Document

        doc = Document(f"bayessdc: cell suppression beside controlled tabular adjustment of {self.n_cells} cells")
        doc.paragraph("Confidential: this comparison shows the original values. Keep it with the runs' private/ "
                      "folders.", css="private")  # fmt: skip
        doc.verdict(self.sentence(), all(self.protected.values()))
        doc.paragraph(
            "Cox (2003, Example 1a) sets the two methods side by side on one table: complementary cell suppression "
            "removes the sensitive cells and enough other cells that none can be recomputed to within its "
            "protection; controlled tabular adjustment moves each sensitive cell by at least its protection and the "
            "other cells by as little as keeps every total adding up."
        )
        doc.table({TITLES[m]: self.sources.get(m, "") for m in METHODS}, caption="The two releases compared")
        doc.heading("Information loss and the statistics each release keeps")
        doc.table(self._shown_measures(), caption="Each method's figure beside the original table's (the count or "
                  "value a figure is out of, or the statistic itself)")  # fmt: skip
        doc.heading("Each sensitive cell under each release's audit")
        doc.paragraph("; ".join(f"{TITLES[m]}: {self.intruders.get(m, '')}" for m in METHODS))
        doc.figure(self.plot(), "Each sensitive cell's protection range (grey, relative to its true value at 1) "
                   "and the interval each release's intruder derives; a cross marks an interval that does not "
                   "cover the protection range.")  # fmt: skip
        doc.table(self._shown_cells(), caption="The audited interval of every sensitive cell under each release")
        return doc.render()

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the comparison as one self-contained HTML file.

        Parameters
        ----------
        path
            The file. It shows original values: it may not lie in a ``release/`` folder.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        bayessdc.InputError
            ``path`` lies in a ``release/`` folder.
        """
        from bayessdc.report.html import write_html

        path = Path(path)
        if any(part == "release" for part in path.resolve().parent.parts):
            raise InputError(f"{path}: the comparison shows original values; write it outside any release/ folder")
        return write_html(path, self.render())

    def _shown_measures(self) -> pd.DataFrame:
        frame = self.measures.rename(columns={m: TITLES[m] for m in METHODS})
        return frame.astype(object).where(frame.notna(), None)

    def _shown_cells(self) -> pd.DataFrame:
        c = self.cells
        words = {True: "yes", False: "NO"}
        return pd.DataFrame({
            "cell": c["name"], "true": c["true"],
            "protection range": [f"{_number(t - lo)} to {_number(t + up)}" for t, lo, up
                                 in zip(c["true"], c["required_lower"], c["required_upper"], strict=True)],
            "suppression: interval": [_interval(lo, hi) for lo, hi in zip(c["suppression_min"], c["suppression_max"],
                                                                           strict=True)],
            "suppression: protected": c["suppression_protected"].map(words),
            "CTA: published": c["cta_published"],
            "CTA: interval": [_interval(lo, hi) for lo, hi in zip(c["cta_min"], c["cta_max"], strict=True)],
            "CTA: protected": c["cta_protected"].map(words),
        })  # fmt: skip

    def __repr__(self) -> str:
        m = self.measures
        return (
            f"<TableComparison of {self.n_cells} cells, {int(m.loc['sensitive_cells', 'cta'])} sensitive: suppression "
            f"{m.loc['cells_changed', 'suppression']} cells suppressed "
            f"({_percent(m.loc['interior_value_share', 'suppression'])} of the interior value), CTA "
            f"{m.loc['cells_changed', 'cta']} cells adjusted ({_percent(m.loc['interior_value_share', 'cta'])}); "
            f"every sensitive cell protected: suppression {self.protected['suppression']}, CTA {self.protected['cta']}>"
        )

    def _repr_html_(self) -> str:
        from bayessdc.display import table_html, verdict_box

        shown = self._shown_cells()
        verdicts = [bool(a) and bool(b) for a, b in zip(self.cells["suppression_protected"],
                                                         self.cells["cta_protected"], strict=True)]  # fmt: skip
        more = len(shown) - 30
        shown = shown.head(30).assign(verdict=["protected by both" if v else "NOT by both" for v in verdicts[:30]])
        return "<div>" + "".join([
            verdict_box(self.sentence(), all(self.protected.values())),
            table_html(self._shown_measures(), "Information loss and the statistics each release keeps"),
            table_html(shown, "The audited interval of every sensitive cell under each release"
                       + (f" (the first 30; {more} more in .cells)" if more > 0 else ""), verdicts[:30]),
        ]) + "</div>"  # fmt: skip


def compare_tables(
    adjustment: Adjustment | str | os.PathLike[str], suppression: Suppression | str | os.PathLike[str]
) -> TableComparison:
    """Controlled tabular adjustment beside complementary cell suppression of the same table (Cox 2003, Example 1a).

    Parameters
    ----------
    adjustment
        The adjusted table (:func:`bayessdc.adjust`), or the output folder its ``save`` (``bayessdc cta``) wrote.
    suppression
        The suppressed table (:func:`bayessdc.suppress`), or the output folder of ``bayessdc suppress``.

    Returns
    -------
    TableComparison
        Displays itself in Jupyter; :meth:`TableComparison.save` writes one HTML file.

    Raises
    ------
    bayessdc.InputError
        The two releases are of different tables (other dimensions, cells or original values) or have different
        sensitive cells or protection levels, naming what differs; a folder that is not such a run, or lacks the
        private file the comparison reads, naming it.
    TypeError
        An argument that is neither the method's result nor a folder.

    Examples
    --------
    Cox's 4 x 9 table: its seven sensitive cells suppressed with the five secondary cells of least value, and
    adjusted by Cox's MILP.

    >>> import bayessdc as bsd
    >>> table = bsd.examples.cox_table()
    >>> adjusted = bsd.adjust(table, "row,column", "value", protection="protection",
    ...                       settings=bsd.AdjustmentSettings(integer=True))
    >>> suppressed = bsd.suppress(table, "row,column", "value", protection="protection")
    >>> comparison = bsd.compare_tables(adjusted, suppressed)
    >>> comparison.measures.loc[["cells_changed", "interior_value_changed"], ["suppression", "cta"]]
                           suppression       cta
    cells_changed                   12        19
    interior_value_changed   3077002.0  198225.0
    >>> comparison.protected
    {'suppression': True, 'cta': True}
    """
    cta_release = _read(adjustment, "cta")
    suppressed = _read(suppression, "suppression")
    _check_same(cta_release, suppressed)
    releases = {"suppression": suppressed, "cta": cta_release}
    base = suppressed.cells
    interior = base["interior"].to_numpy(bool)
    rows: dict[str, dict[str, Any]] = {key: {"measure": words} for key, words in MEASURES.items()}
    for method, release in releases.items():
        for key, value in _figures(release).items():
            rows[key][method] = value
    x = base["original"].to_numpy(float)
    sensitive = base["sensitive"].to_numpy(bool)
    reference = {
        "sensitive_cells": len(base), "cells_changed": len(base), "interior_cells_changed": int(interior.sum()),
        "totals_changed": int((~interior).sum()), "other_cells_changed": int((~sensitive).sum()),
        "interior_value_changed": float(np.abs(x[interior]).sum()), "interior_value_share": 1.0,
        "totals_value_changed": float(np.abs(x[~interior]).sum()), "interior_published": int(interior.sum()),
        "interior_mean": _mean(x[interior]), "interior_variance_ratio": 1.0, "interior_correlation": 1.0,
        "interior_slope": 1.0, "sensitive_published": int(sensitive.sum()), "sensitive_mean": _mean(x[sensitive]),
        "sensitive_variance_ratio": 1.0, "sensitive_correlation": 1.0, "sensitive_slope": 1.0,
        "protected": int(sensitive.sum()), "status": None,
    }  # fmt: skip
    for key, value in reference.items():
        rows[key]["original"] = value
    measures = pd.DataFrame({column: pd.Series([_defined(rows[key].get(column)) for key in rows], index=list(rows),
                                               dtype=object)
                             for column in ("measure", "suppression", "cta", "original")})  # fmt: skip
    return TableComparison(
        measures=measures,
        cells=_cells(suppressed, cta_release),
        n_cells=len(base),
        n_interior=int(interior.sum()),
        sources={method: release.source for method, release in releases.items()},
        intruders={
            method: str(release.audit.attrs.get("intruder") or _INTRUDERS[method])
            for method, release in releases.items()
        },  # fmt: skip
    )


def table_runs(folders: list[str | os.PathLike[str]]) -> tuple[Path, Path] | None:
    """The CTA and the suppression run among ``folders`` (``bayessdc report`` compares them side by side).

    Parameters
    ----------
    folders
        Output folders of bayessdc runs.

    Returns
    -------
    tuple of pathlib.Path, or None
        ``(cta folder, suppression folder)`` when the folders are one run of each; None when none of them is a table
        run (synthesis runs, for the risk-utility comparison).

    Raises
    ------
    bayessdc.InputError
        Table runs given, but not exactly one CTA run and one suppression run, or beside synthesis runs.
    """
    kinds = [_run_kind(Path(folder)) for folder in folders]
    if not any(kind in METHODS.values() for kind in kinds):
        return None
    named = ", ".join(f"{folder} ({kind or 'not a table run'})" for folder, kind in zip(folders, kinds, strict=True))
    if sorted(kinds, key=str) != ["cta", "suppress"]:
        raise InputError(f"a table comparison takes one controlled tabular adjustment run (bayessdc cta) and one cell "
                         f"suppression run (bayessdc suppress) of the same table; given {named}")  # fmt: skip
    by_kind = {kind: Path(folder) for folder, kind in zip(folders, kinds, strict=True)}
    return by_kind["cta"], by_kind["suppress"]


#: Each intruder in words, for a release read from its folder (whose audit frame has no ``attrs``).
_INTRUDERS = {
    "suppression": "suppression: published cells exact, suppressed cells within their a-priori ranges, totals exact",
    "cta": "cta: true = published - adjustment, true table additive; non-sensitive adjustments within the capacity, "
    "sensitive adjustments at least the protection, down or up (hull reported)",
}


def _run_kind(folder: Path) -> str | None:
    """The ``synthesizer`` a run folder's ``private/run.json`` names (None: no such file)."""
    path = folder / "private" / "run.json"
    if not path.is_file():
        return None
    return str(json.loads(path.read_text(encoding="utf-8")).get("synthesizer"))


def _read(release: Any, method: str) -> _Release:
    """One method's release, from its object or its output folder."""
    expected = Adjustment if method == "cta" else Suppression
    parameter = "adjustment" if method == "cta" else "suppression"
    if isinstance(release, Adjustment | Suppression) and not isinstance(release, expected):
        raise TypeError(f"compare_tables(adjustment, suppression): {parameter}= is a {type(release).__name__}; give "
                        "the adjustment first and the suppression second")  # fmt: skip
    if isinstance(release, expected):
        return _from_object(release, method)
    if isinstance(release, str | os.PathLike):
        return _from_folder(Path(release), method)
    raise TypeError(f"{parameter}= takes a bsd.{expected.__name__} or its output folder, not "
                    f"{type(release).__name__}")  # fmt: skip


def _from_object(release: Adjustment | Suppression, method: str) -> _Release:
    table = release.solution.table
    labels = list(table.label_columns)
    frame = release.table
    cells = frame[labels].astype(str).reset_index(drop=True)
    cells["name"] = [table.describe_cell(i) for i in range(table.n_cells)]
    cells["original"] = frame["original"].to_numpy(float)
    cells["published"] = frame["adjusted" if method == "cta" else "published"].to_numpy(float)
    cells["interior"] = table.cells["interior"].to_numpy(bool)
    cells["sensitive"] = frame["sensitive" if method == "cta" else "primary"].to_numpy(bool)
    if method == "cta":
        result = release.measured.get("audited_cells") if release.measured is not None else None
        if result is None or result.details is None:
            raise InputError("the adjustment holds no audit of its sensitive cells (measure audited_cells): make it "
                             "with bsd.adjust")  # fmt: skip
        audit = result.details
    else:
        audit = release.audit
    return _Release(method, labels, cells, release.quality, audit, str(release.status), "in memory")


def _from_folder(folder: Path, method: str) -> _Release:
    kind = _run_kind(folder)
    wanted = METHODS[method]
    if kind != wanted:
        said = "no private/run.json" if kind is None else f"a {kind} run"
        raise InputError(f"{folder}: not a bayessdc {wanted} run ({said}); give the output folder of bayessdc {wanted}")
    identity = json.loads((folder / "private" / "run.json").read_text(encoding="utf-8"))
    labels = [column for dimension in cta.parse_dimensions(identity["dims"]) for column in dimension]
    total = str(identity.get("total_label", cta.TOTAL_LABEL))
    files = {name: folder / "private" / name for name in ("cells.csv", "quality.json", "audit.csv")}
    missing = [name for name, path in files.items() if not path.is_file()]
    if missing:
        raise InputError(f"{folder}: no private/{', private/'.join(missing)}; rerun bayessdc {wanted} into it with "
                         "this version of bayessdc")  # fmt: skip
    read = {"dtype": dict.fromkeys(labels, str), "keep_default_na": False, "na_values": [""]}
    frame = pd.read_csv(files["cells.csv"], **read)
    cells = frame[labels].copy()
    cells["name"] = [", ".join(f"{c}={v}" for c, v in zip(labels, key, strict=True))
                     for key in frame[labels].itertuples(index=False, name=None)]  # fmt: skip
    cells["original"] = frame["original"].to_numpy(float)
    cells["published"] = frame["adjusted" if method == "cta" else "published"].to_numpy(float)
    cells["interior"] = ~frame[labels].eq(total).any(axis=1).to_numpy()
    cells["sensitive"] = frame["sensitive" if method == "cta" else "primary"].astype(bool).to_numpy()
    audit = pd.read_csv(files["audit.csv"], **read)
    audit["protected"] = audit["protected"].astype(bool)
    quality = json.loads(files["quality.json"].read_text(encoding="utf-8"))
    return _Release(method, labels, cells, quality, audit, str(quality["solver"]["status"]), str(folder))


def _listed(names: list[str], limit: int = 5) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return "; ".join(names[:limit]) + more


def _check_same(adjusted: _Release, suppressed: _Release) -> None:
    """Refuse two releases of different tables, or with different sensitive cells or protection, naming what
    differs."""
    if adjusted.labels != suppressed.labels:
        raise InputError(f"the two releases are of different tables: the adjustment's dimensions are "
                         f"{adjusted.labels}, the suppression's {suppressed.labels}")  # fmt: skip
    a = adjusted.cells.set_index("name")
    s = suppressed.cells.set_index("name")
    only_a, only_s = a.index.difference(s.index), s.index.difference(a.index)
    if len(only_a) or len(only_s):
        parts = [f"{len(names)} cell(s) only in the {which}: {_listed(list(names))}"
                 for names, which in ((only_a, "adjustment"), (only_s, "suppression")) if len(names)]  # fmt: skip
        raise InputError("the two releases are of different tables: " + "; ".join(parts))
    a = a.loc[s.index]
    x_a, x_s = a["original"].to_numpy(float), s["original"].to_numpy(float)
    atol = 1e-9 * max(1.0, float(np.max(np.abs(x_s), initial=0.0)))
    differ = np.flatnonzero(np.abs(x_a - x_s) > atol)
    if len(differ):
        named = [f"{s.index[i]} ({x_a[i]:.12g} in the adjustment, {x_s[i]:.12g} in the suppression)" for i in differ]
        raise InputError(f"the two releases are of different tables: {len(differ)} cell(s) have other original "
                         f"values: {_listed(named)}")  # fmt: skip
    sens_a, sens_s = a["sensitive"].to_numpy(bool), s["sensitive"].to_numpy(bool)
    if (sens_a != sens_s).any():
        parts = [f"sensitive in the {which} only: {_listed(list(s.index[mask]))}"
                 for mask, which in ((sens_a & ~sens_s, "adjustment"), (sens_s & ~sens_a, "suppression"))
                 if mask.any()]  # fmt: skip
        raise InputError("the two releases have different sensitive cells: " + "; ".join(parts))
    levels_a = adjusted.audit.set_index("name")[["required_lower", "required_upper"]]
    levels_s = suppressed.audit.set_index("name")[["required_lower", "required_upper"]]
    if set(levels_a.index) != set(levels_s.index):
        raise InputError("the two releases' audits name different sensitive cells: "
                         f"{_listed(sorted(set(levels_a.index) ^ set(levels_s.index)))}")  # fmt: skip
    levels_a = levels_a.loc[levels_s.index]
    gap = levels_a.to_numpy(float) - levels_s.to_numpy(float)
    differ = np.flatnonzero((np.abs(gap) > atol).any(axis=1))
    if len(differ):
        named = [f"{levels_s.index[i]} (down {levels_a.iloc[i, 0]:.12g}, up {levels_a.iloc[i, 1]:.12g} in the "
                 f"adjustment; down {levels_s.iloc[i, 0]:.12g}, up {levels_s.iloc[i, 1]:.12g} in the suppression)"
                 for i in differ]  # fmt: skip
        raise InputError(f"the two releases protect their sensitive cells by different levels: {_listed(named)}")


def _defined(value: Any) -> Any:
    """A figure, None where it is undefined (NaN)."""
    return None if isinstance(value, float | np.floating) and np.isnan(value) else value


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None


def _figures(release: _Release) -> dict[str, Any]:
    """One method's figure for every row of :data:`MEASURES`."""
    cells = release.cells
    x, b = cells["original"].to_numpy(float), cells["published"].to_numpy(float)
    interior, sensitive = cells["interior"].to_numpy(bool), cells["sensitive"].to_numpy(bool)
    shown = ~np.isnan(b)
    atol = ADJUSTED_TOLERANCE * max(1.0, float(np.max(np.abs(x), initial=0.0)))
    changed = ~shown | (np.abs(np.where(shown, b, x) - x) > atol)
    # the value lost: a suppressed cell's whole value, an adjusted cell's adjustment
    lost = np.where(shown, np.abs(np.where(shown, b, x) - x), np.abs(x))
    interior_value = float(np.abs(x[interior]).sum())
    figures: dict[str, Any] = {
        "sensitive_cells": int(sensitive.sum()),
        "cells_changed": int(changed.sum()),
        "interior_cells_changed": int((changed & interior).sum()),
        "totals_changed": int((changed & ~interior).sum()),
        "other_cells_changed": int((changed & ~sensitive).sum()),
        "interior_value_changed": float(lost[interior].sum()),
        "interior_value_share": float(lost[interior].sum()) / interior_value if interior_value > 0 else None,
        "totals_value_changed": float(lost[~interior].sum()),
    }
    for prefix, mask, stats in (("interior", interior, "interior_cells"), ("sensitive", sensitive, "sensitive_cells")):
        figures[f"{prefix}_published"] = int((shown & mask).sum())
        if release.method == "cta":  # Cox's statistics as cta.quality_report gave them
            q = release.quality[stats]
            figures.update({f"{prefix}_mean": q["mean_adjusted"], f"{prefix}_variance_ratio": q["variance_ratio"],
                            f"{prefix}_correlation": q["correlation"], f"{prefix}_slope": q["slope"]})  # fmt: skip
            continue
        # what a suppressed table leaves of them: the published cells alone, beside every cell of the set
        kept = shown & mask
        statistics = cta.cell_statistics(x[kept], b[kept])
        original_variance = float(x[mask].var()) if mask.sum() else 0.0
        figures.update({
            f"{prefix}_mean": _mean(b[kept]),
            f"{prefix}_variance_ratio": float(b[kept].var()) / original_variance
            if kept.sum() and original_variance > 0 else None,
            f"{prefix}_correlation": statistics["correlation"], f"{prefix}_slope": statistics["slope"],
        })  # fmt: skip
    figures["protected"] = int(release.audit["protected"].astype(bool).sum())
    figures["status"] = release.status
    return figures


def _cells(suppressed: _Release, adjusted: _Release) -> pd.DataFrame:
    """One row per sensitive cell: its protection and both audited intervals, from each release's own audit."""
    s = suppressed.audit.reset_index(drop=True)
    a = adjusted.audit.set_index("name").loc[s["name"]].reset_index()
    frame = s[[*suppressed.labels, "name"]].copy()
    frame["true"] = s["true"].to_numpy(float)
    frame["required_lower"] = s["required_lower"].to_numpy(float)
    frame["required_upper"] = s["required_upper"].to_numpy(float)
    for method, audit in (("suppression", s), ("cta", a)):
        frame[f"{method}_published"] = audit["published"].to_numpy(float)
        frame[f"{method}_min"] = audit["min"].to_numpy(float)
        frame[f"{method}_max"] = audit["max"].to_numpy(float)
        if method == "cta":
            frame["cta_hole_lower"] = audit["hole_lower"].to_numpy(float)
            frame["cta_hole_upper"] = audit["hole_upper"].to_numpy(float)
        frame[f"{method}_protected"] = audit["protected"].astype(bool).to_numpy()
    return frame


def _number(value: float) -> str:
    from bayessdc.report.html import format_value

    return format_value(float(value))


def _interval(low: float, high: float) -> str:
    return f"[{_number(low)}, {_number(high)}]"


def _percent(value: Any) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{100 * float(value):.2f}%"
