"""The measures of a CART release: the analyst's count tables and tau against bootstrap replicates of the
original (Rodriguez, Freiman, Reiter & Lauger), and Hu & Savitsky's identification risk of the categorical
synthesized columns, recomputed with other options from the records held in memory (:class:`CartMeasures`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from bayessdc.measures import MeasureInput
from bayessdc.synthesis.tables import TableSpec

from ...errors import InputError, NotApplicableError
from ...pipeline.recipe import column_list
from ...release import Measures

__all__ = ["CartMeasures", "default_tables", "parse_table", "table_specs"]

#: Numeric columns with more distinct values than this are cut into deciles in the default tables.
MAX_TABLE_LEVELS = 20


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


def default_tables(data: pd.DataFrame, synthesize: list[str], keep: list[str], design: str | None = None
                   ) -> list[TableSpec]:  # fmt: skip
    """Each synthesized column by each kept column, and all synthesized columns together; ``design`` (the survey
    weight, a design variable, not an analysis one) is left out of both (name it in ``tables=`` to see it)."""
    synthesize, keep = [c for c in synthesize if c != design], [c for c in keep if c != design]
    tables = [parse_table(f"{s},{k}", data) for s in synthesize for k in keep]
    if len(synthesize) > 1 or (synthesize and not keep):
        tables.append(parse_table(",".join(synthesize), data))
    return tables


def table_specs(
    tables: Sequence[TableSpec | str] | TableSpec | str | None,
    data: pd.DataFrame,
    released: pd.DataFrame,
    synthesize: list[str],
    keep: list[str],
    design: str | None = None,
) -> list[TableSpec]:
    """The utility tables: given (strings parsed against ``data``) or the defaults (without ``design``, the
    survey weight column); every column released."""
    if tables is None:
        specs = default_tables(released, synthesize, keep, design)
    else:
        given = [tables] if isinstance(tables, str | TableSpec) else tables
        specs = [t if isinstance(t, TableSpec) else parse_table(t, data) for t in given]
    for spec in specs:
        unknown = [c for c in spec.by if c not in released.columns]
        if unknown:
            raise InputError(f"table {spec.name!r}: column(s) {', '.join(unknown)} are neither kept nor synthesized")
    return specs


class CartMeasures(Measures):
    """Risk and utility of a CART release with other options (the confidential columns stay in memory).

    ``release.risk(known=..., repetitions=100)``: Hu & Savitsky's identification figures of the categorical
    synthesized columns (:mod:`bayessdc.measures.identification`); ``known`` is a list of knowledge sets, each a
    list of kept or categorical synthesized columns or one comma-separated string (default: all of them but the
    survey weight, a design variable whose nearly unique values an intruder is not assumed to know; name it in
    ``known`` to include it).
    ``release.utility(tables=..., bootstrap=1000)``: tau of other tables or replicates (weighted by ``weights``, the
    survey weight column, when the release has one), and the relative errors of the categorical columns' counts.
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
        weights: str | None = None,
    ) -> None:
        self.original, self.synthetic, self.keep, self.kinds, self.seed = original, synthetic, keep, kinds, seed
        self.weights = weights
        #: The column of areas the release was synthesized by, one by one (set by the recipe).
        self.strata: str | None = None
        #: The household id column of a release of persons in households (set by the recipe).
        self.households: str | None = None
        self.categorical = [c for c, kind in kinds.items() if kind == "classification"]
        #: The run's tables (the default of :meth:`measure_input`) and bootstrap replicates, set by the recipe.
        self.tables: list[TableSpec] | None = None
        self.bootstrap = 1000
        #: The datasets released, once rows were removed from them (:meth:`replace_synthetic`).
        self.published = synthetic

    def replace_synthetic(self, synthetic: pd.DataFrame) -> None:
        """Measure the utility of ``synthetic`` (the datasets without their replicated uniques) from now on. The
        identification risk (``risk(known=...)``) stays that of the datasets as drawn, row ``i`` record ``i``:
        removal only takes rows away, so the release's risk is at most that figure."""
        self.published = synthetic

    def measure_input(
        self, known: Any = None, repetitions: int | None = None, tables: Sequence[TableSpec | str] | None = None,
        bootstrap: int = 1000,
    ) -> MeasureInput:
        """What the measures read with these options: with ``known`` (or ``repetitions`` alone: every kept and
        categorical synthesized column known but the survey weight), the identification risk and attribute
        disclosures of the categorical synthesized columns beside their inherent bounds of ``repetitions``
        repetitions (default 100); with ``tables``, tau of those tables against ``bootstrap`` replicates of the
        original. With identification, every figure is of the datasets as drawn (row ``i`` record ``i``, before
        any removal); without, of the datasets released."""
        identification = known is not None or repetitions is not None
        repetitions = 100 if repetitions is None else repetitions
        drawn = self.synthetic if identification else self.published
        data = MeasureInput(
            drawn, self.original, released=list(self.original.columns), seed=self.seed,
            tables=self._specs(tables, bootstrap), bootstrap=bootstrap, weights=self.weights,
            categorical=list(self.categorical), strata=self.strata,
        )  # fmt: skip
        if identification:
            data.known_sets = self._known_sets(known, repetitions)
            data.synthesized, data.kept, data.partially_synthetic = self.categorical, self.keep, True
            data.repetitions = repetitions
        return data

    def _known_sets(self, known: Any, repetitions: int) -> list[list[str]]:
        if self.households is not None:
            raise NotApplicableError(
                "a household release has no row i standing for record i (its households and members are drawn "
                "whole): the identification risk of a partially synthetic release does not apply; the household "
                "measures judge it (household_uniques_reappearing, household_attribute_inference)"
            )
        if not self.categorical:
            raise NotApplicableError(
                "every synthesized column of this CART release is numeric: the identification risk matches exact "
                "categorical values; use release.utility()"
            )
        if known is None:
            known_sets = [[c for c in [*self.keep, *self.categorical] if c != self.weights]]
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

    def _specs(self, tables: Sequence[TableSpec | str] | None, bootstrap: int) -> list[TableSpec]:
        """The tables asked for (default: the run's), after checking ``bootstrap``."""
        if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 1:
            raise InputError(f"bootstrap must be at least 1, got {bootstrap!r}")
        if tables is None and self.tables is not None:
            return list(self.tables)
        return table_specs(tables, self.original, self.original, list(self.kinds), self.keep, self.weights)
