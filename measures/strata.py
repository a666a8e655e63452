"""Records copied from the original, stratum by stratum: where a release synthesized area by area copies.

A release synthesized area by area (``strata=``) fits each stratum's records by models of their own, so a small
area's models learn from few records and may copy them where the whole file's share does not show it. For each
stratum and dataset, the share of the stratum's released rows equal to some original record on every released
column (:func:`bayessdc.risk.copies.rows_in_original`; the stratum is a released column, so a row can only equal
a record of its own stratum). Its references are those of :mod:`bayessdc.measures.copies`, per stratum: the same
share for the cross-fitted datasets of the stratum's records (drawn by fits that never saw them), its mean
(``unlearned``) and the upper end of the range one of those datasets shows (``unlearned_range``).

With S strata judged at once, a release that never saw its records would cross one stratum's 95% range by chance
alone in about 1 - 0.975^S of releases (39% at S = 20). ``unlearned_range`` here is therefore the mean plus
``z`` standard deviations with ``z`` the normal quantile of 1 - 0.025 / S (Bonferroni): the chance that a release
that could not have learned its records crosses any stratum's range stays below 2.5%.

The standard deviation of one dataset's share is estimated from the m cross-fitted datasets, which for a stratum of
a few dozen rows and m of 2 to 5 can be 0 (no dataset copied a row) where the share of any release varies by a row
or two. It is therefore never taken below the binomial standard deviation of a share of the stratum's ``n`` rows,
``sqrt(p (1 - p) / n)`` at the cross-fitted mean ``p`` smoothed as ``(x + 1/2) / (n + 1)`` (Jeffreys), ``x`` its
mean number of rows copied: a stratum's range admits the row or two that chance copies, and no more.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Measure, MeasureInput, MeasureResult, mean_reference, register

__all__ = ["StratumCopiedRecords", "bonferroni_z", "stratum_range"]


def bonferroni_z(strata: int) -> float:
    """The normal quantile of ``1 - 0.025 / strata``: 1.96 for one stratum, 3.02 for 20, 3.66 for 194."""
    from scipy.stats import norm

    return float(norm.ppf(1 - 0.025 / max(int(strata), 1)))


def stratum_range(subset: str, shares: np.ndarray, rows: float, z: float) -> dict[str, object]:
    """``unlearned_range`` of one stratum: the mean of the cross-fitted datasets' ``shares`` plus ``z`` standard
    deviations of one dataset's share, the larger of their own and the binomial one of ``rows`` rows at the
    Jeffreys-smoothed mean.

    Examples
    --------
    >>> round(stratum_range("stratum a", np.array([0.0, 0.0]), 14, 1.96)["value"], 4)  # no copy in 2 datasets
    0.094
    """
    v = np.asarray(shares, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size or rows <= 0:
        return {"subset": subset, "reference": "unlearned_range", "value": float("nan")}
    mean = float(v.mean())
    own = float(v.std(ddof=1)) if v.size > 1 else 0.0
    p = (mean * rows + 0.5) / (rows + 1)
    sd = max(own, float(np.sqrt(p * (1 - p) / rows)))
    return {"subset": subset, "reference": "unlearned_range", "value": mean + z * sd, "lower": mean - z * sd,
            "upper": mean + z * sd, "repetitions": v.size}  # fmt: skip


def _shares(original: pd.DataFrame, frame: pd.DataFrame, columns: list[str], strata: str) -> pd.DataFrame:
    """Per (stratum, dataset): the share of the stratum's rows equal to some original record, and its rows."""
    from bayessdc.risk.copies import rows_in_original

    copied = rows_in_original(original, frame, columns)
    keyed = pd.DataFrame({"stratum": frame[strata].astype(str).to_numpy(), "synthetic": frame["synthetic"].to_numpy(),
                          "copied": copied})  # fmt: skip
    return keyed.groupby(["stratum", "synthetic"], sort=True)["copied"].agg(["mean", "size"])


@register
class StratumCopiedRecords(Measure):
    """Per stratum of a release synthesized area by area: the share of its rows equal to some original record."""

    reads = ("original", "released", "weights", "unlearned", "strata")

    name = "stratum_copied_records"
    kind = "risk"
    better = "lower"
    title = "records copied from the original, per stratum"
    unit = "share of the stratum's released rows"
    description = "share of each stratum's released rows equal to some original record on every released column"
    subsets = "stratum"
    subset_names = None
    references = {
        "unlearned": "the same share for the stratum's records in datasets drawn by fits that never saw them "
        "(cross-fitted)",
        "unlearned_range": "the upper end of the range one such dataset shows, widened for the number of strata "
        "judged at once (mean + z sd, z the normal quantile of 1 - 0.025/S)",
    }

    def applies(self, data: MeasureInput) -> bool:
        return data.strata is not None and data.original is not None and bool(data.record_columns)

    def compute(self, data: MeasureInput) -> MeasureResult:
        columns = data.record_columns
        shares = _shares(data.original, data.synthetic, columns, data.strata)
        values = [{"subset": f"stratum {s}", "dataset": int(d), "value": float(v)}
                  for (s, d), v in shares["mean"].items()]  # fmt: skip
        references = []
        records = data.original[data.strata].astype(str).value_counts().rename("records")
        details = pd.DataFrame({"records": records}).rename_axis("stratum").sort_index()
        details["copied"] = shares["mean"].groupby(level="stratum").mean()
        if data.unlearned is not None:
            unlearned = _shares(data.original, data.unlearned, columns, data.strata)
            strata = unlearned.index.get_level_values("stratum").unique()
            z = bonferroni_z(len(strata))
            for stratum in strata:
                own = unlearned.loc[stratum]
                references.append(mean_reference(f"stratum {stratum}", "unlearned", own["mean"]))
                references.append(stratum_range(f"stratum {stratum}", own["mean"].to_numpy(float),
                                                float(own["size"].mean()), z))  # fmt: skip
            details["unlearned"] = unlearned["mean"].groupby(level="stratum").mean()
            details["unlearned_range"] = pd.Series({r["subset"].removeprefix("stratum "): r["value"]
                                                    for r in references if r["reference"] == "unlearned_range"})
            details["z"] = z
        result = self.result(values, references)
        result.details = details
        return result
