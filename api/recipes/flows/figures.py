"""What a flows release hands its measures (Hawala, Reiter & Wang): the intruder's attribute risk per sensitive
cell (eq. 3-8) from the group runner's importance sampling, as the generic intruder measures read it, the
reliability of that sampling (k-hat), and the exact check by refits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.flows import FlowColumns

__all__ = ["exact_check", "flow_risk_cells", "importance_diagnostics", "intruder_items"]


def flow_risk_cells(original: pd.DataFrame, cells: pd.DataFrame, columns: FlowColumns, lower: int) -> pd.DataFrame:
    """The sensitive cells with the intruder's figures of every group pair (``private/risk_cells.parquet``):
    the cell, its true count, the intruder's guess, whether it is correct, its distance and true-value
    probability, the k-hats, and ``unique`` (its origin and its destination each in one sensitive cell)."""
    risk_cells = pd.DataFrame(
        {
            "origin": original[columns.origin],
            "destination": original[columns.destination],
            "origin_group": original[columns.origin_group],
            "destination_group": original[columns.destination_group],
            "count": original[columns.count],
            "intruder_guess": cells["guess"].to_numpy() + lower,
            "correct": cells["correct"].astype(bool),
            "distance": cells["distance"],
            "true_probability": cells["true_probability"],
            "max_khat": cells["max_khat"],
            "relevant_khat": cells["relevant_khat"],
        }
    )
    # the leave-one-out reference (bayessdc.risk.unlearned) and the no-knowledge intruder (bayessdc.risk.no_knowledge)
    for name in ("unlearned_correct", "loo_khat", "no_knowledge_correct"):
        if name in cells:
            risk_cells[name] = cells[name].to_numpy()
    origin_once = risk_cells["origin"].map(risk_cells["origin"].value_counts()) == 1
    destination_once = risk_cells["destination"].map(risk_cells["destination"].value_counts()) == 1
    risk_cells["unique"] = (origin_once & destination_once).to_numpy()
    return risk_cells


def importance_diagnostics(items: list[pd.DataFrame], threshold: float = 0.7) -> dict[str, Any]:
    """How far the importance-sampling estimates of the intruder's figures can be trusted, over every group
    pair's sensitive cells (``diagnostics.json``, ``importance_sampling``): the cells whose Pareto k-hat exceeds
    ``threshold`` (Vehtari et al.'s limit of a reliable estimate) for the candidates that decide the guess, for
    any candidate, and for the leave-one-out posterior of the ``unlearned`` reference."""
    cells = pd.concat(items, ignore_index=True) if items else pd.DataFrame()
    out: dict[str, Any] = {"khat_threshold": threshold, "cells": len(cells)}
    for key, column in (("cells_over_threshold", "relevant_khat"), ("cells_over_threshold_any_candidate", "max_khat"),
                        ("unlearned_cells_over_threshold", "loo_khat")):  # fmt: skip
        if column in cells:
            out[key] = int((cells[column].to_numpy(dtype=float) > threshold).sum())
    return out


def intruder_items(risk_cells: pd.DataFrame, lower: int, upper: int) -> pd.DataFrame:
    """The sensitive cells as the generic intruder measures read them (:mod:`bayessdc.measures.importance`):
    ``correct``, ``unique``, ``true_probability``, ``distance``, ``khat``, ``unlearned_correct`` (the
    probability of a correct guess from a release that never saw the cell), ``no_knowledge_correct`` (the
    guess of the intruder who knows no count), and what a uniform guess over
    ``lower..upper`` would give: ``chance`` (``1 / N``) and ``chance_distance``
    (``sum_u |u - t| / N = ((t - L)(t - L + 1) + (U - t)(U - t + 1)) / (2N)`` for the true count ``t``)."""
    levels = upper - lower + 1
    t = risk_cells["count"].to_numpy(dtype=float)
    below, above = t - lower, upper - t
    reference = {k: risk_cells[k].to_numpy(kind) for k, kind in (("unlearned_correct", float),
                 ("no_knowledge_correct", bool)) if k in risk_cells}  # fmt: skip
    return pd.DataFrame({**reference,
        "correct": risk_cells["correct"].to_numpy(bool), "unique": risk_cells["unique"].to_numpy(bool),
        "true_probability": risk_cells["true_probability"].to_numpy(float),
        "distance": risk_cells["distance"].to_numpy(float), "khat": risk_cells["relevant_khat"].to_numpy(float),
        "chance": np.full(len(t), 1.0 / levels),
        "chance_distance": (below * (below + 1) + above * (above + 1)) / (2 * levels),
    })  # fmt: skip


def exact_check(
    synthesizer: Any, count: int, lower: int, groups: list, results: list, risk_cells: pd.DataFrame, seed: int
) -> dict[str, Any]:
    """Refit-based attribute risk for the ``count`` cells with the largest relevant k-hat
    (:func:`bayessdc.risk.attribute.refit_attribute_risk`, by the flows ``synthesizer``), beside their
    importance-sampling figures; ``lower`` is the smallest sensitive count (the guesses' offset)."""
    import xarray as xr

    from bayessdc.risk.attribute import refit_attribute_risk

    order = np.argsort(-risk_cells["relevant_khat"].to_numpy(), kind="stable")[:count]
    offsets = np.cumsum([0] + [g.n_cells for g in groups])
    cells = []
    for position in order:
        k = int(np.searchsorted(offsets, position, side="right") - 1)
        group, result, item = groups[k], results[k], int(position - offsets[k])
        synthetic = xr.DataArray(result.synthetic_values(), dims=("synthetic", "item"))
        rho = refit_attribute_risk(synthesizer, group, synthetic, [item], seed).isel(item=0).to_numpy()
        truth = int(group.y[item])
        row = risk_cells.iloc[position]
        cells.append(
            {
                "origin": row["origin"],
                "destination": row["destination"],
                "relevant_khat": float(row["relevant_khat"]),
                "true_probability_importance_sampling": float(row["true_probability"]),
                "true_probability_exact": float(rho[truth]),
                "guess_importance_sampling": int(row["intruder_guess"]),
                "guess_exact": int(np.argmax(rho)) + lower,
                "rho_exact": rho.tolist(),
            }
        )
    differences = [abs(c["true_probability_exact"] - c["true_probability_importance_sampling"]) for c in cells]
    return {
        "cells": cells,
        "max_abs_difference_true_probability": float(max(differences)) if cells else None,
        "guess_agreement": float(np.mean([c["guess_exact"] == c["guess_importance_sampling"] for c in cells]))
        if cells
        else None,
    }
