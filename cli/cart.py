"""``bayessdc cart``: column-partially synthetic data by sequential CART with a Bayesian bootstrap in the leaves.

Wiring only: read the data and the rules, fit the synthesizer (which checks the input first), draw the
synthetic datasets, measure table utility against the bootstrap, and write the release/private outputs.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from . import UserError
from .flows import read_table

__all__ = ["CartJobResult", "add_parser", "default_tables", "demo", "parse_table", "run", "run_cart_job"]

#: Numeric columns with more distinct values than this are cut into deciles in the default tables.
_MAX_TABLE_LEVELS = 20


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc cart``."""
    p = subparsers.add_parser(
        "cart",
        help="sequential CART synthesis with a Bayesian bootstrap in the leaves (Rodriguez, Freiman, Reiter & Lauger)",
        description="Synthesize the columns SYNTHESIZE, in order, each from a tree fitted on the kept columns and "
        "the columns synthesized before it, drawing within each leaf from a Bayesian bootstrap of its observed "
        "values and never violating the declared logical rules; measure tau = 1 - L1/(2n) of tables against "
        "bootstrap replicates of the original; write release/ (synthetic data, model description) and private/.",
    )
    p.add_argument("--data", required=True, type=Path, help="input table, CSV or Parquet")
    p.add_argument("--synthesize", required=True, help="comma-separated columns to synthesize, in order")
    p.add_argument("--keep", default="", help="comma-separated columns kept as observed predictors")
    p.add_argument("--rules", type=Path, default=None, help="logical rules, JSON or YAML (see bayessdc.models.rules)")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--m", type=int, default=5, help="number of synthetic datasets (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    p.add_argument("--min-leaf", type=int, default=5, help="smallest number of records in a leaf (default 5)")
    p.add_argument("--ccp-alpha", type=float, default=0.0, help="cost-complexity pruning parameter (default 0)")
    p.add_argument("--max-depth", type=int, default=None, help="largest tree depth (default none)")
    p.add_argument("--categorical", default="", help="comma-separated numeric columns to treat as categorical")
    p.add_argument(
        "--table",
        action="append",
        default=None,
        metavar="A,B,C",
        help="a utility table cross-classifying these columns (repeatable; default: each synthesized column by "
        "each kept column, and all synthesized columns together; numeric columns with more than 20 values are "
        "cut into deciles)",
    )
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates of the original (default 1000)")
    p.add_argument("--quiet", action="store_true", help="no report")
    p.set_defaults(func=run)


def _columns(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def parse_table(text: str, data: pd.DataFrame, name: str | None = None) -> Any:
    """A :class:`bayessdc.synthesis.tables.TableSpec` from ``"A,B,C"``, cutting many-valued numeric columns.

    A numeric column with more than 20 distinct values in ``data`` is cut into deciles of ``data`` (edges
    from the confidential data: the table definition is written to ``private/`` only).
    """
    from bayessdc.synthesis.tables import TableSpec

    columns = _columns(text)
    unknown = [c for c in columns if c not in data.columns]
    if unknown:
        raise UserError(f"--table {text!r}: unknown column(s) {', '.join(unknown)}")
    bins = {}
    for column in columns:
        values = data[column]
        if pd.api.types.is_numeric_dtype(values) and values.nunique() > _MAX_TABLE_LEVELS:
            edges = sorted(set(values.quantile([k / 10 for k in range(10)]).tolist()))
            bins[column] = [*edges, float(values.max()) + 1]
    return TableSpec(name or " x ".join(columns), tuple(columns), None, bins)


def default_tables(data: pd.DataFrame, synthesize: list[str], keep: list[str]) -> list[Any]:
    """Each synthesized column by each kept column, and all synthesized columns together."""
    tables = [parse_table(f"{s},{k}", data) for s in synthesize for k in keep]
    if len(synthesize) > 1 or not keep:
        tables.append(parse_table(",".join(synthesize), data))
    return tables


@dataclass
class CartJobResult:
    """Figures of a finished CART run (also written under ``private/``)."""

    out: Path
    n_records: int
    m: int
    utility: dict
    trees: dict
    fit_seconds: float
    synthesis_seconds: float
    seconds: float


def run_cart_job(
    data: pd.DataFrame,
    out: Path,
    *,
    synthesize: list[str],
    keep: list[str],
    rules: list[Any] | None = None,
    m: int = 5,
    seed: int = 0,
    min_leaf: int = 5,
    ccp_alpha: float = 0.0,
    max_depth: int | None = None,
    categorical: list[str] | None = None,
    tables: list[Any] | None = None,
    n_bootstrap: int = 1000,
) -> CartJobResult:
    """Run the whole CART job on ``data`` and write ``out/release`` and ``out/private``.

    Parameters mirror the command-line options; ``rules`` are rule objects or their plain form and
    ``tables`` :class:`bayessdc.synthesis.tables.TableSpec` objects (default :func:`default_tables`).
    Bad input raises :class:`bayessdc.models.cart.CartDataError` or
    :class:`bayessdc.models.rules.RuleError` before anything is fitted or written.
    """
    from bayessdc.models.cart import CartSynthesizer
    from bayessdc.synthesis.output import OutputFolder, fingerprint_frame
    from bayessdc.synthesis.tables import (
        relative_cell_errors,
        summarize_relative_errors,
        summarize_tau,
        tau_distributions,
    )

    start = time.perf_counter()
    if m < 1:
        raise UserError("--m must be at least 1")
    if n_bootstrap < 1:
        raise UserError("--bootstrap must be at least 1")
    synthesizer = CartSynthesizer(
        synthesize,
        keep,
        rules or [],
        min_samples_leaf=min_leaf,
        ccp_alpha=ccp_alpha,
        max_depth=max_depth,
        categorical=categorical or [],
    )
    released = synthesizer.validate(data)
    tables = tables if tables is not None else default_tables(released, list(synthesize), list(keep))
    for spec in tables:
        unknown = [c for c in spec.by if c not in released.columns]
        if unknown:
            raise UserError(f"table {spec.name!r}: column(s) {', '.join(unknown)} are neither kept nor synthesized")
    synthesizer.fit(data, seed)  # checks the rules against the data before fitting
    folder = OutputFolder(
        out,
        {
            "synthesizer": "cart",
            "input": fingerprint_frame(released),
            "synthesize": list(synthesize),
            "keep": list(keep),
            "rules": [r.to_dict() for r in synthesizer.rules],
            "tree_settings": {"min_samples_leaf": min_leaf, "ccp_alpha": ccp_alpha, "max_depth": max_depth},
            "categorical": list(categorical or []),
            "tables": {t.name: t.to_dict() for t in tables},
            "bootstrap": n_bootstrap,
            "m": m,
            "seed": seed,
        },
    )
    synthesis_start = time.perf_counter()
    synthetic = synthesizer.synthesize_datasets(m)
    synthesis_seconds = time.perf_counter() - synthesis_start

    taus = tau_distributions(released, synthetic, tables, n_bootstrap=n_bootstrap, seed=seed)
    tau_summary = summarize_tau(taus)
    utility = {
        "measure": "tau = 1 - L1/(2n) against the original table; bootstrap replicates show sampling variability",
        "tables": {
            spec.name: {**spec.to_dict(), **tau_summary[spec.name], "synthetic_per_dataset": None}
            for spec in tables
        },
        "relative_errors": {},
    }
    for spec in tables:
        per_dataset = taus[(taus["table"] == spec.name) & (taus["source"] == "synthetic")]
        utility["tables"][spec.name]["synthetic_per_dataset"] = per_dataset["tau"].tolist()
    for column in synthesize:
        if synthesizer.describe()["trees"][column] == "classification":
            errors = relative_cell_errors(released, synthetic, column)
            utility["relative_errors"][column] = summarize_relative_errors(errors)

    trees = synthesizer.tree_summary()
    folder.write_private_json("utility.json", utility)
    folder.write_private_json(
        "diagnostics.json",
        {
            "trees": trees,
            "fit_seconds": synthesizer.fit_seconds,
            "synthesis_seconds": synthesis_seconds,
            "n_records": len(released),
            "dropped_columns": [c for c in data.columns if c not in released.columns],
        },
    )
    model = synthesizer.describe()
    model.update({"m": m, "seed": seed, "n_records": len(released)})
    folder.write_release_json("model.json", model)
    folder.write_release_table("synthetic.parquet", synthetic)
    return CartJobResult(
        out=Path(out),
        n_records=len(released),
        m=m,
        utility=utility,
        trees=trees,
        fit_seconds=float(synthesizer.fit_seconds or 0.0),
        synthesis_seconds=synthesis_seconds,
        seconds=time.perf_counter() - start,
    )


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc cart`` from parsed arguments."""
    from bayessdc.models.rules import load_rules

    data = read_table(args.data)
    rules = load_rules(args.rules) if args.rules is not None else []
    tables = [parse_table(text, data) for text in args.table] if args.table else None
    result = run_cart_job(
        data,
        args.out,
        synthesize=_columns(args.synthesize),
        keep=_columns(args.keep),
        rules=rules,
        m=args.m,
        seed=args.seed,
        min_leaf=args.min_leaf,
        ccp_alpha=args.ccp_alpha,
        max_depth=args.max_depth,
        categorical=_columns(args.categorical),
        tables=tables,
        n_bootstrap=args.bootstrap,
    )
    if not args.quiet:
        print(_report(result))
    return 0


def _report(result: CartJobResult) -> str:
    lines = [
        f"cart: {result.m} synthetic datasets of {result.n_records} records, fit {result.fit_seconds:.1f} s, "
        f"synthesis {result.synthesis_seconds:.1f} s",
        "  tau (median [quartiles]), synthetic vs bootstrap of the original:",
    ]
    for name, table in result.utility["tables"].items():
        s, b = table["synthetic"], table["bootstrap"]
        lines.append(
            f"    {name}: {s['median']:.4f} [{s['q1']:.4f}, {s['q3']:.4f}] vs "
            f"{b['median']:.4f} [{b['q1']:.4f}, {b['q3']:.4f}]"
        )
    fallbacks = {c: t["fallbacks"].get("ancestor", 0) for c, t in result.trees.items()}
    lines.append(f"  rule fallbacks to an ancestor node: {json.dumps(fallbacks)}")
    lines.append(f"  written: {result.out / 'release'} and {result.out / 'private'}")
    return "\n".join(lines)


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """Run the CART synthesizer on a simulated ACS-like person file; rows of figures for ``bayessdc demo``."""
    from bayessdc.models.cart import acs_example_rules, simulate_acs_persons
    from bayessdc.synthesis.tables import TableSpec

    data = simulate_acs_persons(n=3000, seed=seed)
    tables = [
        TableSpec("T1", ("sex", "age", "education"), "age >= 18", {"age": [18, 25, 35, 45, 55, 65, 200]}),
        TableSpec("T2", ("enrolled", "grade"), "age >= 3"),
    ]
    result = run_cart_job(
        data,
        Path(out) / "cart",
        synthesize=["enrolled", "grade", "education", "marital"],
        keep=["age", "sex", "relationship"],
        rules=acs_example_rules(),
        m=20,
        seed=seed,
        tables=tables,
        n_bootstrap=500,
    )
    rows: list[tuple[str, Any]] = [("records", result.n_records), ("synthetic datasets", result.m)]
    for name in ("T1", "T2"):
        table = result.utility["tables"][name]
        rows.append((f"tau {name}, synthetic median", table["synthetic"]["median"]))
        rows.append((f"tau {name}, bootstrap median", table["bootstrap"]["median"]))
    rows.append(("rule fallbacks", sum(t["fallbacks"].get("ancestor", 0) for t in result.trees.values())))
    rows.append(("seconds", result.seconds))
    return [{"synthesizer": "cart", "measure": k, "value": v} for k, v in rows]
