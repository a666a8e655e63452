"""The utility of a categorical release (Hu & Savitsky, Section 3) and its measures with other options.

Table deviations, pMSE, within-pattern distributions and the analyst's ordered logistic regressions combined
over the m datasets; :class:`CategoricalMeasures` recomputes the risk for other knowledge sets from the records
held in memory (never written to ``release/``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.measures import MeasureInput, RegressionInput
from bayessdc.risk.categorical import categorical_risk
from bayessdc.risk.release_figures import MeasuredDatasets
from bayessdc.synthesis.combining import Kind, kind_of_release

from ...release import Measures
from .input import KnownSets, OrderedLogits, check_known_sets

__all__ = ["CategoricalMeasures", "categorical_utility", "ordered_logit_input", "ordered_logit_summary"]


def _finite(value: Any) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def ordered_logit_summary(
    original: pd.DataFrame, synthetic: pd.DataFrame, response: str, predictors: list[str], kind: Kind = "partial"
) -> dict[str, Any]:
    """One ordered logit, original vs combined over the synthetic datasets, as JSON-ready figures.

    Parameters
    ----------
    original, synthetic
        The confidential records and the m synthetic datasets stacked (a column ``synthetic``).
    response, predictors
        The analyst's cumulative logit.
    kind
        The combining rules: ``"partial"`` (Reiter 2003, total variance ``T_p``) or ``"full"`` (Raghunathan,
        Reiter & Rubin 2003, ``T_f`` and whether Reiter's 2002 adjustment replaced it).

    Returns
    -------
    dict
        The coefficients of :func:`bayessdc.synthesis.categorical.ordered_logit_combined`, ``combining_rules``
        (the kind), and the mean interval overlap of the identified slopes (a level seen with one response
        value only has no finite estimate: it is listed in ``not_identified``, not averaged).

    References
    ----------
    .. [1] Reiter, J. P. (2003). Inference for partially synthetic, public use microdata sets. *Survey
        Methodology*, 29, 181-188.
    .. [2] Raghunathan, T. E., Reiter, J. P., & Rubin, D. B. (2003). Multiple imputation for statistical
        disclosure limitation. *Journal of Official Statistics*, 19, 1-16.
    """
    from bayessdc.synthesis.categorical import ordered_logit_combined

    table = ordered_logit_combined(original, synthetic, response, predictors, kind=kind)
    total = "T_p" if kind == "partial" else "T_f"
    columns = ["original", "original_lower", "original_upper", "q_bar", total, "df", "lower", "upper"]
    coefficients = {
        str(name): {
            **{c: _finite(row[c]) for c in columns},
            "interval_overlap": _finite(row["interval_overlap"]),
            **({"adjusted": bool(row["adjusted"])} if "adjusted" in table else {}),
        }
        for name, row in table.iterrows()
    }
    overlap = table["interval_overlap"].to_numpy(dtype=float)
    thresholds = original[response].nunique() - 1  # the last rows of the table
    slopes = np.arange(len(table)) < len(table) - thresholds
    # A level seen with one response value only (separation) has no finite estimate: its fitted coefficient
    # drifts with a standard error in the hundreds or more. Such coefficients are listed, not averaged.
    width = (table["original_upper"] - table["original_lower"]).to_numpy(dtype=float)
    identified = np.isfinite(width) & (width < 2 * 1.96 * 10)
    chosen = slopes & identified & np.isfinite(overlap)
    rules = (
        "Reiter's (2003) partially synthetic rules"
        if kind == "partial"
        else "Raghunathan, Reiter & Rubin's (2003) fully synthetic rules (Reiter's 2002 adjustment where T_f <= 0)"
    )
    return {
        "response": response,
        "predictors": predictors,
        "combining_rules": kind,
        "model": "cumulative logit, one-hot predictors (first level the reference); thresholds as statsmodels' "
        f"OrderedModel (first cut point, then log increments); combined with {rules}",
        "mean_interval_overlap": _finite(overlap[chosen].mean()) if chosen.any() else None,
        "not_identified": [str(name) for name in table.index[~identified]],
        "averaged": [str(name) for name in table.index[chosen]],
        "coefficients": coefficients,
    }


def categorical_utility(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    synthesize: list[str],
    keep: list[str],
    *,
    ordered_logits: OrderedLogits = (),
    say: Callable[[str], None] = lambda msg: None,
    measured: MeasuredDatasets | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Utility of m synthetic categorical datasets (Hu & Savitsky, Section 3).

    The ordered logits are combined by the rules of the release's kind: partially synthetic when ``keep`` names
    a column, fully synthetic when it is empty (:func:`bayessdc.synthesis.combining.kind_of_release`).
    ``measured``: the datasets already measured on integer keys with the one-, two- and three-way tables and the
    pMSE (:meth:`bayessdc.risk.release_figures.CategoricalReleaseFigures.measure_datasets`, as the pipeline
    does), whose table deviations and pMSE are used instead of the data-frame functions' (the same figures; at
    1,000,000 records and m = 20, about 1 s against 10 s).

    Returns
    -------
    utility, within_pattern
        ``private/utility.json`` (``table_deviations``, ``pmse``, ``within_pattern`` and, when asked,
        ``ordered_logit``) and the within-pattern distributions per cell (``private/within_pattern.parquet``).
    """
    from bayessdc.synthesis.categorical import pmse, table_deviations, within_pattern_distributions

    if measured is not None and measured.source.with_pmse and set(measured.source.tables) >= {1, 2, 3}:
        figures = measured.source  # the same figures from integer keys (tests/risk/test_release_figures.py)
        deviations, fit = figures.table_deviations(measured.figures), figures.pmse_summary(measured.figures)
    else:
        deviations = table_deviations(original, synthetic, synthesize, keep)
        fit = pmse(original, synthetic, keep + synthesize, synthesize)
    cells, patterns = within_pattern_distributions(original, synthetic, synthesize, keep)
    utility: dict[str, Any] = {
        "table_deviations": deviations,
        "pmse": fit,
        "within_pattern": {
            "mean_total_variation": float(patterns["total_variation"].mean()),
            "weighted_total_variation": float(np.average(patterns["total_variation"], weights=patterns["records"])),
            "patterns": len(patterns),
        },
    }
    if ordered_logits:
        m = synthetic["synthetic"].nunique()
        say(f"{len(ordered_logits)} ordered logistic regression(s), original and {m} synthetic datasets ...")
        utility["ordered_logit"] = [
            ordered_logit_summary(original, synthetic, response, list(predictors), kind=kind_of_release(keep))
            for response, predictors in ordered_logits
        ]
    return utility, cells.astype({c: str for c in keep + synthesize})


@dataclass
class CategoricalMeasures(Measures):
    """Risk of a categorical release recomputed for other knowledge sets, from the records held in memory.

    ``release.risk(known=[["gender", "county"]])`` gives the identification and attribute figures of
    ``private/risk.json`` for those knowledge sets, with the run's inherent scenarios (same repetitions and
    seed: a knowledge set of the run gives exactly its stored figures). The confidential records stay here,
    never in ``release/``.
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

    def replace_synthetic(self, synthetic: pd.DataFrame) -> dict[str, Any]:
        """The utility of ``synthetic`` (the datasets without their replicated uniques) from now on: table
        deviations, pMSE, within-pattern distributions and the ordered logits of :func:`categorical_utility`, by
        its data-frame functions. The identification and attribute risk (:meth:`risk`) stay those of the datasets
        as drawn, row ``i`` record ``i``, like for like with the inherent bounds."""
        self.published = synthetic
        return categorical_utility(self.original, synthetic, self.synthesize, self.keep,
                                   ordered_logits=self.ordered_logits)[0]  # fmt: skip

    def risk(self, known: KnownSets = None) -> dict[str, Any]:
        """``identification`` per knowledge set and ``attribute``, as :meth:`bayessdc.Release.risk` stores them."""
        known_sets = check_known_sets(known, self.synthesize, self.keep)
        return categorical_risk(
            self.original,
            self.synthetic,
            self.synthesize,
            self.keep,
            known_sets,
            repetitions=self.repetitions,
            seed=self.seed,
        ).figures


def ordered_logit_input(original: pd.DataFrame, synthetic: pd.DataFrame, fit: dict[str, Any]) -> RegressionInput:
    """An ordered logit of the utility figures as the generic interval-overlap measure reads it: the slopes
    averaged in its ``mean_interval_overlap`` (identified, thresholds left out), fitted once, with the combining
    rules it was fitted with."""
    table = pd.DataFrame.from_dict(fit["coefficients"], orient="index").loc[fit["averaged"]]
    table = table.rename(columns={"q_bar": "estimate", "lower": "ci_lower", "upper": "ci_upper",
                                  "interval_overlap": "ci_overlap"}).astype(float)  # fmt: skip
    if "adjusted" in table:
        table["adjusted"] = table["adjusted"].astype(bool)
    return RegressionInput(original, synthetic, fit["response"], list(fit["predictors"]), model="ordered_logit",
                           coefficients=table, kind=fit.get("combining_rules", "partial"))  # fmt: skip
