"""Which control-size factor of the singling-out attack is right: a small simulation on Adult records.

Below the public API: ``bayessdc.risk.attacks``' predicate helpers. The singling-out risk compares the share of
predicates that single out a training record with the share that single out a control record; when the control
set is smaller, its count is scaled to the training set's size. Here the Adult extract (48,842 records) is the
population: per repetition, a shuffle gives ``--n`` training records, ``--control`` control records and the rest;
the memorising stand-in synthesizer of ``bench/attacks.py`` (one dataset) gives the predicates (500,
multivariate, 3 columns); the truth is the mean count of those predicates singling out in 10 fresh samples of
``--n`` records from the rest (distinct records, as the attack counts them), what the control count scaled to
the training size estimates. Printed per repetition: the control count, the truth, and the scaled count by our
factor (``control_size_correction``), by anonymeter 1.1's (``anonymeter_size_correction``) and by anonymeter's
fit given the successes (its ``curve_fit`` of the same model from its start, to 5 random subsamples at each of 10
sizes from ``min(1000, n_control)``), with each factor over the true one.

    .venv/bin/python bench/attacks_control_size.py [--n 10000] [--control 2000] [--repetitions 4]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.optimize import curve_fit  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attacks import COLUMNS, DATA, memorising  # noqa: E402

from bayessdc.risk import attacks as A  # noqa: E402


def shape(n: np.ndarray | float, w: float) -> np.ndarray | float:
    """The model's expected count per unit scale: ``(1 - (n w + 1)(1 - w)^n) / (n + 1)``."""
    return (1 - (n * w + 1) * (1 - w) ** n) / (n + 1)


def anonymeter_fit(control: np.ndarray, predicates: tuple, training_size: int, rng: np.random.Generator) -> float:
    """Anonymeter's fit of the model given the successes: ``curve_fit`` from ``w_eff = 1 / n_max`` and the scale of
    one success at ``n_max``, bounds ``[0, 1] x [0, inf)``."""
    sizes, successes = [], []
    for size in np.linspace(min(1000, len(control)), len(control), 10).astype(int):
        for _ in range(5):
            sub = control[rng.choice(len(control), size, replace=False)]
            successes.append(int(np.sum(A._count(sub, *predicates) == 1)))
            sizes.append(size)
    sizes_ = np.array(sizes, dtype=float)
    start = (1 / sizes_.max(), 1 / shape(sizes_.max(), 1 / sizes_.max()))
    (w, c), _ = curve_fit(lambda n, w, c: c * shape(n, w), sizes_, np.array(successes, dtype=float),
                          bounds=(0, (1, np.inf)), p0=start)  # fmt: skip
    return float(shape(float(training_size), w) / shape(float(len(control)), w))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="training records")
    parser.add_argument("--control", type=int, default=2_000, help="control records")
    parser.add_argument("--repetitions", type=int, default=4)
    args = parser.parse_args()
    frame = pd.read_csv(DATA, na_values="?")[COLUMNS]
    columns = np.ones(len(COLUMNS), dtype=bool)
    rows = []
    for rep in range(args.repetitions):
        shuffled = frame.sample(frac=1.0, random_state=100 + rep).reset_index(drop=True)
        training = shuffled.iloc[: args.n].reset_index(drop=True)
        control = shuffled.iloc[args.n : args.n + args.control]
        rest = shuffled.iloc[args.n + args.control :]
        synthetic = memorising(training, 1, 0.8, rep).drop(columns="synthetic")
        coded = A._Ordinal([training, control, synthetic, rest], COLUMNS)
        t, c, s = coded.distinct(0), coded.distinct(1), coded.distinct(2)
        rng = np.random.default_rng(rep)
        predicates = A._singling_out_predicates(coded, s, "multivariate", 500, 3, columns, ~columns, 10**6, rng)
        in_control = A._count(c, *predicates)
        raw = int(np.sum(in_control == 1))
        fresh = [np.sum(A._count(np.unique(coded.frames[3][rng.choice(len(rest), args.n, replace=False)], axis=0),
                                 *predicates) == 1) for _ in range(10)]  # fmt: skip
        truth = float(np.mean(fresh))
        factors = {"ours": A.control_size_correction(in_control, len(c), len(t)),
                   "anonymeter 1.1": A.anonymeter_size_correction(len(c), len(t)),
                   "anonymeter's fit": anonymeter_fit(c, predicates, len(t), rng)}  # fmt: skip
        rows.append({"rep": rep, "training": len(t), "control": len(c), "control count": raw,
                     "truth": truth, "truth sd": float(np.std(fresh)), "true factor": truth / raw,
                     **{f"{k}": raw * f for k, f in factors.items()},
                     **{f"{k} / true": f * raw / truth for k, f in factors.items()}})  # fmt: skip
    table = pd.DataFrame(rows)
    print(f"Adult as the population: {args.n:,} training, {args.control:,} control records; 500 multivariate "
          f"predicates from one memorising synthetic dataset; truth: the mean count in 10 fresh samples of "
          f"{args.n:,}")
    print(table.round(3).to_string(index=False))
    ratios = table[[c for c in table.columns if c.endswith("/ true")]]
    print("mean of each factor over the true one: " + ", ".join(f"{c[:-7]} {v:.2f}" for c, v in ratios.mean().items()))


if __name__ == "__main__":
    main()
