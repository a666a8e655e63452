"""Quality of an adjusted table (Cox's Tables 3 and 4) and the checks that it is safe and additive."""

from __future__ import annotations

import math

import numpy as np

from .problem import Adjustment


def cell_statistics(original: np.ndarray, adjusted: np.ndarray) -> dict:
    """Compare adjusted with original values over one set of cells.

    Parameters
    ----------
    original, adjusted : numpy.ndarray

    Returns
    -------
    dict
        ``n``, ``correlation``, ``slope`` and ``intercept`` of the least-squares line of adjusted on original,
        ``variance_ratio`` (adjusted over original, population variances), ``L`` (= slope - 1, Cox's
        Cov(a, y)/Var(a)), ``mean_original``, ``mean_adjusted``, ``net_adjustment``,
        ``total_absolute_adjustment``, ``relative_adjustment`` (sum |y| / sum |a|) and
        ``mean_percent_adjustment`` (mean of 100 |y_i| / a_i over cells with a_i != 0). Undefined figures
        (fewer than two cells, constant values) are None.
    """
    a = np.asarray(original, dtype=float)
    b = np.asarray(adjusted, dtype=float)
    y = b - a
    out: dict = {"n": int(a.size)}
    var_a = float(a.var()) if a.size else float("nan")
    if a.size >= 2 and var_a > 0:
        cov = float(np.mean((a - a.mean()) * (b - b.mean())))
        slope = cov / var_a
        var_b = float(b.var())
        out["correlation"] = cov / math.sqrt(var_a * var_b) if var_b > 0 else None
        out["slope"] = slope
        out["intercept"] = float(b.mean() - slope * a.mean())
        out["variance_ratio"] = var_b / var_a
        out["L"] = slope - 1.0
    else:
        out.update(correlation=None, slope=None, intercept=None, variance_ratio=None, L=None)
    out["mean_original"] = float(a.mean()) if a.size else None
    out["mean_adjusted"] = float(b.mean()) if a.size else None
    out["net_adjustment"] = float(y.sum())
    out["total_absolute_adjustment"] = float(np.abs(y).sum())
    denominator = float(np.abs(a).sum())
    out["relative_adjustment"] = float(np.abs(y).sum()) / denominator if denominator > 0 else None
    nonzero = a != 0
    out["mean_percent_adjustment"] = float(np.mean(100 * np.abs(y[nonzero]) / np.abs(a[nonzero]))) \
        if nonzero.any() else None
    return out


def protection_shortfalls(result: Adjustment, tolerance: float = 1e-6) -> np.ndarray:
    """The sensitive cells (positions) whose adjustment is short of their protection or in the wrong direction.

    Parameters
    ----------
    result : Adjustment
    tolerance : float, default 1e-6
        Relative tolerance, times the largest cell value (at least 1).
    """
    a, y = result.original, result.adjustment
    atol = tolerance * max(1.0, float(np.abs(a).max()))
    sensitive = result.sensitive
    wrong_direction = sensitive & (np.sign(y) != result.directions)
    return np.flatnonzero(sensitive & ((np.abs(y) < result.required_move - atol) | wrong_direction))


def quality_report(result: Adjustment, tolerance: float = 1e-6) -> dict:
    """Return the quality figures and safety checks of an adjustment.

    Parameters
    ----------
    result : Adjustment
    tolerance : float, default 1e-6
        Relative tolerance (times the largest cell value, at least 1e-6) of the checks.

    Returns
    -------
    dict
        ``sensitive_cells``, ``statistics_cells`` (when they differ from the sensitive cells),
        ``interior_cells`` and ``all_cells``: :func:`cell_statistics` of each; ``checks``: whether every
        sensitive cell moved by at least its protection (and which did not), whether every total adds up
        (the largest residual and the failing totals), whether no cell became negative; ``solver``: name,
        method, objective, status, optimality gap, objective value, seconds; ``settings``.
    """
    table = result.table
    a, b = result.original, result.adjusted
    scale = max(1.0, float(np.abs(a).max()))
    atol = tolerance * scale
    sensitive = result.sensitive
    interior = table.cells["interior"].to_numpy(dtype=bool)

    short = protection_shortfalls(result, tolerance)
    residuals = table.additivity_residuals(b)
    failing = np.flatnonzero(np.abs(residuals) > atol)
    negative = np.flatnonzero((b < -atol) & (a >= 0))

    report = {
        "sensitive_cells": cell_statistics(a[sensitive], b[sensitive]),
        "interior_cells": cell_statistics(a[interior], b[interior]),
        "all_cells": cell_statistics(a, b),
    }
    if not np.array_equal(result.statistics_cells, sensitive):
        mask = result.statistics_cells
        report["statistics_cells"] = cell_statistics(a[mask], b[mask])
    report["checks"] = {
        "n_cells": int(table.n_cells),
        "n_sensitive": int(sensitive.sum()),
        "protection_met": bool(len(short) == 0),
        "cells_below_protection": [table.describe_cell(i) for i in short[:50]],
        "totals_add_up": bool(len(failing) == 0),
        "max_additivity_residual": float(np.abs(residuals).max(initial=0.0)),
        "totals_not_adding_up": [table.describe_cell(table.total_cell[e]) for e in failing[:50]],
        "non_negative": bool(len(negative) == 0),
    }
    report["solver"] = {
        "solver": result.solver,
        "method": result.method,
        "objective": result.objective,
        "status": result.status,
        "optimality_gap": result.optimality_gap,
        "objective_value": result.objective_value,
        "solve_seconds": result.solve_seconds,
    }
    report["settings"] = dict(result.settings)
    return _finite(report)


def _finite(value):
    """Replace NaN and infinities by None so the report is valid JSON."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value
