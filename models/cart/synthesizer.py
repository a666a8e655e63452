"""The CART synthesizer (Rodriguez, Freiman, Reiter & Lauger): the tree sequence, synthesis, description.

Column-partially synthetic data (Section 5): the user keeps some variables as observed predictors and
names the variables to synthesize, in order. Following the conditional workflow of Section 2,

1. each synthesized variable ``X_j`` gets one tree, fitted once on the confidential data, with the kept
   variables and the variables synthesized before it (``X_i, ..., X_{j-1}``) as predictors
   (:mod:`bayessdc.models.cart.tree`);
2. synthetic data are generated sequentially (step 4 of Section 2): for each record, the leaf is found from
   its kept values and its *synthetic* values of the earlier variables, and the synthetic value is one draw
   from a Bayesian bootstrap of the leaf's observed values (:mod:`bayessdc.models.cart.bootstrap`).

Logical rules (the paper's "strict logical requirements" of school enrolment, grade and attainment with
age; :mod:`bayessdc.models.cart.rules`) are never violated: when the value of ``X_j`` is drawn, every rule
whose columns are all kept or synthesized up to ``X_j`` restricts the draw to the leaf's values that are
admissible given the record's already-fixed values. A record whose leaf holds no admissible value draws from
the nearest ancestor node holding one; such fallbacks are counted.

Missing values are synthesized like values, as R synthpop does: a categorical column's missing values are a
level of their own; a numeric column with missing values, declared missing-value codes (synthpop's
``cont.na``) or spikes (``semicont``) gets a *state* tree drawn before its value tree
(:mod:`bayessdc.models.cart.states`). Numeric draws may be smoothed by a Gaussian kernel
(:mod:`bayessdc.models.cart.smoothing`).

References
----------
.. [1] Rodriguez, R. A., Freiman, M. H., Reiter, J. P., & Lauger, A. D. *Preserving privacy in person-level data
    for the American Community Survey*. U.S. Census Bureau, research paper.
.. [2] Reiter, J. P. (2005). Using CART to generate partially synthetic public use microdata. *Journal
    of Official Statistics*, 21(3).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from .bootstrap import draw_column
from .data import CartDataError, check_rules_hold, decode_categorical, encode_columns, encode_like, validate_columns
from .rules import ColumnSchema, Rule, parse_rules, rule_violations
from .smoothing import SMOOTHING, ValueSmoother, leaf_bandwidths
from .states import NumericStates, numeric_states
from .tree import TREE_BUILDERS, ColumnTree, DesignLayout, fit_column_tree

__all__ = ["DONORS", "FAN_OUT_FROM", "CartSynthesizer", "FanOut", "TemplateSettings", "one_by_one", "summed_fallbacks"]

#: Records x synthesized columns from which the pipeline fans the trees and the datasets out by default
#: (below it, starting a local dask cluster costs more than it saves).
FAN_OUT_FROM = 1_000_000

#: The donors of a record's draw: every observation of its leaf (the paper's), or the others.
DONORS = ("all", "others")

_IMPLEMENTATION = {
    "native": "bayessdc's compiled CART (models/cart/fast_tree.py): scikit-learn's splits and criterion on the "
    "one-hot design, categorical predictors scored from their level counts",
    "sklearn": "scikit-learn DecisionTreeClassifier / DecisionTreeRegressor",
}

#: Runs ``task(name, part)`` on every ``(name, part)`` pair and returns the results in the order of the pairs
#: (the pipeline's is :func:`bayessdc.synthesis.runner.run_parts`, which may run them at once).
FanOut = Callable[[Callable[[str, Any], Any], list[tuple[str, Any]]], list[Any]]


@dataclass
class CartSynthesizer:
    """Sequential CART synthesizer with a Bayesian bootstrap in the leaves (Rodriguez et al., Sections 2-5).

    Parameters
    ----------
    synthesize
        The variables to synthesize, in the order of synthesis.
    keep
        Variables kept as observed; they are predictors of every tree and pass through unchanged.
    rules
        Logical rules (:mod:`bayessdc.models.cart.rules` objects or their plain form) never violated by the
        synthetic data.
    min_samples_leaf
        Smallest number of confidential records in a leaf (default 5, as Reiter 2005 and synthpop): the
        bootstrap of a leaf of one record would copy it.
    ccp_alpha
        Minimal cost-complexity pruning parameter of scikit-learn (default 0: no pruning beyond the leaf
        size; raise it, e.g. 1e-4, for smaller trees and coarser, more protective leaves).
    max_depth
        Largest depth of a tree (default none).
    categorical
        Numeric columns to treat as categorical (columns of non-numeric type always are).
    missing_codes
        Numeric column -> values standing for a missing value (synthpop's ``cont.na``), e.g.
        ``{"hours": [-8, -9]}``: each is a state of the column, synthesized before the value and released as
        the code itself.
    spikes
        Numeric column -> spikes of its distribution (synthpop's ``semicont``), e.g. ``{"income": [0]}``:
        states like the codes, but entering later trees with their number.
    smoothing
        ``None`` (default): numeric values are donors' values; ``"density"``: each drawn value is perturbed by a
        Gaussian kernel with the leaf's ``bw.nrd0`` bandwidth, within the observed range
        (:mod:`bayessdc.models.cart.smoothing`).
    tree_builder
        ``"native"`` (default): the compiled CART of :mod:`bayessdc.models.cart.fast_tree`, which takes a
        categorical predictor as codes and scores its level-versus-rest splits from level counts;
        ``"sklearn"``: scikit-learn's trees on the one-hot design. The same trees (the same candidate splits and
        criterion), but for the choice among exactly equal splits.
    donors
        ``"all"`` (default, the paper's): a record's values are drawn from the Bayesian bootstrap of every
        observation of its leaf, its own included; ``"others"``: its own observation is left out of its own draw
        (:mod:`bayessdc.models.cart.bootstrap`), so no row is given its record's own values but by another record
        holding the same ones. A setting of the draw only: the trees are the same.
    name
        Short name used in outputs.

    Notes
    -----
    :meth:`fit` validates the input and fits the trees; :meth:`synthesize` returns the ``m`` synthetic
    datasets in the long layout of ``release/synthetic.parquet`` (a ``synthetic`` column 1..m). Columns of
    the data that are neither kept nor synthesized are not released.
    """

    synthesize: Sequence[str]
    keep: Sequence[str] = ()
    rules: Sequence[Rule | Mapping[str, Any]] = ()
    min_samples_leaf: int = 5
    ccp_alpha: float = 0.0
    max_depth: int | None = None
    categorical: Sequence[str] = ()
    missing_codes: Mapping[str, Sequence[float]] = field(default_factory=dict)
    spikes: Mapping[str, Sequence[float]] = field(default_factory=dict)
    smoothing: str | None = None
    tree_builder: str = "native"
    donors: str = "all"
    name: str = "cart"
    #: Per synthesized column, fallbacks of the last :meth:`synthesize` (records drawn from an ancestor node
    #: and, of those, from the root, i.e. the whole column), and the number of draws.
    fallbacks: dict[str, dict[str, int]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.synthesize = [str(c) for c in self.synthesize]
        self.keep = [str(c) for c in self.keep]
        self.categorical = [str(c) for c in self.categorical]
        self.rules = parse_rules(list(self.rules))
        if self.min_samples_leaf < 1:
            raise ValueError(f"min_samples_leaf must be at least 1, got {self.min_samples_leaf}")
        if self.ccp_alpha < 0:
            raise ValueError(f"ccp_alpha must be non-negative, got {self.ccp_alpha}")
        if self.max_depth is not None and self.max_depth < 1:
            raise ValueError(f"max_depth must be at least 1, got {self.max_depth}")
        if self.tree_builder not in TREE_BUILDERS:
            raise ValueError(f"tree_builder must be one of {TREE_BUILDERS}, got {self.tree_builder!r}")
        if self.donors not in DONORS:
            raise ValueError(f"donors must be one of {DONORS}, got {self.donors!r}")
        if self.smoothing not in SMOOTHING:
            raise ValueError(f"smoothing must be None or 'density', got {self.smoothing!r}")
        self.missing_codes = {str(c): _numbers(v) for c, v in dict(self.missing_codes or {}).items()}
        self.spikes = {str(c): _numbers(v) for c, v in dict(self.spikes or {}).items()}
        self._trees: list[ColumnTree] = []
        self._states: dict[str, NumericStates] = {}
        self._smoothers: dict[str, ValueSmoother] = {}
        self._schema: dict[str, ColumnSchema] = {}
        self._codes: dict[str, np.ndarray] = {}
        self._data: pd.DataFrame | None = None
        self._seed: int | None = None
        self.fit_seconds: float | None = None
        #: What is computed once from the fitted trees and shared by every drawing of them (:meth:`drawing`).
        self.cache: dict[Any, Any] = {}

    def drawing(self, donors: str) -> CartSynthesizer:
        """This fitted synthesizer drawing with other ``donors``: the same trees and cache, shared, not copied."""
        if donors not in DONORS:
            raise ValueError(f"donors must be one of {DONORS}, got {donors!r}")
        other = copy.copy(self)
        other.donors = donors
        return other

    # -- input -------------------------------------------------------------------------------------------

    def validate(self, data: pd.DataFrame) -> pd.DataFrame:
        """Check ``data`` before any fitting; return the released columns (:func:`validate_columns`).

        Raises
        ------
        CartDataError
            Unknown or repeated columns, a column both kept and synthesized, a missing-value code or spike that is
            not a value of its numeric column (the column and value are named).
        """
        return validate_columns(data, self.synthesize, self.keep, self.categorical, self.missing_codes, self.spikes)

    # -- fitting (Section 2, steps 1-3) ---------------------------------------------------------------------

    def fit(
        self, data: pd.DataFrame, seed: int = 0, fan_out: FanOut | None = None, learn: np.ndarray | None = None
    ) -> CartSynthesizer:
        """Validate ``data`` and fit one tree per synthesized column (and per state), in order.

        Every tree is fitted on the confidential data alone (never on synthetic values), so the trees are
        independent of each other and may be fitted at once: ``fan_out`` runs them (the pipeline passes the
        part runner, :func:`bayessdc.synthesis.runner.run_parts`). The trees are the same however they run.

        Parameters
        ----------
        data
            The confidential records (one row per person).
        seed
            Seed of the whole run: tree fitting (scikit-learn's tie-breaking among equally good splits, with
            ``tree_builder="sklearn"``) and, in :meth:`synthesize`, the bootstrap weights and draws.
        fan_out
            Runs ``task(name, part)`` on every ``(name, part)`` and returns the results in order
            (default: one after the other, in this thread).
        learn
            Positions of the records the trees are fitted on (default all). Every record is still synthesized,
            so the records left out are synthesized by trees that never saw them: the cross-fitted release of
            :func:`bayessdc.models.cart.unlearned.cross_fitted_datasets`, the reference of the records-copied
            criterion.

        Returns
        -------
        CartSynthesizer
            ``self``, fitted.
        """
        start = time.perf_counter()
        frame = self.validate(data)
        schema, codes = encode_columns(frame, self.categorical)
        rules = list(self.rules)
        check_rules_hold(rules, codes, schema)
        self._states = numeric_states(codes, schema, self.missing_codes, self.spikes)
        taken = [states.state_column for states in self._states.values() if states.state_column in schema]
        if taken:
            raise CartDataError(f"column(s) {', '.join(map(repr, taken))} clash with the state columns of CART")
        for column, states in self._states.items():
            schema[column] = ColumnSchema(column, False, schema[column].levels, fill=states.fill, filled=states.codes)
            schema[states.state_column] = states.schema()
            codes[states.state_column] = states.state_of(codes[column])
        self._schema, self._codes, self._data, self._seed = schema, codes, frame, int(seed)
        settings = {
            "min_samples_leaf": self.min_samples_leaf,
            "ccp_alpha": self.ccp_alpha,
            "max_depth": self.max_depth,
            "seed": streams.integer_seed(seed, Stream.TREE),
            "tree_builder": self.tree_builder,
        }
        jobs: list[tuple[str, _TreeJob]] = []
        learned: dict[str, np.ndarray | None] = {}  # per column, the records its value tree learns from
        for j, column in enumerate(self.synthesize):
            predictors = self._with_states([*self.keep, *self.synthesize[:j]])
            known = {*self.keep, *self.synthesize[: j + 1]}
            # A rule is enforced when its last column is drawn: the rules on this column whose other columns
            # are all fixed by now.
            step_rules = [r for r in rules if column in r.columns and r.columns <= known]
            states = self._states.get(column)
            rows = learn
            if states is not None:
                state_job = _TreeJob(states.state_column, predictors, step_rules, state_of=column, rows=learn)
                jobs.append((states.state_column, state_job))
                rows = np.flatnonzero(codes[states.state_column] == 0)
                if learn is not None:
                    rows = np.intersect1d(rows, learn)
                if not len(rows):
                    continue  # no record in the "value" state: the state tree puts back every value
            learned[column] = rows
            smoothed = self.smoothing == "density" and not schema[column].categorical
            jobs.append((column, _TreeJob(column, predictors, step_rules, rows=rows, smoothed=smoothed)))
        task = _FitTree(schema, codes, settings, self._states)
        self._trees = list((fan_out or one_by_one)(task, jobs))
        self._smoothers = {}
        for fitted in self._trees:
            if fitted.bandwidth is not None:
                states, rows = self._states.get(fitted.column), learned[fitted.column]
                observed = codes[fitted.column] if rows is None else codes[fitted.column][rows]
                self._smoothers[fitted.column] = ValueSmoother.of(observed, states.numbers[1:] if states else ())
        self.fit_seconds = time.perf_counter() - start
        return self

    # -- synthesis (Section 2, step 4) ---------------------------------------------------------------------

    def synthesize_dataset(
        self, rng: np.random.Generator, smoothing_rng: np.random.Generator | None = None
    ) -> dict[str, np.ndarray]:
        """One synthetic dataset: encoded values of every kept and synthesized column (and of the states).

        The kept columns are the confidential values; each synthesized column is drawn in order, each record
        in the leaf its kept and earlier synthetic values lead to, from a fresh Bayesian bootstrap of every
        leaf's observed values restricted to the values the rules admit for that record
        (:func:`bayessdc.models.cart.bootstrap.draw_column`). A numeric column with states draws its state
        first, then its value for the records in the "value" state only.

        Parameters
        ----------
        rng
            The bootstrap weights and draws.
        smoothing_rng
            The smoothing's normal draws (with ``smoothing="density"``; default ``rng``).
        """
        return self._draw(rng, smoothing_rng, self.fallbacks)

    def _draw(
        self, rng: np.random.Generator, smoothing_rng: np.random.Generator | None, fallbacks: dict[str, dict[str, int]],
        rows: np.ndarray | None = None, kept: Mapping[str, np.ndarray] | None = None,
        infeasible: np.ndarray | None = None, own_rows: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """:meth:`synthesize_dataset` for the records at positions ``rows`` (default all), counting the fallbacks
        in ``fallbacks``; with ``kept`` (encoded kept values, :meth:`encode_kept`), for new records holding those
        values instead, which have no observation of their own (``donors="others"`` leaves none out) unless
        ``own_rows`` gives each its position among the fitted records (-1: none); with ``infeasible`` (a boolean per
        record), a record no observed value of a column admits under the rules is marked there and given the
        column's first value instead of raising."""
        self._check_fitted()
        smoothing_rng = rng if smoothing_rng is None else smoothing_rng
        if kept is not None:
            values = dict(kept)
            n = len(next(iter(values.values()))) if values else 0
            positions = None if own_rows is None else np.asarray(own_rows, dtype=np.int64)
        else:
            positions = np.arange(len(self._data)) if rows is None else np.asarray(rows)
            n = len(positions)
            values = {c: (self._codes[c] if rows is None else self._codes[c][rows])
                      for c in self._with_states(self.keep)}  # fmt: skip
        # One design matrix for the whole dataset, in column-major order: the predictors of each tree are the
        # kept columns and the columns drawn before it, a prefix of the matrix, filled in as they are drawn.
        layout = DesignLayout(self._with_states([*self.keep, *self.synthesize]), self._schema)
        design = layout.empty(n)
        for column in values:
            layout.fill(design, column, values[column])
        for fitted in self._trees:
            spec = self._schema[fitted.column]
            width = layout.width(fitted.predictors)
            if fitted.gate is None:
                rows, fixed = np.arange(n), values
                nodes = fitted.tree.apply(design[:, : max(width, 1)]).astype(np.int64)
            else:
                rows = np.flatnonzero(values[fitted.gate] == 0)
                fixed = {c: v[rows] for c, v in values.items()}
                nodes = fitted.tree.apply(design[rows, : max(width, 1)]).astype(np.int64)
            leaves = nodes.copy()
            stats = fallbacks.setdefault(fitted.column, {"ancestor": 0, "whole_column": 0, "draws": 0})
            own = None
            if self.donors == "others" and fitted.own_pair is not None and positions is not None:
                at = positions[rows]  # -1: a new record that is none of the fitted ones
                own = np.where(at >= 0, fitted.own_pair[np.maximum(at, 0)], -1)
            if infeasible is None:
                code = fitted.pair_code[draw_column(fitted, nodes, fixed, self._schema, rng, stats, own)]
            else:
                unmet = np.zeros(len(rows), dtype=bool)
                picks = draw_column(fitted, nodes, fixed, self._schema, rng, stats, own, unmet)
                code = fitted.pair_code[np.where(unmet, 0, picks)]
                infeasible[rows[unmet]] = True
            if spec.categorical:
                values[fitted.column] = code
                layout.fill(design, fitted.column, code)
                if fitted.rule_numbers is not None:  # a state: the number it puts back (NaN for "value")
                    values[fitted.rule_column] = fitted.rule_numbers[code].astype(float)
                    layout.fill(design, fitted.rule_column, values[fitted.rule_column])
                continue
            drawn = spec.levels.astype(float)[code]
            if fitted.bandwidth is not None:
                drawn = self._smoothers[fitted.column].smooth(drawn, fitted.bandwidth[leaves], smoothing_rng)
            if fitted.gate is None:
                values[fitted.column] = drawn
            else:
                values[fitted.column] = values[fitted.column].copy()
                values[fitted.column][rows] = drawn
            layout.fill(design, fitted.column, values[fitted.column])
        return values

    def synthesize_datasets(
        self, m: int, seed: int | None = None, fan_out: FanOut | None = None, rows: np.ndarray | None = None
    ) -> pd.DataFrame:
        """The ``m`` synthetic datasets as one long table with a ``synthetic`` column 1..m.

        Parameters
        ----------
        m
            Number of synthetic datasets.
        seed
            Seed of the bootstrap draws (default: the seed given to :meth:`fit`). Dataset ``k`` depends only
            on the seed and ``k``: the first 5 of ``m = 100`` datasets are the ``m = 5`` datasets.
        fan_out
            Runs ``task(name, part)`` on every ``(name, part)`` and returns the results in order (default: one
            after the other, in this thread); the datasets are the same however they run.
        rows
            Positions of the records synthesized (default all, in order): with ``rows``, each dataset holds those
            records only, drawn as in a dataset of all of them but from their own random streams.

        Returns
        -------
        pandas.DataFrame
            Columns ``synthetic`` then the kept and synthesized columns in the data's order; categorical
            columns as pandas categoricals over the observed values, numeric ones with their original type.
        """
        self._check_fitted()
        if m < 1:
            raise ValueError(f"m must be at least 1, got {m}")
        seed = self._seed if seed is None else int(seed)
        parts = [(f"dataset-{k}", k) for k in range(1, m + 1)]
        results = (fan_out or one_by_one)(_DrawDataset(self, seed, rows), parts)
        self.fallbacks = summed_fallbacks(counts for _, counts in results)
        return pd.concat([frame for frame, _ in results], ignore_index=True)

    def encode_kept(self, kept: pd.DataFrame) -> dict[str, np.ndarray]:
        """The kept columns of new records (``kept``, released layout) encoded as the fitted data's, with the
        states of numeric ones: what :meth:`draw_given` draws the synthesized columns from.

        Raises
        ------
        ValueError
            A categorical value the fitted data's encoding does not hold.
        """
        self._check_fitted()
        values = {column: encode_like(kept[column], self._schema[column]) for column in self.keep}
        for column in self.keep:
            if column in self._states:
                values[self._states[column].state_column] = self._states[column].state_of(values[column])
        return values

    def draw_given(
        self, kept: pd.DataFrame, rng: np.random.Generator, smoothing_rng: np.random.Generator | None = None,
        fallbacks: dict[str, dict[str, int]] | None = None, infeasible: np.ndarray | None = None,
        own: np.ndarray | None = None,
    ) -> pd.DataFrame:
        """The synthesized columns of new records whose kept values are ``kept`` (a frame of the kept columns):
        each drawn in order from the leaf its kept and earlier synthetic values lead to, as for the fitted
        records, the rules enforced. The records of a level the households' second stage builds from synthetic
        values (:mod:`bayessdc.models.cart.households`), and the records of a synthetic area
        (:mod:`bayessdc.models.cart.areas`). With ``infeasible`` (a boolean per record), a record whose kept values
        no observed value admits under the rules is marked there, not refused. With ``own`` (per record, its
        position among the fitted records when it is one of them, -1 when not), ``donors="others"`` leaves a
        record's own observation out of its draw as for the fitted records.

        Returns
        -------
        pandas.DataFrame
            The synthesized columns, in order, decoded as :meth:`synthesize_datasets` releases them.
        """
        counts: dict[str, dict[str, int]] = {} if fallbacks is None else fallbacks
        values = self._draw(rng, smoothing_rng, counts, kept=self.encode_kept(kept), infeasible=infeasible,
                            own_rows=own)  # fmt: skip
        return pd.DataFrame({column: self._decoded(column, values[column]) for column in self.synthesize})

    def _decoded(self, column: str, values: np.ndarray) -> Any:
        """A synthesized column's values as released: categorical over the observed levels, or numbers."""
        spec = self._schema[column]
        if spec.categorical:
            return decode_categorical(values, spec)
        return _as_dtype(values, self._data[column].dtype)

    def with_settings(self, **changes: Any) -> CartSynthesizer:
        """An unfitted copy with other settings (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def _decode_dataset(self, values: Mapping[str, np.ndarray], k: int, rows: np.ndarray | None = None) -> pd.DataFrame:
        data = self._data if rows is None else self._data.iloc[rows]
        columns: dict[str, Any] = {"synthetic": np.full(len(data), k, dtype=np.int64)}
        for column in data.columns:
            spec = self._schema[column]
            if spec.categorical:
                columns[column] = decode_categorical(values[column], spec)
            elif column in self.keep:
                columns[column] = data[column].to_numpy()
            else:
                columns[column] = _as_dtype(values[column], self._data[column].dtype)
        return pd.DataFrame(columns)

    def _with_states(self, columns: Sequence[str]) -> list[str]:
        """``columns`` with each numeric column's state column right after it (the trees' predictors)."""
        out = []
        for column in columns:
            out.append(column)
            if column in self._states:
                out.append(self._states[column].state_column)
        return out

    # -- description --------------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Public description: order, predictors, tree settings, encoding, rules; no estimates, no data."""
        kinds = {}
        for column in self.synthesize:
            spec = self._schema.get(column)
            kinds[column] = None if spec is None else ("classification" if spec.categorical else "regression")
        return {
            "synthesizer": self.name,
            "paper": "Rodriguez, Freiman, Reiter & Lauger, Preserving privacy in person-level data for the ACS",
            "kind": "column-partially synthetic (Section 5): kept columns released unchanged",
            "synthesized_in_order": list(self.synthesize),
            "kept": list(self.keep),
            "predictors": {c: [*self.keep, *self.synthesize[:j]] for j, c in enumerate(self.synthesize)},
            "missing_values": self._describe_missing(),
            "trees": kinds,
            "tree_settings": {
                "min_samples_leaf": self.min_samples_leaf,
                "ccp_alpha": self.ccp_alpha,
                "max_depth": self.max_depth,
                "criterion": {"classification": "gini", "regression": "squared_error"},
                "implementation": _IMPLEMENTATION[self.tree_builder],
            },
            "predictor_encoding": "one-hot for categorical predictors, numbers for numeric ones",
            "leaf_draw": "Bayesian bootstrap: Dirichlet(1,...,1) weights over the leaf's observed values, "
            "one bootstrap per leaf per synthetic dataset, one draw per record; leaves found from synthetic "
            "values of earlier columns" + ("" if self.donors == "all" else "; a record's own observation left out "
            "of its own draw (donors: the other records of its leaf)"),
            "donors": self.donors,
            "smoothing": self._describe_smoothing(),
            "rules": [r.to_dict() for r in self.rules],
            "rule_enforcement": "draws restricted to the values admissible given the record's fixed values; "
            "a leaf without one falls back to the nearest ancestor node holding one; a condition on a missing "
            "value is false (a missing 'if' value: the rule does not apply; a missing 'then' value violates it)",
        }

    def _describe_missing(self) -> dict[str, Any]:
        """How the missing values, codes and spikes of each released column were synthesized (no figures)."""
        categorical = [c for c, spec in self._schema.items() if spec.categorical and spec.has_missing]
        return {
            "categorical": "missing values are a level of their own, synthesized and used as a predictor like "
            "any level; released as NaN",
            "categorical_with_missing": categorical,
            "numeric": {column: states.describe() for column, states in self._states.items()},
            "missing_value_codes": {c: list(v) for c, v in self.missing_codes.items()},
            "spikes": {c: list(v) for c, v in self.spikes.items()},
        }

    def _describe_smoothing(self) -> dict[str, Any] | None:
        if self.smoothing is None:
            return None
        return {
            "method": "density",
            "kernel": "Gaussian, added to the drawn donor value",
            "bandwidth": "bw.nrd0 of the leaf's donor values, 0.9 min(sd, IQR/1.34) n^(-1/5); a leaf whose "
            "donors share one value is not smoothed",
            "range": "clipped to the column's observed minimum and maximum, rounded to its decimal places; a value "
            "landing on a missing-value code or spike keeps the donor's",
            "columns": sorted(self._smoothers),
        }

    def tree_summary(self) -> dict[str, Any]:
        """Private figures of the fitted trees (leaves, depth) and the fallbacks of the last synthesis."""
        self._check_fitted()
        return {
            fitted.column: {
                "leaves": fitted.n_leaves,
                "depth": int(fitted.tree.get_depth()),
                "rules_enforced": [r.name for r in fitted.rules],
                "fallbacks": self.fallbacks.get(fitted.column, {}),
            }
            for fitted in self._trees
        }

    def rule_violation_counts(self, frame: pd.DataFrame) -> dict[str, int]:
        """Number of rows of ``frame`` (released layout, e.g. all synthetic datasets) violating each rule.

        Values of a categorical column that the confidential data never take are refused with a ValueError.
        """
        self._check_fitted()
        encoded = {column: encode_like(frame[column], self._schema[column]) for column in self._data.columns}
        violated = rule_violations(self.rules, encoded, self._schema)
        return {rule.name: len(violated.get(rule.name, ())) for rule in self.rules}

    @property
    def states(self) -> dict[str, NumericStates]:
        """The states of the numeric columns with missing values, codes or spikes (after :meth:`fit`)."""
        return dict(self._states)

    @property
    def data(self) -> pd.DataFrame:
        """The released columns of the fitted data (confidential; for utility measures)."""
        self._check_fitted()
        return self._data

    def _check_fitted(self) -> None:
        if self._data is None:
            raise RuntimeError("fit the synthesizer first")


def _numbers(values: Any) -> list[float]:
    """A scalar or a sequence of numbers as a list (the values are checked against the data by ``fit``)."""
    return [values] if np.isscalar(values) else list(values)


def _as_dtype(values: np.ndarray, dtype: Any) -> Any:
    """Synthetic numbers in the column's original type (floats when an integer column holds missing values)."""
    if np.isnan(values).any() and pd.api.types.is_integer_dtype(dtype) and isinstance(dtype, np.dtype):
        return values
    try:
        return pd.array(values, dtype=dtype) if not isinstance(dtype, np.dtype) else values.astype(dtype)
    except (TypeError, ValueError):
        return values


class TemplateSettings:
    """The settings the recipe and the measures read of a synthesizer that wraps a :class:`CartSynthesizer`
    ``template`` (area by area, persons within households): the template's."""

    template: CartSynthesizer

    synthesize = property(lambda self: self.template.synthesize)
    keep = property(lambda self: self.template.keep)
    rules = property(lambda self: self.template.rules)
    categorical = property(lambda self: self.template.categorical)
    missing_codes = property(lambda self: self.template.missing_codes)
    spikes = property(lambda self: self.template.spikes)
    donors = property(lambda self: self.template.donors)


def one_by_one(task: Callable[[str, Any], Any], parts: list[tuple[str, Any]]) -> list[Any]:
    """The default fan-out: every part in turn, in this thread."""
    return [task(name, part) for name, part in parts]


def summed_fallbacks(parts: Iterable[Mapping[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """The fallback counts of several draws (datasets, groups of strata) added up per synthesized column."""
    total: dict[str, dict[str, int]] = {}
    for counts in parts:
        for column, stats in counts.items():
            row = total.setdefault(column, {"ancestor": 0, "whole_column": 0, "draws": 0})
            for key, count in stats.items():
                row[key] = row.get(key, 0) + count
    return total


@dataclass(frozen=True)
class _TreeJob:
    """One tree to fit: its column, predictors and rules; a state tree names its numeric column (``state_of``),
    a value tree the rows it is fitted on (those in the "value" state)."""

    column: str
    predictors: list[str]
    rules: list[Rule]
    state_of: str | None = None
    rows: np.ndarray | None = None
    smoothed: bool = False


@dataclass
class _FitTree:
    """The task fitting one tree on the confidential codes (a part of :meth:`CartSynthesizer.fit`)."""

    schema: dict[str, ColumnSchema]
    codes: dict[str, np.ndarray]
    settings: dict[str, Any]
    states: dict[str, NumericStates]
    #: Per numeric column, the records in the order of its values, sorted once for all the trees.
    orders: dict[str, np.ndarray] = field(default_factory=dict)

    def __call__(self, name: str, job: _TreeJob) -> ColumnTree:
        tree = fit_column_tree(
            job.column, job.predictors, job.rules, self.schema, self.codes, rows=job.rows, orders=self.orders,
            **self.settings,
        )  # fmt: skip
        if job.state_of is not None:
            states = self.states[job.state_of]
            tree.rule_column, tree.rule_numbers = job.state_of, states.numbers
            tree.unjudged = np.arange(len(states.levels)) == 0
        elif job.column in self.states:
            tree.gate = self.states[job.column].state_column
        if job.smoothed:
            tree.bandwidth = leaf_bandwidths(tree, self.schema[job.column].levels)
        return tree


@dataclass
class _DrawDataset:
    """The task drawing synthetic dataset ``k``: its decoded frame and its fallback counts."""

    synthesizer: CartSynthesizer
    seed: int
    rows: np.ndarray | None = None

    def __call__(self, name: str, k: int) -> tuple[pd.DataFrame, dict[str, dict[str, int]]]:
        fallbacks: dict[str, dict[str, int]] = {}
        rng = streams.rng(self.seed, Stream.CART_DATASET, k)
        values = self.synthesizer._draw(rng, streams.rng(self.seed, Stream.CART_SMOOTHING, k), fallbacks, self.rows)
        return self.synthesizer._decode_dataset(values, k, self.rows), fallbacks
