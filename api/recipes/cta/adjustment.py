"""The adjusted table of :func:`bayessdc.adjust` (:class:`Adjustment`): its quality figures, the solver's status,
its measures and disclosure policy's verdict, and the two-part output folder it is saved to (``release/`` the
adjusted table and its rule; ``private/`` the cells with their protection, the intruder's audit of every sensitive
cell, the quality figures and the report).
An adjustment that does not meet every protection or whose totals do not add up is not released: ``save``
writes ``private/`` and raises :class:`ProtectionNotMetError`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bayessdc import cta
from bayessdc.synthesis.output import OutputFolder, json_writer

from ...policy import DisclosureRefused

__all__ = ["AUDIT", "PRIVATE_CELLS", "QUALITY", "RELEASE_TABLE", "Adjustment", "ProtectionNotMetError"]

#: The release's and the private folder's files.
RELEASE_TABLE, PRIVATE_CELLS, QUALITY, AUDIT = "adjusted.csv", "cells.csv", "quality.json", "audit.csv"


class ProtectionNotMetError(RuntimeError):
    """The adjusted table is not safe to publish (a protection not met, or totals not adding up); nothing was
    released. ``quality`` holds the checks naming the cells."""

    def __init__(self, message: str, quality: dict[str, Any]) -> None:
        super().__init__(message)
        self.quality = quality


@dataclass
class Adjustment:
    """An adjusted table, its quality figures and the solver's status.

    Attributes
    ----------
    table
        Every cell and total in long form (what ``private/cells.csv`` holds): the dimension columns,
        ``original``, ``adjusted``, ``adjustment``, ``sensitive`` and ``protection`` (the move required in the
        chosen direction).
    quality
        The figures of ``quality.json``: statistics of the sensitive, interior and all cells (correlation,
        slope, variance ratio, total absolute adjustment, ...), the checks (``protection_met``,
        ``totals_add_up``, ``non_negative``), the solver's report and the settings.
    status
        The solver's status (``"optimal"``, ``"optimal_inaccurate"``, ...).
    solution
        The full :class:`bayessdc.cta.Adjustment` (table structure, protection, directions, settings).
    description
        The public description of the rule and objective (``release/model.json``).
    identity
        What defines the run (input fingerprint and options): an output folder holding another run is
        refused.
    value
        The value column's name, which the released table keeps.
    measured, policy
        The adjustment's measures (:mod:`bayessdc.measures`: the sensitive cells short of their protection) and
        the disclosure policy's verdict on them (:class:`bayessdc.policy.Verdict`), the same code that judges
        every synthetic release.
    """

    table: pd.DataFrame
    quality: dict[str, Any]
    status: str
    solution: cta.Adjustment = field(repr=False)
    description: dict[str, Any] = field(default_factory=dict)
    identity: dict[str, Any] = field(default_factory=dict)
    value: str = "value"
    measured: Any = field(default=None, repr=False)
    policy: Any = field(default=None, repr=False)

    @property
    def protection_met(self) -> bool:
        """Every sensitive cell moved by at least its protection, in its direction."""
        return bool(self.quality["checks"]["protection_met"])

    @property
    def totals_add_up(self) -> bool:
        """Every total of the adjusted table equals the sum of its cells."""
        return bool(self.quality["checks"]["totals_add_up"])

    @property
    def passed(self) -> bool:
        """The adjusted table is safe to publish: protection met and totals adding up."""
        return self.protection_met and self.totals_add_up

    @property
    def released_table(self) -> pd.DataFrame:
        """What ``release/adjusted.csv`` holds: the dimension columns and the adjusted values, cells and
        totals, under the input's value column name."""
        labels = self.solution.table.label_columns
        return self.table[labels].assign(**{self.value: self.table["adjusted"].to_numpy()})

    def save(self, out: str | os.PathLike[str], *, allow_unprotected: bool = False) -> Path:
        """Write ``out/private`` and, when the adjusted table is safe, ``out/release`` (see the module docstring).

        ``release/`` is built whole and renamed into place in one step; a folder holding another run is
        refused (:class:`bayessdc.RunMismatchError`).

        Parameters
        ----------
        out
            The output folder.
        allow_unprotected
            Release although a protection is not met or a total does not add up (recorded in
            ``release/model.json``).

        Returns
        -------
        pathlib.Path
            ``out``.

        Raises
        ------
        ProtectionNotMetError
            The table is not safe and ``allow_unprotected`` is false: ``private/`` is written, ``release/``
            is not.
        """
        from bayessdc.report.html import html_writer

        with OutputFolder(out, self.identity) as folder:
            folder.write_private_file(PRIVATE_CELLS, lambda path: self.table.to_csv(path, index=False))
            audit = self.measured.get("audited_cells") if self.measured is not None else None
            if audit is not None and audit.details is not None:  # what bayessdc report sets beside a suppression's
                folder.write_private_file(AUDIT, lambda path: audit.details.to_csv(path, index=False))
            folder.write_private_json(QUALITY, self.quality)
            folder.write_private_file("report.html", html_writer(self.render_report))
            if self.policy is not None:
                folder.write_private_json("policy.json", self.policy.to_dict())
                if not self.policy.passed:
                    raise DisclosureRefused(self.policy, [
                        "rule= / protection=: the sensitivity rules or protection levels the adjustment must meet",
                        "capacity= / widen=: more room for the cells to move", "method='milp'",
                    ])  # fmt: skip
            if not self.passed and not allow_unprotected:
                raise ProtectionNotMetError(
                    f"nothing released: {self._failed_checks()}; the quality figures are in {folder.private}",
                    self.quality,
                )
            description = {**self.description, "allow_unprotected": allow_unprotected}
            if self.policy is not None:
                description["disclosure_policy"] = {**self.policy.policy.describe(), "released_under": {}}
            released = self.released_table
            folder.write_release(
                {
                    RELEASE_TABLE: lambda path: released.to_csv(path, index=False),
                    "model.json": json_writer(description),
                }
            )
        return Path(out)

    def report(self, path: str | os.PathLike[str]) -> Path:
        """Write the adjustment's report (one self-contained HTML file): what was adjusted and how, whether
        every sensitive cell got its protection, original against adjusted values, and the quality table.
        It shows the original values: keep it private (:meth:`save` writes it to ``private/report.html``).

        Returns
        -------
        pathlib.Path
            ``path``.
        """
        from bayessdc.report.html import write_html

        return write_html(path, self.render_report())

    def render_report(self) -> str:
        """The HTML text of :meth:`report`."""
        from bayessdc.report import plots
        from bayessdc.report.html import Document
        from bayessdc.report.run import flatten, policy_section

        cells, checks = self.table, self.quality["checks"]
        doc = Document(f"bayessdc report: controlled tabular adjustment of {checks['n_cells']} cells")
        doc.paragraph("Confidential: this report shows the original values. Keep it in private/.", css="private")
        policy_section(doc, self.policy)
        doc.heading("What was adjusted and how")
        doc.paragraph(
            f"Controlled tabular adjustment (Cox): each of the {checks['n_sensitive']} sensitive cells is moved by "
            "at least its protection level, the other cells by as little as possible, so that every total still "
            "adds up."
        )
        if self.passed:
            verdict = (f"PASSED: every sensitive cell moved by at least its protection and every total adds up "
                       f"(solver status {self.status}).")
        else:
            verdict = f"FAILED: {self._failed_checks()}. Nothing is released unless allow_unprotected is given."
        doc.verdict(verdict, self.passed)
        doc.table(flatten(self.description), caption="The adjustment as release/model.json describes it")
        doc.table(flatten({"solver": self.quality["solver"], "settings": self.quality["settings"]}),
                  caption="The solver and its settings")
        doc.heading("Protection of the sensitive cells")
        sensitive = cells[cells["sensitive"].astype(bool)]
        labels = [" / ".join(str(v) for v in row) for row in sensitive[self.solution.table.label_columns].to_numpy()]
        frame = pd.DataFrame(
            {"protection required": sensitive["protection"].to_numpy(float),
             "adjustment made": sensitive["adjustment"].abs().to_numpy(float)},
            index=labels,
        )
        doc.figure(plots.bars(frame, "absolute change", "each sensitive cell's protection", horizontal=True),
                   "The move each sensitive cell needed (its protection level) and the move it got.")
        doc.heading("Original and adjusted values")
        doc.figure(
            plots.scatter_identity(cells["original"], cells["adjusted"], "original", "adjusted",
                                   "every cell and total"),
            "Adjusted against original value of every cell and total; the sensitive cells leave the diagonal.",
        )
        doc.heading("Quality")
        parts = {k: v for k, v in self.quality.items() if k in ("sensitive_cells", "interior_cells", "all_cells")}
        quality = pd.DataFrame(parts)
        quality.index.name = "statistic"
        doc.table(quality, caption="Quality of the adjusted table (Cox's measures)", index=True)
        doc.figure(
            plots.bars(quality.loc[["correlation", "slope", "variance_ratio"]].T, "original vs adjusted",
                       "correlation, slope and variance ratio (1 is best)"),
            "Correlation, regression slope and variance ratio of adjusted on original values, by set of cells.",
        )
        return doc.render()

    def _failed_checks(self) -> str:
        checks = self.quality["checks"]
        failed = []
        if not checks["protection_met"]:
            failed.append(f"protection not met at {'; '.join(checks['cells_below_protection'])}")
        if not checks["totals_add_up"]:
            failed.append(f"totals not adding up at {'; '.join(checks['totals_not_adding_up'])}")
        return " and ".join(failed)

    def __repr__(self) -> str:
        checks = self.quality["checks"]
        return (
            f"<Adjustment: {checks['n_sensitive']} sensitive of {checks['n_cells']} cells, status {self.status}, "
            f"protection met: {checks['protection_met']}, totals add up: {checks['totals_add_up']}>"
        )
