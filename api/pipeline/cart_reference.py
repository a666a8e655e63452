"""What the record measures of a CART release read: the release's datasets beside a cross-fitted release of the
same records that could not have learned them (:func:`bayessdc.models.cart.unlearned.cross_fitted_datasets`),
the reference of the disclosure policy's criteria on records copied and on the replicated uniques removed."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bayessdc.measures import MeasureInput
from bayessdc.models.cart import CartSynthesizer
from bayessdc.models.cart.unlearned import cross_fitted_datasets

from .recipe import Lever

__all__ = ["cart_levers", "record_measure_input"]


def cart_levers() -> list[Lever]:
    """What lowers the records a CART release copies, in words; ``donors`` needs no refit."""
    return [
        Lever("min_leaf", "larger leaves: each synthetic value drawn from more confidential records, and fewer of "
              "the trees' splits made for a few records"),
        Lever("ccp_alpha", "more pruning: fewer, larger leaves"),
        Lever("smoothing", "'density': numeric values perturbed by a Gaussian kernel, fewer copies of real values"),
        Lever("keep", "fewer kept columns, or none (fully synthetic): fewer real values in every row"),
        Lever("donors", "'others': no record's own observation drawn back for it (the same trees)", refit=False),
    ]  # fmt: skip


def record_measure_input(
    measures: Any, synthesizer: CartSynthesizer, frame: pd.DataFrame, m: int, seed: int, bootstrap: int,
    fan_out: Any = None,
) -> MeasureInput:
    """The release's measure input (``measures``: its :class:`~bayessdc.pipeline.cart_measures.CartMeasures`)
    with the released columns, the bootstrap replicates of its tables and, as ``unlearned``, ``m`` cross-fitted
    datasets of the records of ``frame`` (the data the trees were fitted on), from the release's seed; none for a
    single record, which no fit can leave out (its records-copied criterion is then not judged, and the policy's
    minimum of released records refuses it)."""
    data = measures.measure_input(bootstrap=max(bootstrap, 1))
    data.released, data.bootstrap = [*synthesizer.keep, *synthesizer.synthesize], bootstrap
    if len(frame) < 2:
        return data
    # computed once per fit: it does not depend on the donors (no record of a fold is a donor of it)
    key = ("unlearned", m, seed)
    if key not in synthesizer.cache:
        synthesizer.cache[key] = cross_fitted_datasets(synthesizer, frame, m, seed, fan_out=fan_out)
    data.unlearned = synthesizer.cache[key]
    return data
