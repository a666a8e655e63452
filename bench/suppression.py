"""Benchmark of complementary cell suppression beside controlled tabular adjustment on a hierarchical table.

Below the public API: times the suppression MILP (``bayessdc.cta.suppression.suppress_table``), the adjustment
(``bayessdc.cta.adjust_table``) and the intruder's audit of each (``bayessdc.cta.audit_table``) on a table built in
memory, without the output folders and reports of ``bsd.suppress`` and ``bsd.adjust``; and measures, on the
attacker LPs of the suppression, why they are solved by highspy models kept per part rather than through cvxpy.

The table: province > arrondissement > municipality (5 x 6 x 8 = 240 municipalities) by 35 sectors, with every
total (9,936 cells, 8,400 interior); lognormal values (mean log 6, sd 1.2, rounded), seed 7; 2% of the interior
cells (168) sensitive, each with symmetric protection of 10-25% of its value. Each step runs in a fresh process,
one after the other, so that its peak resident memory (``getrusage``, which includes the interpreter and the
imports, about 200 MB) is its own:

1. suppression: ``suppress_table`` (cost: the value suppressed) under a time limit (default 300 s: without one it
   runs until the pattern is proved least-cost, which on this table takes far longer; stopped, it keeps the cheapest
   protecting pattern found and its gap to the lower bound), every progress line printed with the seconds since it
   started; then ``audit_table`` with the suppression intruder (published cells exact);
2. CTA: ``adjust_table`` with the heuristic directions and an LP (capacity 0.2), then ``audit_table`` with the
   intruder who knows the method (capacity 0.2);
3. the attacker LPs: 200 LPs ``max +-y_i`` over the connected part of the suppressed cells holding a primary cell
   ``i`` (the LP each round of the suppression solves), each solved by ``scipy.optimize.linprog(method="highs")``,
   by one cvxpy ``Problem`` per LP with HiGHS, and as ``suppress_table`` solves them (one highspy model per
   connected part, kept while only the objective changes); the per-LP times of the three and the largest
   difference between their optima.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/suppression.py`` (minutes on 2 cores; ``--small`` for a
table of 2 x 3 x 4 municipalities by 10 sectors, seconds; ``--time-limit 0`` for no limit).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import resource
import time

import numpy as np
import pandas as pd

#: The table's shape: provinces, arrondissements per province, municipalities per arrondissement, sectors.
FULL = (5, 6, 8, 35)
SMALL = (2, 3, 4, 10)
SEED = 7
SENSITIVE_SHARE = 0.02
CAPACITY = 0.2
ATTACKER_LPS = 200
TIME_LIMIT = 300.0


def build_table(shape: tuple[int, int, int, int], share: float = SENSITIVE_SHARE, seed: int = SEED):
    """The hierarchical table and the protection of its sensitive cells."""
    from bayessdc import cta

    provinces, arrondissements, municipalities, sectors = shape
    rng = np.random.default_rng(seed)
    rows = [(f"P{p}", f"P{p}A{a}", f"P{p}A{a}M{m}", f"S{s:02d}") for p in range(provinces)
            for a in range(arrondissements) for m in range(municipalities) for s in range(sectors)]  # fmt: skip
    grid = pd.DataFrame(rows, columns=["province", "arrondissement", "municipality", "sector"])
    grid["value"] = np.round(rng.lognormal(6.0, 1.2, len(grid)))
    table = cta.table_from_long(grid, "province>arrondissement>municipality,sector", "value")
    interior = np.flatnonzero(table.cells["interior"].to_numpy() & (table.values > 0))
    chosen = rng.choice(interior, size=int(round(share * len(interior))), replace=False)
    levels = np.zeros(table.n_cells)
    levels[chosen] = np.maximum(np.round(table.values[chosen] * rng.uniform(0.10, 0.25, len(chosen))), 1.0)
    return table, cta.Protection.symmetric(levels)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_suppression(shape: tuple[int, int, int, int], time_limit: float | None) -> dict:
    """Suppress the table and audit the pattern (in a child process); the figures and the suppressed mask."""
    from bayessdc import cta
    from bayessdc.cta.suppression import suppress_table

    table, protection = build_table(shape)
    interior = table.cells["interior"].to_numpy(bool)
    print(f"suppression: {table.n_cells} cells ({interior.sum()} interior), {table.additivity.shape[0]} equations, "
          f"{protection.sensitive.sum()} sensitive; time limit {time_limit or 'none'}", flush=True)  # fmt: skip
    started = time.perf_counter()
    result = suppress_table(table, protection, solver=cta.SolverSettings(time_limit=time_limit),
                            progress=lambda line: print(f"  [{time.perf_counter() - started:8.1f} s] {line}",
                                                        flush=True))  # fmt: skip
    solved = time.perf_counter() - started
    peak_solve = _peak_mb()
    started = time.perf_counter()
    audit = cta.audit_table(table, result.published, protection, intruder="suppression")
    audited = time.perf_counter() - started
    x, suppressed = table.values, result.suppressed
    return {
        "method": "suppression", "cells": table.n_cells, "sensitive": int(protection.sensitive.sum()),
        "solve_s": solved, "status": result.status, "rounds": result.rounds, "cuts": result.cuts, "lps": result.lps,
        "objective": result.objective, "bound": result.bound, "time_limit": time_limit,
        "cells_changed": int(suppressed.sum()), "interior_changed": int((suppressed & interior).sum()),
        "secondary": int(result.secondary.sum()),
        "interior_value_changed": float(x[suppressed & interior].sum()),
        "interior_value_share": float(x[suppressed & interior].sum() / x[interior].sum()),
        "audit_s": audited, "audit_lps": int(audit.attrs.get("lps", 0)),
        "protected": f"{int(audit['protected'].sum())} of {len(audit)}",
        "all_protected": bool(audit["protected"].all()),
        "unprotected": list(audit.loc[~audit["protected"], "name"]),
        "peak_mb_solve": peak_solve, "peak_mb": _peak_mb(), "suppressed": suppressed,
    }  # fmt: skip


def run_cta(shape: tuple[int, int, int, int]) -> dict:
    """Adjust the table by the heuristic and an LP, and audit it with the intruder who knows the method."""
    from bayessdc import cta

    table, protection = build_table(shape)
    interior = table.cells["interior"].to_numpy(bool)
    started = time.perf_counter()
    result = cta.adjust_table(table, protection, settings=cta.AdjustmentSettings(method="heuristic",
                                                                                 capacity=CAPACITY))  # fmt: skip
    solved = time.perf_counter() - started
    peak_solve = _peak_mb()
    quality = cta.quality_report(result)
    print(f"cta: adjusted in {solved:.1f} s (status {result.status}); auditing {protection.sensitive.sum()} cells",
          flush=True)  # fmt: skip
    started = time.perf_counter()
    audit = cta.audit_table(table, result.adjusted, protection, intruder="cta", capacity=CAPACITY)
    audited = time.perf_counter() - started
    y = result.adjustment
    moved = np.abs(y) > 1e-9 * max(1.0, float(np.abs(table.values).max()))
    return {
        "method": "cta (heuristic + LP)", "cells": table.n_cells, "sensitive": int(protection.sensitive.sum()),
        "solve_s": solved, "status": result.status, "rounds": None, "cuts": None, "lps": None,
        "objective": None, "bound": None,
        "cells_changed": int(moved.sum()), "interior_changed": int((moved & interior).sum()),
        "secondary": int((moved & ~protection.sensitive).sum()),
        "interior_value_changed": quality["interior_cells"]["total_absolute_adjustment"],
        "interior_value_share": quality["interior_cells"]["relative_adjustment"],
        "interior_correlation": quality["interior_cells"]["correlation"],
        "interior_slope": quality["interior_cells"]["slope"],
        "interior_variance_ratio": quality["interior_cells"]["variance_ratio"],
        "audit_s": audited, "audit_lps": int(audit.attrs.get("lps", 0)),
        "protected": f"{int(audit['protected'].sum())} of {len(audit)}",
        "all_protected": bool(audit["protected"].all()),
        "unprotected": list(audit.loc[~audit["protected"], "name"]), "exact": int(audit["exact"].sum()),
        "peak_mb_solve": peak_solve, "peak_mb": _peak_mb(),
    }  # fmt: skip


def attacker_lps(table, protection, suppressed: np.ndarray, count: int):
    """``count`` attacker LPs ``(objective, A_eq, lower, upper)`` in scaled units: for each primary cell in turn and
    each direction, ``max +-y_i`` subject to the equations of the connected part of the suppressed cells holding it,
    ``-x_k <= y_k <= wide`` (non-negative true values, the unbounded upper range capped as the suppression caps it)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    T = sp.csr_matrix(table.additivity)
    cells = np.flatnonzero(suppressed)
    A = sp.csr_matrix(T[:, cells])
    used = np.flatnonzero(A.getnnz(axis=1) > 0)
    A = A[used]
    pattern = abs(A).astype(bool).astype(float)
    graph = sp.bmat([[None, pattern.T], [pattern, None]], format="csr")
    _, labels = connected_components(graph, directed=False)
    cell_label, row_label = labels[: len(cells)], labels[len(cells) :]
    x = table.values
    scale = max(1.0, float(np.abs(x).max()))
    unit = 10.0 ** max(0, int(np.floor(np.log10(scale))) - 4)
    wide = scale + float(max(protection.lower.max(), protection.upper.max()))
    primaries = [k for k, cell in enumerate(cells) if protection.sensitive[cell]]
    problems = []
    for j in range(count):
        k = primaries[(j // 2) % len(primaries)]
        part = np.flatnonzero(cell_label == cell_label[k])
        rows = np.flatnonzero(row_label == cell_label[k])
        objective = np.zeros(len(part))
        objective[np.searchsorted(part, k)] = -1.0 if j % 2 == 0 else 1.0  # linprog minimises: max y_i, max -y_i
        problems.append((objective, sp.csr_matrix(A[rows][:, part]), -x[cells[part]] / unit,
                         np.full(len(part), wide / unit)))  # fmt: skip
    return problems


def run_lps(shape: tuple[int, int, int, int], suppressed: np.ndarray, count: int) -> dict:
    """Solve the same attacker LPs by scipy's HiGHS and by cvxpy with HiGHS, one Problem per LP."""
    import cvxpy as cp
    from scipy.optimize import linprog

    table, protection = build_table(shape)
    problems = attacker_lps(table, protection, suppressed, count)
    sizes = np.array([len(c) for c, *_ in problems])
    equations = np.array([A.shape[0] for _, A, *_ in problems])
    optima = {}
    seconds = {}
    started = time.perf_counter()
    found = []
    for c, A, lower, upper in problems:
        result = linprog(c, A_eq=A, b_eq=np.zeros(A.shape[0]), bounds=np.column_stack([lower, upper]),
                         method="highs")  # fmt: skip
        found.append(result.fun)
    seconds["scipy"] = time.perf_counter() - started
    optima["scipy"] = np.array(found)
    started = time.perf_counter()
    found = []
    for c, A, lower, upper in problems:
        y = cp.Variable(len(c), bounds=[lower, upper])
        problem = cp.Problem(cp.Minimize(c @ y), [A @ y == 0])
        problem.solve(solver=cp.HIGHS)
        found.append(problem.value)
    seconds["cvxpy"] = time.perf_counter() - started
    optima["cvxpy"] = np.array(found)
    # what suppress_table does: one HiGHS model per connected part, kept while only the objective changes
    import scipy.sparse as sp

    from bayessdc.cta.suppression import Attackers

    x = table.values
    scale = max(1.0, float(np.abs(x).max()))
    unit = 10.0 ** max(0, int(np.floor(np.log10(scale))) - 4)
    wide = scale + float(max(protection.lower.max(), protection.upper.max()))
    cells = np.flatnonzero(suppressed)
    primaries = [cell for cell in cells if protection.sensitive[cell]]
    T = sp.csr_matrix(table.additivity)
    started = time.perf_counter()
    attackers = Attackers(T, np.minimum(x, wide) / unit, np.full(len(x), wide / unit),
                           suppressed.astype(float))  # fmt: skip
    found = []
    for j in range(count):
        value, _ = attackers.attack(int(primaries[(j // 2) % len(primaries)]), 1.0 if j % 2 == 0 else -1.0, str)
        found.append(-value)
    seconds["kept"] = time.perf_counter() - started
    optima["kept"] = np.array(found)
    return {
        "lps": count, "variables_median": float(np.median(sizes)), "variables_max": int(sizes.max()),
        "equations_median": float(np.median(equations)),
        "scipy_ms": 1000 * seconds["scipy"] / count, "cvxpy_ms": 1000 * seconds["cvxpy"] / count,
        "kept_model_ms": 1000 * seconds["kept"] / count,
        "largest_difference": float(max(np.max(np.abs(optima["scipy"] - optima[k])) for k in ("cvxpy", "kept"))),
        "optimum_scale": float(np.max(np.abs(optima["scipy"]))),
    }  # fmt: skip


def in_fresh_process(function, *args):
    """Run ``function(*args)`` in its own process (spawned: nothing of this one inherited)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(function, *args).result()


def main() -> None:
    """Run the three steps and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="2 x 3 x 4 municipalities by 10 sectors, for a quick run")
    parser.add_argument("--lps", type=int, default=None, help=f"attacker LPs timed (default {ATTACKER_LPS}, 50 small)")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                        help=f"seconds for the suppression MILP (default {TIME_LIMIT:g}; 0: none)")  # fmt: skip
    args = parser.parse_args()
    shape = SMALL if args.small else FULL
    count = args.lps or (50 if args.small else ATTACKER_LPS)
    started = time.perf_counter()
    suppression = in_fresh_process(run_suppression, shape, args.time_limit or None)
    print(f"suppression done: {suppression['solve_s']:.1f} s, audit {suppression['audit_s']:.1f} s", flush=True)
    adjustment = in_fresh_process(run_cta, shape)
    print(f"cta done: {adjustment['solve_s']:.1f} s, audit {adjustment['audit_s']:.1f} s", flush=True)
    lps = in_fresh_process(run_lps, shape, suppression.pop("suppressed"), count)
    rows = ["cells", "sensitive", "time_limit", "solve_s", "status", "rounds", "cuts", "lps", "objective", "bound",
            "cells_changed", "interior_changed", "secondary", "interior_value_changed", "interior_value_share",
            "interior_correlation", "interior_slope", "interior_variance_ratio", "audit_s", "audit_lps", "protected",
            "all_protected", "peak_mb_solve", "peak_mb"]  # fmt: skip
    frame = pd.DataFrame({r["method"]: {k: r.get(k) for k in rows} for r in (suppression, adjustment)})
    with pd.option_context("display.width", 200, "display.max_rows", 60):
        print(frame.map(lambda v: f"{v:.4g}" if isinstance(v, float) else v))
    for result in (suppression, adjustment):
        if result["unprotected"]:
            print(f"{result['method']}: the audit finds {len(result['unprotected'])} cell(s) unprotected: "
                  + "; ".join(result["unprotected"][:10]))  # fmt: skip
    print(f"\nattacker LPs ({lps['lps']}; median {lps['variables_median']:.0f} variables, at most "
          f"{lps['variables_max']}, median {lps['equations_median']:.0f} equations): scipy linprog(method='highs') "
          f"{lps['scipy_ms']:.2f} ms per LP, cvxpy (one Problem per LP, HiGHS) {lps['cvxpy_ms']:.2f} ms per LP, "
          f"kept highspy models per part (what suppress_table does) {lps['kept_model_ms']:.2f} ms per LP; cvxpy "
          f"{lps['cvxpy_ms'] / lps['kept_model_ms']:.1f} times as long; "
          f"optima agree to {lps['largest_difference']:.2g} "
          f"(of up to {lps['optimum_scale']:.3g}, scaled units)")  # fmt: skip
    print(f"wall time of the bench: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
