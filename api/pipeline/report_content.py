"""What each synthesizer contributes to its run's report (:class:`bayessdc.report.ReportContent`): what it did,
the columns to compare and the diagnostics only its model has. Risk and utility are laid out by the report from
the release's measures, the same way for every synthesizer."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..release import Release

if TYPE_CHECKING:
    from .cart import CartPrepared
    from .flows import Flows, FlowsPrepared
    from .spatial_input import SpatialPrepared

__all__ = ["cart_report_content", "flows_report_content", "spatial_report_content"]


def flows_report_content(recipe: Flows, prepared: FlowsPrepared, release: Release) -> Any:
    """What the flows synthesizer did, for its report (:class:`bayessdc.report.ReportContent`): the sensitive
    counts compared, by origin; risk and utility are laid out from the release's measures."""
    from bayessdc.report import Figure, ReportContent, plots

    columns, data = recipe.columns, prepared.data
    rows = np.concatenate([g.rows for g in prepared.groups]) if prepared.groups else np.array([], int)
    stacked = release.synthetic
    synthetic = pd.concat(
        [stacked[stacked["synthetic"] == k].iloc[rows] for k in range(1, release.m + 1)], ignore_index=True
    )
    original = data.iloc[rows].reset_index(drop=True)
    content = ReportContent(
        original=original,
        synthetic=synthetic,
        compared=[columns.count],
        about=[
            f"Counts of {columns.count} in {recipe.lower}..{recipe.upper} are sensitive: {len(rows):,} cells in "
            f"{release.facts.get('groups', 0)} {columns.origin_group} x {columns.destination_group} pair(s), each "
            "fitted separately by the truncated-Poisson model (Hawala, Reiter & Wang), are replaced by posterior "
            f"predictive draws in each of the m = {release.m} datasets; other counts are released unchanged.",
        ],
    )
    if len(rows):
        totals = pd.DataFrame({"original": original.groupby(columns.origin)[columns.count].sum()})
        totals["synthetic"] = synthetic.groupby(columns.origin)[columns.count].sum() / release.m
        content.comparison.append(Figure(
            partial(plots.scatter_identity, totals["original"], totals["synthetic"], "original",
                    "synthetic (mean of datasets)", f"sensitive counts by {columns.origin}"),
            f"Each {columns.origin}'s total over its sensitive cells.",
        ))
    return content


def spatial_report_content(prepared: SpatialPrepared, release: Release) -> Any:
    """What the spatial synthesizer did, for its report (:class:`bayessdc.report.ReportContent`): a map of the
    locations with the outliers it smooths; risk and utility are laid out from the release's measures."""
    from bayessdc.report import Figure, ReportContent, plots

    response, coords = prepared.response, list(prepared.coords)
    original = prepared.frame.reset_index(drop=True)
    risk = release.risk_figures or {}
    at_risk = np.zeros(len(original), bool)
    at_risk[risk.get("outliers", [])] = True
    content = ReportContent(
        original=original,
        synthetic=release.synthetic,
        compared=[response],
        about=[
            f"The response {response} of {len(original):,} geocoded records is replaced, in each of the m = "
            f"{release.m} datasets, by a posterior predictive draw of a spatial Gaussian process (Quick, Holan & "
            f"Wikle). Stage 2 smooths the {int(at_risk.sum())} records the model flags as outliers towards their "
            "neighbours (differential smoothing); the released data are stage 2's. Locations and covariates are "
            "released unchanged.",
        ],
    )
    first = release.synthetic[release.synthetic["synthetic"] == 1][response].to_numpy(float)
    if len(coords) == 2:
        content.comparison.append(Figure(
            partial(plots.location_map, original[coords[0]], original[coords[1]],
                    {"original": original[response].to_numpy(float), "synthetic dataset 1": first},
                    at_risk, coords[0], coords[1], response),
            f"The locations coloured by {response}, original and in the first synthetic dataset; the outliers that "
            "differential smoothing protects are circled in red.",
        ))
    return content


def cart_report_content(prepared: CartPrepared, release: Release) -> Any:
    """What sequential CART did, for its report (:class:`bayessdc.report.ReportContent`): its trees among the
    diagnostics; risk and utility are laid out from the release's measures."""
    from bayessdc.report import Figure, ReportContent, Table, Text, plots

    released, synthesize, keep = prepared.data, prepared.synthesize, prepared.keep
    content = ReportContent(
        original=released,
        synthetic=release.synthetic,
        compared=synthesize,
        about=[
            f"Sequential CART (Rodriguez, Freiman, Reiter & Lauger): {', '.join(synthesize)} of {len(released):,} "
            f"records are synthesized one after another, each from a tree grown on the kept column(s) "
            f"{', '.join(keep)} and the columns before it, with values drawn from a Bayesian bootstrap of "
            f"its leaf, in each of the m = {release.m} datasets.",
        ],
    )
    trees = pd.DataFrame.from_dict(release.diagnostics.summary.get("trees", {}), orient="index")
    if len(trees):
        trees.index.name = "column"
        content.diagnostics.append(Text(
            "CART fits no posterior by MCMC, so there is no r_hat or ESS to gate. What can go wrong is in the trees: "
            "their size, and draws that broke a rule and fell back to an ancestor leaf."
        ))
        content.diagnostics.append(Figure(
            partial(plots.bars, trees[["leaves", "depth"]], "", "the trees", horizontal=True),
            "Leaves and depth of each column's tree.",
        ))
        shown = trees.assign(fallbacks=trees["fallbacks"].map(lambda f: f.get("ancestor", 0)))
        content.diagnostics.append(Table(shown[["leaves", "depth", "rules_enforced", "fallbacks"]],
                                         "The trees (fallbacks: draws that broke a rule and came from an ancestor)",
                                         index=True))
    return content
