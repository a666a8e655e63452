"""The pMSE's logistic fit (Newton on indicator columns) against scikit-learn's converged fit and its own
optimality conditions."""

import numpy as np
import pandas as pd
import pytest

from bayessdc.synthesis import propensity
from bayessdc.synthesis.categorical import weighted_pmse
from bayessdc.synthesis.propensity import logistic_propensities


def _cells(seed: int, n: int = 3000, counties: int = 30) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Distinct (cell, indicator) rows of an original and a distorted synthetic dataset: the synthetic county
    depends less on gender, and several (county, age) cells hold records of one side only (separation)."""
    rng = np.random.default_rng(seed)
    gender = rng.integers(0, 2, 2 * n)
    age = rng.integers(0, 4, 2 * n)
    label = np.repeat([0, 1], n)
    shift = np.where(label == 1, rng.integers(0, 3, 2 * n), 5 * gender)
    county = (rng.integers(0, counties, 2 * n) * (rng.random(2 * n) < 0.7) + shift) % counties
    county = np.where((label == 1) & (age == 3), county - county % 2, county)  # no synthetic (odd county, age 3)
    frame = pd.DataFrame({"gender": gender, "age": age, "county": county, "_label": label})
    cells = frame.groupby(list(frame.columns)).size().rename("_weight").reset_index()
    return cells[["gender", "age", "county"]], cells["_label"].to_numpy(), cells["_weight"].to_numpy(float)


def _sklearn_propensities(cells: pd.DataFrame, label: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """scikit-learn's fit of the usual parametrization (intercept, drop-first dummies of the main effects and of
    the county interactions), C = 1e6 as the ridge of 1e-6, run to a tight tolerance."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import OneHotEncoder

    parts = {c: cells[c].astype(str) for c in cells.columns}
    for other in ("gender", "age"):
        parts[f"county:{other}"] = cells["county"].astype(str) + "|" + cells[other].astype(str)
    design = OneHotEncoder(drop="first").fit_transform(pd.DataFrame(parts))
    model = LogisticRegression(C=1e6, solver="newton-cholesky", tol=1e-10, max_iter=500)
    model.fit(design, label, sample_weight=weight)
    return model.predict_proba(design)[:, 1]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_fit_is_scikit_learns_converged_fit(seed):
    cells, label, weight = _cells(seed)
    reference = _sklearn_propensities(cells, label, weight)
    fit = weighted_pmse(cells, label, weight, ["county"])
    c = np.sum(weight * label) / weight.sum()
    expected = np.sum(weight * (reference - c) ** 2) / weight.sum()
    assert fit["pmse"] == pytest.approx(expected, rel=1e-6)
    # its parameters: intercept, 1 + 3 + 29 main-effect dummies and the observed combinations of each interaction
    combos = cells.groupby(["county", "gender"]).ngroups - 1 + cells.groupby(["county", "age"]).ngroups - 1
    assert fit["parameters"] == 1 + 1 + 3 + (cells["county"].nunique() - 1) + combos


def test_the_fitted_margins_are_the_observed_margins():
    """The score equations of the maximum: for every level of every term, the expected synthetic records under
    the fit equal the synthetic records there (up to the ridge's pull on separated cells)."""
    cells, label, weight = _cells(2)
    terms = [pd.factorize(cells["county"] * 10 + cells[c])[0] for c in ("gender", "age")]
    p = logistic_propensities(terms, label, weight)
    for term in terms:
        fitted = np.bincount(term, weights=weight * p)
        observed = np.bincount(term, weights=weight * label)
        np.testing.assert_allclose(fitted, observed, atol=1e-3)
    # (odd county, age 3) has no synthetic record: separated, its propensity 0 at the maximum (here the ridge's)
    separated = (cells["county"].to_numpy() % 2 == 1) & (cells["age"].to_numpy() == 3)
    assert separated.sum() > 10 and p[separated].max() < 1e-5 and p[~separated].min() > 1e-3


def test_a_saturated_term_gives_each_cells_share():
    """One term: every row's propensity is its level's share of label 1, worked by hand."""
    term = np.array([0, 0, 1, 1, 2, 2])
    label = np.array([0, 1, 0, 1, 0, 1])
    weight = np.array([3.0, 1.0, 2.0, 2.0, 1.0, 4.0])
    p = logistic_propensities([term], label, weight)
    np.testing.assert_allclose(p, [0.25, 0.25, 0.5, 0.5, 0.8, 0.8], atol=1e-6)


def test_the_sparse_solve_gives_the_dense_blocks_fit(monkeypatch):
    """Two synthesized columns join every column into one component; with the dense limit lowered, the one-
    synthesized-column fit goes through the sparse solver: both paths give the same propensities."""
    cells, label, weight = _cells(3)
    dense = weighted_pmse(cells, label, weight, ["county"])
    both = weighted_pmse(cells, label, weight, ["county", "age"])
    monkeypatch.setattr(propensity, "DENSE_BLOCK", 0)
    sparse = weighted_pmse(cells, label, weight, ["county"])
    assert sparse["pmse"] == pytest.approx(dense["pmse"], rel=1e-9)
    # county x age enters once: the two-column model has county x gender, county x age and age x gender
    assert both["pmse"] > dense["pmse"]


def test_an_unconverged_fit_is_refused():
    cells, label, weight = _cells(0)
    terms = [pd.factorize(cells["county"] * 10 + cells["gender"])[0]]
    with pytest.raises(RuntimeError, match="did not converge in 1 Newton steps"):
        logistic_propensities(terms, label, weight, max_iter=1)
