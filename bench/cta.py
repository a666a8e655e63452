"""Benchmark of controlled tabular adjustment: solve time and peak memory.

Below the public API: times the adjustment itself (``bayessdc.cta.adjust_table``) on tables built in memory,
without the output folder and report of ``bsd.adjust``.

Cases (each in a fresh process, so that its peak resident memory, from ``getrusage``, is its own; it
includes the interpreter and the imports, about 200 MB):

- Cox's 4 x 9 table, MILP minimising sum |y| (reference: cvxpy 1.9 + HiGHS, 0.04-0.11 s);
- a 13 x 13 x 13 table with all margins (the size of Dandekar's table), MILP to optimality (target < 30 s)
  with 0.5% sensitive cells, and with 1% under a 30 s limit (the MILP's work grows exponentially with the
  number of sensitive cells, whose directions interact through the shared margins);
- a 40 x 40 x 40 table with all margins and about 2% sensitive interior cells, by MILP with a time limit
  (the gap reported) and by heuristic directions + LP (target < 60 s).

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/cta.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import resource
import time

import numpy as np
import pandas as pd


def cube_table(size: int, sensitive_share: float, seed: int):
    """A size^3 magnitude table with all margins and random sensitive interior cells."""
    from bayessdc.cta import Protection, table_from_long

    rng = np.random.default_rng(seed)
    labels = [f"{k:02d}" for k in range(size)]
    grid = pd.MultiIndex.from_product([labels] * 3, names=["d1", "d2", "d3"]).to_frame(index=False)
    grid["value"] = np.round(rng.lognormal(mean=6.0, sigma=1.2, size=len(grid)))
    table = table_from_long(grid, "d1,d2,d3", "value")
    interior = np.flatnonzero(table.cells["interior"].to_numpy() & (table.values > 0))
    chosen = rng.choice(interior, size=max(2, int(round(sensitive_share * len(interior)))), replace=False)
    levels = np.zeros(table.n_cells)
    levels[chosen] = np.round(table.values[chosen] * rng.uniform(0.10, 0.25, len(chosen)))
    levels[chosen] = np.maximum(levels[chosen], 1.0)
    return table, Protection.symmetric(levels)


def run_case(name: str, options: dict) -> dict:
    """Build and solve one case; returns the figures (run in a child process)."""
    from bayessdc.cta import (
        AdjustmentSettings,
        SolverSettings,
        adjust_table,
        cox_4x9_frame,
        quality_report,
        table_from_long,
    )

    started = time.perf_counter()
    if name == "cox":
        table = table_from_long(cox_4x9_frame(), "row,column", "value", protection="protection")
        protection = None
    else:
        table, protection = cube_table(options["size"], options["share"], seed=7)
    built = time.perf_counter() - started
    first_solve = None
    if name == "cox":  # the first solve in a process pays for cvxpy's and HiGHS's set-up
        first_solve = adjust_table(table, protection).solve_seconds
    settings = AdjustmentSettings(**{key: options[key] for key in ("method", "capacity") if key in options})
    solver = SolverSettings(**{key: options[key] for key in ("time_limit",) if key in options})
    try:
        result = adjust_table(table, protection, settings=settings, solver=solver)
    except ValueError as err:  # no feasible point within the time limit
        return {"case": options["label"], "cells": table.n_cells, "equations": table.additivity.shape[0],
                "build_s": built, "solve_s": time.perf_counter() - started - built,
                "status": "no feasible point: " + str(err)[:20],
                "process_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    report = quality_report(result)
    return {
        "case": options["label"],
        "cells": table.n_cells,
        "equations": table.additivity.shape[0],
        "sensitive": int(result.sensitive.sum()),
        "build_s": built,
        "solve_s": result.solve_seconds,
        "first_solve_s": first_solve,
        "status": result.status,
        "gap": result.optimality_gap,
        "sum_abs_adjustment": report["all_cells"]["total_absolute_adjustment"],
        "protection_met": report["checks"]["protection_met"],
        "totals_add_up": report["checks"]["totals_add_up"],
        "process_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def in_fresh_process(name: str, options: dict) -> dict:
    """Run one case in its own process."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(run_case, name, options).result()


def main() -> None:
    """Run the cases and print a table of figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--time-limit", type=float, default=60.0, help="MILP time limit for the 40^3 table")
    args = parser.parse_args()
    big = 12 if args.quick else 40
    mid = 6 if args.quick else 13
    cases = [
        ("cox", {"label": "Cox 4x9, MILP (ref. 0.04-0.11 s)"}),
        ("cube", {"label": f"{mid}^3 (0.5% sensitive), MILP to optimality", "size": mid, "share": 0.005}),
        ("cube", {"label": f"{mid}^3 (1% sensitive), MILP, time limit 30 s", "size": mid, "share": 0.01,
                  "time_limit": 30.0}),
        ("cube", {"label": f"{big}^3, MILP, time limit {args.time_limit:g} s", "size": big, "share": 0.02,
                  "time_limit": args.time_limit}),
        ("cube", {"label": f"{big}^3, heuristic + LP", "size": big, "share": 0.02, "method": "heuristic"}),
    ]
    rows = []
    for name, options in cases:
        row = in_fresh_process(name, options)
        rows.append(row)
        print(f"done: {row['case']}: {row['solve_s']:.2f} s", flush=True)
    frame = pd.DataFrame(rows).set_index("case")
    display = {"display.width": 250, "display.max_columns": 20, "display.float_format": "{:.3g}".format}
    with pd.option_context(*[item for pair in display.items() for item in pair]):
        print(frame)
    milp, lp = frame.iloc[3], frame.iloc[4]
    if milp["status"] in ("optimal", "time_limit"):
        print(
            f"\n{big}^3: heuristic + LP / MILP  time ratio {lp['solve_s'] / milp['solve_s']:.3f}, "
            f"sum|y| ratio {lp['sum_abs_adjustment'] / milp['sum_abs_adjustment']:.3f} "
            f"(MILP status {milp['status']}, gap {milp['gap']})"
        )
    else:
        print(f"\n{big}^3: the MILP found no feasible adjustment within {args.time_limit:g} s; "
              f"heuristic + LP solved in {lp['solve_s']:.1f} s "
              f"({lp['solve_s'] / milp['solve_s']:.3f} of the MILP's time)")
    cox = frame.iloc[0]
    print(f"Cox 4x9 MILP: {cox['solve_s']:.3f} s here "
          f"(first solve in the process {cox['first_solve_s']:.3f} s), "
          "reference 0.04-0.11 s (cvxpy 1.9 + HiGHS)")


if __name__ == "__main__":
    main()
