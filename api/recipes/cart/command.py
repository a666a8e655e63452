"""``bayessdc cart``: column-partially synthetic data by sequential CART with a Bayesian bootstrap in the leaves
(Rodriguez, Freiman, Reiter & Lauger): its options, the lines it prints and its demo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...command import Command, Option, columns, synthesize_options

__all__ = ["COMMAND", "by_column", "column_values", "replicate_design"]


def column_values(text: str) -> tuple[str, list[float]]:
    """``"hours=-8,-9"`` as ``("hours", [-8, -9])``; anything else is a ValueError."""
    column, sep, values = text.partition("=")
    try:
        numbers = [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        numbers = []
    if not sep or not column.strip() or not numbers:
        raise ValueError("write COLUMN=V1,V2 with numbers, e.g. hours=-8,-9")
    return column.strip(), [int(v) if v.is_integer() else v for v in numbers]


def by_column(pairs: list[tuple[str, list[float]]]) -> dict[str, list[float]]:
    """``[("hours", [-8]), ("hours", [-9])]`` as ``{"hours": [-8, -9]}``."""
    out: dict[str, list[float]] = {}
    for column, values in pairs:
        out.setdefault(column, []).extend(values)
    return out


def replicate_design(text: str, data: Any) -> Any:
    """``METHOD:COLUMNS`` as a :class:`bayessdc.ReplicateDesign` (``PREFIX*``: the columns of ``data`` named PREFIX
    and a number, in order; methods sdr, jk1, brr, bootstrap, ``fay=RHO``)."""
    from ...synthesis.replicates import ReplicateDesign, replicate_columns

    method, _, names = text.partition(":")
    chosen = replicate_columns(data, names[:-1]) if names.endswith("*") else tuple(columns(names))
    rho = float(method[4:]) if method.startswith("fay=") else None
    return ReplicateDesign(chosen, method="fay" if rho is not None else method, rho=rho)


def _rules(path: Path) -> Any:
    from ...models.cart.rules import load_rules

    return load_rules(path)


def summary(release: Any) -> list[str]:
    """The lines printed after a run: the run, the trees' rule fallbacks and every measure."""
    from ...report.text import measure_lines

    f = release.facts
    return [
        f"cart: {release.m} synthetic datasets of {f['records']} records, fit {f['fit_seconds']:.1f} s, "
        f"synthesis {f['synthesis_seconds']:.1f} s",
        f"  rule fallbacks to an ancestor node: {json.dumps(f['rule_fallbacks'])}",
        *measure_lines(release.measured),
    ]


def demo(out: Path, seed: int = 0) -> list[tuple[str, Any]]:
    """The CART synthesizer on a simulated ACS-like person file."""
    import bayessdc as bsd

    from ...report.text import measure_rows
    from ...synthesis.tables import TableSpec

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
    return [
        ("records", release.facts["records"]),
        ("synthetic datasets", release.m),
        *measure_rows(release),
        ("rule fallbacks", sum(release.facts["rule_fallbacks"].values())),
        ("seconds", release.seconds),
    ]


COMMAND = Command(
    name="cart",
    recipe="CART",
    help="sequential CART synthesis with a Bayesian bootstrap in the leaves (Rodriguez, Freiman, Reiter & Lauger)",
    description="Synthesize the columns SYNTHESIZE, in order, each from a tree fitted on the kept columns and the "
    "columns synthesized before it, drawing within each leaf from a Bayesian bootstrap of its observed values and "
    "never violating the declared logical rules; measure tau = 1 - L1/(2n) of tables against bootstrap replicates of "
    "the original; write release/ (synthetic data, model description) and private/.",
    options=(
        Option("synthesize.synthesize", "comma-separated columns to synthesize, in order", required=True),
        Option("synthesize.keep", "comma-separated columns kept as observed predictors"),
        Option("synthesize.weights", "the survey weight column: kept with keep= (partially synthetic), synthesized "
               "first without (fully synthetic); the utility figures are then weighted", metavar="COLUMN"),
        Option("synthesize.replicate_weights", "the replicate weights kept with weights=, e.g. "
               "sdr:PWGTP1,...,PWGTP80 or sdr:PWGTP* (methods: sdr, jk1, brr, bootstrap, fay=RHO); released beside "
               "the weights, the source of the analyst's variances", metavar="METHOD:COLUMNS",
               parse=replicate_design, reads_table=True),
        Option("CART.rules", "logical rules, JSON or YAML (bsd.load_rules)", type=Path, parse=_rules),
        *synthesize_options("CART"),
        Option("CART.min_leaf", "smallest number of records in a leaf (default {default})", type=int),
        Option("CART.ccp_alpha", "cost-complexity pruning parameter (default {default})", type=float),
        Option("CART.max_depth", "largest tree depth (default {default})", type=int),
        Option("CART.tree_builder", "native: compiled CART; sklearn: scikit-learn's, its reference (default "
               "{default})", choices=("native", "sklearn")),
        Option("CART.donors", "all: every observation of a leaf is a donor (the paper's); others: a record's own "
               "observation is left out of its own draw; tried when all fails the policy (default {default})",
               choices=("all", "others")),
        Option("CART.categorical", "comma-separated numeric columns to treat as categorical", parse=columns),
        Option("CART.tables", "a utility table cross-classifying these columns (repeatable; default: each synthesized "
               "column by each kept column, and all synthesized columns together; numeric columns with more than 20 "
               "values are cut into deciles)", flag="table", action="append", metavar="A,B,C"),
        Option("CART.bootstrap", "bootstrap replicates of the original (default {default})", type=int),
        Option("CART.missing_codes", "values of a numeric column that stand for a missing value (repeatable; "
               "synthpop's cont.na): synthesized as states before the value and released as the codes themselves",
               flag="missing-code", action="append", metavar="COLUMN=V1,V2", parse=column_values,
               combine=by_column),
        Option("CART.spikes", "spikes of a numeric column's distribution, e.g. income=0 (repeatable; synthpop's "
               "semicont)", flag="spike", action="append", metavar="COLUMN=V1,V2", parse=column_values,
               combine=by_column),
        Option("CART.smoothing", "perturb drawn numeric values by a Gaussian kernel (leaf bw.nrd0 bandwidth, within "
               "the observed range)", choices=("density",)),
        Option("CART.strata", "a column of areas: each area's records fitted and synthesized by trees of their own "
               "(synthpop's syn.strata), the column kept; records copied judged in each area too", metavar="COLUMN"),
        Option("CART.min_stratum", "fewest records an area's trees are fitted on; smaller areas are pooled (default: "
               "10 + 10 per synthesized column, synthpop's minstratumsize)", type=int, metavar="N"),
        Option("CART.pool_by", "a coarser area holding each area whole, within which the small areas are pooled",
               metavar="COLUMN"),
        Option("CART.area_model", "with strata=: synthesize the area first, each record's area drawn by this model "
               "(its defaults; gated by its release gate) given its kept values, then its other columns by the trees "
               "of its synthetic area; each area's number of records is then synthetic", choices=("dpmpm", "dp_areal")),
        Option("CART.area_columns", "comma-separated categorical columns the area model synthesizes with the area "
               "(dpmpm only)", parse=columns, metavar="A,B"),
        Option("CART.area_given", "comma-separated kept columns the area model draws the area given (default: every "
               "kept column but the survey weight)", parse=columns, metavar="A,B"),
        Option("CART.households", "the household id column: persons synthesized within households, each "
               "household's composition drawn as one value, its members given their household; kept columns must be "
               "the household's; the release holds new household ids", metavar="COLUMN"),
        Option("CART.relationship", "the column of each member's relationship to the reference person (with "
               "households=)", metavar="COLUMN"),
        Option("CART.reference", "the value of relationship= marking the reference person (default {default})",
               metavar="VALUE"),
        Option("CART.max_household", "most members of a household; a larger one is refused (default {default})",
               type=int, metavar="N"),
        Option("CART.scheduler", "address of a running dask scheduler (default: local)"),
        Option("CART.workers", "trees and datasets run at once locally (default: cores)", type=int),
    ),  # fmt: skip
    summary=summary,
    demo=demo,
)
