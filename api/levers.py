"""What a lever cost: the release's utility figures before and after the pipeline applied it.

The pipeline lowers a release's disclosure risk by levers that need no refit (:func:`bayessdc.pipeline.decide`):
the removal of replicated uniques (synthpop's ``sdc(rm.replicated.uniques = TRUE)``), a synthesizer's own
settings drawn from the same posterior (the DPMPM's ``conditioning``, CART's ``donors``), and, for the spatial
synthesizer, differential smoothing, which its model always applies. Each trades utility for risk; a
:class:`LeverCost` records that trade for every lever applied to a release, so that it is never made unseen:

* removal of replicated uniques: the utility measures of the datasets as drawn against those of the rows released;
* a no-refit setting: the utility measures of the release drawn under the run's settings against those of the
  release drawn under the setting, both as judged (after the same removal, when there is one);
* differential smoothing: the reference ``unsmoothed`` of a utility measure (the same figure from the model
  without the smoothing, computed with the release) against the release's own figure.

Every figure is a utility measure's pooled value (the mean over the m datasets; :mod:`bayessdc.measures`): the
pMSE ratio, the table deviations, the within-pattern total variation, the tau of the analyst's tables, the
confidence interval overlap ... whichever the release computes. The verdict of the release
(:attr:`bayessdc.policy.Verdict.lever_costs`) holds its costs; the log, the report, the verdict's HTML display and
``private/policy.json`` show them. A policy bounds the trade with a criterion on a utility measure (a utility
floor, for example ``pmse_ratio`` ``at_most = 10``): a setting whose release crosses it fails the policy like a
risk criterion, and the next setting is tried.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LEVER_TABLE_CAPTION",
    "LEVER_TABLE_COLUMNS",
    "LeverCost",
    "UtilityChange",
    "costs_table",
    "removal_cost",
    "setting_cost",
    "smoothing_cost",
    "utility_changes",
]

#: The columns of :func:`costs_table`.
LEVER_TABLE_COLUMNS = ("lever", "compared", "utility figure", "unit", "before", "after", "change")
#: What the table of levers shows, as its caption says in the report and in a notebook.
LEVER_TABLE_CAPTION = (
    "Each lever the pipeline applied to this release (no refit) and what it cost in utility: every utility "
    "measure's pooled figure (the mean over the m datasets) before and after it. Removal of replicated uniques: the "
    "datasets as drawn against the rows released; a setting drawn from the same posterior: the release under the "
    "run's settings against the release under the setting (both as judged); differential smoothing: the model "
    "without it against the release. A policy bounds them with a criterion on a utility measure (a utility floor), "
    "judged in the policy's table as any other."
)
#: Figures a log line names before it says how many more there are.
LOG_FIGURES = 6


@dataclass(frozen=True)
class UtilityChange:
    """One utility figure before and after a lever.

    Attributes
    ----------
    measure, subset
        The utility measure's registered name and the subset (``all``, ``two-way``, a table's name, a coefficient).
    title, unit
        The figure in words and its unit, as the measure gives them.
    better
        ``"lower"`` or ``"higher"``: which way the figure improves.
    before, after
        The pooled figures (``None``: the measure has no figure on that side, such as the weighted pMSE of rows
        removed after drawing).
    """

    measure: str
    subset: str
    title: str
    unit: str
    better: str
    before: float | None
    after: float | None

    @property
    def label(self) -> str:
        """``pMSE ratio`` or ``table deviations [two-way]`` (a measure with one subset ``all`` is not qualified)."""
        return self.title if self.subset == "all" else f"{self.title} [{self.subset}]"

    @property
    def change(self) -> float | None:
        """``after - before`` (``None`` when either is missing or undefined)."""
        if self.before is None or self.after is None or not (math.isfinite(self.before) and math.isfinite(self.after)):
            return None
        return self.after - self.before

    @property
    def worse(self) -> bool | None:
        """Whether the lever made the figure worse (by the measure's direction); ``None`` when undefined."""
        change = self.change
        if change is None:
            return None
        return change > 0 if self.better == "lower" else change < 0

    def change_text(self) -> str:
        """``+50.5 (worse)``, ``-0.0370 (worse)``, ``0 (unchanged)`` or ``n/a``."""
        change = self.change
        if change is None:
            return "n/a"
        if change == 0:
            return "0 (unchanged)"
        return f"{change:+.4g} ({'worse' if self.worse else 'better'})"

    def text(self) -> str:
        """``pMSE ratio 2.7 -> 53.2``."""
        return f"{self.label} {_fmt(self.before)} -> {_fmt(self.after)}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"measure": self.measure, "subset": self.subset, "title": self.title, "unit": self.unit,
                "better": self.better, "before": self.before, "after": self.after, "change": self.change}  # fmt: skip

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> UtilityChange:
        """The change :meth:`to_dict` wrote."""
        fields = {k: payload.get(k) for k in ("measure", "subset", "title", "unit", "better", "before", "after")}
        return cls(**fields)


@dataclass(frozen=True)
class LeverCost:
    """What one lever cost a release in utility.

    Attributes
    ----------
    lever
        The lever in words: ``"replicated uniques removed"``, ``"conditioning = prior"``, ``"differential
        smoothing"``.
    setting
        The no-refit setting the lever is (``{"conditioning": "prior"}``); empty for the removal and smoothing.
    before, after
        What the two sides are, in words (``"the datasets as drawn"`` and ``"the rows released"``).
    figures
        Every utility figure the release computes, before and after.
    note
        Anything the figures need said (rows removed, measures computed on one side only).
    """

    lever: str
    before: str
    after: str
    figures: tuple[UtilityChange, ...] = ()
    setting: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def figure(self, measure: str, subset: str = "all") -> UtilityChange | None:
        """The change of one figure (``None`` when the release has no such figure)."""
        return next((f for f in self.figures if f.measure == measure and f.subset == subset), None)

    def sentence(self, limit: int = LOG_FIGURES) -> str:
        """The lever and its figures in one line: ``conditioning = prior (the run's settings -> conditioning =
        prior): pMSE ratio 2.7 -> 53.2, table deviations [one-way] 120 -> 340 ...``; at most ``limit`` figures
        named, the rest counted."""
        if not self.figures:
            return f"{self.lever}: no utility measure of this release to compare" + (f" ({self.note})" if self.note
                                                                                     else "")  # fmt: skip
        shown = ", ".join(f.text() for f in self.figures[:limit])
        more = len(self.figures) - limit
        shown += f" and {more} more figure(s) (release.policy.lever_costs)" if more > 0 else ""
        return f"{self.lever} ({self.before} -> {self.after}): {shown}" + (f"; {self.note}" if self.note else "")

    def rows(self) -> list[dict[str, Any]]:
        """The rows of :func:`costs_table`, one per figure."""
        compared = f"{self.before} -> {self.after}"
        return [{"lever": self.lever, "compared": compared, "utility figure": f.label, "unit": f.unit,
                 "before": f.before, "after": f.after, "change": f.change_text()} for f in self.figures]  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (an entry of ``lever_costs`` in ``private/policy.json``)."""
        return {"lever": self.lever, "setting": dict(self.setting), "before": self.before, "after": self.after,
                "note": self.note, "figures": [f.to_dict() for f in self.figures]}  # fmt: skip

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> LeverCost:
        """The cost :meth:`to_dict` wrote."""
        return cls(
            lever=str(payload.get("lever", "")), before=str(payload.get("before", "")),
            after=str(payload.get("after", "")), setting=dict(payload.get("setting") or {}),
            note=str(payload.get("note", "")),
            figures=tuple(UtilityChange.from_dict(f) for f in payload.get("figures", [])),
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"<LeverCost {self.sentence(3)}>"


def costs_table(costs: Iterable[LeverCost]) -> pd.DataFrame:
    """The levers' costs as one table (the report's and the HTML display's).

    Parameters
    ----------
    costs
        The costs (:attr:`bayessdc.policy.Verdict.lever_costs`).

    Returns
    -------
    pandas.DataFrame
        One row per (lever, utility figure), columns :data:`LEVER_TABLE_COLUMNS`: the lever, the two sides
        compared, the figure with its unit, its pooled value before and after, and the change (worse or better by
        the measure's direction).
    """
    import pandas as pd

    return pd.DataFrame([row for cost in costs for row in cost.rows()], columns=list(LEVER_TABLE_COLUMNS))


def _pooled(measures: Any) -> dict[tuple[str, str], tuple[Any, float]]:
    """``{(measure, subset): (result, pooled)}`` of every utility measure of a measure set, headline ones first."""
    results = [r for r in (measures or {}).values() if r.kind == "utility"]
    results.sort(key=lambda r: not r.headline)  # stable: the measures' own order within each group
    out: dict[tuple[str, str], tuple[Any, float]] = {}
    for result in results:
        summary = result.summary()
        for subset, pooled in zip(summary["subset"].astype(str), summary["pooled"], strict=True):
            out[(result.measure, subset)] = (result, float(pooled))
    return out


def utility_changes(before: Any, after: Any) -> tuple[UtilityChange, ...]:
    """Every utility figure of two measure sets (:class:`bayessdc.measures.MeasureSet`) of one release, before and
    after a lever: the figures of ``after`` in its order (headline measures first), then those only ``before`` has.

    Parameters
    ----------
    before, after
        The measures before and after the lever (only their utility measures are read).

    Returns
    -------
    tuple of UtilityChange
        One per (utility measure, subset); a side without the figure has ``None``.
    """
    old, new = _pooled(before), _pooled(after)
    changes = []
    for key in list(new) + [k for k in old if k not in new]:
        result = (new.get(key) or old[key])[0]
        changes.append(UtilityChange(
            measure=key[0], subset=key[1], title=result.title, unit=result.unit, better=result.better,
            before=old[key][1] if key in old else None, after=new[key][1] if key in new else None,
        ))  # fmt: skip
    return tuple(changes)


def _one_side(changes: tuple[UtilityChange, ...]) -> str:
    missing = sorted({c.measure for c in changes if c.before is None or c.after is None})
    return f"computed on one side only: {', '.join(missing)}" if missing else ""


def removal_cost(before: Any, after: Any, removed: int | None = None) -> LeverCost:
    """The cost of removing the replicated uniques.

    Parameters
    ----------
    before
        The utility measures of the datasets as drawn (:func:`bayessdc.pipeline.releasing.utility_as_drawn`).
    after
        The release's measures as judged, of the rows released.
    removed
        The rows removed over the m datasets, said in the note.

    Returns
    -------
    LeverCost
        Lever ``"replicated uniques removed"``, every utility figure of either side.
    """
    figures = utility_changes(before, after)
    note = "; ".join(n for n in (f"{removed:,} row(s) removed" if removed is not None else "", _one_side(figures))
                     if n)  # fmt: skip
    return LeverCost("replicated uniques removed", "the datasets as drawn", "the rows released", figures, note=note)


def setting_cost(first: Any, candidate: Any, setting: Mapping[str, Any]) -> LeverCost:
    """The cost of a no-refit setting.

    Parameters
    ----------
    first
        The measures of the release drawn under the run's settings, as judged.
    candidate
        The measures of the release drawn under ``setting`` from the same posterior, as judged (after the same
        removal of replicated uniques, when there is one).
    setting
        The setting (``{"conditioning": "prior"}``).

    Returns
    -------
    LeverCost
        The lever named by the setting in words, every utility figure of either release.
    """
    words = ", ".join(f"{k} = {v}" for k, v in setting.items())
    figures = utility_changes(first, candidate)
    return LeverCost(words, "the run's settings", words, figures, setting=dict(setting), note=_one_side(figures))


def smoothing_cost(measures: Any) -> LeverCost | None:
    """The cost of differential smoothing, read from the release's measures alone (nothing computed).

    Parameters
    ----------
    measures
        The release's measures (:class:`bayessdc.measures.MeasureSet`).

    Returns
    -------
    LeverCost or None
        Every utility measure with a reference ``unsmoothed`` (the same figure from the model without the
        smoothing, computed with the release, such as the spatial synthesizer's confidence-interval overlap): the
        reference before, the pooled figure after; ``None`` when no utility measure has that reference.
    """
    figures = []
    for result in [r for r in (measures or {}).values() if r.kind == "utility"]:
        if "unsmoothed" not in result.reference_names():
            continue
        summary = result.summary()
        for subset, pooled in zip(summary["subset"].astype(str), summary["pooled"], strict=True):
            reference = result.reference(subset, "unsmoothed")
            if reference is not None:
                figures.append(UtilityChange(result.measure, subset, result.title, result.unit, result.better,
                                             float(reference), float(pooled)))  # fmt: skip
    if not figures:
        return None
    return LeverCost("differential smoothing", "the model without differential smoothing", "the release",
                     tuple(figures))  # fmt: skip


def _fmt(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.4g}"
