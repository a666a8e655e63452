"""Issue 49's acceptance on the Adult file: ``bsd.evaluate`` attacks a numeric synthesized column, and its distance
to the closest record separates a copy of the training rows from a draw that learned nothing of them.

Data: the UCI Adult extract (``../shared/data/c1_adult_cps1994.csv``), the columns age, sex, race (kept), education
and hours_per_week (synthesized, hours numeric), rows with a missing value left out, ``--n`` records drawn with the
seed and split in four: half training records, a quarter the control set, a quarter donors. Three partially
synthetic files of the training records, m = 2 each, are evaluated with the control set (``holdout=``), all attacks
at their defaults:

* ``cart``: a bayessdc CART release (``bsd.CART(smoothing="density")``, which meets the default policy at m = 2
  where the default settings copy slightly too many records; replicated uniques removed, so its rows are the
  training records' in order with some left out);
* ``copy``: the training rows themselves;
* ``independent``: education and hours per week of a donor record with the same age, sex and race (the same
  sex and race where no donor shares all three), drawn for each training record: a release that could not have
  learned the records judged (nor the control records: drawn from the control set, it would make the control
  attack the easier one).

Printed: per file, the inference risk on hours_per_week and on education (pooled, 95% interval), and the share
of synthetic records at most the holdout's 5th percentile and median of the distance to the closest training
record, over every released column and over the synthesized ones, beside the holdout's own share; wall time.

    .venv/bin/python bench/evaluate_adult.py [--n 8000] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import bayessdc as bsd  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "c1_adult_cps1994.csv"
KEEP, SYNTHESIZE = ["age", "sex", "race"], ["education", "hours_per_week"]


def independent(training: pd.DataFrame, control: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """The training records with their synthesized values drawn from ``control`` records (the donors: neither
    training nor control records) of the same kept values (of the same sex and race where no donor shares all
    three)."""
    out, drawn = training.copy(), np.zeros(len(training), dtype=bool)
    for keys in (KEEP, ["sex", "race"]):
        donors = control.groupby(keys).indices
        for key, rows in training.groupby(keys).indices.items():
            rows = rows[~drawn[rows]]
            if key in donors and len(rows):
                picked = control.iloc[rng.choice(donors[key], size=len(rows))]
                out.iloc[rows, [out.columns.get_loc(c) for c in SYNTHESIZE]] = picked[SYNTHESIZE].to_numpy()
                drawn[rows] = True
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=8000, help="records drawn from the file (default 8000)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    adult = bsd.read_table(DATA)[KEEP + SYNTHESIZE].dropna()
    adult = adult.sample(args.n, random_state=args.seed).reset_index(drop=True)
    part = np.random.default_rng(args.seed).permutation(len(adult)) % 4  # training 2 of 4, control 1, donors 1
    training, control, donors = (adult[np.isin(part, k)].reset_index(drop=True) for k in ([0, 1], [2], [3]))
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    release = bsd.synthesize(training, bsd.CART(smoothing="density"), synthesize=",".join(SYNTHESIZE),
                             keep=",".join(KEEP), m=2, seed=args.seed, progress=False)  # fmt: skip
    print(f"Adult: {len(training):,} training records, {len(control):,} control; CART release "
          f"{time.perf_counter() - start:.1f} s, {release.facts.get('replicated_uniques_removed', 0)} replicated "
          "uniques removed")  # fmt: skip
    files = {
        "cart": release.synthetic,
        "copy": pd.concat([training.assign(synthetic=k) for k in (1, 2)], ignore_index=True),
        "independent": pd.concat([independent(training, donors, rng).assign(synthetic=k) for k in (1, 2)],
                                 ignore_index=True),
    }  # fmt: skip
    rows = []
    for name, synthetic in files.items():
        start = time.perf_counter()
        judged = bsd.evaluate(training, synthetic[["synthetic", *KEEP, *SYNTHESIZE]], keep=KEEP, holdout=control,
                              name=name, progress=False)  # fmt: skip
        seconds = time.perf_counter() - start
        summary = judged.measured.summary().set_index(["measure", "subset"])
        row = {"file": name, "kind": judged.description["kind"], "seconds": round(seconds, 1)}
        for secret in SYNTHESIZE:
            s = summary.loc[("inference", secret)]
            row[f"inference {secret}"] = f"{s['pooled']:.3f} ({s['lower']:.3f}-{s['upper']:.3f})"
        for subset in ("holdout 5th percentile", "holdout median", "holdout 5th percentile, synthesized columns",
                       "holdout median, synthesized columns"):  # fmt: skip
            s = summary.loc[("distance_to_closest_record", subset)]
            row[f"DCR share <= {subset}"] = f"{s['pooled']:.3f} (holdout {s['holdout']:.3f})"
        rows.append(row)
    table = pd.DataFrame(rows).set_index("file").T
    with pd.option_context("display.width", 200, "display.max_colwidth", 40):
        print(table.to_string())


if __name__ == "__main__":
    main()
