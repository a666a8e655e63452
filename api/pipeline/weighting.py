"""Survey weights in the pipeline: the weight column checked, given its role, and described.

``bsd.synthesize(frame, recipe, ..., weights="wt")`` names the column of the survey weights. Before anything is
fitted (:func:`check_weights`) the column must exist and hold positive, finite numbers on every row; a refusal
names the column and the rows. Its role (:func:`weight_roles`) follows the kind of release:

* *partially synthetic* (some column kept): the weights are kept, released as collected and a predictor of every
  synthesized column, so that the synthesis model conditions on the design (an informative design, where the
  weights carry information on the outcome, is then reproduced); listing them to synthesize is refused.
* *fully synthetic* (``keep=[]``): the weights are synthesized like any variable, first in the order (unless the
  user places them), so that every later column is drawn given a synthetic weight; no record is released with
  its collected weight, which can reveal its design stratum (and the area or group it was oversampled from).

Every utility figure of a weighted release is then computed in its weighted form (tables of weighted totals,
weighted regressions with linearization variances, :mod:`bayessdc.synthesis.survey`), and ``release/model.json``
(``weights``) and the report say so.

A release of persons within households (``bsd.CART(households=...)``) takes a *household* weight, the same for
every member (a household survey's base weight; a weight differing within a household is refused before fitting).
Kept, it is one of the household's kept columns: each synthetic household stands in the place of a real one and
carries its collected weight, and the trees of both stages (households, members) are drawn given it. Synthesized,
it is drawn once per household, as a household column in the households' stage, right after the household's
composition. The tables of households (``household_table_tau``) are then of the households' weighted totals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.validation import describe_rows
from bayessdc.synthesis.replicates import ReplicateDesign, invalid_replicate_rows

from ..errors import InputError

__all__ = [
    "attach_replicates", "check_replicates", "check_weights", "weight_roles", "weights_description", "weights_sentence",
]

_WHY = {
    "kept": "partially synthetic release: the collected weights are released unchanged with the records they belong "
    "to, and every synthesized column is drawn given them, so that weighted estimates from the release reflect the "
    "design",
    "synthesized": "fully synthetic release: the weights are synthesized as a variable, first in the order so that "
    "every other column is drawn given a synthetic weight, and no record is released with its collected weight, "
    "which can reveal its design stratum (the synthetic weights are drawn from the observed ones; smoothing='density' "
    "perturbs them too)",
}

#: Why the weight is in no default table or knowledge set (``model.json``'s ``weights``, the report).
_LEFT_OUT = (
    "the weight is a design variable, not an analysis one: it is left out of the default utility tables and of the "
    "default knowledge sets of release.risk(known=...), whose risk figures would otherwise assume that an intruder "
    "knows each record's nearly unique weight; name it in tables= or known= to include it"
)


def check_weights(frame: pd.DataFrame, column: Any) -> str:
    """Refuse a weight column that is unknown, or has a missing, non-numeric, zero, negative or infinite value.

    Parameters
    ----------
    frame
        The confidential table.
    column
        The name of its weight column.

    Returns
    -------
    str
        The column's name.

    Raises
    ------
    bayessdc.InputError
        Naming the column and the offending rows (1-based data row numbers).
    """
    if not isinstance(column, str) or not column:
        raise InputError(f"weights= names one column of the data, got {column!r}")
    if column not in frame.columns:
        raise InputError(f"weights={column!r}: no such column (columns: {', '.join(map(str, frame.columns))})")
    values = frame[column]
    if pd.api.types.is_bool_dtype(values):
        raise InputError(f"weights={column!r}: the column holds true/false values, not survey weights")
    numbers = pd.to_numeric(values, errors="coerce")
    checks = [
        (values.isna().to_numpy(), "is missing"),
        ((numbers.isna() & values.notna()).to_numpy(), "is not a number"),
        (numbers.notna().to_numpy() & ~np.isfinite(numbers.to_numpy(dtype=float, na_value=0.0)), "is infinite"),
        ((numbers <= 0).to_numpy(), "is zero or negative"),
    ]
    for bad, what in checks:
        if bad.any():
            raise InputError(
                f"weights={column!r}: the survey weight {what} at {describe_rows(np.flatnonzero(bad))}; every record "
                "needs a positive weight (drop the records or fix their weights before synthesis)"
            )
    if not pd.api.types.is_numeric_dtype(values):
        rows = np.arange(len(values))
        raise InputError(
            f"weights={column!r}: the survey weights are stored as text ({describe_rows(rows)}); convert the column "
            "to numbers"
        )
    return column


def weight_roles(column: str, synthesize: list[str] | None, keep: list[str] | None) -> tuple[list[str], list[str], str]:
    """The synthesized and kept columns with the weights given their role (see the module docstring).

    Parameters
    ----------
    column
        The weight column.
    synthesize, keep
        The columns as the user gave them.

    Returns
    -------
    synthesize, keep, role
        ``role`` is ``"kept"`` (partially synthetic) or ``"synthesized"`` (fully synthetic).

    Raises
    ------
    bayessdc.InputError
        The weights listed to synthesize while other columns are kept (a partially synthetic release keeps the
        collected weights).

    Examples
    --------
    >>> weight_roles("wt", ["income"], ["age"])
    (['income'], ['age', 'wt'], 'kept')
    >>> weight_roles("wt", ["income"], [])
    (['wt', 'income'], [], 'synthesized')
    """
    synthesize, keep = list(synthesize or []), list(keep or [])
    others_kept = [c for c in keep if c != column]
    if others_kept:
        if column in synthesize:
            raise InputError(
                f"weights={column!r} is listed to synthesize while {', '.join(others_kept)} are kept: a partially "
                f"synthetic release keeps the collected weights (list {column!r} in keep, or keep nothing for a fully "
                "synthetic release, which synthesizes them)"
            )
        return synthesize, keep if column in keep else [*keep, column], "kept"
    if column in keep:  # the weights alone kept: partially synthetic, nothing else kept
        return synthesize, keep, "kept"
    return (synthesize if column in synthesize else [column, *synthesize]), keep, "synthesized"


#: Why, in a release of persons within households, the weight is the household's and what it does.
_WHY_HOUSEHOLDS = {
    "kept": "partially synthetic household release: the weight is the household's (the same for every member), a "
    "kept household column: each synthetic household stands in the place of a real one with the same kept household "
    "columns and carries that household's collected weight, and the trees of both stages (households, members) are "
    "drawn given it, so that weighted estimates from the release reflect the design",
    "synthesized": "fully synthetic household release: the weight is the household's (the same for every member), "
    "synthesized as a household column in the households' stage, drawn given the household's composition and before "
    "every other column, so that every other column is drawn given a synthetic weight; no household is released "
    "with its collected weight, which can reveal its design stratum (the synthetic weights are drawn from the "
    "observed households' ones)",
}


def weights_description(column: str, role: str, households: str | None = None) -> dict[str, Any]:
    """The ``weights`` entry of ``release/model.json``: the column, its role and why.

    Parameters
    ----------
    column
        The survey weight column.
    role
        ``"kept"`` or ``"synthesized"`` (:func:`weight_roles`).
    households
        The household id column of a release of persons within households, whose weight is then the household's
        (``unit``: ``"household"``); ``None``: a release of records.

    Returns
    -------
    dict
        ``column``, ``role``, ``why``, ``utility`` and ``left_out_of_defaults``; with ``households``, ``unit``
        (``"household"``: one weight per household) and ``households`` (the household id column) after ``role``.
    """
    entry: dict[str, Any] = {"column": column, "role": role}
    utility = ("every utility figure is weighted: tables of weighted totals (tau, relative errors) against a "
               "bootstrap of weighted records, regressions and means by weighted least squares with linearization "
               "variances, combined over the m datasets")  # fmt: skip
    if households is None:
        return {**entry, "why": _WHY[role], "utility": utility, "left_out_of_defaults": _LEFT_OUT}
    return {
        **entry,
        "unit": "household",
        "households": households,
        "why": _WHY_HOUSEHOLDS[role],
        "utility": f"{utility}; the tables of households (household_table_tau) are of the households' weighted "
        "totals, against a bootstrap of whole households carrying their weights",
        "left_out_of_defaults": f"{_LEFT_OUT}; nor is it a column a household is known by "
        "(household_uniques_reappearing, household_attribute_inference) or a secret inferred",
    }


def weights_sentence(column: str, role: str, households: str | None = None) -> str:
    """What the report says of the survey weights: their role, and which figures are weighted (``households``: the
    household id column of a release of persons within households, whose weight is the household's)."""
    if households is None:
        kept = "kept as collected and a predictor of every synthesized column" if role == "kept" else (
            "synthesized first (no record is released with its collected weight)")
        tables = ""
    else:
        kept = ("a household weight kept as collected: each synthetic household carries the weight of the real "
                "household it stands for, and every tree is drawn given it") if role == "kept" else (
            "a household weight synthesized once per household, right after its composition (no household is "
            "released with its collected weight)")
        tables = (f", the tau of the tables of households (the households' totals weighted by {column!r}, against "
                  "a bootstrap of whole households with their weights)")  # fmt: skip
    return (f"Survey weights: the column {column!r} is {kept}. Weighted figures: the tables' tau and relative "
            f"errors (totals weighted by {column!r}, against a bootstrap of weighted records){tables} and any "
            "analyst's regression (weighted least squares, linearization variances, combined over the m datasets) "
            "and the pMSE of release.risk(known=...); the records copied, replicated uniques, identification risks "
            f"and table deviations count records, unweighted. Defaults: {_LEFT_OUT}.")  # fmt: skip


def check_replicates(
    frame: pd.DataFrame, design: Any, weights: str | None, role: str | None, synthesize: list[str], keep: list[str]
) -> ReplicateDesign:
    """Refuse replicate weights that cannot be carried: without ``weights=``, in a fully synthetic release, listed
    to keep or synthesize, missing from the data, or holding a missing, non-numeric, infinite or negative value.

    Replicate weights describe the collected sample's design. They are released with the records they belong to,
    as the collected weights are under partial synthesis, and are no predictor of any synthesized column (80
    columns of the design would only slow the trees); a fully synthetic release synthesizes the weights and
    cannot keep the design columns of real records.

    Returns
    -------
    ReplicateDesign
        The design (a :class:`bayessdc.synthesis.replicates.ReplicateDesign`).

    Raises
    ------
    bayessdc.InputError
        Naming the column and rows, or the reason.
    """
    if not isinstance(design, ReplicateDesign):
        raise InputError(f"replicate_weights= takes a bsd.ReplicateDesign, got {type(design).__name__}")
    if weights is None:
        raise InputError("replicate_weights= needs weights= (the full-sample weight the replicates go with)")
    if role != "kept":
        raise InputError(
            "replicate_weights= applies to a partially synthetic release, which keeps the collected weights: a fully "
            "synthetic release synthesizes the weights and cannot carry the design's replicate weights of real records"
        )
    listed = [c for c in design.columns if c in synthesize or c in keep]
    if listed:
        raise InputError(f"replicate weight column(s) {', '.join(listed)} listed to keep or synthesize: they are "
                         "carried with the weights, not modelled; leave them out of both lists")  # fmt: skip
    unknown = [c for c in design.columns if c not in frame.columns]
    if unknown:
        raise InputError(f"replicate weight column(s) not in the data: {', '.join(map(str, unknown))}")
    for column in design.columns:
        bad = invalid_replicate_rows(frame[column])
        if len(bad):
            raise InputError(
                f"replicate weight column {column!r}: a missing, non-numeric, infinite or negative value at "
                f"{describe_rows(bad)}; a replicate weight is a number of at least 0"
            )
    return design


def attach_replicates(synthetic: pd.DataFrame, replicates: pd.DataFrame, dataset: str = "synthetic") -> pd.DataFrame:
    """The release with the replicate weights of each record beside its kept weight: ``synthetic`` stacks ``m``
    datasets of the fitted rows in their order (the pipeline's contract for tables of records), so every dataset
    takes ``replicates``' rows as they are.

    Raises
    ------
    RuntimeError
        When a dataset does not have the fitted rows' number of records (no record-level release).
    """
    sizes = synthetic.groupby(dataset, sort=True).size()
    if not (sizes == len(replicates)).all():
        raise RuntimeError(
            f"replicate weights need datasets of the {len(replicates)} fitted rows, got {sizes.tolist()}"
        )
    order = synthetic.sort_values(dataset, kind="stable").index
    tiled = pd.DataFrame(np.tile(replicates.to_numpy(), (len(sizes), 1)), columns=replicates.columns, index=order)
    return synthetic.join(tiled)
