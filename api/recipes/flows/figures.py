"""The figures of a flows release (Hawala, Reiter & Wang): the intruder's attribute risk per sensitive cell
(eq. 3-8) from the group runner's importance sampling, what the generic intruder measures read, the exact check
by refits, and the utility of the released tables (tau and the margins' totals)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.flows import FlowColumns
from bayessdc.synthesis.utility import margin_deviation, proportion_of_total_variation

__all__ = ["exact_check", "flow_risk_cells", "flow_utility", "intruder_items"]


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


def flow_utility(
    data: pd.DataFrame, original: pd.DataFrame, synthetic: pd.DataFrame, values: np.ndarray, columns: FlowColumns
) -> dict[str, Any]:
    """``private/utility.json`` of a flows release: tau of every cell and of the sensitive cells per dataset, and
    the deviations of the origin, destination and group-pair totals.

    Parameters
    ----------
    data, original
        The whole table and its sensitive cells.
    synthetic
        The m released tables, stacked.
    values
        The sensitive cells' synthetic counts, shape ``(m, cells)``.
    columns
        The table's columns.
    """
    count = columns.count
    cells = data[count].to_numpy()  # by position: each dataset's rows are the table's rows in order
    tau_cells = [
        proportion_of_total_variation(cells, frame[count].to_numpy()) for _, frame in synthetic.groupby("synthetic")
    ]
    tau_sensitive = [proportion_of_total_variation(original[count], row) for row in values]
    return {
        "cells": {"tau": float(np.mean(tau_cells)), "per_dataset": tau_cells},
        "sensitive_cells": {"tau": float(np.mean(tau_sensitive))},
        "origin_totals": margin_deviation(data, synthetic, [columns.origin], count),
        "destination_totals": margin_deviation(data, synthetic, [columns.destination], count),
        "group_pair_totals": margin_deviation(
            data, synthetic, [columns.origin_group, columns.destination_group], count
        ),
    }


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
