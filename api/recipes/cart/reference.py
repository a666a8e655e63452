"""What the record measures of a CART release read: the release's datasets beside a cross-fitted release of the
same records that could not have learned them (:func:`bayessdc.models.cart.unlearned.cross_fitted_datasets`),
the reference of the disclosure policy's criteria on records copied and on the replicated uniques removed."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bayessdc.measures import MeasureInput
from bayessdc.models.cart import CartSynthesizer
from bayessdc.models.cart.unlearned import cross_fitted_datasets

from ...pipeline.recipe import Lever

__all__ = ["cart_levers", "identification_input", "record_measure_input"]


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
    """The release's measure input (``measures``: its :class:`~bayessdc.recipes.cart.measures.CartMeasures`)
    with the released columns, the bootstrap replicates of its tables and, as ``unlearned``, ``m`` cross-fitted
    datasets of the records of ``frame`` (the data the trees were fitted on), from the release's seed; none for a
    single record, which no fit can leave out (its records-copied criterion is then not judged, and the policy's
    minimum of released records refuses it)."""
    data = measures.measure_input(bootstrap=max(bootstrap, 1))
    data.released, data.bootstrap = [*synthesizer.keep, *synthesizer.synthesize], bootstrap
    identification_input(data, list(synthesizer.keep), list(synthesizer.synthesize))
    if len(frame) < 2:
        return data
    # computed once per fit: it does not depend on the donors (no record of a fold is a donor of it)
    key = ("unlearned", m, seed)
    if key not in synthesizer.cache:
        synthesizer.cache[key] = cross_fitted_datasets(synthesizer, frame, m, seed, fan_out=fan_out)
    data.unlearned = synthesizer.cache[key]
    return data


def identification_input(data: MeasureInput, keep: list[str], synthesize: list[str], repetitions: int = 100) -> None:
    """Set ``data`` up for Hu & Savitsky's identification figures of a partially synthetic release (Section 4.1):
    the intruder knows every kept and synthesized column (the survey weight aside, as in the knowledge sets of
    ``release.risk(known=...)``), numeric ones to their decile band (:mod:`bayessdc.risk.banding`), and the
    inherent maximum redraws the synthesized values within each pattern of kept values. A fully synthetic
    release (no column kept) has no record in row ``i``: nothing is set."""
    from bayessdc.risk.banding import band_edges, numeric_columns

    kept = [c for c in keep if c != data.weights]
    if not kept:
        return
    original = data.original
    data.known_sets = [[*kept, *synthesize]]
    data.synthesized, data.kept, data.partially_synthetic = list(synthesize), kept, True
    data.bands = {c: band_edges(original[c]) for c in numeric_columns(original, [*kept, *synthesize])}
    data.repetitions = repetitions
