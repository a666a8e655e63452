"""A CART release that could not have learned the records it is judged on: cross-fitted synthesis.

The disclosure policy reads a figure of a release (the share of its rows equal to a confidential record) against
the same figure of a release that never saw the records judged. For sequential CART that reference is built by
K-fold cross-fitting: the records are split at random into ``folds`` parts; for each part, the trees are fitted on
the other parts only (:meth:`CartSynthesizer.fit` with ``learn=``) and that part's records are synthesized from
them (:meth:`CartSynthesizer.synthesize_datasets` with ``rows=``), their kept values real as in the release. Each
record of the cross-fitted datasets is therefore drawn by trees and leaves that never held it, while the release
around it has the same columns, kept values, rules and settings.

The trees of a fold are fitted on a share ``1 - 1/folds`` of the records, and fewer records make smaller trees
and fewer copies: the reference is lower than a release that learned nothing but had all the data, by an amount
that shrinks as ``folds`` grows. Measured on the simulated ACS persons (3,000 records, 3 kept and 4 synthesized
categorical columns, min_leaf 50, m = 10): the release copies 0.6195 of its rows; the cross-fitted release
0.5701 with 2 folds, 0.5996 with 5, 0.6113 with 10 and 0.6151 (+- 0.0029) with 20, where the difference from the
release is within its Monte Carlo error. With min_leaf 5 it stays at 0.74 against 0.77 for any number of folds:
what is left is the release's leaves drawing records' own values. :data:`FOLDS` is 20.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from .synthesizer import CartSynthesizer

__all__ = ["FOLDS", "cross_fitted_datasets"]

#: Folds of the cross-fitted reference (the trees of each fold learn from 97.5% of the records).
FOLDS = 40


def cross_fitted_datasets(
    synthesizer: CartSynthesizer,
    data: pd.DataFrame,
    m: int,
    seed: int,
    *,
    folds: int = FOLDS,
    fan_out: Callable[..., Any] | None = None,
) -> pd.DataFrame:
    """``m`` synthetic datasets of ``data`` in which every record is drawn by trees fitted without it.

    Parameters
    ----------
    synthesizer
        The release's synthesizer: its settings are copied (it is not refitted or changed).
    data
        The confidential records the release was fitted on.
    m
        Number of datasets.
    seed
        Seed of the folds and of the draws (streams ``"cart-unlearned"``), apart from the release's.
    folds
        Number of folds K (at most the number of records; at least 2).
    fan_out
        Runs the trees and the datasets of each fold, as in :meth:`CartSynthesizer.fit`.

    Returns
    -------
    pandas.DataFrame
        Columns ``synthetic`` (1..m) and the released columns, the records in the order of ``data`` within each
        dataset, as :meth:`CartSynthesizer.synthesize_datasets` returns them. A synthesizer with ``units`` (a
        household release, :class:`~bayessdc.models.cart.households.HouseholdCart`) is cross-fitted by unit, a
        whole household in one fold; its datasets hold a household in the place of each, fold after fold, their
        ids renumbered by its ``relabel``. A synthesizer with its own ``cross_fitted`` (synthesis area by area,
        :meth:`~bayessdc.models.cart.strata.StratifiedCart.cross_fitted`) is cross-fitted by it.
    """
    own = getattr(synthesizer, "cross_fitted", None)
    if own is not None:  # a release synthesized area by area is cross-fitted area by area
        return own(data, m, seed, folds=folds, fan_out=fan_out)
    n = len(data)
    units = getattr(synthesizer, "units", None)  # a household release leaves whole households out
    unit_of = np.arange(n) if units is None else units(data)
    n_units = int(unit_of.max()) + 1 if n else 0
    folds = int(min(folds, n_units))
    if folds < 2:
        raise ValueError(f"cross-fitting needs at least 2 {'records' if units is None else 'units'}, got {n_units}")
    order = streams.rng(seed, Stream.CART_UNLEARNED, Stream.FOLDS).permutation(n_units)
    parts = []
    for k, held_units in enumerate(np.array_split(order, folds)):
        held = np.sort(held_units) if units is None else np.flatnonzero(np.isin(unit_of, held_units))
        learn = np.setdiff1d(np.arange(n), held)
        refit = getattr(synthesizer, "refitted", None)  # households: the stages built once, not per fold
        if refit is not None:
            fold = refit(seed, fan_out, learn)
        else:
            fold = dataclasses.replace(synthesizer)
            fold.fit(data, seed, fan_out, learn=learn)
        drawn = fold.synthesize_datasets(m, seed=streams.integer_seed(seed, Stream.CART_UNLEARNED, k), fan_out=fan_out,
                                         rows=held)  # fmt: skip
        if len(drawn) == len(held) * m:
            parts.append(drawn.assign(_row=np.tile(held, m)))
        else:  # households: as many as the fold's, their persons drawn; in the fold's order within a dataset
            parts.append(drawn.assign(_row=np.full(len(drawn), held[0] if len(held) else 0)))
    frame = pd.concat(parts, ignore_index=True).sort_values(["synthetic", "_row"], kind="stable")
    part = frame.pop("_row").to_numpy()
    frame = frame.reset_index(drop=True)
    relabel = getattr(synthesizer, "relabel", None)
    return frame if relabel is None else relabel(frame, part)
