"""The suppressed table of :func:`bayessdc.suppress` (:class:`Suppression`): its information loss, the solver's
report, the intruder's audit, its measures and disclosure policy's verdict, and the two-part output folder it is
saved to (``release/`` the table with its suppressed cells empty and a description of the method; ``private/`` the
cells with their protection and audited interval, the figures and the report). A table whose audit leaves a primary
cell narrower than its protection is not released: ``save`` writes ``private/`` and raises
:class:`bayessdc.DisclosureRefused` (the policy's criterion ``audited_cells``) or, under a policy without it,
:class:`SuppressionNotSafeError`."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.synthesis.output import OutputFolder, json_writer

from ...policy import DisclosureRefused

__all__ = ["AUDIT", "PRIVATE_CELLS", "QUALITY", "RELEASE_TABLE", "Suppression", "SuppressionNotSafeError"]

#: The release's and the private folder's files.
RELEASE_TABLE, PRIVATE_CELLS, QUALITY, AUDIT = "suppressed.csv", "cells.csv", "quality.json", "audit.csv"

#: What lowers an audit's failures, for a refusal's message.
LEVERS = [
    "rule= / protection=: the sensitivity rules or protection levels the pattern must meet",
    "pattern=: a pattern made elsewhere is released only as given; leave it out to have the MILP choose one",
    "lower= / upper=: the a-priori ranges the intruder is taken to know",
]


class SuppressionNotSafeError(RuntimeError):
    """The suppressed table is not safe to publish: the intruder's audit pins a primary cell to an interval narrower
    than its protection. Nothing was released. ``quality`` holds the audit's figures naming the cells."""

    def __init__(self, message: str, quality: dict[str, Any]) -> None:
        super().__init__(message)
        self.quality = quality


@dataclass
class Suppression:
    """A table with its primary and secondary cells suppressed, its information loss and its audit.

    Attributes
    ----------
    table
        Every cell and total in long form (what ``private/cells.csv`` holds): the dimension columns, ``original``,
        ``published`` (empty where suppressed), ``suppressed``, ``primary``, ``secondary``, ``cost`` (the cost the
        pattern was chosen by), ``protection_lower`` and ``protection_upper`` (the protection a primary cell
        needs), and for every primary cell ``audited_min``, ``audited_max`` (the interval the intruder derives)
        and ``protected``.
    quality
        The figures of ``quality.json``: the information loss (cells and value suppressed, among the interior
        cells, the totals and all cells), the solver's report (status, objective, bound, rounds, time) and the
        audit's (primary cells protected, those that are not).
    status
        The solver's status: ``"optimal"``, ``"time limit"`` (every primary cell protected, perhaps not at least
        cost) or ``"given"`` (a pattern made elsewhere).
    solution
        The full :class:`bayessdc.cta.suppression.Suppressed` (table structure, protection, masks, costs).
    audit
        The intruder's audit of the published table (:func:`bayessdc.cta.audit_table`, ``private/audit.csv``):
        one row per primary cell with its audited interval and whether it covers its protection range.
    description
        The public description of the method (``release/model.json``).
    identity
        What defines the run (input fingerprint and options): an output folder holding another run is refused.
    value
        The value column's name, which the released table keeps.
    measured, policy
        The measures of the suppressed table (:mod:`bayessdc.measures`: ``audited_cells``) and the disclosure
        policy's verdict on them (:class:`bayessdc.policy.Verdict`).
    """

    table: pd.DataFrame
    quality: dict[str, Any]
    status: str
    solution: Any = field(repr=False)
    audit: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    description: dict[str, Any] = field(default_factory=dict)
    identity: dict[str, Any] = field(default_factory=dict)
    value: str = "value"
    measured: Any = field(default=None, repr=False)
    policy: Any = field(default=None, repr=False)

    @property
    def protected(self) -> bool:
        """Every primary cell's audited interval covers its protection range."""
        return bool(self.quality["checks"]["protected"])

    @property
    def released_table(self) -> pd.DataFrame:
        """What ``release/suppressed.csv`` holds: the dimension columns and the published values, cells and totals,
        under the input's value column name; a suppressed cell has no value (whole numbers are written as such)."""
        labels = self.solution.table.label_columns
        published = self.table["published"].to_numpy(dtype=float)
        shown = published[~np.isnan(published)]
        column: Any = published
        if np.array_equal(shown, np.round(shown)) and (np.abs(shown) < 2.0**53).all():
            column = pd.Series(published, index=self.table.index).astype("Int64")
        return self.table[labels].assign(**{self.value: column})

    def save(self, out: str | os.PathLike[str]) -> Path:
        """Write ``out/private`` and, when every primary cell is protected, ``out/release`` (module docstring).

        ``release/`` is built whole in a hidden folder and renamed into place in one step; a refused run withdraws
        the ``release/`` an earlier run of the same folder left; a folder holding another run is refused
        (:class:`bayessdc.RunMismatchError`).

        Parameters
        ----------
        out
            The output folder.

        Returns
        -------
        pathlib.Path
            ``out``.

        Raises
        ------
        bayessdc.DisclosureRefused
            The table fails its disclosure policy (the default's ``audited_cells``: a primary cell the intruder's
            audit narrows below its protection, named): ``private/`` is written, ``release/`` is not.
        SuppressionNotSafeError
            The policy passes it but the audit does not: the same.
        """
        from bayessdc.report.html import html_writer

        with OutputFolder(out, self.identity) as folder:
            folder.write_private_file(PRIVATE_CELLS, lambda path: self.table.to_csv(path, index=False))
            folder.write_private_file(AUDIT, lambda path: self.audit.to_csv(path, index=False))
            folder.write_private_json(QUALITY, self.quality)
            folder.write_private_file("report.html", html_writer(self.render_report))
            if self.policy is not None:
                folder.write_private_json("policy.json", self.policy.to_dict())
                if not self.policy.passed:
                    folder.withdraw_release()
                    raise DisclosureRefused(self.policy, LEVERS)
            if not self.protected:
                folder.withdraw_release()
                raise SuppressionNotSafeError(
                    f"nothing released: {self._failed()}; the audit is in {folder.private / AUDIT}", self.quality
                )
            description = dict(self.description)
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
        """Write the suppression's report (one self-contained HTML file): what was suppressed and how, the audit of
        every primary cell, and the information loss. It shows the original values: keep it private (:meth:`save`
        writes it to ``private/report.html``).

        Returns
        -------
        pathlib.Path
            ``path``.
        """
        from bayessdc.report.html import write_html

        return write_html(path, self.render_report())

    def render_report(self) -> str:
        """The HTML text of :meth:`report`."""
        from bayessdc.report.html import Document
        from bayessdc.report.run import flatten, policy_section

        loss, checks = self.quality["all_cells"], self.quality["checks"]
        doc = Document(f"bayessdc report: complementary cell suppression of {loss['cells']} cells")
        doc.paragraph("Confidential: this report shows the original values. Keep it in private/.", css="private")
        policy_section(doc, self.policy)
        doc.heading("What was suppressed and how")
        doc.paragraph(
            f"Complementary cell suppression: the {loss['primary']} primary (sensitive) cells are suppressed, and "
            f"{loss['secondary']} secondary cells with them so that no primary cell can be recomputed from the "
            "published cells and totals to within its protection."
        )
        doc.verdict(self._verdict(), self.protected)
        doc.table(flatten(self.description), caption="The suppression as release/model.json describes it")
        doc.table(flatten({"solver": self.quality["solver"]}), caption="The solver")
        doc.heading("The intruder's audit of every primary cell")
        if len(self.audit):
            columns = [c for c in ("name", "true", "min", "max", "required_lower", "required_upper", "protected")
                       if c in self.audit]  # fmt: skip
            doc.table(self.audit[columns], caption=f"{checks['audit_intruder']}")
        else:
            doc.paragraph("No cell is sensitive: nothing to audit.")
        doc.heading("Information loss")
        parts = {k: self.quality[k] for k in ("interior_cells", "totals", "all_cells")}
        frame = pd.DataFrame(parts)
        frame.index.name = "figure"
        doc.table(frame, caption="Cells and value suppressed", index=True)
        return doc.render()

    def _verdict(self) -> str:
        checks = self.quality["checks"]
        if self.protected:
            return (f"PASSED: the intruder's audit leaves every one of the {checks['primary']} primary cells an "
                    f"interval covering its protection range (solver status {self.status}).")  # fmt: skip
        return f"FAILED: {self._failed()}. Nothing is released."

    def _failed(self) -> str:
        cells = self.quality["checks"]["unprotected_cells"]
        return (f"the intruder's audit narrows {len(cells)} primary cell(s) below their protection: "
                + "; ".join(cells))  # fmt: skip

    def __repr__(self) -> str:
        loss, checks = self.quality["all_cells"], self.quality["checks"]
        return (
            f"<Suppression: {loss['suppressed']} of {loss['cells']} cells suppressed ({loss['primary']} primary, "
            f"{loss['secondary']} secondary), status {self.status}, every primary protected: {checks['protected']}>"
        )

    def _repr_html_(self) -> str:
        from bayessdc.display import verdict_box, verdict_html

        loss = self.quality["all_cells"]
        parts = [verdict_box(self._verdict(), self.protected)]
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td style='text-align: right'>{html.escape(_shown(value))}</td></tr>"
            for name, value in (("cells suppressed", loss["suppressed"]), ("primary", loss["primary"]),
                                ("secondary", loss["secondary"]), ("value suppressed", loss["value_suppressed"]),
                                ("share of the value suppressed", loss["share_suppressed"]),
                                ("solver status", self.status))
        )  # fmt: skip
        parts.append(f"<table><caption>Information loss</caption>{rows}</table>")
        if self.policy is not None:
            parts.append(verdict_html(self.policy, box=False))
        return f"<div>{''.join(parts)}</div>"


def _shown(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
