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


def _sparse_design(seed: int, n: int = 60, levels: tuple[int, ...] = (3, 5, 7)) -> tuple[np.ndarray, int]:
    """A small design of indicator columns: one column per level of every term, one 1 per term in every row
    (the rows repeat cells, so most products of two columns are summed over several rows)."""
    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, level, n) for level in levels]
    offsets = np.concatenate([[0], np.cumsum(levels)[:-1]])
    return np.stack([c + o for c, o in zip(codes, offsets, strict=True)], axis=1), int(sum(levels))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_sparse_hessian_is_x_transposed_w_x(seed):
    """The Hessian from its pattern built once equals X' diag(h) X + penalty I of the dense design, at several
    weights of one pattern, and is the COO matrix converted to CSC (the assembly before) bit for bit."""
    from scipy.sparse import coo_matrix, identity

    columns, k = _sparse_design(seed)
    n, terms = columns.shape
    rows = np.arange(n)
    first, second = columns[:, np.repeat(np.arange(terms), terms)], columns[:, np.tile(np.arange(terms), terms)]
    hessian = propensity._SparseHessian(rows, first.ravel(), second.ravel(), terms * terms, k, n)
    design = np.zeros((n, k))
    design[np.repeat(rows, terms), columns.ravel()] = 1.0
    rng = np.random.default_rng(seed + 10)
    for penalty in (1e-6, 0.5):
        weights = rng.gamma(1.0, 2.0, n)
        built = hessian(weights, penalty)
        expected = design.T @ (weights[:, None] * design) + penalty * np.eye(k)
        np.testing.assert_allclose(built.toarray(), expected, rtol=1e-12, atol=0)
        before = coo_matrix((np.repeat(weights, terms * terms), (first.ravel(), second.ravel())), shape=(k, k))
        before = before.tocsc() + penalty * identity(k, format="csc")
        for part in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(built, part), getattr(before, part))
    # weights of zero (rows left out, a column without a row): the sum of matrices drops the zeros, as before
    weights = np.where(columns[:, 0] == 0, 0.0, rng.gamma(1.0, 2.0, n))
    np.testing.assert_allclose(
        hessian(weights, 1e-6).toarray(), design.T @ (weights[:, None] * design) + 1e-6 * np.eye(k), rtol=1e-12
    )
    assert hessian(weights, 1e-6).nnz == np.count_nonzero(design.T @ (weights[:, None] * design) + np.eye(k))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_sparse_fit_keeps_its_pmse(monkeypatch, seed):
    """Through the sparse solver (the dense limit lowered), the pMSE is the one stored from the fit with the
    Hessian converted from COO at every step (the same fit to the last digit; its propensities are checked
    against scikit-learn's in test_the_fit_is_scikit_learns_converged_fit) to 1e-12, and the dense blocks' to 1e-9
    (weighted by counts and by survey-like weights)."""
    stored = {0: 0.06288850067100672, 1: 0.0640409807201662, 2: 0.06135623263567974}
    cells, label, weight = _cells(seed)
    dense = weighted_pmse(cells, label, weight, ["county"])["pmse"]
    survey = weight * np.random.default_rng(seed).uniform(0.3, 3.0, len(weight))
    dense_survey = weighted_pmse(cells, label, survey, ["county"])["pmse"]
    monkeypatch.setattr(propensity, "DENSE_BLOCK", 0)
    sparse = weighted_pmse(cells, label, weight, ["county"])["pmse"]
    assert sparse == pytest.approx(stored[seed], rel=1e-12)
    assert sparse == pytest.approx(dense, rel=1e-9)
    assert weighted_pmse(cells, label, survey, ["county"])["pmse"] == pytest.approx(dense_survey, rel=1e-9)
