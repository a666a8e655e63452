"""``bayessdc cart``: column-partially synthetic data by sequential CART with a Bayesian bootstrap in the leaves.

Wiring only: read the data and the rules, run :func:`bayessdc.synthesize` with :class:`bayessdc.CART` (which
checks the input first, fits the trees, draws the datasets and measures table utility against the bootstrap),
write the release/private outputs and print a summary.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from . import DATA_HELP, synthesize_options
from .options import build, given, option

__all__ = ["add_parser", "column_values", "demo", "run", "summary"]


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
    p.add_argument("--data", required=True, type=Path, help=DATA_HELP)
    p.add_argument("--synthesize", required=True, help="comma-separated columns to synthesize, in order")
    p.add_argument("--keep", default="", help="comma-separated columns kept as observed predictors")
    p.add_argument(
        "--weights", default=None, metavar="COLUMN",
        help="the survey weight column: kept with --keep (partially synthetic), synthesized first without (fully "
        "synthetic); the utility figures are then weighted",
    )  # fmt: skip
    p.add_argument(
        "--replicate-weights", default=None, metavar="METHOD:COLUMNS",
        help="the replicate weights kept with --weights, e.g. sdr:PWGTP1,...,PWGTP80 or sdr:PWGTP* (methods: sdr, "
        "jk1, brr, bootstrap, fay=RHO); released beside the weights, the source of the analyst's variances",
    )  # fmt: skip
    option(p, "--rules", to="CART.rules", type=Path, help="logical rules, JSON or YAML (bsd.load_rules)")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    synthesize_options(p, "CART")
    option(p, "--min-leaf", to="CART.min_leaf", type=int,
           help="smallest number of records in a leaf (default {default})")  # fmt: skip
    option(p, "--ccp-alpha", to="CART.ccp_alpha", type=float,
           help="cost-complexity pruning parameter (default {default})")  # fmt: skip
    option(p, "--max-depth", to="CART.max_depth", type=int, help="largest tree depth (default {default})")
    option(p, "--tree-builder", to="CART.tree_builder", choices=("native", "sklearn"),
           help="native: compiled CART; sklearn: scikit-learn's, its reference (default {default})")  # fmt: skip
    option(p, "--donors", to="CART.donors", choices=("all", "others"),
           help="all: every observation of a leaf is a donor (the paper's); others: a record's own observation is "
           "left out of its own draw; tried when all fails the policy (default {default})")  # fmt: skip
    option(p, "--categorical", to="CART.categorical", help="comma-separated numeric columns to treat as categorical")
    option(
        p, "--table", to="CART.tables", action="append", metavar="A,B,C",
        help="a utility table cross-classifying these columns (repeatable; default: each synthesized column by "
        "each kept column, and all synthesized columns together; numeric columns with more than 20 values are "
        "cut into deciles)",
    )  # fmt: skip
    option(p, "--bootstrap", to="CART.bootstrap", type=int,
           help="bootstrap replicates of the original (default {default})")  # fmt: skip
    option(
        p, "--missing-code", to="CART.missing_codes", action="append", metavar="COLUMN=V1,V2",
        help="values of a numeric column that stand for a missing value (repeatable; synthpop's cont.na): "
        "synthesized as states before the value and released as the codes themselves",
    )  # fmt: skip
    option(
        p, "--spike", to="CART.spikes", action="append", metavar="COLUMN=V1,V2",
        help="spikes of a numeric column's distribution, e.g. income=0 (repeatable; synthpop's semicont)",
    )  # fmt: skip
    option(
        p, "--smoothing", to="CART.smoothing", choices=["density"],
        help="perturb drawn numeric values by a Gaussian kernel (leaf bw.nrd0 bandwidth, within the observed range)",
    )  # fmt: skip
    option(p, "--scheduler", to="CART.scheduler", help="address of a running dask scheduler (default: local)")
    option(p, "--workers", to="CART.workers", type=int, help="trees and datasets run at once locally (default: cores)")
    p.set_defaults(func=run)


def column_values(flags: list[str] | None, flag: str) -> dict[str, list[float]] | None:
    """``["hours=-8,-9", "income=0"]`` as ``{"hours": [-8, -9], "income": [0]}`` (``flag`` names the option in
    errors); None without the flag, the library's default."""
    from bayessdc import InputError

    out: dict[str, list[float]] = {}
    for text in flags or []:
        column, sep, values = text.partition("=")
        try:
            numbers = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            numbers = []
        if not sep or not column.strip() or not numbers:
            raise InputError(f"{flag} {text!r}: write COLUMN=V1,V2 with numbers, e.g. {flag} hours=-8,-9")
        out.setdefault(column.strip(), []).extend(int(v) if v.is_integer() else v for v in numbers)
    return out or None


def _columns(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def run(args: argparse.Namespace) -> int:
    """Run ``bayessdc cart`` from parsed arguments."""
    import bayessdc as bsd

    data = bsd.read_table(args.data)
    options = given(args, "CART")
    if "rules" in options:
        options["rules"] = bsd.load_rules(options["rules"])
    if "categorical" in options:
        options["categorical"] = _columns(options["categorical"])
    for name, flag in (("missing_codes", "--missing-code"), ("spikes", "--spike")):
        if name in options:
            options[name] = column_values(options[name], flag)
    release = bsd.synthesize(
        data, build("CART", options), synthesize=_columns(args.synthesize), keep=_columns(args.keep), out=args.out,
        policy=args.policy, holdout=args.holdout, progress=not args.quiet, weights=args.weights,
        replicate_weights=replicate_design(args.replicate_weights, data), **given(args, "synthesize"),
    )  # fmt: skip
    if not args.quiet:
        print(summary(release, args.out))
    return 0


def summary(release: Any, out: Path) -> str:
    """The lines printed after a run: the run, the trees' rule fallbacks, and every measure."""
    from bayessdc.report.text import measure_lines

    f = release.facts
    report = out / "private" / "report.html"
    return "\n".join([
        f"cart: {release.m} synthetic datasets of {f['records']} records, fit {f['fit_seconds']:.1f} s, "
        f"synthesis {f['synthesis_seconds']:.1f} s",
        f"  rule fallbacks to an ancestor node: {json.dumps(f['rule_fallbacks'])}",
        *measure_lines(release.measured),
        f"  written: {out / 'release'} and {out / 'private'} (the run's report: {report})",
    ])  # fmt: skip


def demo(out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """Run the CART synthesizer on a simulated ACS-like person file; rows of figures for ``bayessdc demo``."""
    import bayessdc as bsd
    from bayessdc.report.text import measure_rows
    from bayessdc.synthesis.tables import TableSpec

    data = bsd.examples.acs_persons(n=3000, seed=seed)
    tables = [
        TableSpec("T1", ("sex", "age", "education"), "age >= 18", {"age": [18, 25, 35, 45, 55, 65, 200]}),
        TableSpec("T2", ("enrolled", "grade"), "age >= 3"),
    ]
    recipe = bsd.CART(rules=bsd.examples.acs_rules(), tables=tables, bootstrap=500)
    release = bsd.synthesize(
        data, recipe, synthesize=["enrolled", "grade", "education", "marital"], keep=["age", "sex", "relationship"],
        m=20, seed=seed, out=Path(out) / "cart", progress=False,
    )  # fmt: skip
    rows: list[tuple[str, Any]] = [("records", release.facts["records"]), ("synthetic datasets", release.m)]
    rows += measure_rows(release)
    rows.append(("rule fallbacks", sum(release.facts["rule_fallbacks"].values())))
    rows.append(("seconds", release.seconds))
    return [{"synthesizer": "cart", "measure": k, "value": v} for k, v in rows]


def replicate_design(text: str | None, data: Any) -> Any:
    """``--replicate-weights METHOD:COLUMNS`` as a :class:`bsd.ReplicateDesign` (``PREFIX*``: the columns named
    PREFIX and a number, in order); ``None`` without the flag."""
    import bayessdc as bsd
    from bayessdc.synthesis.replicates import replicate_columns

    if text is None:
        return None
    method, _, columns = text.partition(":")
    names = replicate_columns(data, columns[:-1]) if columns.endswith("*") else tuple(_columns(columns))
    try:
        rho = float(method[4:]) if method.startswith("fay=") else None
        return bsd.ReplicateDesign(names, method="fay" if rho is not None else method, rho=rho)
    except ValueError as err:
        raise bsd.InputError(f"--replicate-weights {text!r}: {err}") from None
