"""How a release, a policy's verdict and a set of measures show themselves in a notebook.

Jupyter (and VS Code, nbviewer, JupyterLab) shows an object's ``_repr_html_``: :class:`bayessdc.Release`,
:class:`bayessdc.policy.Verdict` and :class:`bayessdc.measures.MeasureSet` build theirs here. The markup is
self-contained: every style is inline (a notebook page's other cells are never restyled), there is no
JavaScript, and every string shown is escaped with :func:`html.escape`. Verdicts are coloured as the HTML report
colours them (:data:`VERDICT_COLOURS`, the report's ``verdict passed``, ``verdict failed`` and
``verdict unjudged``: green, red, grey with a dashed edge).

:func:`plot_names` and :func:`release_plot` give the report's plots (:mod:`bayessdc.report.plots`) by name, as
matplotlib figures (:meth:`bayessdc.Release.plot`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = [
    "VERDICT_COLOURS",
    "measures_html",
    "plot_names",
    "release_html",
    "release_plot",
    "shorten",
    "summary_html",
    "table_html",
    "verdict_box",
    "verdict_class",
    "verdict_html",
]

#: ``{class: (background, left border)}`` of a verdict, as the report's CSS (:mod:`bayessdc.report.html`) has them.
VERDICT_COLOURS = {
    "passed": ("#e6f4ea", "6px solid #1e7b34"),
    "failed": ("#fdecea", "6px solid #b3261e"),
    "unjudged": ("#eceff3", "6px dashed #4a5563"),
}

_TEXT = "color: #1b1b1b;"
_BOX = (
    "font-family: system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; line-height: 1.4; "
    "color: #1b1b1b; background: #ffffff; padding: 0.4em 0.6em; max-width: 72em;"
)
_TABLE = "border-collapse: collapse; font-size: 0.88em; margin: 0.4em 0 0.8em;"
_CELL = "border-bottom: 1px solid #e3e3e3; padding: 0.25em 0.6em; text-align: left; vertical-align: top;" + _TEXT
_HEAD = _CELL + " background: #f5f5f5; font-weight: 600;"
_NUM = _CELL + " text-align: right; font-variant-numeric: tabular-nums;"
_CAPTION = "caption-side: top; text-align: left; font-size: 0.95em; color: #444; padding-bottom: 0.2em;"
_NOTE = "color: #444; font-size: 0.9em; margin: 0.3em 0;"
_HEADING = "font-weight: 600; font-size: 1.05em; margin: 0.8em 0 0.2em;" + _TEXT


def _e(value: Any) -> str:
    """``value`` as escaped text."""
    return html.escape(str(value), quote=True)


def _format(value: Any) -> str:
    from bayessdc.report.html import format_value

    return format_value(value)


def _numeric(value: Any) -> bool:
    import numpy as np

    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)


def verdict_class(passed: bool | None) -> str:
    """The report's CSS class of a verdict.

    Parameters
    ----------
    passed
        ``True`` (met), ``False`` (failed) or ``None`` (judged by nothing).

    Returns
    -------
    str
        ``"passed"``, ``"failed"`` or ``"unjudged"``.
    """
    return "unjudged" if passed is None else "passed" if passed else "failed"


def _verdict_style(passed: bool | None) -> str:
    background, border = VERDICT_COLOURS[verdict_class(passed)]
    return f"background: {background}; border-left: {border};"


def verdict_box(text: str, passed: bool | None) -> str:
    """A verdict in words, boxed in the report's colours.

    Parameters
    ----------
    text
        The verdict (escaped here).
    passed
        ``True`` green, ``False`` red, ``None`` grey with a dashed edge (a verdict no criterion made).

    Returns
    -------
    str
        A ``<div class="verdict ...">`` with its style inline.
    """
    style = f"{_verdict_style(passed)} {_TEXT} font-size: 1.05em; padding: 0.5em 0.8em; border-radius: 4px; " + (
        "margin: 0.5em 0;"
    )
    return f'<div class="verdict {verdict_class(passed)}" style="{style}">{_e(text)}</div>'


def _table(
    frame: pd.DataFrame, caption: str = "", classes: Sequence[bool | None] | None = None, column: str = "verdict"
) -> str:
    """A DataFrame as an HTML table; with ``classes``, the cell of ``column`` in row ``i`` is coloured by
    ``classes[i]`` (:func:`verdict_class`)."""
    head = "".join(f'<th style="{_HEAD}">{_e(c)}</th>' for c in frame.columns)
    rows = []
    for i, (_, row) in enumerate(frame.iterrows()):
        cells = []
        for name, value in row.items():
            text = _e(_format(value))
            if classes is not None and name == column:
                passed = classes[i]
                style = f"{_CELL} {_verdict_style(passed)}" + (" font-weight: 600;" if passed is False else "")
                cells.append(f'<td class="verdict {verdict_class(passed)}" style="{style}">{text}</td>')
            else:
                cells.append(f'<td style="{_NUM if _numeric(value) else _CELL}">{text}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cap = f'<caption style="{_CAPTION}">{_e(caption)}</caption>' if caption else ""
    return (
        f'<div style="overflow-x: auto; max-width: 100%;"><table style="{_TABLE}">{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def table_html(
    frame: pd.DataFrame, caption: str = "", classes: Sequence[bool | None] | None = None, column: str = "verdict"
) -> str:
    """A DataFrame as an HTML table with the display's inline styles (numbers right-aligned, no stylesheet).

    Parameters
    ----------
    frame
        The rows to show (its index is not shown).
    caption
        The table's caption.
    classes
        One verdict per row (:func:`verdict_class`): the cell of ``column`` in that row is coloured by it.
    column
        The column ``classes`` colours.

    Returns
    -------
    str
        A ``<table>`` inside a box that scrolls sideways when the table is wide.
    """
    return _table(frame, caption, classes, column)


def _note(text: str) -> str:
    return f'<p style="{_NOTE}">{_e(text)}</p>'


def _heading(text: str) -> str:
    return f'<div style="{_HEADING}">{_e(text)}</div>'


def verdict_html(verdict: Any, tried: Sequence[Any] = (), box: bool = True) -> str:
    """A disclosure policy's verdict (:class:`bayessdc.policy.Verdict`) as HTML.

    Parameters
    ----------
    verdict
        The verdict.
    tried
        The verdicts of every setting the release was drawn under, the last being ``verdict``
        (:attr:`bayessdc.Release.policy_tried`): the earlier ones are listed as drawn first and not released.
    box
        Whether to wrap the markup in its own styled block (``False`` inside a release's display).

    Returns
    -------
    str
        The verdict sentence boxed in the report's colours, then the policy's table (:meth:`Verdict.table`), each
        row's verdict cell coloured (``class="verdict passed|failed|unjudged"``), then what each lever applied to
        the release cost in utility (:attr:`Verdict.lever_costs`, :func:`bayessdc.levers.costs_table`), then the
        criteria that do not apply and the measures reported without a threshold.
    """
    judged = any(j.passed is not None for j in verdict.judgements)
    parts = [verdict_box(verdict.sentence(), verdict.passed if judged else None)]
    for earlier in list(tried)[:-1]:
        failed = "; ".join(j.sentence() for j in earlier.failed())
        parts.append(_note(f"Drawn first under {earlier.setting_text()}, from the same posterior: {failed}. "
                           "Not released."))  # fmt: skip
    if verdict.judgements:
        table = verdict.table()
        passed: list[bool | None] = [j.passed for j in verdict.judgements]
        if len(passed) != len(table):  # pragma: no cover - the table is one row per judgement
            words = {"meets": True, "FAILS": False}
            passed = [words.get(str(v)) for v in table.get("verdict", [""] * len(table))]
        parts.append(_table(table, verdict.table_caption(), passed))
    costs = list(getattr(verdict, "lever_costs", None) or [])
    if costs:
        from bayessdc.levers import LEVER_TABLE_CAPTION, costs_table

        parts.append(_table(costs_table(costs), LEVER_TABLE_CAPTION))
    if verdict.not_applicable:
        parts.append(_note("Criteria of the policy that do not apply to this release: "
                           + "; ".join(verdict.not_applicable) + "."))  # fmt: skip
    if verdict.reported:
        reasons = verdict.policy.reported
        listed = "; ".join(name + (f" ({reasons[name]})" if reasons.get(name) else "") for name in verdict.reported)
        parts.append(_note(f"Reported, not judged (no grounded threshold in this policy): {listed}."))
    body = "".join(parts)
    return f'<div class="bayessdc-verdict" style="{_BOX}">{body}</div>' if box else body


def summary_html(summary: pd.DataFrame, caption: str = "") -> str:
    """A measure summary (:meth:`bayessdc.measures.MeasureSet.summary`) as an HTML table a reader takes in at once.

    Parameters
    ----------
    summary
        Rows of :data:`bayessdc.measures.SUMMARY_COLUMNS` followed by one column per reference.
    caption
        The table's caption.

    Returns
    -------
    str
        One row per (measure, subset): the measure, its kind and subset, the pooled value with its 95% interval
        (Monte Carlo, or the measure's own with one dataset; ``n/a`` for a figure of the m datasets jointly or of one
        dataset without an interval of its own), the worst dataset, its references (``name value``, the ones it
        has) and why a figure is missing.
    """
    import pandas as pd

    from bayessdc.measures.base import SUMMARY_COLUMNS

    references = [c for c in summary.columns if c not in SUMMARY_COLUMNS]
    rows = []
    for _, row in summary.iterrows():
        source = str(row.get("interval") or "")
        interval = "n/a"
        if source in ("monte carlo", "own", "monte carlo and own"):
            own = " (its own)" if source == "own" else ""
            interval = f"{_format(float(row['lower']))} to {_format(float(row['upper']))}{own}"
        refs = [f"{name.replace('_', ' ')} {_format(float(row[name]))}" for name in references
                if row[name] is not None and math.isfinite(float(row[name]))]  # fmt: skip
        rows.append({
            "measure": row["measure"], "kind": row["kind"], "subset": row["subset"], "datasets": int(row["datasets"]),
            "pooled": float(row["pooled"]), "95% interval": interval, "worst": float(row["worst"]),
            "references": "; ".join(refs), "note": str(row.get("note") or ""),
        })  # fmt: skip
    columns = ["measure", "kind", "subset", "datasets", "pooled", "95% interval", "worst", "references", "note"]
    return _table(pd.DataFrame(rows, columns=columns), caption)


def measures_html(measures: Any, headline_only: bool = False, box: bool = True) -> str:
    """A release's measures (:class:`bayessdc.measures.MeasureSet`) as HTML.

    Parameters
    ----------
    measures
        The measures.
    headline_only
        Only the headline measures (:attr:`bayessdc.Measure.headline`: those the report sets risk against
        utility with), or every measure when none is a headline one.
    box
        Whether to wrap the markup in its own styled block.

    Returns
    -------
    str
        The table of :func:`summary_html`, or a sentence when there are no measures.
    """
    import pandas as pd

    results = list(measures.values())
    if headline_only and any(r.headline for r in results):
        frames = []
        for r in results:
            if not r.headline:
                continue
            summary = r.summary()
            frames.append(summary[summary["subset"] == r.headline] if isinstance(r.headline, str) else summary)
        frames = [f for f in frames if len(f)]
        summary = pd.concat(frames, ignore_index=True) if frames else measures.summary().iloc[:0]
        caption = "The headline measures: pooled over the m datasets, with the references each is read against"
    else:
        summary = measures.summary()
        caption = (
            f"{len(results)} measures: pooled over the m datasets with the 95% Monte Carlo interval, the worst "
            "dataset, and the references each is read against"
        )
    body = summary_html(summary, caption) if len(summary) else _note("No measures.")
    return f'<div class="bayessdc-measures" style="{_BOX}">{body}</div>' if box else body


def _rows_text(release: Any) -> str:
    """Rows per synthetic dataset: ``250 rows``, or ``241 to 260 rows`` when they differ."""
    synthetic = release.synthetic
    if "synthetic" in synthetic and len(synthetic):
        counts = synthetic["synthetic"].value_counts()
        low, high = int(counts.min()), int(counts.max())
        return f"{low:,} rows" if low == high else f"{low:,} to {high:,} rows"
    return f"{len(synthetic) // max(release.m, 1):,} rows"


def release_html(release: Any) -> str:
    """A release (:class:`bayessdc.Release`) as HTML, for a notebook.

    Parameters
    ----------
    release
        The release.

    Returns
    -------
    str
        The synthesizer, the m datasets and their rows, the gate's verdict, the disclosure policy's verdict (its
        sentence and table, :func:`verdict_html`), the headline measures with their intervals and references
        (:func:`measures_html`), and the names of the plots :meth:`bayessdc.Release.plot` draws.
    """
    facts = (
        f"{release.synthesizer} synthesis: m = {release.m} synthetic datasets \u00d7 {_rows_text(release)}, "
        f"seed {release.seed}"
    )
    parts = [f'<div style="{_HEADING} font-size: 1.15em;">bayessdc release</div>', f'<p style="{_TEXT}">{_e(facts)}'
             + (f" (loaded from {_e(release.loaded_from)})" if release.loaded_from is not None else "") + "</p>"]
    gate = release.diagnostics
    parts.append(verdict_box(f"Gate: {gate.verdict}", bool(gate.passed)))
    parts.append(_heading("Disclosure policy"))
    if release.policy is not None:
        parts.append(verdict_html(release.policy, release.policy_tried, box=False))
    else:
        parts.append(verdict_box("No disclosure policy judged this release.", None))
    parts.append(_heading("Headline measures"))
    if release.measured is not None and len(release.measured):
        parts.append(measures_html(release.measured, headline_only=True, box=False))
    else:
        parts.append(_note("This release has no measures."))
    names = plot_names(release)
    parts.append(_note(
        "Every measure: release.measure_table(). Plots, as release.plot(name): " + (", ".join(names) or "none")
        + ". The full report: release.report(path) (private: it shows the confidential data)."
    ))  # fmt: skip
    return f'<div class="bayessdc-release" style="{_BOX}">{"".join(parts)}</div>'


def shorten(text: str, limit: int = 240) -> str:
    """Text cut for a one-line ``repr``.

    Parameters
    ----------
    text
        The text.
    limit
        The most characters returned.

    Returns
    -------
    str
        ``text``, or its first ``limit - 3`` characters and ``...`` when it is longer.
    """
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


# ----------------------------------------------------------------------------------------------------
# The report's plots by name


def _plots(release: Any) -> dict[str, Callable[[], Figure]]:
    """The report's plots of ``release`` by name, each drawn when called."""
    import pandas as pd

    from bayessdc.report import plots, risk_utility_panels
    from bayessdc.report.content import Figure as ContentFigure

    builders: dict[str, Callable[[], Figure]] = {}
    content = getattr(release, "report_content", None)
    compared = list(getattr(content, "compared", []) or [])
    synthetic = release.synthetic
    if len(synthetic.columns.drop("synthetic", errors="ignore")) and len(synthetic):

        def columns() -> Figure:
            frame = synthetic
            if "synthetic" in frame:
                frame = frame[frame["synthetic"] == frame["synthetic"].iloc[0]].drop(columns="synthetic")
            return plots.variable_roles(frame, compared)

        builders["columns"] = columns
    if content is not None and content.original is not None and content.synthetic is not None:
        for column in compared:
            builders[f"compare:{column}"] = (
                lambda c=column: plots.compare_column(content.original[c], content.synthetic, c)
            )
    summary = release.diagnostics.summary
    parameter = summary.get("parameter_gate", {}) or {}
    fits = parameter.get("fits", {}) or {}
    if fits:
        criteria = parameter.get("criteria", {"max_r_hat": 1.01, "min_ess_bulk": 400.0})
        table = pd.DataFrame.from_dict(fits, orient="index").sort_values("max_r_hat", ascending=False)
        if len(table) > 1:
            builders["fits"] = lambda: plots.fit_histograms(
                table["max_r_hat"], table["min_ess_bulk"], criteria["max_r_hat"], criteria["min_ess_bulk"]
            )
        if len(release.diagnostics.posteriors):

            def rank() -> Figure:
                from bayessdc.report.run import rank_quantities

                worst = str(table.index[0])
                ranked = rank_quantities(release.diagnostics.posteriors, worst, fits[worst],
                                          summary.get("monitored", []))  # fmt: skip
                if ranked is None:
                    raise ValueError(f"the posterior of fit {worst!r} has no quantity that varies in 2 or more chains "
                                     "to draw rank plots of")  # fmt: skip
                return plots.rank_plot(ranked, f"rank plots: {worst}")

            builders["rank"] = rank
    gate = summary.get("release_gate")
    if gate and gate.get("figures"):

        builders["release_gate"] = lambda: plots.release_gate_bars(gate["figures"])
    from bayessdc.report.run import importance_khat

    khat = importance_khat(release)  # the report's k-hat of the intruder measures' items
    if khat is not None:
        builders["importance"] = lambda: plots.histogram(khat, "Pareto k-hat", "importance-sampling reliability",
                                                         {"0.7: unreliable beyond": 0.7})  # fmt: skip
    if content is not None:
        for section in ("diagnostics", "comparison"):
            drawn = [item for item in getattr(content, section) if isinstance(item, ContentFigure)]
            for k, item in enumerate(drawn, start=1):
                builders[f"{section}:{k}"] = item.draw
    for name, result in (getattr(release, "measured", None) or {}).items():
        builders[name if name not in builders else f"measure:{name}"] = result.plot
    if getattr(release, "measured", None):
        panels = risk_utility_panels(release)
        for k, panel in enumerate(panels, start=1):
            builders["risk_utility" if k == 1 else f"risk_utility:{k}"] = (
                lambda p=panel: plots.risk_utility([("", p)])
            )
    return builders


def plot_names(release: Any) -> list[str]:
    """The names of the report's plots of ``release``, in the report's order.

    Parameters
    ----------
    release
        A :class:`bayessdc.Release`.

    Returns
    -------
    list of str
        ``columns`` (the released columns), ``compare:<column>`` (a synthesized column, original against
        synthetic), ``fits``, ``rank`` and ``release_gate`` (the diagnostics, where the release has them),
        ``importance`` (importance-sampling k-hat), ``diagnostics:<k>`` and ``comparison:<k>`` (the synthesizer's
        own figures, numbered from 1), each measure by its name (:attr:`bayessdc.Release.measured`), and
        ``risk_utility`` (then ``risk_utility:2`` ...: risk against utility, one per headline risk figure).
    """
    return list(_plots(release))


def release_plot(release: Any, name: str) -> Figure:
    """One of the report's plots of ``release``, by name (:func:`plot_names`).

    Parameters
    ----------
    release
        A :class:`bayessdc.Release`.
    name
        The plot's name.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, as the report draws it.

    Raises
    ------
    ValueError
        For a name the release has no plot of; the message lists the names it has.
    """
    builders = _plots(release)
    if name not in builders:
        known = ", ".join(builders) or "none"
        raise ValueError(f"no plot named {name!r} for this {release.synthesizer} release; its plots: {known}")
    return builders[name]()

