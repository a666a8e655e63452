"""Benchmark of the pMSE's logistic fit: Newton on indicator blocks (ours) against scikit-learn.

Below the public API: times :func:`bayessdc.synthesis.categorical.weighted_pmse` (Newton,
:mod:`bayessdc.synthesis.propensity`) beside scikit-learn's ``LogisticRegression`` on the one-hot design that
bayessdc used before: L-BFGS at its default tolerance (the old fit) and ``newton-cholesky`` run to
``tol=1e-8`` (the optimum, the reference for the figure). Each synthetic dataset keeps the CE-like records'
gender, income and age, and redraws 30% of the counties from the county distribution of the record's gender
(a release that weakens the county's association with income and age, as a synthesizer's would).

``--hessian`` times instead the sparse system's Hessian as the fit builds it (its pattern once per fit,
:class:`bayessdc.synthesis.propensity._SparseHessian`) beside the COO matrix converted to CSC at every Newton step
(the assembly before, kept here only as the baseline), in one invocation, on (a) the Adult file
(``../shared/data/c1_adult_cps1994.csv``, the CART notebook's columns: education, marital status and occupation
synthesized, 30% of each redrawn from its distribution among the records of the same sex) and (b) a simulated
categorical file of 1,000,000 records (six columns of 2-12 levels from a latent-class model, the last two
synthesized the same way). Both fits are run per case; it prints the time per fit, the Hessian's assembly per
Newton step (and the pattern's, once per fit), and the largest relative difference in the pMSE.

Usage::

    python bench/pmse_fit.py                    # n = 6,208 and 1,000,000, 3 datasets each
    python bench/pmse_fit.py --sizes 6208 --datasets 5
    python bench/pmse_fit.py --hessian          # the Hessian's assembly: old against new

Figures of 2026-12-01 (2 cores, one process, idle machine): see the README's table of benches.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pandas as pd


def cells_of(original: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The distinct (cell, indicator) rows of the original and one synthetic dataset, with their counts."""
    rng = np.random.default_rng(seed)
    synthetic = original.copy()
    redraw = rng.random(len(original)) < 0.3
    for gender, rows in synthetic[redraw].groupby("gender").groups.items():
        pool = original.loc[original["gender"] == gender, "county"].to_numpy()
        synthetic.loc[rows, "county"] = rng.choice(pool, len(rows))
    stacked = pd.concat([original.assign(_label=0), synthetic.assign(_label=1)], ignore_index=True)
    columns = ["gender", "income", "age", "county"]
    cells = stacked.groupby(columns + ["_label"], observed=True).size().rename("_weight").reset_index()
    return cells[columns], cells["_label"].to_numpy(), cells["_weight"].to_numpy(float)


def sklearn_fit(cells: pd.DataFrame, label: np.ndarray, weight: np.ndarray, solver: str, tol: float) -> float:
    """pMSE of scikit-learn's fit on the drop-first one-hot design of main effects and county interactions."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import OneHotEncoder

    parts = {c: cells[c].astype(str) for c in cells.columns}
    for other in ("gender", "income", "age"):
        parts[f"county:{other}"] = cells["county"].astype(str) + "|" + cells[other].astype(str)
    design = OneHotEncoder(drop="first").fit_transform(pd.DataFrame(parts))
    model = LogisticRegression(C=1e6, solver=solver, tol=tol, max_iter=20000, random_state=0)
    model.fit(design, label, sample_weight=weight)
    p = model.predict_proba(design)[:, 1]
    c = np.sum(weight * label) / weight.sum()
    return float(np.sum(weight * (p - c) ** 2) / weight.sum())


ADULT = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "c1_adult_cps1994.csv")
ADULT_KEEP = ["sex", "age", "race", "relationship"]
ADULT_SYNTHESIZE = ["education", "marital_status", "occupation"]


def redrawn_cells(
    original: pd.DataFrame, synthesize: list[str], by: str, seed: int, share: float = 0.3
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The distinct (cell, indicator) rows of the original and a synthetic dataset in which ``share`` of every
    synthesized column's values are redrawn from its distribution among the records of the same ``by``."""
    rng = np.random.default_rng(seed)
    synthetic = original.copy()
    for column in synthesize:
        redraw = rng.random(len(original)) < share
        for level, rows in synthetic[redraw].groupby(by).groups.items():
            pool = original.loc[original[by] == level, column].to_numpy()
            synthetic.loc[rows, column] = rng.choice(pool, len(rows))
    stacked = pd.concat([original.assign(_label=0), synthetic.assign(_label=1)], ignore_index=True)
    columns = list(original.columns)
    cells = stacked.groupby(columns + ["_label"], observed=True).size().rename("_weight").reset_index()
    return cells[columns], cells["_label"].to_numpy(), cells["_weight"].to_numpy(float)


def simulated_categorical(n: int, seed: int) -> pd.DataFrame:
    """``n`` records of six categorical columns (2, 4, 6, 8, 10 and 12 levels) from a latent-class model of 5
    classes (every column's levels drawn from a Dirichlet(0.5) per class)."""
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 5, n)
    columns = {}
    for name, levels in zip("abcdef", (2, 4, 6, 8, 10, 12), strict=True):
        probabilities = rng.dirichlet(np.full(levels, 0.5), size=5).cumsum(axis=1)
        columns[name] = (rng.random(n)[:, None] > probabilities[latent]).sum(axis=1).clip(max=levels - 1)
    return pd.DataFrame(columns)


class OldSparseHessian:
    """The sparse Hessian as it was built before (the baseline): the entries' weights as a COO matrix converted to
    CSC at every Newton step, plus the ridge; the same signature as ``propensity._SparseHessian``."""

    def __init__(self, rows, first, second, pairs, total, n) -> None:  # noqa: ANN001, D107
        self.rows, self.entries, self.pairs, self.total = rows, (first, second), pairs, total

    def __call__(self, hessian_weight: np.ndarray, penalty: float):  # noqa: ANN204, D102
        from scipy.sparse import coo_matrix, identity

        h = np.repeat(hessian_weight[self.rows], self.pairs)
        shape = (self.total, self.total)
        return coo_matrix((h, self.entries), shape=shape).tocsc() + penalty * identity(self.total, format="csc")


def timed(assembly: type, clock: dict[str, float]) -> type:
    """``assembly`` with its pattern (``build``) and its per-step Hessians (``step``, ``steps``) timed."""

    class Timed(assembly):
        def __init__(self, *args) -> None:
            start = time.perf_counter()
            super().__init__(*args)
            clock["build"] += time.perf_counter() - start

        def __call__(self, *args):  # noqa: ANN204
            start = time.perf_counter()
            out = super().__call__(*args)
            clock["step"] += time.perf_counter() - start
            clock["steps"] += 1
            return out

    return Timed


def hessian_bench(datasets: int) -> None:
    """The sparse Hessian's assembly, old against new, on the Adult file and a simulated categorical file."""
    from bayessdc.synthesis import propensity
    from bayessdc.synthesis.categorical import weighted_pmse

    adult = pd.read_csv(ADULT)[ADULT_KEEP + ADULT_SYNTHESIZE].fillna("?")
    cases = {
        f"adult n={len(adult):,}": (adult, ADULT_SYNTHESIZE, "sex"),
        "simulated n=1,000,000": (simulated_categorical(1_000_000, seed=1), ["e", "f"], "a"),
    }
    assemblies = {"old (COO to CSC)": OldSparseHessian, "new (pattern once)": propensity._SparseHessian}
    print(f"{'case':22} {'rows':>7} {'assembly':19} {'fit s':>7} {'steps':>5} {'pattern s':>9} {'ms/step':>8} "
          f"{'pMSE':>20}")  # fmt: skip
    for case, (original, synthesize, by) in cases.items():
        totals = {name: {"fit": 0.0, "build": 0.0, "step": 0.0, "steps": 0} for name in assemblies}
        worst = 0.0
        for d in range(datasets):
            cells, label, weight = redrawn_cells(original, synthesize, by, seed=d)
            fitted = {}
            for name, assembly in assemblies.items():
                clock = {"build": 0.0, "step": 0.0, "steps": 0}
                kept = propensity._SparseHessian
                propensity._SparseHessian = timed(assembly, clock)
                try:
                    start = time.perf_counter()
                    value = weighted_pmse(cells, label, weight, synthesize)["pmse"]
                    seconds = time.perf_counter() - start
                finally:
                    propensity._SparseHessian = kept
                fitted[name] = value
                for key in clock:
                    totals[name][key] += clock[key]
                totals[name]["fit"] += seconds
                per_step = 1000 * clock["step"] / max(clock["steps"], 1)
                print(f"{case:22} {len(cells):>7,} {name:19} {seconds:7.2f} {clock['steps']:>5} "
                      f"{clock['build']:9.3f} {per_step:8.1f} {value:20.17f}")  # fmt: skip
            old_value, new_value = fitted.values()
            worst = max(worst, abs(new_value - old_value) / old_value)
        old, new = totals.values()
        step_old, step_new = (1000 * t["step"] / t["steps"] for t in (old, new))
        print(f"{case}: per fit old {old['fit'] / datasets:.2f} s, new {new['fit'] / datasets:.2f} s "
              f"({old['fit'] / new['fit']:.2f}x); the Hessian per Newton step old {step_old:.1f} ms, new "
              f"{step_new:.1f} ms ({step_old / step_new:.0f}x) + its pattern {new['build'] / datasets:.3f} s a fit; "
              f"largest relative difference in the pMSE {worst:.1e}")  # fmt: skip


def main() -> None:
    from bayessdc.models.dpmpm import simulate_ce_like
    from bayessdc.synthesis.categorical import weighted_pmse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[6208, 1_000_000])
    parser.add_argument("--datasets", type=int, default=3)
    parser.add_argument("--hessian", action="store_true", help="the sparse Hessian's assembly, old against new")
    args = parser.parse_args()
    if args.hessian:
        hessian_bench(args.datasets)
        return
    fits = {
        "bayessdc Newton": lambda c, y, w: weighted_pmse(c, y, w, ["county"])["pmse"],
        "sklearn lbfgs (old)": lambda c, y, w: sklearn_fit(c, y, w, "lbfgs", 1e-4),
        "sklearn newton-cholesky 1e-8": lambda c, y, w: sklearn_fit(c, y, w, "newton-cholesky", 1e-8),
    }
    print(f"{'records':>9} {'cells':>6}  {'fit':30} {'seconds':>8} {'pMSE':>12} {'vs optimum':>11}")
    for n in args.sizes:
        original = simulate_ce_like(n=n, seed=1)
        times: dict[str, list[float]] = {name: [] for name in fits}
        for d in range(args.datasets):
            cells, label, weight = cells_of(original, seed=d)
            values = {}
            for name, fit in fits.items():
                start = time.perf_counter()
                values[name] = fit(cells, label, weight)
                times[name].append(time.perf_counter() - start)
            optimum = values["sklearn newton-cholesky 1e-8"]
            for name in fits:
                print(f"{n:>9,} {len(cells):>6}  {name:30} {times[name][-1]:8.4f} {values[name]:12.8f} "
                      f"{values[name] / optimum - 1:+11.2e}")  # fmt: skip
        ours = np.median(times["bayessdc Newton"])
        for name in list(fits)[1:]:
            print(f"{n:>9,}: median {name} {np.median(times[name]):.4f} s, ours {ours:.4f} s: "
                  f"{np.median(times[name]) / ours:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
