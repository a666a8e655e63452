"""Benchmark of a synthetic dataset's release figures (the release gate's cost per dataset): margins or tables.

Below the public API: times ``CategoricalReleaseFigures.of_codes`` (every table a margin of one dense count of the
full table, ``_dense_pass``) beside the same figures table by table (one key and one count per table, a gather per
knowledge set: the path for a full table too large to count densely), on CE-like data with 30% of the counties
redrawn, on one core and in two threads (the release gate runs chains in threads), and checks that both give the
same figures.

Usage::

    python bench/release_figures.py                  # n = 6,208 and 1,000,000, 8 datasets
    python bench/release_figures.py --sizes 1000000 --datasets 16

Figures of 2026-12-01: see the README's table of benches.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np


def main() -> None:
    from bayessdc.models.dpmpm import simulate_ce_like
    from bayessdc.risk.release_figures import CategoricalReleaseFigures

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[6208, 1_000_000])
    parser.add_argument("--datasets", type=int, default=8)
    args = parser.parse_args()
    known = [["gender", "county"], ["gender", "age", "county"]]
    print(f"{'records':>9}  {'path':9} {'1 core ms':>10} {'2 threads ms':>13} {'speed-up':>9}")
    for n in args.sizes:
        original = simulate_ce_like(n=n, seed=1)
        margins = CategoricalReleaseFigures(original, ["county"], ["gender", "income", "age"], known)
        tables = CategoricalReleaseFigures(original, ["county"], ["gender", "income", "age"], known)
        tables._dense_pass = lambda codes: ({}, {})  # table by table
        rng = np.random.default_rng(0)
        levels = len(margins.levels["county"])
        datasets = [
            np.where(rng.random(n) < 0.3, rng.integers(0, levels, n), margins.codes["county"])
            for _ in range(args.datasets)
        ]
        times = {}
        for name, figures in (("margins", margins), ("tables", tables)):
            figures.of_codes({"county": datasets[0]})  # compile, and the keys' kept parts
            start = time.perf_counter()
            values = [figures.of_codes({"county": d}) for d in datasets]
            serial = (time.perf_counter() - start) / len(datasets)
            with ThreadPoolExecutor(2) as pool:
                start = time.perf_counter()
                list(pool.map(lambda d, f=figures: f.of_codes({"county": d}), datasets))
                threads = (time.perf_counter() - start) / len(datasets)
            times[name] = (serial, threads, values)
            print(f"{n:>9,}  {name:9} {1000 * serial:10.2f} {1000 * threads:13.2f} {serial / threads:9.2f}")
        for a, b in zip(times["margins"][2], times["tables"][2], strict=True):
            for key in a:
                assert np.isclose(a[key], b[key], rtol=1e-12, equal_nan=True), key
        print(f"{n:>9,}: margins against tables {times['tables'][0] / times['margins'][0]:.1f}x on one core, "
              f"{times['tables'][1] / times['margins'][1]:.1f}x in two threads; the same figures")  # fmt: skip


if __name__ == "__main__":
    main()
