"""The report of one run (``private/report.html``): how it was made, whether it converged, what it releases.

Sections, in the order a disclosure review board reads them:

1. what was synthesized and how, and the gate's verdict in words;
2. posterior diagnostics of the gated quantities: the r_hat/ESS table, ArviZ rank plots of the worst fit
   and, for the Dirichlet-process synthesizers, the release gate's figures against their tolerances;
3. the original against the synthetic data, variable by variable (synthpop's ``compare()``);
4. disclosure risk: every risk measure (:mod:`bayessdc.measures`) with its references;
5. utility: every utility measure likewise;
6. risk against utility, from the headline measures.

Sections 4 to 6 are laid out from the measure objects alone: no synthesizer writes layout for them.

The report shows the confidential data's distributions: it belongs in ``private/``, never in ``release/``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import plots
from .content import Figure, Item, ReportContent, Table, Text
from .html import Document, write_html

__all__ = [
    "flatten", "gate_verdict", "importance_khat", "policy_section", "rank_quantities", "render_run_report",
    "risk_utility_panels", "write_run_report",
]  # fmt: skip

#: Fits listed in the r_hat/ESS table (the worst first); a national flow run has thousands.
MAX_FIT_ROWS = 12
#: Quantities shown in rank plots.
MAX_RANK_VARIABLES = 4


def write_run_report(release: Any, path: str | os.PathLike[str]) -> Path:
    """Write the report of ``release`` (a :class:`bayessdc.Release`) as one self-contained HTML file.

    Parameters
    ----------
    release
        The release, with its confidential comparison data still in memory.
    path
        The file to write (its folder is created). It shows the confidential data's distributions: keep
        it private.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    return write_html(path, render_run_report(release))


def render_run_report(release: Any) -> str:
    """The HTML text of the report of ``release`` (see :func:`write_run_report`)."""
    content: ReportContent = getattr(release, "report_content", None) or ReportContent()
    doc = Document(f"bayessdc report: {release.synthesizer} synthesis, m = {release.m}, seed {release.seed}")
    doc.paragraph(
        "Confidential: this report shows the original data's distributions and the posterior. It is written to "
        "private/ and must not be published with release/.",
        css="private",
    )
    policy_section(doc, getattr(release, "policy", None), getattr(release, "policy_tried", ()))
    _about(doc, release, content)
    _diagnostics(doc, release, content)
    _comparison(doc, content)
    _measure_section(doc, release, "risk", "Disclosure risk")
    _measure_section(doc, release, "utility", "Utility")
    _risk_utility(doc, risk_utility_panels(release))
    doc.paragraph(f"Written by bayessdc on {time.strftime('%Y-%m-%d %H:%M %Z')}.", css="note")
    return doc.render()


# -- 0. the disclosure policy's verdict ---------------------------------------------------------


def policy_section(doc: Document, verdict: Any, tried: Sequence[Any] = ()) -> None:
    """The disclosure policy's verdict (:class:`bayessdc.policy.Verdict`), first in every report: every criterion
    with its figure and the figure's own interval, the reference and its interval, the test of their difference and
    the verdict (:meth:`bayessdc.policy.Verdict.table`), then what each lever applied to the release cost in utility
    (:attr:`bayessdc.policy.Verdict.lever_costs`: every utility figure before and after it), then what does not
    apply and what is reported only."""
    if verdict is None:
        return
    doc.heading("Disclosure policy")
    judged = any(j.passed is not None for j in verdict.judgements)
    doc.verdict(verdict.sentence(), verdict.passed if judged else None)
    for earlier in (tried or [])[:-1]:
        doc.paragraph(f"Drawn first under {earlier.setting_text()}, from the same posterior: " + "; ".join(
            j.sentence() for j in earlier.failed()) + ". Not released.")  # fmt: skip
    if verdict.judgements:
        doc.table(verdict.table(), caption=verdict.table_caption())
    if getattr(verdict, "lever_costs", None):
        from bayessdc.levers import LEVER_TABLE_CAPTION, costs_table

        doc.table(costs_table(verdict.lever_costs), caption=LEVER_TABLE_CAPTION)
    if verdict.not_applicable:
        doc.paragraph("Criteria of the policy that do not apply to this release: " + "; ".join(verdict.not_applicable)
                      + ".")  # fmt: skip
    if verdict.reported:
        reasons = verdict.policy.reported
        doc.paragraph("Reported, not judged (no grounded threshold in this policy): " + "; ".join(
            f"{name}" + (f" ({reasons[name]})" if reasons.get(name) else "") for name in verdict.reported
        ) + ".")  # fmt: skip


def _measure_section(doc: Document, release: Any, kind: str, title: str) -> None:
    """Every measure of one kind (``"risk"`` or ``"utility"``) laid out from the measure objects alone, the same
    way for every synthesizer: one table of all of them with their references, then per measure what it is,
    what its references mean, a plot of every dataset beside them and the table behind it where it has one."""
    doc.heading(title)
    measured = {name: r for name, r in (getattr(release, "measured", None) or {}).items() if r.kind == kind}
    if not measured:
        doc.paragraph(f"This release has no {kind} measures.")
        return
    table = release.measure_table(kind)
    doc.table(_summary_for_reading(table), caption=(
        f"Every {kind} measure: pooled over the m datasets with its 95% Monte Carlo interval (n/a for a figure of "
        "all m datasets jointly, or of every item, which has no Monte Carlo error between datasets), the worst "
        "dataset or item, and the references it is read against"
    ))  # fmt: skip
    if kind == "risk" and "inherent_min" in table:
        lower_is_better = [name for name, result in measured.items() if result.better == "lower"]
        below = table[table["measure"].isin(lower_is_better) & (table["pooled"] < table["inherent_min"])]
        for _, row in below.iterrows():
            doc.paragraph(
                f"{row['measure'].replace('_', ' ')} [{row['subset']}] is {row['pooled']:.4g}, below its inherent "
                f"minimum {row['inherent_min']:.4g}. The minimum draws every synthesized value uniformly over all "
                "its levels; a release falls below it on this figure when its synthetic values concentrate on the "
                "common levels more than uniform draws do (larger matching sets), or match the true value less "
                "often than chance: it reveals no more about a record's own value than labels unrelated to the "
                "record would. It is not a fault of the bound; it says the release's values carry little of the "
                "records' own."
            )
    for result in measured.values():
        doc.heading(result.title, 3)
        notes = " ".join(f"{name.replace('_', ' ')}: {text}." for name, text in result.reference_notes.items())
        doc.figure(result.plot(), f"{result.description} ({result.unit}). {notes}".strip())
        if result.details is not None and len(result.details):
            doc.table(result.details, caption=f"{result.title}: the figures behind it (click to show)", index=True,
                      folded=True)  # fmt: skip


def _summary_for_reading(table: pd.DataFrame) -> pd.DataFrame:
    """A measure summary narrow enough to read: the kind left out (the section says it), the 95% interval as one
    column (Monte Carlo over the datasets, or the measure's own with one dataset, marked; "n/a" for a figure
    without either), and why a figure is missing, where one is."""
    from .html import format_value

    shown = table.drop(columns=["kind", "lower", "upper", "mc_se", "interval"])
    interval = [
        f"{format_value(lo)} to {format_value(hi)}" + (" (its own)" if source == "own" else "")
        if source in ("monte carlo", "own", "monte carlo and own") else "n/a"
        for lo, hi, source in zip(table["lower"], table["upper"], table["interval"], strict=True)
    ]  # fmt: skip
    shown.insert(shown.columns.get_loc("pooled") + 1, "95% interval", interval)
    if not shown["note"].astype(str).str.len().any():
        shown = shown.drop(columns=["note"])
    return shown.rename(columns={c: c.replace("_", " ") for c in shown.columns})


def risk_utility_panels(release: Any) -> list[plots.RiskUtilityPanel]:
    """The release's risk-utility panels, read from its measures: every headline risk measure's subset (see
    :attr:`bayessdc.Measure.headline`) against the first headline utility measure (its pooled value, averaged
    over its subsets). A reference both measures have (a reference release, such as the unsmoothed stage) is a
    point beside the release; a reference of the risk measure alone (the inherent bounds, chance) a line."""
    measured = getattr(release, "measured", None) or {}
    utilities = [r for r in measured.values() if r.kind == "utility" and r.headline]
    if not utilities:
        return []
    utility = utilities[0]
    summary = utility.summary()
    if isinstance(utility.headline, str):
        summary = summary[summary["subset"] == utility.headline]
    utility_value = float(summary["pooled"].mean())
    utility_name = utility.title + (f" [{summary['subset'].iloc[0]}]" if len(summary) == 1 else " (mean over subsets)")
    panels = []
    for risk in (r for r in measured.values() if r.kind == "risk" and r.headline):
        for _, row in risk.summary().iterrows():
            subset = str(row["subset"])
            if isinstance(risk.headline, str) and subset != risk.headline:
                continue
            release_point = {"label": f"{release.synthesizer} release", "risk": float(row["pooled"])}
            points = [{**release_point, "utility": utility_value}]
            bounds = {}
            for name in risk.reference_names():
                value = risk.reference(subset, name)
                if value is None:
                    continue
                if name in utility.reference_names():
                    stage = summary[name].mean() if name in summary else float("nan")
                    points.append({"label": name.replace("_", " "), "risk": value, "utility": float(stage)})
                else:
                    bounds[name.replace("_", " ")] = value
            panels.append(plots.RiskUtilityPanel(
                risk_measure=f"{risk.title} [{subset}]", utility_measure=utility_name, points=points,
                risk_bounds=bounds, utility_better=utility.better,
            ))  # fmt: skip
    return panels


# -- 1. what and how -----------------------------------------------------------------------------


def gate_verdict(summary: Mapping[str, Any], allow_unconverged: bool = False) -> tuple[str, bool]:
    """The gate's verdict in words, and whether it passed, from ``private/diagnostics.json``'s figures."""
    parameter = summary.get("parameter_gate", {})
    criteria = parameter.get("criteria", {})
    limits = (
        f"split r_hat at most {criteria.get('max_r_hat', 1.01)}, bulk ESS at least "
        f"{criteria.get('min_ess_bulk', 400):g} and {criteria.get('max_divergences', 0)} divergences"
    )
    fits = parameter.get("fits", {})
    gate = summary.get("release_gate")
    if gate:
        figures = gate.get("figures", {})
        within = sum(bool(f.get("passed")) for f in figures.values())
        passed = bool(gate.get("passed"))
        text = (
            f"Release gate {'PASSED' if passed else 'FAILED'}: {within} of {len(figures)} pooled risk and utility "
            f"figures have a between-chain standard error within their tolerance ({gate.get('chains')} chains, "
            f"{gate.get('datasets_per_chain')} synthetic datasets per chain). The parameter gate ({limits}) "
            f"{'passed' if parameter.get('passed') else 'did not pass'}; for this synthesizer it is a diagnostic "
            "only, the release gate decides."
        )
        if not passed and gate.get("failed"):
            text += " Why: " + " ".join(str(reason).rstrip(".") + "." for reason in gate["failed"])
    elif fits:
        failed = [name for name, f in fits.items() if not f.get("passed", True)]
        passed = bool(parameter.get("passed", not failed))
        what = f"all {len(fits)} fits" if len(fits) > 1 else "the fit"
        text = (
            f"Parameter gate PASSED: {what} met the criteria ({limits})."
            if passed
            else f"Parameter gate FAILED: {len(failed)} of {len(fits)} fits ({', '.join(failed[:5])}"
            f"{', ...' if len(failed) > 5 else ''}) missed the criteria ({limits})."
        )
    elif summary.get("evaluation"):  # bsd.evaluate: files made elsewhere, nothing released
        passed = True
        text = ("No posterior to gate: no posterior was fitted here, so there is nothing to gate; an evaluation "
                "releases nothing.")
    else:
        passed = bool(parameter.get("passed", True))
        text = "No posterior to gate: this synthesizer draws from fitted models without MCMC; released."
    if not passed:
        text += (
            " Released only because allow_unconverged=True was given."
            if allow_unconverged
            else " Nothing was released."
        )
    return text, passed


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level, keys joined by dots."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _about(doc: Document, release: Any, content: ReportContent) -> None:
    doc.heading("What was synthesized and how")
    for sentence in content.about:
        doc.paragraph(sentence)
    text, passed = gate_verdict(release.diagnostics.summary, release.diagnostics.allow_unconverged)
    doc.verdict(text, passed)
    synthetic = release.synthetic
    if "synthetic" in synthetic:  # the first dataset (none left when removal emptied them all)
        first = synthetic["synthetic"].iloc[0] if len(synthetic) else None
        synthetic = synthetic[synthetic["synthetic"] == first].drop(columns="synthetic")
    if len(synthetic.columns) and len(synthetic):
        doc.figure(
            plots.variable_roles(synthetic, content.compared),
            "The released columns: synthesized (replaced in every synthetic dataset) and released unchanged.",
        )
    facts = {
        "synthesizer": release.synthesizer,
        "synthetic datasets (m)": release.m,
        "seed": release.seed,
        "wall time (s)": round(float(release.seconds), 1),
        **{k.replace("_", " "): v for k, v in release.facts.items() if not isinstance(v, Mapping | list)},
    }
    doc.table(facts, caption="The run")
    doc.table(
        flatten(release.description),
        caption="The model as release/model.json describes it (priors, settings): click to show",
        folded=True,
    )


# -- 2. diagnostics ------------------------------------------------------------------------------


def _diagnostics(doc: Document, release: Any, content: ReportContent) -> None:
    doc.heading("Posterior diagnostics")
    summary = release.diagnostics.summary
    parameter = summary.get("parameter_gate", {})
    fits = parameter.get("fits", {})
    criteria = parameter.get("criteria", {"max_r_hat": 1.01, "min_ess_bulk": 400.0, "max_divergences": 0})
    if fits:
        table = pd.DataFrame.from_dict(fits, orient="index")
        table.index.name = "fit"
        columns = [c for c in ("max_r_hat", "min_ess_bulk", "divergences", "worst_r_hat", "passed") if c in table]
        table = table[columns].sort_values("max_r_hat", ascending=False)
        caption = "Split r_hat, bulk ESS and divergences of every fit"
        if len(table) > MAX_FIT_ROWS:
            caption = f"The {MAX_FIT_ROWS} fits with the largest r_hat, of {len(table)}"
        doc.table(table.head(MAX_FIT_ROWS), caption=caption, index=True)
        if len(table) > 1:
            doc.figure(
                plots.fit_histograms(table["max_r_hat"], table["min_ess_bulk"], criteria["max_r_hat"],
                                     criteria["min_ess_bulk"]),
                "Every fit's largest r_hat and smallest bulk ESS against the gate's limits.",
            )
        worst = str(table.index[0])
        ranked = rank_quantities(release.diagnostics.posteriors, worst, fits[worst], summary.get("monitored", []))
        if ranked is not None:
            what = "the fit" if len(fits) == 1 else f"the fit with the largest r_hat ({worst})"
            doc.figure(
                plots.rank_plot(ranked, f"rank plots: {worst}"),
                f"ArviZ rank plots of the gated quantities of {what}: each chain's ranks should be uniform (bars "
                "near the dashed line); a chain whose bars slope has not mixed with the others. Vector quantities "
                "show their element whose chain means disagree most.",
            )
    gate = summary.get("release_gate")
    if gate:
        figures = pd.DataFrame.from_dict(gate["figures"], orient="index")
        doc.heading("The release gate", 3)
        doc.paragraph(
            "The Dirichlet-process posteriors are multimodal in their labels, so the parameter gate cannot judge "
            "them; the release gate draws synthetic datasets from every chain and asks whether the chains agree on "
            "what matters for the release: each risk and utility figure's between-chain standard error must be "
            "within its tolerance."
        )
        doc.figure(
            plots.release_gate_bars(gate["figures"]),
            "Each pooled figure's between-chain standard error relative to its tolerance.",
        )
        columns = [c for c in ("kind", "pooled", "between_chain_se", "tolerance", "tolerance_rule", "passed")
                   if c in figures]
        figures.index.name = "figure"
        doc.table(figures[columns], caption="The release gate's figures", index=True)
    _items(doc, content.diagnostics)
    khat = importance_khat(release)
    if khat is not None:
        doc.heading("Importance sampling", 3)
        doc.figure(
            plots.histogram(khat, "Pareto k-hat", "importance-sampling reliability", {"0.7: unreliable beyond": 0.7}),
            f"Pareto k-hat of the importance weights behind each item's intruder probability ({len(khat)} items, "
            f"{int((khat > 0.7).sum())} above 0.7): above 0.7 an item's estimate is unreliable.",
        )
    if not fits and not gate and not content.diagnostics:
        doc.paragraph("This synthesizer fits no posterior by MCMC: there is nothing to diagnose.")


def importance_khat(release: Any) -> np.ndarray | None:
    """The finite k-hat of every item the intruder measures read (``measure_input.items["khat"]``), or ``None``."""
    items = getattr(getattr(release, "measure_input", None), "items", None)
    if items is None or "khat" not in items:
        return None
    khat = items["khat"].to_numpy(dtype=float)
    khat = khat[np.isfinite(khat)]
    return khat if khat.size else None


def _chain_disagreement(values: np.ndarray) -> np.ndarray:
    """Per element (last axis) of ``(chain, draw, element)`` values: the sd of the chain means over the mean
    within-chain sd (inf where chains are each constant at different values). Picks the element a rank plot
    shows; unlike r_hat it needs no care for quantities constant within a chain."""
    between = values.mean(axis=1).std(axis=0)
    within = values.std(axis=1).mean(axis=0)
    return np.where(within > 0, between / np.where(within > 0, within, 1.0), np.where(between > 0, np.inf, 0.0))


def rank_quantities(posteriors: Mapping[str, Any], fit: str, report: Mapping[str, Any],
                     monitored: Sequence[str]) -> Any:
    """A Dataset of at most four scalar quantities of fit ``fit`` for rank plots, or ``None``."""
    import xarray as xr

    try:
        idata = posteriors[fit] if fit in posteriors else next(iter(posteriors.values()))
    except StopIteration:
        return None
    posterior = getattr(idata, "posterior", None)
    if posterior is None or posterior.sizes.get("chain", 1) < 2:
        return None
    wanted = [*monitored, report.get("worst_r_hat"), report.get("worst_ess_bulk")]
    wanted += [n for n, v in posterior.data_vars.items() if v.ndim == 2]
    chosen: dict[str, xr.DataArray] = {}
    for name in dict.fromkeys(w for w in wanted if w and w in posterior.data_vars):
        values = posterior[name]
        other = [d for d in values.dims if d not in ("chain", "draw")]
        if other:
            flat = values.stack(element=other)
            spread = flat.std(("chain", "draw")).to_numpy()
            if not (spread > 0).any():
                continue
            flat = flat.isel(element=np.flatnonzero(spread > 0))
            k = int(np.argmax(_chain_disagreement(flat.transpose("chain", "draw", "element").to_numpy())))
            key = flat["element"].to_numpy()[k]
            label = ",".join(map(str, key)) if isinstance(key, tuple) else str(key)
            values = flat.isel(element=k).drop_vars([c for c in flat.coords if c not in ("chain", "draw")])
            name = f"{name}[{label}]"
        elif float(values.std()) == 0:
            continue
        chosen[name] = values
        if len(chosen) == MAX_RANK_VARIABLES:
            break
    return xr.Dataset(chosen) if chosen else None


# -- 3. to 6. ------------------------------------------------------------------------------------


def _comparison(doc: Document, content: ReportContent) -> None:
    doc.heading("Original and synthetic data")
    if content.original is not None and content.synthetic is not None and content.compared:
        doc.paragraph(
            "Each synthesized variable's distribution in the original data and in the synthetic datasets."
        )
        doc.figures(
            (plots.compare_column(content.original[c], content.synthetic, c), "", f"{c}: original and synthetic")
            for c in content.compared
        )
    _items(doc, content.comparison)


def _risk_utility(doc: Document, panels: Sequence[plots.RiskUtilityPanel]) -> None:
    doc.heading("Risk against utility")
    if not panels:
        doc.paragraph("No risk and utility figures to set against each other.")
        return
    doc.paragraph(
        "The release (filled circle) and any reference release (open squares, such as the unsmoothed stage) by "
        "risk and utility; vertical lines mark the risk measure's references (the inherent minimum, a release "
        "carrying no information about the synthesized values beyond their levels, and maximum, a 'perfect' "
        "synthesizer redrawing them from each pattern's distribution in the original data; chance)."
    )
    for panel in panels:
        doc.figure(plots.risk_utility([("", panel)]), f"{panel.risk_measure} against {panel.utility_measure}")


def _items(doc: Document, items: Sequence[Item]) -> None:
    for item in items:
        if isinstance(item, Figure):
            doc.figure(item.draw(), item.caption)
        elif isinstance(item, Table):
            doc.table(item.data, caption=item.caption, index=item.index)
        elif isinstance(item, Text):
            doc.paragraph(item.text)
        else:  # pragma: no cover - a programming error in a synthesizer's content
            raise TypeError(f"not a report item: {item!r}")
