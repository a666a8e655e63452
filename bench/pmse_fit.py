"""Benchmark of the pMSE's logistic fit: Newton on indicator blocks (ours) against scikit-learn.

Below the public API: times :func:`bayessdc.synthesis.categorical.weighted_pmse` (Newton,
:mod:`bayessdc.synthesis.propensity`) beside scikit-learn's ``LogisticRegression`` on the one-hot design that
bayessdc used before: L-BFGS at its default tolerance (the old fit) and ``newton-cholesky`` run to
``tol=1e-8`` (the optimum, the reference for the figure). Each synthetic dataset keeps the CE-like records'
gender, income and age, and redraws 30% of the counties from the county distribution of the record's gender
(a release that weakens the county's association with income and age, as a synthesizer's would).

Usage::

    python bench/pmse_fit.py                    # n = 6,208 and 1,000,000, 3 datasets each
    python bench/pmse_fit.py --sizes 6208 --datasets 5

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


def main() -> None:
    from bayessdc.models.dpmpm import simulate_ce_like
    from bayessdc.synthesis.categorical import weighted_pmse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[6208, 1_000_000])
    parser.add_argument("--datasets", type=int, default=3)
    args = parser.parse_args()
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
