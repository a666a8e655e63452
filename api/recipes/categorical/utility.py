"""What the measures of a categorical release read with other options, and the analyst's ordered logits.

:class:`CategoricalMeasures` builds the measure input for other knowledge sets from the records held in memory
(never written to ``release/``); :func:`ordered_logit_inputs` the analyst's cumulative logits, which the
interval-overlap measure fits and combines (:mod:`bayessdc.measures.regression`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from bayessdc.measures import MeasureInput, RegressionInput
from bayessdc.synthesis.combining import kind_of_release

from ...release import Measures
from .input import KnownSets, OrderedLogits, check_known_sets

__all__ = ["CategoricalMeasures", "ordered_logit_inputs"]


def ordered_logit_inputs(
    original: pd.DataFrame, synthetic: pd.DataFrame, ordered_logits: OrderedLogits, keep: list[str]
) -> list[RegressionInput]:
    """The analyst's ordered logits as the interval-overlap measure reads them: each a cumulative logit of its
    response on one-hot predictors, combined over the m datasets by the rules of the release's kind (partially
    synthetic when ``keep`` names a column, Reiter 2003; fully synthetic otherwise, Raghunathan, Reiter & Rubin
    2003; :func:`bayessdc.synthesis.combining.kind_of_release`)."""
    kind = kind_of_release(keep)
    return [RegressionInput(original, synthetic, response, list(predictors), model="ordered_logit", kind=kind)
            for response, predictors in ordered_logits]  # fmt: skip


@dataclass
class CategoricalMeasures(Measures):
    """Risk of a categorical release recomputed for other knowledge sets, from the records held in memory.

    ``release.risk(known=[["gender", "county"]])`` gives the identification and attribute measures for those
    knowledge sets, with the run's inherent scenarios (same repetitions and seed: a knowledge set of the run gives
    exactly its stored figures). The confidential records stay here, never in ``release/``.
    """

    original: pd.DataFrame = field(repr=False)
    synthetic: pd.DataFrame = field(repr=False)
    synthesize: list[str]
    keep: list[str]
    repetitions: int
    seed: int
    #: The analyst's ordered logistic regressions, refitted on the rows released (:meth:`replace_synthetic`).
    ordered_logits: list[tuple[str, list[str]]] = field(default_factory=list)
    #: The datasets released, once rows were removed from them (:meth:`replace_synthetic`); ``None``: as drawn.
    published: pd.DataFrame | None = field(default=None, repr=False)

    risk_options = ("known",)

    def measure_input(self, known: KnownSets = None) -> MeasureInput:
        """What the measures read, with the knowledge sets ``known`` (the run's inherent scenarios: same
        repetitions and seed): the identification and attribute figures of the datasets as drawn (row ``i``
        record ``i``), the utility of the rows released."""
        released = self.synthetic if self.published is None else self.published
        return MeasureInput(
            released, self.original, released=self.keep + self.synthesize, synthesized=self.synthesize,
            kept=self.keep, known_sets=check_known_sets(known, self.synthesize, self.keep), partially_synthetic=True,
            repetitions=self.repetitions, seed=self.seed,
            drawn=None if self.published is None else self.synthetic,
        )  # fmt: skip

    def replace_synthetic(self, synthetic: pd.DataFrame) -> None:
        """Measure the utility of ``synthetic`` (the datasets without their replicated uniques) from now on. The
        identification and attribute risk stay those of the datasets as drawn, row ``i`` record ``i``, like for
        like with the inherent bounds."""
        self.published = synthetic
