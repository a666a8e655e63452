"""CART's two tree builders side by side: the compiled one (default) and scikit-learn's on the one-hot design.

Below the public API: :class:`bayessdc.models.cart.CartSynthesizer` (its ``tree_builder``), to time the trees
alone, one after the other in one thread, without the pipeline's measures.

For each table (the CPS extract of ``bench/cart_many_columns.py`` and its simulated 100-column table, fully
synthetic, every column synthesized), both builders fit every tree on the same data and draw m datasets; the
bench prints the wall and CPU time of the fit and of the draws, the leaves of all trees, and the number of trees
with as many leaves as scikit-learn's (trees differ only by exactly tied splits, which scikit-learn breaks by a
random order of the features; ``tests/models/cart/test_fast_tree.py`` checks that every difference is such a
tie).

    .venv/bin/python bench/cart_tree_builders.py [--n 20000] [--m 5] [--skip-cps]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402
from cart_many_columns import DATA, simulate_wide  # noqa: E402

from bayessdc.models.cart import CartSynthesizer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="records of the simulated table")
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-cps", action="store_true")
    args = parser.parse_args()
    tables = []
    if not args.skip_cps and DATA.exists():
        tables.append(("CPS 1994", pd.read_csv(DATA).drop(columns=["split"])))
    tables.append(("simulated 100 columns", simulate_wide(args.n, 100, args.seed)))
    print(f"CART tree builders, fully synthetic, m = {args.m}, one thread; load average {os.getloadavg()[0]:.1f}")
    print(f"{'table':22} {'records':>8} {'builder':8} {'fit wall':>9} {'fit cpu':>8} {'draw wall':>10} {'leaves':>8} "
          f"{'same leaf count':>15}")  # fmt: skip
    for name, frame in tables:
        fitted = {}
        for builder in ("sklearn", "native"):
            synthesizer = CartSynthesizer(list(frame.columns), tree_builder=builder)
            start, cpu = time.perf_counter(), time.process_time()
            synthesizer.fit(frame, seed=args.seed)
            fit_wall, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
            start = time.perf_counter()
            synthesizer.synthesize_datasets(args.m)
            draw_wall = time.perf_counter() - start
            trees = {column: tree["leaves"] for column, tree in synthesizer.tree_summary().items()}
            fitted[builder] = trees
            same = ""
            if builder == "native":
                agree = [trees[column] == fitted["sklearn"][column] for column in trees]
                same = f"{sum(agree)} of {len(agree)}"
            print(f"{name:22} {len(frame):8,} {builder:8} {fit_wall:8.1f}s {fit_cpu:7.1f}s {draw_wall:9.1f}s "
                  f"{sum(trees.values()):8,} {same:>15}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
