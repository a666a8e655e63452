"""Wall time and peak memory of CART synthesis of the Adult data (48,842 records), m = 100 datasets.

Below the public API: times ``CartSynthesizer``'s fit and synthesis apart from the pipeline's measures and report,
which the wall-time target leaves out.

The paper's design (Rodriguez et al., Section 5) on the 1994 CPS extract: education, marital status and
occupation synthesized in sequence, keeping sex, age, race and relationship, with two logical rules.
Reads ``../shared/data/c1_adult_cps1994.csv`` relative to the repository. Target: under one minute on a
2-core machine.

    .venv/bin/python bench/cart.py [--m 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402

from bayessdc.models.cart import CartSynthesizer  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "c1_adult_cps1994.csv"
SYNTHESIZE = ["education", "marital_status", "occupation"]
KEEP = ["sex", "age", "race", "relationship"]
RULES = [
    {
        "name": "husbands and wives are married",
        "if": {"relationship": ["Husband", "Wife"]},
        "then": {"marital_status": ["Married-civ-spouse", "Married-AF-spouse"]},
    },
    {
        "name": "no college degree under 18",
        "if": {"age": {"max": 17}},
        "then": {
            "education": {"not_in": ["Bachelors", "Masters", "Doctorate", "Prof-school", "Assoc-acdm", "Assoc-voc"]}
        },
    },
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not DATA.exists():
        where = DATA.resolve()
        print(f"bench/cart.py: the Adult data are not at {where} (expected beside the repository)", file=sys.stderr)
        return 2
    data = pd.read_csv(DATA, usecols=[*SYNTHESIZE, *KEEP])
    data["occupation"] = data["occupation"].fillna("not reported")  # "?" in the UCI files

    tracemalloc.start()
    start = time.perf_counter()
    synthesizer = CartSynthesizer(SYNTHESIZE, KEEP, RULES).fit(data, seed=args.seed)
    fit_seconds = time.perf_counter() - start
    _, fit_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    start = time.perf_counter()
    synthetic = synthesizer.synthesize_datasets(args.m)
    draw_seconds = time.perf_counter() - start
    _, draw_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    summary = synthesizer.tree_summary()
    print(f"CART synthesis of the Adult data: {len(data):,} records, m = {args.m}, {len(synthetic):,} synthetic rows")
    print(f"  fit (3 trees):      {fit_seconds:6.2f} s, peak traced memory {fit_peak / 2**20:7.1f} MiB")
    print(f"  draw {args.m} datasets: {draw_seconds:6.2f} s, peak traced memory {draw_peak / 2**20:7.1f} MiB")
    print(f"  total:              {fit_seconds + draw_seconds:6.2f} s; process peak RSS {rss:.0f} MiB")
    for column, figures in summary.items():
        fallbacks = figures["fallbacks"]
        print(
            f"  {column}: {figures['leaves']} leaves, depth {figures['depth']}, "
            f"rule fallbacks {fallbacks['ancestor']} of {fallbacks['draws']:,} draws"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
