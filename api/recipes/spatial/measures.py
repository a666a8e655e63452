"""The measures of a spatial release (Quick, Holan & Wikle): the proximity of the at-risk records' synthetic
values to their true ones, for both stages, and the analyst's regression combined by Reiter's (2003) rules,
recomputed with other options from the records held in memory (:class:`SpatialMeasures`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.measures import MeasureInput, ProximityInput, RegressionInput
from bayessdc.models.spatial import Restriction, SpatialData
from bayessdc.risk.proximity import proximity_shares
from bayessdc.synthesis.datasets import stack_datasets

from ...errors import InputError
from ...pipeline.recipe import column_list
from ...release import Measures

__all__ = ["STAGES", "SpatialMeasures", "drawn_table"]

#: The two stages, in the order they are fitted and their synthetic data drawn.
STAGES: tuple[str, str] = ("unrestricted", "restricted")


def column_names(columns: Sequence[str] | str | None) -> list[str]:
    """Column names given as a list, or as one comma-separated string."""
    return column_list(columns) or []


def drawn_table(drawn: dict[str, Any]) -> pd.DataFrame:
    """What each stage drew (``private/drawn.parquet``): one row per stage, synthetic dataset and record.

    Columns ``stage``, ``synthetic`` (1..m), ``posterior_draw`` (the stacked posterior draw the dataset came
    from), ``row`` (0-based position in the input table) and ``value``, the synthetic response on the
    modelling scale (its log under ``log_response``). The released response is the restricted stage's
    ``value`` on the released scale.
    """
    frames = []
    for stage, values in drawn.items():
        table = values.transpose("synthetic", "item")
        m, n = table.shape
        frames.append(
            pd.DataFrame(
                {
                    "stage": stage,
                    "synthetic": np.repeat(table["synthetic"].to_numpy(), n),
                    "posterior_draw": np.repeat(table["posterior_draw"].to_numpy(), n),
                    "row": np.tile(np.arange(n), m),
                    "value": table.to_numpy().ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


class SpatialMeasures(Measures):
    """Proximity risk and regression utility of a spatial release, recomputed with other options.

    Holds the confidential response (in memory only) and the synthetic values of both stages.

    Parameters
    ----------
    data
        The model input the stages were fitted to.
    restriction
        The restriction of stage 2 (at-risk records, risk weights, threshold).
    values
        Synthetic responses on the modelling scale per stage, shape ``(m, n)``.
    original
        The input table (rows in order).
    response
        The response column.
    band, absolute_band
        The run's relative band and absolute band (``None``: a tenth of the response's sd).
    predictors
        The run's regression predictors.
    """

    risk_options = ("band", "absolute_band")
    utility_options = ("predictors",)

    def __init__(
        self,
        *,
        data: SpatialData,
        restriction: Restriction,
        values: dict[str, np.ndarray],
        original: pd.DataFrame,
        response: str,
        band: float,
        absolute_band: float | None,
        predictors: list[str],
    ) -> None:
        self.data, self.restriction, self.values = data, restriction, values
        self.original, self.response, self.band, self.predictors = original, response, band, predictors
        self.truth = data.released(data.y)
        self.absolute_band = absolute_band if absolute_band is not None else 0.1 * float(np.std(self.truth, ddof=1))
        self.datasets: dict[str, pd.DataFrame] = {}
        self.analysed: dict[str, pd.DataFrame] = {}
        for name, stage_values in values.items():
            released, modelled = [], []
            for k in range(len(stage_values)):
                frame = original.copy()
                frame[response] = data.released(stage_values[k])
                released.append(frame)
                modelled.append(frame.assign(**{response: stage_values[k]}))
            self.datasets[name] = stack_datasets(released)
            self.analysed[name] = stack_datasets(modelled)

    def records(self) -> pd.DataFrame:
        """Per record (``private/risk_records.parquet``): its row, whether it is at risk, its risk weight, and the
        share of each stage's m synthetic values within the run's relative band and within its absolute band."""
        restriction = self.restriction
        records = pd.DataFrame({"row": np.arange(self.data.n), "at_risk": restriction.at_risk,
                                "risk_weight": restriction.weights})  # fmt: skip
        for name in STAGES:
            shares = proximity_shares(self.truth, self.data.released(self.values[name]), relative=self.band,
                                      absolute=self.absolute_band)  # fmt: skip
            records[f"{name}_within_band"] = shares["within_band"].to_numpy()
            records[f"{name}_within_absolute"] = shares["within_absolute"].to_numpy()
        return records

    def measure_input(
        self, band: float | None = None, absolute_band: float | None = None,
        predictors: Sequence[str] | str | None = None,
    ) -> MeasureInput:
        """What the measures read: the proximity of the at-risk records within ``band`` (and ``absolute_band``)
        and the analyst's regression on ``predictors`` (default: the run's)."""
        band = self.band if band is None else band
        if not 0 < band:
            raise InputError(f"band must be positive, got {band!r}")
        predictors = self._predictors(predictors)
        return MeasureInput(
            self.datasets["restricted"],
            proximity=ProximityInput(
                truth=self.truth, released=self.data.released(self.values["restricted"]),
                at_risk=self.restriction.at_risk, band=band,
                reference=self.data.released(self.values["unrestricted"]),
                absolute=self.absolute_band if absolute_band is None else absolute_band,
            ),
            regression=RegressionInput(
                self.original.assign(**{self.response: self.data.y}), self.analysed["restricted"], self.response,
                predictors, reference=self.analysed["unrestricted"],
            ),
        )  # fmt: skip

    def _predictors(self, predictors: Sequence[str] | str | None) -> list[str]:
        predictors = column_names(predictors) or self.predictors
        missing = [c for c in predictors if c not in self.original.columns]
        if missing:
            raise InputError(f"analysis predictor(s) {missing} are not columns of the table")
        return list(predictors)
