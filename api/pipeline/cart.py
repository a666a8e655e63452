"""The sequential-CART synthesizer's steps of the pipeline (Rodriguez, Freiman, Reiter & Lauger).

Column-partially synthetic data: the columns to synthesize are drawn, in order, each from a tree fitted on
the kept columns and the columns synthesized before it, with a Bayesian bootstrap of the observed values
in every leaf and the declared logical rules never violated (:mod:`bayessdc.models.cart`). Utility is the
paper's ``tau = 1 - L1/(2n)`` of count tables, set against bootstrap replicates of the original
(:mod:`bayessdc.synthesis.tables`).

What the pipeline's generic steps mean for CART
-----------------------------------------------
*Diagnostics.* CART draws no posterior by MCMC: each tree is fitted once, and the only randomness of a
dataset is its leaves' bootstrap weights. There is nothing for a convergence gate to judge, so the gate
passes by construction: ``Diagnostics(posteriors={}, summary=..., passed=True)``. The summary
(``private/diagnostics.json``) says what was fitted: per synthesized column the tree's leaves and depth, the
rules enforced when drawing it and how often a draw fell back to an ancestor node; the fit and synthesis
times, the number of records and the input columns not released.

*Risk.* CART has no model-based disclosure risk (no posterior of which an intruder's attribute risk could be
computed by importance sampling). Its release is measured as every release of records is
(:mod:`bayessdc.measures`): the records copied from the original against a held-out share, and the
replicated uniques, which a policy criterion on them removes without a refit. For the categorical synthesized
columns, ``release.risk(known=[["age", "sex", "marital"]])`` adds the identification risk and exact attribute
disclosures of Hu & Savitsky (Section 4) beside their inherent bounds (:func:`identification_figures` gives
them in the form of ``private/risk.json``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from bayessdc.measures import MeasureInput
from bayessdc.models.cart import CartSynthesizer, check_rules_hold, encode_columns
from bayessdc.models.cart.rules import Rule, load_rules, parse_rules
from bayessdc.synthesis.output import fingerprint_frame
from bayessdc.synthesis.tables import (
    TableSpec,
    relative_cell_errors,
    summarize_relative_errors,
    summarize_tau,
    tau_distributions,
)

from ..errors import InputError, NotApplicableError
from ..release import Diagnostics, Measures, Release
from .recipe import Drawn, Fitted, Lever, Prepared, Recipe, column_list

__all__ = ["CART", "default_tables", "identification_figures", "parse_table", "table_utility"]

#: Numeric columns with more distinct values than this are cut into deciles in the default tables.
MAX_TABLE_LEVELS = 20


@dataclass(kw_only=True)
class CartPrepared(Prepared):
    """CART's validated input: ``data`` holds the released columns of the confidential table.

    Attributes
    ----------
    frame
        The table as given (the trees read the kept columns from it).
    synthesize, keep
        The synthesized columns in synthesis order, and the kept ones.
    rules
        The logical rules, checked against the data.
    tables
        The utility tables.
    dropped
        Input columns neither kept nor synthesized (not released).
    """

    frame: pd.DataFrame
    synthesize: list[str]
    keep: list[str]
    rules: list[Rule]
    tables: list[TableSpec]
    dropped: list[str] = field(default_factory=list)


@dataclass
class CART(Recipe):
    """Sequential CART synthesis with a Bayesian bootstrap in the leaves; defaults are the command line's.

    Parameters
    ----------
    rules
        Logical rules never violated by the synthetic data: rule objects or their plain form
        (:mod:`bayessdc.models.cart.rules`), a mapping ``{"rules": [...]}``, or the path of a JSON/YAML rules file.
    min_leaf
        Smallest number of confidential records in a leaf (``--min-leaf``, default 5).
    ccp_alpha
        Cost-complexity pruning parameter (``--ccp-alpha``, default 0).
    max_depth
        Largest tree depth (``--max-depth``, default none).
    categorical
        Numeric columns treated as categorical (``--categorical``).
    tables
        The tables of the utility check (``--table``): :class:`bayessdc.synthesis.tables.TableSpec` objects
        or ``"A,B,C"`` strings (see :func:`parse_table`); default :func:`default_tables`.
    bootstrap
        Bootstrap replicates of the original per table (``--bootstrap``, default 1000).

    Notes
    -----
    Columns of the input that are neither kept nor synthesized are not released. See the module docstring
    for what the diagnostics and the risk of a CART release hold.

    Examples
    --------
    >>> import bayessdc as bsd
    >>> recipe = bsd.CART(min_leaf=10)
    >>> recipe.min_leaf, recipe.default_m, recipe.bootstrap
    (10, 5, 1000)
    """

    rules: Sequence[Rule | Mapping[str, Any]] | Mapping[str, Any] | str | os.PathLike[str] = ()
    min_leaf: int = 5
    ccp_alpha: float = 0.0
    max_depth: int | None = None
    categorical: Sequence[str] = ()
    tables: Sequence[TableSpec | str] | None = None
    bootstrap: int = 1000
    name: ClassVar[str] = "cart"

    def _rules(self) -> list[Rule]:
        if isinstance(self.rules, str | os.PathLike):
            return load_rules(self.rules)
        return parse_rules(self.rules if isinstance(self.rules, Mapping) else list(self.rules or []))

    def _synthesizer(self, synthesize: list[str], keep: list[str], rules: list[Rule]) -> CartSynthesizer:
        return CartSynthesizer(
            synthesize,
            keep,
            rules,
            min_samples_leaf=self.min_leaf,
            ccp_alpha=self.ccp_alpha,
            max_depth=self.max_depth,
            categorical=list(self.categorical),
        )

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0
    ) -> CartPrepared:
        """Check the columns, the tables and the rules against the data (errors name the column, rule or rows)."""
        if isinstance(self.bootstrap, bool) or not isinstance(self.bootstrap, int) or self.bootstrap < 1:
            raise InputError(f"bootstrap= must be at least 1, got {self.bootstrap!r}")
        synthesize, keep = list(synthesize or []), list(keep or [])
        synthesizer = self._synthesizer(synthesize, keep, self._rules())
        released = synthesizer.validate(frame)
        tables = _table_specs(self.tables, frame, released, synthesize, keep)
        _check_rules(synthesizer, released)
        identity = {
            "synthesizer": "cart",
            "input": fingerprint_frame(released),
            "synthesize": synthesize,
            "keep": keep,
            "rules": [r.to_dict() for r in synthesizer.rules],
            "tree_settings": {
                "min_samples_leaf": self.min_leaf,
                "ccp_alpha": self.ccp_alpha,
                "max_depth": self.max_depth,
            },
            "categorical": list(self.categorical),
            "tables": {t.name: t.to_dict() for t in tables},
            "bootstrap": self.bootstrap,
        }
        dropped = [c for c in frame.columns if c not in released.columns]
        return CartPrepared(
            released, identity, frame=frame, synthesize=synthesize, keep=keep, rules=list(synthesizer.rules),
            tables=tables, dropped=dropped,
        )  # fmt: skip

    def fit(self, prepared: CartPrepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """Fit one tree per synthesized column, in order (state: the fitted :class:`CartSynthesizer`).

        CART's path through the pipeline is explicit: it draws no posterior, so there is nothing for a
        convergence gate to judge and the gate passes by construction; the m datasets come from the trees'
        leaves with Bayesian bootstrap weights (:meth:`draw`)."""
        synthesizer = self._synthesizer(prepared.synthesize, prepared.keep, prepared.rules)
        synthesizer.fit(prepared.frame, seed)
        summary = {
            "trees": synthesizer.tree_summary(),
            "fit_seconds": synthesizer.fit_seconds,
            "synthesis_seconds": None,
            "n_records": len(prepared.data),
            "dropped_columns": prepared.dropped,
        }
        return Fitted(Diagnostics({}, summary, passed=True), None, what="the trees", state=synthesizer)

    def describe(self, prepared: CartPrepared, fitted: Fitted) -> dict[str, Any]:
        """The trees' settings, rules and column kinds (no split or leaf value), and the number of records."""
        return {**fitted.state.describe(), "n_records": len(prepared.data)}

    def report_content(self, prepared: CartPrepared, release: Release) -> Any:
        """The report's material: what was synthesized, the synthesized columns compared, the trees."""
        return cart_report_content(prepared, release)

    def draw(self, prepared: CartPrepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Drawn:
        """Draw the m datasets from the trees and measure tau of every table against the bootstrap."""
        synthesizer: CartSynthesizer = fitted.state
        released, tables = prepared.data, prepared.tables
        start = time.perf_counter()
        synthetic = synthesizer.synthesize_datasets(m)
        synthesis_seconds = time.perf_counter() - start
        kinds = synthesizer.describe()["trees"]
        utility = table_utility(released, synthetic, tables, kinds, n_bootstrap=self.bootstrap, seed=seed)
        trees = synthesizer.tree_summary()
        summary = fitted.diagnostics.summary
        summary.update(trees=trees, synthesis_seconds=synthesis_seconds)
        measures = CartMeasures(released, synthetic, list(synthesizer.keep), kinds, seed)
        measures.tables = list(tables)
        return Drawn(
            synthetic,
            facts={
                "records": len(released),
                "fit_seconds": float(synthesizer.fit_seconds or 0.0),
                "synthesis_seconds": synthesis_seconds,
                "rule_fallbacks": {c: t["fallbacks"].get("ancestor", 0) for c, t in trees.items()},
            },
            utility_figures=utility,
            measures=measures,
            measure_input=self._measure_input(measures, synthesizer),
        )

    def _measure_input(self, measures: CartMeasures, synthesizer: CartSynthesizer) -> MeasureInput:
        """What the release's measures read: records copied, replicated uniques and tau of the tables. A CART
        release is judged as one of whole records (replicated uniques can be removed without a refit); the
        identification risk of its categorical synthesized columns is ``release.risk(known=...)``."""
        data = measures.measure_input(bootstrap=max(self.bootstrap, 1))
        data.released, data.bootstrap = [*synthesizer.keep, *synthesizer.synthesize], self.bootstrap
        return data

    def levers(self) -> list[Lever]:
        """What lowers the records a CART release copies, in words."""
        return [
            Lever("min_leaf", "larger leaves: each synthetic value drawn from more confidential records"),
            Lever("ccp_alpha", "more pruning: fewer, larger leaves"),
            Lever("replicated uniques", "removed from the synthetic datasets by the pipeline when a policy criterion "
                  "on replicated_uniques fails", refit=False),
        ]  # fmt: skip


def _check_rules(synthesizer: CartSynthesizer, released: pd.DataFrame) -> None:
    """The rules' columns and values, and the original data against the rules (what ``fit`` checks first).

    Done before the output folder is created, so that a violated rule leaves nothing behind.
    """
    schema, codes = encode_columns(released, synthesizer.categorical)
    check_rules_hold(synthesizer.rules, codes, schema)


def _columns(text: str) -> list[str]:
    return column_list(text) or []


def parse_table(text: str, data: pd.DataFrame, name: str | None = None) -> TableSpec:
    """A :class:`bayessdc.synthesis.tables.TableSpec` from ``"A,B,C"``, cutting many-valued numeric columns.

    A numeric column with more than 20 distinct values in ``data`` is cut into deciles of ``data`` (edges
    from the confidential data: the table definition is written to ``private/`` only).

    Raises
    ------
    bayessdc.InputError
        A column is not in ``data``.
    """
    columns = _columns(text)
    unknown = [c for c in columns if c not in data.columns]
    if unknown:
        raise InputError(f"tables={text!r}: unknown column(s) {', '.join(unknown)}")
    bins = {}
    for column in columns:
        values = data[column]
        if pd.api.types.is_numeric_dtype(values) and values.nunique() > MAX_TABLE_LEVELS:
            edges = sorted(set(values.quantile([k / 10 for k in range(10)]).tolist()))
            bins[column] = [*edges, float(values.max()) + 1]
    return TableSpec(name or " x ".join(columns), tuple(columns), None, bins)


def default_tables(data: pd.DataFrame, synthesize: list[str], keep: list[str]) -> list[TableSpec]:
    """Each synthesized column by each kept column, and all synthesized columns together."""
    tables = [parse_table(f"{s},{k}", data) for s in synthesize for k in keep]
    if len(synthesize) > 1 or not keep:
        tables.append(parse_table(",".join(synthesize), data))
    return tables


def _table_specs(
    tables: Sequence[TableSpec | str] | TableSpec | str | None,
    data: pd.DataFrame,
    released: pd.DataFrame,
    synthesize: list[str],
    keep: list[str],
) -> list[TableSpec]:
    """The utility tables: given (strings parsed against ``data``) or the defaults; every column released."""
    if tables is None:
        specs = default_tables(released, synthesize, keep)
    else:
        given = [tables] if isinstance(tables, str | TableSpec) else tables
        specs = [t if isinstance(t, TableSpec) else parse_table(t, data) for t in given]
    for spec in specs:
        unknown = [c for c in spec.by if c not in released.columns]
        if unknown:
            raise InputError(f"table {spec.name!r}: column(s) {', '.join(unknown)} are neither kept nor synthesized")
    return specs


def table_utility(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    tables: Sequence[TableSpec],
    kinds: Mapping[str, str | None],
    *,
    n_bootstrap: int,
    seed: int,
) -> dict[str, Any]:
    """``tau`` of every table for the synthetic datasets against bootstrap replicates of the original, and the
    relative errors of the category counts of every categorical synthesized column (``private/utility.json``).

    Parameters
    ----------
    original
        The released columns of the confidential data.
    synthetic
        The m datasets with their ``synthetic`` column.
    tables
        The tables compared.
    kinds
        Synthesized column -> ``"classification"`` or ``"regression"`` (its tree).
    n_bootstrap, seed
        Bootstrap replicates per table and their seed.
    """
    taus = tau_distributions(original, synthetic, tables, n_bootstrap=n_bootstrap, seed=seed)
    tau_summary = summarize_tau(taus)
    utility: dict[str, Any] = {
        "measure": "tau = 1 - L1/(2n) against the original table; bootstrap replicates show sampling variability",
        "tables": {
            spec.name: {**spec.to_dict(), **tau_summary[spec.name], "synthetic_per_dataset": None} for spec in tables
        },
        "relative_errors": {},
    }
    for spec in tables:
        per_dataset = taus[(taus["table"] == spec.name) & (taus["source"] == "synthetic")]
        utility["tables"][spec.name]["synthetic_per_dataset"] = per_dataset["tau"].tolist()
    for column, kind in kinds.items():
        if kind == "classification":
            errors = relative_cell_errors(original, synthetic, column)
            utility["relative_errors"][column] = summarize_relative_errors(errors)
    return utility


def identification_figures(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    synthesized: Sequence[str],
    pattern: Sequence[str],
    known_sets: Sequence[Sequence[str]],
    *,
    repetitions: int = 100,
    seed: int = 0,
) -> dict[str, Any]:
    """Identification risk per knowledge set and exact attribute disclosures, beside their inherent bounds.

    Hu & Savitsky, Section 4, through the generic :func:`bayessdc.risk.identification.risk_by_dataset` and
    :func:`~bayessdc.risk.identification.inherent_risk`: the mean over the m datasets of the expected match
    risk, true and false match rates of every knowledge set, and of the records whose ``synthesized`` values
    all equal the true ones; ``inherent`` holds the same means over ``repetitions`` datasets of the minimum
    scenario (each synthesized column uniform over all its levels) and the maximum (the synthesized values
    redrawn from the empirical distribution of each ``pattern``, the combination of the kept columns).
    """
    from bayessdc.risk.identification import IDENTIFICATION_MEASURES, inherent_risk, risk_by_dataset

    def means(rows: pd.DataFrame, names: Sequence[str]) -> dict[str, float | None]:
        return {k: (None if rows[k].isna().all() else float(rows[k].mean())) for k in names}

    per_dataset = risk_by_dataset(original, synthetic, known_sets, synthesized)
    inherent = inherent_risk(original, synthesized, pattern, known_sets, repetitions=repetitions, seed=seed)
    identification = []
    for known in known_sets:
        name = "+".join(known)
        rows = per_dataset[per_dataset["known"] == name]
        identification.append(
            {
                "known": list(known),
                **means(rows, IDENTIFICATION_MEASURES),
                "per_dataset": {k: rows[k].tolist() for k in IDENTIFICATION_MEASURES},
                "inherent": {s: means(t[t["known"] == name], IDENTIFICATION_MEASURES) for s, t in inherent.items()},
            }
        )
    first = per_dataset[per_dataset["known"] == "+".join(known_sets[0])]
    attribute = {
        **means(first, ("disclosures", "share")),
        "per_dataset": first["disclosures"].tolist(),
        "inherent": {s: means(t.drop_duplicates("repetition"), ("disclosures", "share")) for s, t in inherent.items()},
    }
    return {
        "measure": "identification risk (eq. 15-17) and exact attribute disclosures (eq. 18) of Hu & Savitsky, "
        "means over the synthetic datasets; inherent: the minimum and maximum scenarios of Section 4.1",
        "synthesized": list(synthesized),
        "pattern": list(pattern),
        "repetitions": repetitions,
        "identification": identification,
        "attribute": attribute,
    }


class CartMeasures(Measures):
    """Risk and utility of a CART release with other options (the confidential columns stay in memory).

    ``risk(known=..., repetitions=100)``: :func:`identification_figures` for the categorical synthesized
    columns; ``known`` is a list of knowledge sets, each a list of kept or categorical synthesized columns or
    one comma-separated string (default: every kept and categorical synthesized column).
    ``utility(tables=..., bootstrap=1000)``: :func:`table_utility` for other tables or replicates.
    """

    risk_options = ("known", "repetitions")
    utility_options = ("tables", "bootstrap")

    def __init__(
        self,
        original: pd.DataFrame,
        synthetic: pd.DataFrame,
        keep: list[str],
        kinds: Mapping[str, str | None],
        seed: int,
    ) -> None:
        self.original, self.synthetic, self.keep, self.kinds, self.seed = original, synthetic, keep, kinds, seed
        self.categorical = [c for c, kind in kinds.items() if kind == "classification"]
        #: The run's tables (the default of :meth:`measure_input`), set by the recipe.
        self.tables: list[TableSpec] | None = None

    def measure_input(
        self, known: Any = None, repetitions: int = 100, tables: Sequence[TableSpec | str] | None = None,
        bootstrap: int = 1000,
    ) -> MeasureInput:
        """What the measures read with these options: with ``known``, the identification risk and attribute
        disclosures of the categorical synthesized columns beside their inherent bounds; with ``tables``, tau of
        those tables against ``bootstrap`` replicates of the original."""
        data = MeasureInput(
            self.synthetic, self.original, released=list(self.original.columns), seed=self.seed,
            tables=self._specs(tables, bootstrap), bootstrap=bootstrap,
        )  # fmt: skip
        if known is not None:
            data.known_sets = self._known_sets(known, repetitions)
            data.synthesized, data.kept, data.partially_synthetic = self.categorical, self.keep, True
            data.repetitions = repetitions
        return data

    def _known_sets(self, known: Any, repetitions: int) -> list[list[str]]:
        if not self.categorical:
            raise NotApplicableError(
                "every synthesized column of this CART release is numeric: the identification risk matches exact "
                "categorical values; use release.utility()"
            )
        if known is None:
            known_sets = [[*self.keep, *self.categorical]]
        elif isinstance(known, str):
            known_sets = [_columns(known)]
        else:
            known_sets = [_columns(k) if isinstance(k, str) else [str(c) for c in k] for k in known]
        allowed = [*self.keep, *self.categorical]
        for columns in known_sets:
            wrong = [c for c in columns if c not in allowed]
            if not columns or wrong:
                raise InputError(
                    f"known={columns!r}: each knowledge set names kept or categorical synthesized columns "
                    f"({', '.join(allowed)}); not {', '.join(wrong) or 'an empty set'}"
                )
        if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
            raise InputError(f"repetitions must be a whole number of at least 1, got {repetitions!r}")
        return known_sets

    def risk(self, known: Any = None, repetitions: int = 100) -> dict[str, Any]:
        """Identification risk and attribute disclosures of the categorical synthesized columns."""
        known_sets = self._known_sets(known, repetitions)
        return identification_figures(
            self.original,
            self.synthetic,
            self.categorical,
            self.keep,
            known_sets,
            repetitions=repetitions,
            seed=self.seed,
        )

    def _specs(self, tables: Sequence[TableSpec | str] | None, bootstrap: int) -> list[TableSpec]:
        """The tables asked for (default: the run's), after checking ``bootstrap``."""
        if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 1:
            raise InputError(f"bootstrap must be at least 1, got {bootstrap!r}")
        if tables is None and self.tables is not None:
            return list(self.tables)
        return _table_specs(tables, self.original, self.original, list(self.kinds), self.keep)

    def utility(self, tables: Sequence[TableSpec | str] | None = None, bootstrap: int = 1000) -> dict[str, Any]:
        """``tau`` of other tables (default those of :func:`default_tables`) with ``bootstrap`` replicates."""
        if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 1:
            raise InputError(f"bootstrap= must be at least 1, got {bootstrap!r}")
        specs = _table_specs(tables, self.original, self.original, list(self.kinds), self.keep)
        return table_utility(self.original, self.synthetic, specs, self.kinds, n_bootstrap=bootstrap, seed=self.seed)


def cart_report_content(prepared: CartPrepared, release: Release) -> Any:
    """What sequential CART did, for its report (:class:`bayessdc.report.ReportContent`): its trees among the
    diagnostics; risk and utility are laid out from the release's measures."""
    from functools import partial

    from bayessdc.report import Figure, ReportContent, Table, Text, plots

    released, synthesize, keep = prepared.data, prepared.synthesize, prepared.keep
    content = ReportContent(
        original=released,
        synthetic=release.synthetic,
        compared=synthesize,
        about=[
            f"Sequential CART (Rodriguez, Freiman, Reiter & Lauger): {', '.join(synthesize)} of {len(released):,} "
            f"records are synthesized one after another, each from a tree grown on the kept column(s) "
            f"{', '.join(keep)} and the columns before it, with values drawn from a Bayesian bootstrap of "
            f"its leaf, in each of the m = {release.m} datasets.",
        ],
    )
    trees = pd.DataFrame.from_dict(release.diagnostics.summary.get("trees", {}), orient="index")
    if len(trees):
        trees.index.name = "column"
        content.diagnostics.append(Text(
            "CART fits no posterior by MCMC, so there is no r_hat or ESS to gate. What can go wrong is in the trees: "
            "their size, and draws that broke a rule and fell back to an ancestor leaf."
        ))
        content.diagnostics.append(Figure(
            partial(plots.bars, trees[["leaves", "depth"]], "", "the trees", horizontal=True),
            "Leaves and depth of each column's tree.",
        ))
        shown = trees.assign(fallbacks=trees["fallbacks"].map(lambda f: f.get("ancestor", 0)))
        content.diagnostics.append(Table(shown[["leaves", "depth", "rules_enforced", "fallbacks"]],
                                         "The trees (fallbacks: draws that broke a rule and came from an ancestor)",
                                         index=True))
    return content
