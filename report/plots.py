"""The report's plots, each a function of plain figures returning a :class:`matplotlib.figure.Figure`.

matplotlib (already installed through ArviZ, whose diagnostic plots it draws) renders static PNG images that
embed in one offline HTML file; figures are built with its object interface (``Figure``, never ``pyplot``),
so that drawing a report touches no global state and opens no window. Nothing here knows a synthesizer:
each function takes numbers, labels and reference points.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

__all__ = [
    "BoundsMeasure",
    "RiskUtilityPanel",
    "bars",
    "bounds_panels",
    "compare_column",
    "fit_histograms",
    "histogram",
    "intervals",
    "location_map",
    "rank_plot",
    "ratio_bars",
    "risk_utility",
    "scatter_identity",
    "strips",
    "summary_boxes",
]

ORIGINAL, SYNTHETIC = "#4c4c4c", "#1f77b4"
INHERENT_MIN, INHERENT_MAX = "#2ca02c", "#d62728"
MAX_BARS = 30


def _legend(ax: Any, *args: Any, **kwargs: Any) -> None:
    """A legend, when something is labelled (matplotlib warns on an empty one)."""
    if args or kwargs.get("handles") or ax.get_legend_handles_labels()[1]:
        ax.legend(*args, **kwargs)


def _figure(width: float = 6.4, height: float = 3.6) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


# -- original against synthetic ------------------------------------------------------------------


def compare_column(original: pd.Series, synthetic: pd.DataFrame, column: str, dataset: str = "synthetic") -> Figure:
    """One variable's distribution in the original and in the synthetic datasets (synthpop ``compare()`` style).

    Categories (or integers with at most 30 values) are bars of shares, original beside synthetic (the
    synthetic share is the mean over the m datasets, with the range over datasets as a line); a variable
    with more categories is a scatter of the category shares, synthetic against original, with the
    diagonal; other numeric values are overlaid histograms of densities on the same bins.

    Parameters
    ----------
    original
        The confidential values.
    synthetic
        The stacked synthetic datasets: the column ``column`` and the dataset number ``dataset``.
    column
        The variable.
    dataset
        The column numbering the datasets.
    """
    fig = _figure()
    ax = fig.subplots()
    values = synthetic[column]
    numeric = pd.api.types.is_numeric_dtype(original) and not pd.api.types.is_bool_dtype(original)
    levels = pd.Index(pd.concat([original, values]).dropna().unique())
    if numeric and len(levels) > MAX_BARS:
        data = np.concatenate([original.dropna().to_numpy(float), values.dropna().to_numpy(float)])
        bins = np.histogram_bin_edges(data, bins=min(40, max(10, int(np.sqrt(len(original))))))
        ax.hist(original.dropna(), bins=bins, density=True, alpha=0.55, color=ORIGINAL, label="original")
        ax.hist(values.dropna(), bins=bins, density=True, histtype="step", lw=2, color=SYNTHETIC, label="synthetic")
        ax.set_ylabel("density")
        ax.set_xlabel(column)
        _legend(ax, frameon=False)
        ax.set_title(f"{column}: original and synthetic (all datasets)")
        return fig
    if numeric:
        levels = levels.sort_values()
    orig_share = original.value_counts(normalize=True).reindex(levels, fill_value=0.0)
    per_dataset = (
        synthetic.groupby(dataset, observed=True)[column].value_counts(normalize=True).unstack(fill_value=0.0)
    ).reindex(columns=levels, fill_value=0.0)
    mean, low, high = per_dataset.mean(), per_dataset.min(), per_dataset.max()
    if len(levels) > MAX_BARS:
        ax.errorbar(orig_share, mean, yerr=[mean - low, high - mean], fmt="o", ms=3, color=SYNTHETIC, alpha=0.7,
                    elinewidth=0.6, label=f"{len(levels)} categories")
        top = float(max(orig_share.max(), high.max())) * 1.05
        ax.plot([0, top], [0, top], color=ORIGINAL, lw=1, ls="--", label="equal shares")
        ax.set_xlabel("share in the original")
        ax.set_ylabel("share in the synthetic data")
        _legend(ax, frameon=False)
        ax.set_title(f"{column}: share of each category")
        return fig
    if not numeric:
        order = orig_share.sort_values(ascending=False).index
        orig_share, mean, low, high = (s.reindex(order) for s in (orig_share, mean, low, high))
    x = np.arange(len(orig_share))
    ax.bar(x - 0.2, orig_share.to_numpy(), width=0.4, color=ORIGINAL, label="original")
    ax.bar(x + 0.2, mean.to_numpy(), width=0.4, color=SYNTHETIC, label="synthetic (mean of datasets)")
    ax.vlines(x + 0.2, low.to_numpy(), high.to_numpy(), color="black", lw=1, label="range over datasets")
    ax.set_xticks(x, [str(v) for v in orig_share.index], rotation=45 if len(x) > 8 else 0, ha="right" if len(x) > 8
                  else "center")
    ax.set_ylabel("share of records")
    ax.set_xlabel(column)
    _legend(ax, frameon=False, fontsize=8)
    ax.set_title(f"{column}: original and synthetic")
    return fig


def scatter_identity(x: Sequence[float], y: Sequence[float], xlabel: str, ylabel: str, title: str) -> Figure:
    """Paired values, ``y`` against ``x``, with the line ``y = x``."""
    fig = _figure(5.2, 4.2)
    ax = fig.subplots()
    x, y = np.asarray(x, float), np.asarray(y, float)
    ax.scatter(x, y, s=10, alpha=0.6, color=SYNTHETIC)
    lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
    ax.plot([lo, hi], [lo, hi], color=ORIGINAL, lw=1, ls="--", label="equal")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _legend(ax, frameon=False)
    return fig


def location_map(
    x: Sequence[float],
    y: Sequence[float],
    values: Mapping[str, Sequence[float]],
    marked: Sequence[bool],
    xlabel: str,
    ylabel: str,
    value_label: str,
) -> Figure:
    """Locations coloured by a value, one panel per labelled set of values, the marked ones circled in red.

    Parameters
    ----------
    x, y
        The coordinates.
    values
        Panel title -> value at every location (for example the original and a synthetic response).
    marked
        Locations to circle (for example the outliers a smoothing protects).
    """
    fig = _figure(6.4 if len(values) < 2 else 9.0, 4.0)
    axes = np.atleast_1d(fig.subplots(1, len(values), sharex=True, sharey=True))
    x, y, marked = np.asarray(x, float), np.asarray(y, float), np.asarray(marked, bool)
    every = np.concatenate([np.asarray(v, float) for v in values.values()])
    vmin, vmax = np.nanquantile(every, [0.02, 0.98])
    for ax, (title, v) in zip(axes, values.items(), strict=True):
        points = ax.scatter(x, y, c=np.asarray(v, float), s=14, cmap="viridis", vmin=vmin, vmax=vmax)
        ax.scatter(x[marked], y[marked], s=110, facecolors="none", edgecolors="red", linewidths=1.6,
                   label=f"outliers ({int(marked.sum())})")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_aspect("equal", adjustable="box")
    axes[0].set_ylabel(ylabel)
    _legend(axes[0], frameon=False, loc="best", fontsize=8)
    fig.colorbar(points, ax=list(axes), label=value_label, shrink=0.85)
    return fig


def variable_roles(frame: pd.DataFrame, synthesized: Sequence[str]) -> Figure:
    """The released columns as bars of their number of distinct values, synthesized ones in colour."""
    columns = list(frame.columns)
    counts = [int(frame[c].nunique()) for c in columns]
    fig = _figure(6.4, 1.0 + 0.32 * len(columns))
    ax = fig.subplots()
    colours = [SYNTHETIC if c in synthesized else "#b0b0b0" for c in columns]
    ax.barh(np.arange(len(columns)), counts, color=colours)
    ax.set_yticks(np.arange(len(columns)), columns, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("distinct values in a synthetic dataset (log scale)")
    handles = [Patch(color=SYNTHETIC, label="synthesized"), Patch(color="#b0b0b0", label="released unchanged")]
    _legend(ax, handles=handles, frameon=False, fontsize=8, loc="lower right")
    ax.set_title("the released columns")
    return fig


# -- diagnostics ---------------------------------------------------------------------------------


def rank_plot(posterior: Any, title: str) -> Figure:
    """ArviZ rank plots of a few scalar quantities (one panel each): uniform ranks in every chain mean the
    chains sample the same distribution.

    Parameters
    ----------
    posterior
        An :class:`xarray.Dataset` of scalar quantities with dimensions ``chain`` and ``draw``.
    """
    import arviz as az

    names = list(posterior.data_vars)
    fig = _figure(6.4, 1.6 + 1.7 * len(names))
    axes = np.atleast_1d(fig.subplots(len(names), 1))
    az.plot_rank(posterior, var_names=names, ax=axes, kind="bars")
    fig.suptitle(title)
    return fig


def fit_histograms(
    max_r_hat: Sequence[float], min_ess: Sequence[float], r_hat_limit: float, ess_limit: float
) -> Figure:
    """The worst r_hat and the smallest bulk ESS of every fit, with the gate's limits."""
    fig = _figure(8.0, 3.2)
    left, right = fig.subplots(1, 2)
    left.hist(np.asarray(max_r_hat, float), bins=30, color=SYNTHETIC)
    left.axvline(r_hat_limit, color=INHERENT_MAX, ls="--", label=f"limit {r_hat_limit}")
    left.set_xlabel("largest split r_hat of the fit")
    left.set_ylabel("fits")
    left.legend(frameon=False)
    right.hist(np.asarray(min_ess, float), bins=30, color=SYNTHETIC)
    right.axvline(ess_limit, color=INHERENT_MAX, ls="--", label=f"limit {ess_limit:g}")
    right.set_xlabel("smallest bulk ESS of the fit")
    right.legend(frameon=False)
    return fig


def release_gate_bars(figures: Mapping[str, Mapping[str, Any]]) -> Figure:
    """The release gate's figures (``diagnostics["release_gate"]["figures"]``) as bars of their between-chain
    standard error over their tolerance (a zero SE within a zero tolerance is 0)."""
    table = pd.DataFrame.from_dict(dict(figures), orient="index")
    ratio = table["between_chain_se"] / table["tolerance"].replace(0, np.nan)
    ratio = ratio.where(~((table["between_chain_se"] == 0) & (table["tolerance"] == 0)), 0.0)
    return ratio_bars(list(table.index), ratio, table["passed"].astype(bool),
                      "between-chain SE / tolerance (at most 1 passes)", "release gate")  # fmt: skip


def ratio_bars(
    names: Sequence[str], ratios: Sequence[float], passed: Sequence[bool], xlabel: str, title: str
) -> Figure:
    """Horizontal bars of ratios to a limit of 1 (green within the limit, red beyond)."""
    fig = _figure(6.4, 1.2 + 0.28 * len(names))
    ax = fig.subplots()
    y = np.arange(len(names))
    ratios = np.nan_to_num(np.asarray(ratios, float), nan=0.0)
    ax.barh(y, ratios, color=[INHERENT_MIN if p else INHERENT_MAX for p in passed])
    ax.axvline(1.0, color="black", lw=1, ls="--")
    ax.set_yticks(y, list(names), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return fig


# -- risk ----------------------------------------------------------------------------------------


@dataclass
class BoundsMeasure:
    """A risk measure of the synthetic datasets beside its inherent minimum and maximum (Hu & Savitsky, Figure 4).

    Attributes
    ----------
    name
        The measure (for example ``expected match risk [gender+county]``).
    synthetic
        Its value in each synthetic dataset.
    minimum, maximum
        Its value in each repetition of the inherent scenarios (the minimum: every synthesized value drawn
        uniformly over all its levels, a release carrying no information about it beyond its levels; the
        maximum: the synthesized values redrawn from each pattern's empirical distribution in the original
        data, a 'perfect' synthesizer).
    """

    name: str
    synthetic: Sequence[float]
    minimum: Sequence[float] = field(default_factory=list)
    maximum: Sequence[float] = field(default_factory=list)


def bounds_panels(measures: Sequence[BoundsMeasure], title: str = "") -> Figure:
    """Box plots of each measure: inherent minimum, the synthetic datasets, inherent maximum (one panel each)."""
    columns = min(3, len(measures))
    rows = int(np.ceil(len(measures) / columns))
    fig = _figure(3.2 * columns if columns > 1 else 5.0, 3.0 * rows)
    axes = np.atleast_1d(fig.subplots(rows, columns)).ravel()
    for ax, measure in zip(axes, measures, strict=False):
        groups = [("inherent\nminimum", measure.minimum, INHERENT_MIN), ("synthetic", measure.synthetic, SYNTHETIC),
                  ("inherent\nmaximum", measure.maximum, INHERENT_MAX)]
        groups = [(label, np.asarray(v, float)[np.isfinite(np.asarray(v, float))], c) for label, v, c in groups]
        groups = [g for g in groups if len(g[1])]
        for k, (_label, values, colour) in enumerate(groups, start=1):
            if len(values) > 1:
                parts = ax.boxplot([values], positions=[k], patch_artist=True, widths=0.6)
                parts["boxes"][0].set_facecolor(colour)
                parts["boxes"][0].set_alpha(0.45)
            else:  # a mean only: a marker
                ax.scatter([k], values, marker="D", s=60, color=colour, zorder=3)
        ax.set_xticks(np.arange(1, len(groups) + 1), [g[0] for g in groups], fontsize=8)
        ax.set_xlim(0.4, len(groups) + 0.6)
        ax.set_title(textwrap.fill(measure.name, 34), fontsize=9)
    for ax in axes[len(measures):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


def histogram(
    values: Sequence[float],
    xlabel: str,
    title: str,
    lines: Mapping[str, float] | None = None,
    groups: Mapping[str, Sequence[bool]] | None = None,
    bins: int | Sequence[float] = 30,
) -> Figure:
    """A histogram with labelled vertical reference lines, optionally split into stacked groups."""
    fig = _figure()
    ax = fig.subplots()
    values = np.asarray(values, float)
    keep = np.isfinite(values)
    if groups:
        data = [values[keep & np.asarray(g, bool)] for g in groups.values()]
        colours = [SYNTHETIC, INHERENT_MAX, ORIGINAL][: len(data)]
        ax.hist(data, bins=bins, stacked=True, label=list(groups), color=colours)
    else:
        ax.hist(values[keep], bins=bins, color=SYNTHETIC)
    for (label, x), colour in zip((lines or {}).items(), ["black", INHERENT_MAX, INHERENT_MIN], strict=False):
        ax.axvline(x, color=colour, ls="--", lw=1.2, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.set_title(title)
    if groups or lines:
        _legend(ax, frameon=False, fontsize=8)
    return fig


def bars(frame: pd.DataFrame, ylabel: str, title: str, xlabel: str = "", horizontal: bool = False) -> Figure:
    """Grouped bars: one group per row of ``frame``, one bar per column."""
    fig = _figure(6.4, max(3.2, 1.0 + 0.35 * len(frame)) if horizontal else 3.6)
    ax = fig.subplots()
    frame.plot.barh(ax=ax) if horizontal else frame.plot.bar(ax=ax, rot=0)
    (ax.set_xlabel if horizontal else ax.set_ylabel)(ylabel)
    (ax.set_ylabel if horizontal else ax.set_xlabel)(xlabel)
    ax.set_title(title)
    if frame.shape[1] > 1:
        _legend(ax, frameon=False, fontsize=8)
    else:
        ax.get_legend() and ax.get_legend().remove()
    return fig


# -- utility -------------------------------------------------------------------------------------


def intervals(table: pd.DataFrame, title: str, stages: Mapping[str, tuple[str, str, str]] | None = None) -> Figure:
    """Confidence intervals of coefficients: the original data's against the synthetic data's combined ones.

    Parameters
    ----------
    table
        One row per coefficient (index: its name) with ``original``, ``original_lower``, ``original_upper``
        and, for each stage, the columns named in ``stages``.
    stages
        Label -> (estimate, lower, upper) column names (default ``{"synthetic": ("estimate", "ci_lower",
        "ci_upper")}``).
    """
    stages = stages or {"synthetic": ("estimate", "ci_lower", "ci_upper")}
    fig = _figure(6.4, 1.4 + 0.5 * len(table) * (1 + len(stages)) / 2)
    ax = fig.subplots()
    y = np.arange(len(table))
    step = 0.8 / (1 + len(stages))
    series = [("original", ("original", "original_lower", "original_upper"), ORIGINAL)]
    series += [(label, cols, c) for (label, cols), c in zip(stages.items(), [SYNTHETIC, "#ff7f0e", "#9467bd"],
                                                              strict=False)]
    for k, (label, (est, lo, hi), colour) in enumerate(series):
        pos = y - 0.4 + step * (k + 0.5)
        e, low, high = (table[c].to_numpy(float) for c in (est, lo, hi))
        ax.errorbar(e, pos, xerr=[e - low, high - e], fmt="o", ms=4, color=colour, capsize=3, label=label)
    ax.set_yticks(y, [str(i) for i in table.index], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("estimate and 95% interval")
    ax.set_title(title)
    _legend(ax, frameon=False, fontsize=8)
    return fig


def summary_boxes(stats: Mapping[str, Mapping[str, Mapping[str, float]]], ylabel: str, title: str) -> Figure:
    """Box plots drawn from five-number summaries: per table, one box per labelled source.

    Parameters
    ----------
    stats
        Table -> source (for example ``"bootstrap"``, ``"synthetic"``) -> ``{"min", "q1", "median", "q3",
        "max"}``.
    """
    fig = _figure(min(9.0, max(4.5, 1.3 * len(stats))), 3.8)
    ax = fig.subplots()
    boxes, positions, colours = [], [], []
    sources = list(dict.fromkeys(s for per in stats.values() for s in per))
    palette = dict(zip(sources, [ORIGINAL, SYNTHETIC, "#ff7f0e"], strict=False))
    width = 0.8 / max(1, len(sources))
    for t, per in enumerate(stats.values()):
        for source, five in per.items():
            boxes.append({"med": five["median"], "q1": five["q1"], "q3": five["q3"], "whislo": five["min"],
                          "whishi": five["max"], "label": source})
            positions.append(t + (sources.index(source) - (len(sources) - 1) / 2) * width)
            colours.append(palette[source])
    parts = ax.bxp(boxes, positions=positions, widths=width * 0.85, patch_artist=True, showfliers=False)
    for patch, colour in zip(parts["boxes"], colours, strict=True):
        patch.set_facecolor(colour)
        patch.set_alpha(0.5)
    many = len(stats) > 4
    ax.set_xticks(np.arange(len(stats)), list(stats), rotation=40 if many else 0, ha="right" if many else "center",
                  fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    handles = [parts["boxes"][positions.index(p)] for p in positions[: len(sources)]]
    _legend(ax, handles, sources, frameon=False, fontsize=8)
    return fig


def strips(values: Mapping[str, Sequence[float]], ylabel: str, title: str, line: float | None = None,
           line_label: str = "") -> Figure:
    """Each labelled set of values as points (one per synthetic dataset) with its mean as a bar."""
    fig = _figure(max(4.5, 1.3 * len(values)), 3.6)
    ax = fig.subplots()
    for k, v in enumerate(values.values()):
        v = np.asarray(v, float)
        ax.scatter(np.full(len(v), k) + np.linspace(-0.15, 0.15, len(v)), v, s=14, color=SYNTHETIC, alpha=0.7)
        ax.hlines(np.nanmean(v), k - 0.3, k + 0.3, color="black", lw=2)
    if line is not None:
        ax.axhline(line, color=INHERENT_MAX, ls="--", lw=1, label=line_label)
        _legend(ax, frameon=False, fontsize=8)
    ax.set_xticks(np.arange(len(values)), list(values), fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig


# -- risk against utility ------------------------------------------------------------------------


@dataclass
class RiskUtilityPanel:
    """One risk measure against one utility measure: points (releases, reference stages) and risk bounds.

    Attributes
    ----------
    risk_measure, utility_measure
        What the axes show; runs whose panels name the same two measures share one plot.
    points
        ``{"label", "risk", "utility"}`` per point; the first is the release.
    risk_bounds
        Reference risks drawn as vertical lines (for example the inherent minimum and maximum).
    utility_better
        ``"higher"`` or ``"lower"``: which way along the utility axis is better.
    """

    risk_measure: str
    utility_measure: str
    points: list[dict[str, Any]]
    risk_bounds: dict[str, float] = field(default_factory=dict)
    utility_better: str = "higher"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``private/risk_utility.json``)."""
        return {
            "risk_measure": self.risk_measure,
            "utility_measure": self.utility_measure,
            "points": self.points,
            "risk_bounds": self.risk_bounds,
            "utility_better": self.utility_better,
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> RiskUtilityPanel:
        """The panel of :meth:`to_dict`."""
        return cls(
            payload["risk_measure"],
            payload["utility_measure"],
            list(payload["points"]),
            dict(payload.get("risk_bounds", {})),
            payload.get("utility_better", "higher"),
        )


def risk_utility(runs: Sequence[tuple[str, RiskUtilityPanel]]) -> Figure:
    """Risk (x) against utility (y) for one or more runs sharing the same two measures, with risk bounds.

    Each run has its colour; its first point (the release) is a filled circle, further points (reference
    stages) open squares; its risk bounds are vertical lines of its colour, labelled.
    """
    fig = _figure(6.4, 4.4)
    ax = fig.subplots()
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    styles = ["--", ":", "-.", (0, (5, 1))]
    for k, (run, panel) in enumerate(runs):
        colour = colours[k % len(colours)]
        prefix = f"{run}: " if len(runs) > 1 or run else ""
        for j, point in enumerate(panel.points):
            if point.get("risk") is None or point.get("utility") is None:
                continue
            ax.scatter(point["risk"], point["utility"], s=70 if j == 0 else 50, marker="o" if j == 0 else "s",
                       facecolors=colour if j == 0 else "none", edgecolors=colour, zorder=3,
                       label=f"{prefix}{point['label']}")
        for j, (label, x) in enumerate(panel.risk_bounds.items()):
            if x is not None and np.isfinite(x):
                ax.axvline(x, color=colour, ls=styles[j % len(styles)], lw=1.2, alpha=0.8, label=f"{prefix}{label}")
    first = runs[0][1]
    ax.set_xlabel(f"risk: {first.risk_measure}  (more risk →)")
    direction = "↑ better" if first.utility_better == "higher" else "↓ better"
    ax.set_ylabel(f"utility: {first.utility_measure} ({direction})")
    ax.set_title("risk against utility")
    ax.margins(x=0.15, y=0.2)
    _legend(ax, frameon=False, fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


#: Colours of a measure's references (others cycle through the default colours).
REFERENCE_COLOURS = {"inherent_min": INHERENT_MIN, "inherent_max": INHERENT_MAX, "held_out": ORIGINAL,
                     "unsmoothed": INHERENT_MAX, "chance": INHERENT_MIN}  # fmt: skip


def measure_panels(result: Any) -> Figure:
    """One panel per subset of a measure (:class:`bayessdc.measures.MeasureResult`): every dataset's value
    (points), the pooled value with its 95% Monte Carlo interval (a bar), and each reference as a line, shaded
    over the range of its repetitions where it has one."""
    every = len(result.subsets())
    summary = result.shown_summary()  # the worst of many (hundreds of areas), else all
    subsets = list(summary["subset"])
    columns = min(3, max(len(subsets), 1))
    rows = int(np.ceil(max(len(subsets), 1) / columns))
    fig = _figure(3.4 * columns if columns > 1 else 5.6, 2.8 * rows)
    axes = np.atleast_1d(fig.subplots(rows, columns)).ravel()
    values, references = result.values, result.references
    for ax, (_, row) in zip(axes, summary.iterrows(), strict=False):
        subset = row["subset"]
        rows = values.loc[values["subset"].astype(str) == subset]
        v = rows["value"].to_numpy(float)
        joint = bool((rows["dataset"] == 0).all())
        label = ("items (all m datasets read jointly)" if len(v) > 1 else "the m datasets jointly") if joint else (
            "synthetic datasets")  # fmt: skip
        jitter = np.linspace(-0.15, 0.15, len(v)) if len(v) > 1 else np.zeros(len(v))
        ax.scatter(v, 1 + jitter, s=14, color=SYNTHETIC, alpha=0.7, label=label, zorder=3)
        ax.errorbar([row["pooled"]], [1], xerr=[[row["pooled"] - row["lower"]], [row["upper"] - row["pooled"]]],
                    fmt="D", color="black", capsize=4, label="pooled, 95% MC interval", zorder=4)  # fmt: skip
        refs = references.loc[references["subset"].astype(str) == subset]
        for k, (_, ref) in enumerate(refs.iterrows()):
            colour = REFERENCE_COLOURS.get(str(ref["reference"]), f"C{k + 2}")
            ax.axvline(ref["value"], color=colour, linestyle="--", label=str(ref["reference"]).replace("_", " "))
            if np.isfinite(ref["lower"]) and np.isfinite(ref["upper"]):
                ax.axvspan(ref["lower"], ref["upper"], color=colour, alpha=0.12)
        ax.set_yticks([])
        ax.set_ylim(0.5, 1.5)
        ax.set_xlabel(result.unit or "value", fontsize=8)
        ax.set_title(textwrap.fill(f"{result.title} [{subset}]", 40), fontsize=9)
        _legend(ax, fontsize=7, loc="best")
    for ax in axes[len(subsets):]:
        ax.set_visible(False)
    if every > len(subsets):
        fig.suptitle(f"the {len(subsets)} worst of {every} subsets", fontsize=9)
    return fig
