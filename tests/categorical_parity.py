"""Where each figure of the categorical synthesizers' old risk.json, risk_details.json and utility.json is now
(the measurement redesign, issue 50; :mod:`tests.parity`): the same map for the DPMPM and the DP-areal model."""

from __future__ import annotations

import numpy as np

from bayessdc.risk.identification import place_among

#: The old ordered logit's columns by the measure ci_overlap's details' names.
_COEFFICIENT = {"q_bar": "estimate", "lower": "ci_lower", "upper": "ci_upper", "interval_overlap": "ci_overlap"}


def _known(files, path):
    """The subset of the old entry ``path[1]`` of ``identification``: the risk measures' subsets, in order."""
    return [r["subset"] for r in files["measures.json"]["expected_match_risk"]["summary"]][int(path[1])]


def _identification(files, path):
    subset = _known(files, path)
    if path[2] == "known":
        return subset.split("+")
    if path[2] == "inherent":
        return files.summary(path[4], subset)[f"inherent_{path[3]}"]
    if path[2] == "per_dataset":
        return files.values(path[3], subset)
    if path[2] == "placement":  # among the S repetitions of the inherent scenario (risk_inherent.parquet)
        inherent = files.table("risk_inherent.parquet")
        reference = inherent.loc[(inherent["scenario"] == path[3]) & (inherent["known"] == subset),
                                 "expected_match_risk"]  # fmt: skip
        return place_among(files.values("expected_match_risk", subset), reference)[path[4]]
    return files.summary(path[2], subset)["pooled"]


def _records(files):
    return files["release.json"]["facts"]["records"]


def _attribute(files, path):
    row = files.summary("attribute_disclosures", "all")
    if path[1] == "disclosures":
        return row["pooled"]
    if path[1] == "share":
        return row["pooled"] / _records(files)
    if path[1] == "inherent":
        value = row[f"inherent_{path[2]}"]
        return value if path[3] == "disclosures" else value / _records(files)
    if path[1] == "per_dataset":
        return files.values("attribute_disclosures", "all")
    if path[1] == "placement":
        inherent = files.table("risk_inherent.parquet")
        reference = inherent[inherent["scenario"] == path[2]].drop_duplicates("repetition")["disclosures"]
        return place_among(files.values("attribute_disclosures", "all"), reference)[path[3]]
    if path[1] == "single_record_patterns":  # the records of pattern size 1 in risk_records.parquet
        records = files.table("risk_records.parquet")
        single = records[records["pattern_size"] == 1]
        if path[2] == "records":
            return files["release.json"]["facts"]["single_record_patterns"]
        column = "exact_disclosure_share" if path[2] == "exact_disclosure_share" else f"match_risk[{path[3]}]"
        return float(single[column].mean()) if len(single) else None
    bayesian = path[2]
    if bayesian in ("records_assessed", "khat_over_0_7", "intruder"):
        return files["diagnostics.json"]["importance_sampling"][bayesian]
    figure = {"mean_true_probability": ("true_value_probability", "pooled"),
              "max_true_probability": ("true_value_probability", "worst"),
              "share_correct": ("intruder_correct", "pooled")}[bayesian]  # fmt: skip
    return files.summary(figure[0], "all items")[figure[1]]


def _deviations(files, path):
    order = path[1]
    if path[2] == "mean":
        return files.summary("table_deviation", order)["pooled"]
    if path[2] == "per_dataset":
        return files.values("table_deviation", order)
    details = files.details("table_deviation")
    return float(details.loc[(details["subset"] == order) & (details["table"] == path[3]), "deviation"].item())


def _pmse(files, path):
    details = files.details("pmse_ratio").sort_values("dataset")
    if path[1] == "per_dataset":
        return details[path[2]].tolist()
    if path[1] == "ratio":
        return files.summary("pmse_ratio", "all")["pooled"]
    return float(details[path[1]].mean())  # pmse, null_expectation: the means over the datasets


def _within(files, path):
    patterns = files.details("within_pattern_tv")
    if path[1] == "patterns":
        return len(patterns)
    if path[1] == "mean_total_variation":
        return float(patterns["total_variation"].mean())
    return float(np.average(patterns["total_variation"], weights=patterns["records"]))


def _ordered_logit(files, path):
    details = files.details("ci_overlap")
    details = details[details["fit"] == "release"]
    names = details["index"].str.split(": ", n=1).str[1]
    field = path[2]
    if field == "response":
        return details["response"].iloc[0]
    if field == "combining_rules":
        return details["combining_rules"].iloc[0]
    if field == "predictors":
        return list(files["run.json"]["ordered_logit"][int(path[1])]["predictors"])
    if field == "not_identified":
        return names[~details["identified"].astype(bool)].tolist()
    if field == "averaged":
        return names[details["judged"].astype(bool)].tolist()
    if field == "mean_interval_overlap":
        return float(details.loc[details["judged"].astype(bool), "ci_overlap"].mean())
    row = details[names == path[3]].iloc[0]
    value = row[_COEFFICIENT.get(path[4], path[4])]
    return None if value is None or (isinstance(value, float) and not np.isfinite(value)) else value


MOVED = {
    "risk.json:identification.*": _identification,
    "risk_details.json:identification.*": _identification,
    "risk.json:attribute.*": _attribute,
    "risk_details.json:attribute.bayesian.intruder": "words: the Bayesian attribute risk's intruder, in diagnostics",
    "risk_details.json:attribute.*": _attribute,
    "risk_details.json:repetitions": lambda f, p: f["run.json"]["repetitions"],
    "risk_details.json:m": lambda f, p: f["release.json"]["m"],
    "utility.json:table_deviations.*": _deviations,
    "utility.json:pmse.model": "words: the propensity model, in the description of the measure pmse_ratio",
    "utility.json:pmse.*": _pmse,
    "utility.json:within_pattern.*": _within,
    "utility.json:ordered_logit.*.model": "words: the model, in the measure ci_overlap's description and details",
    "utility.json:ordered_logit.*": _ordered_logit,
}

#: The differences of the other files, each with its reason.
NAMED = {
    "measures.json": {
        "table_deviation.details.*": "new: each table's deviation (utility.json's tables)",
        "pmse_ratio.details.*": "new: each dataset's pMSE, null expectation and parameters (utility.json's pmse)",
        "pmse_ratio.description": "names the propensity model (utility.json's pmse.model)",
        "within_pattern_tv.details.*": "new: per pattern its records and total variation (utility.json's)",
        "ci_overlap.*": "the ordered logit's coefficient table in its details; after the removal of replicated uniques "
        "it judges only the identified slopes, as utility.json averaged them (it judged the cut points and the "
        "coefficients without a finite estimate too)",
    },
    "diagnostics.json": {"importance_sampling.*": "new: the Bayesian attribute risk's reliability (risk_details.json)"},
    "policy.json": {
        "lever_costs.*.figures.ci_overlap*": "the coefficients ci_overlap judges (see measures.json)",
        "lever_costs.*.note": "ci_overlap is computed on both sides now (its coefficients judged before and after)",
    },
    "risk_utility.json": {"panels.*.points.*.utility": "the mean ci_overlap of the judged coefficients: utility.json's "
                          "mean_interval_overlap"},
}
