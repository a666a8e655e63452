"""Sequential CART synthesis with a Bayesian bootstrap in the leaves (Rodriguez, Freiman, Reiter & Lauger).

Column-partially synthetic data (Section 5): the user keeps some variables as observed predictors and
names the variables to synthesize, in order. Following the conditional workflow of Section 2,

1. each synthesized variable ``X_j`` gets one tree, fitted once on the confidential data, with the kept
   variables and the variables synthesized before it (``X_i, ..., X_{j-1}``) as predictors: a
   classification tree for a categorical variable, a regression tree for a numeric one (Breiman et al.
   1984; scikit-learn's CART);
2. synthetic data are generated sequentially (step 4 of Section 2): for each record, the leaf is found from
   its kept values and its *synthetic* values of the earlier variables, and the synthetic value is one draw
   from a Bayesian bootstrap of the leaf's observed values (Reiter 2005; Section 4): Dirichlet(1, ..., 1)
   weights over the leaf's observations, then a draw from the weighted values. One bootstrap per leaf per
   synthetic dataset: the trees are the same for every dataset, the bootstrap weights are what varies.

By the aggregation property of the Dirichlet distribution, Dirichlet(1, ..., 1) weights over the ``n_l``
observations of a leaf, summed over the observations sharing a value, are Dirichlet(c_1, ..., c_K) over the
leaf's distinct values with their counts ``c_k``; the weights are therefore drawn as independent Gamma(c_k)
variables per (leaf, value), normalised within the leaf. The same weights summed over a subtree are the
Bayesian bootstrap of the subtree's node.

Logical rules (the paper's "strict logical requirements" of school enrolment, grade and attainment with
age; :mod:`bayessdc.models.rules`) are never violated: when the value of ``X_j`` is drawn, every rule whose
columns are all kept or synthesized up to ``X_j`` restricts the draw to the leaf's values that are
admissible given the record's already-fixed values (the bootstrap restricted to the admissible values,
renormalised). A record whose leaf holds no admissible value draws from the nearest ancestor node holding
one (the root holds every observed value of the column); such fallbacks are counted.

Encoding of categorical predictors: one-hot. A CART split on a one-hot column separates one category from
the rest, so no order is imposed on unordered categories (an ordinal code would let a split group
"Divorced" with "Married" only because their codes are adjacent); several splits build any grouping.
Numeric predictors enter as numbers.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from .rules import ColumnSchema, Rule, describe_rows, parse_rules, rule_violations

__all__ = [
    "CartDataError",
    "CartSynthesisError",
    "CartSynthesizer",
    "acs_example_rules",
    "simulate_acs_persons",
]

#: Largest number of (record, candidate value) pairs examined at once when drawing (bounds memory).
_MAX_PAIRS_PER_CHUNK = 2_000_000


class CartDataError(ValueError):
    """Bad input found before fitting: columns, missing values, rules."""


class CartSynthesisError(ValueError):
    """A record for which no observed value of a column satisfies the rules given its fixed values.

    Rules are enforced when their last column is drawn; a rule set whose earlier draws can leave no admissible
    value for a later column needs an extra rule on the earlier column (as "graduate school only from age 19"
    in :func:`acs_example_rules` keeps grade consistent with the attainment rules).
    """


@dataclass
class _ColumnTree:
    """The fitted tree of one synthesized column and its leaves' observed values.

    The leaves are ranked in depth-first order so that the leaves of any subtree are consecutive; the
    distinct (leaf, value) pairs are stored in that order, so the observed values of node ``a`` are the pairs
    ``pair_start[a] .. pair_end[a] - 1``.
    """

    column: str
    predictors: list[str]
    tree: Any
    parent: np.ndarray
    pair_start: np.ndarray
    pair_end: np.ndarray
    pair_code: np.ndarray
    pair_count: np.ndarray
    rules: list[Rule]

    @property
    def n_leaves(self) -> int:
        return int(self.tree.get_n_leaves())


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
        Logical rules (:mod:`bayessdc.models.rules` objects or their plain form) never violated by the
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
        self._trees: list[_ColumnTree] = []
        self._schema: dict[str, ColumnSchema] = {}
        self._codes: dict[str, np.ndarray] = {}
        self._data: pd.DataFrame | None = None
        self._seed: int | None = None
        self.fit_seconds: float | None = None

    # -- input -------------------------------------------------------------------------------------------

    def validate(self, data: pd.DataFrame) -> pd.DataFrame:
        """Check ``data`` and the rules before any fitting; return the released columns.

        Raises
        ------
        CartDataError
            Unknown or repeated columns, a column both kept and synthesized, missing values, a rule naming
            an unknown column or value, or a rule the data violate (the rows are named).
        """
        if not isinstance(data, pd.DataFrame):
            raise CartDataError("the data must be a pandas DataFrame")
        if not self.synthesize:
            raise CartDataError("name at least one column to synthesize")
        if len(data) == 0:
            raise CartDataError("the data have no rows")
        for role, columns in (("synthesize", self.synthesize), ("keep", self.keep)):
            unknown = [c for c in columns if c not in data.columns]
            if unknown:
                have = ", ".join(map(str, data.columns))
                raise CartDataError(f"unknown column(s) to {role}: {', '.join(unknown)} (the data have: {have})")
            repeated = sorted({c for c in columns if list(columns).count(c) > 1})
            if repeated:
                raise CartDataError(f"column(s) listed twice to {role}: {', '.join(repeated)}")
        both = [c for c in self.synthesize if c in self.keep]
        if both:
            raise CartDataError(f"column(s) both synthesized and kept: {', '.join(both)}; a column is one or the other")
        not_used = [c for c in self.categorical if c not in self.synthesize and c not in self.keep]
        if not_used:
            raise CartDataError(f"categorical column(s) neither kept nor synthesized: {', '.join(not_used)}")
        used = [c for c in data.columns if c in self.keep or c in self.synthesize]
        frame = data[used].reset_index(drop=True)
        for column in used:
            missing = np.flatnonzero(frame[column].isna().to_numpy())
            if len(missing):
                raise CartDataError(
                    f"column {column!r} has missing values at {describe_rows(missing)}: every kept or synthesized "
                    "column is a predictor of the trees; code missing values as an explicit category "
                    "(e.g. 'not reported') or drop those rows"
                )
        return frame

    def _encode(self, frame: pd.DataFrame) -> tuple[dict[str, ColumnSchema], dict[str, np.ndarray]]:
        schema, codes = {}, {}
        for column in frame.columns:
            series = frame[column]
            numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
            if numeric and column not in self.categorical:
                values = series.to_numpy(dtype=float)
                schema[column] = ColumnSchema(column, False, np.unique(series.to_numpy()))
                codes[column] = values
            else:
                categorical = pd.Categorical(series)
                schema[column] = ColumnSchema(column, True, np.asarray(categorical.categories, dtype=object))
                codes[column] = categorical.codes.astype(np.int64)
        return schema, codes

    # -- fitting (Section 2, steps 1-3) ---------------------------------------------------------------------

    def fit(self, data: pd.DataFrame, seed: int = 0) -> CartSynthesizer:
        """Validate ``data`` and fit one tree per synthesized column, in order.

        Parameters
        ----------
        data
            The confidential records (one row per person).
        seed
            Seed of the whole run: tree fitting (tie-breaking among equally good splits) and, in
            :meth:`synthesize`, the bootstrap weights and draws.

        Returns
        -------
        CartSynthesizer
            ``self``, fitted.
        """
        start = time.perf_counter()
        frame = self.validate(data)
        schema, codes = self._encode(frame)
        rules = list(self.rules)
        for rule in rules:
            rule.validate(schema)
        violated = rule_violations(rules, codes, schema)
        if violated:
            name, rows = next(iter(violated.items()))
            others = f" (and {len(violated) - 1} other rule(s))" if len(violated) > 1 else ""
            raise CartDataError(
                f"rule {name!r} is violated by the original data at {describe_rows(rows)}{others}: "
                "fix the data or the rule"
            )
        self._schema, self._codes, self._data, self._seed = schema, codes, frame, int(seed)
        tree_seed = np.random.SeedSequence([int(seed), 0x0CA27]).generate_state(1)[0]
        self._trees = []
        for j, column in enumerate(self.synthesize):
            predictors = [*self.keep, *self.synthesize[:j]]
            known = set(predictors) | {column}
            # A rule is enforced when its last column is drawn: the rules on this column whose other columns
            # are all fixed by now.
            step_rules = [r for r in rules if column in r.columns and r.columns <= known]
            self._trees.append(self._fit_column(column, predictors, step_rules, int(tree_seed)))
        self.fit_seconds = time.perf_counter() - start
        return self

    def _design(self, columns: Sequence[str], values: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Predictor matrix: one-hot columns for categorical predictors, numbers for numeric ones."""
        width = sum(len(self._schema[c].levels) if self._schema[c].categorical else 1 for c in columns)
        design = np.zeros((n, max(width, 1)), dtype=np.float32)  # no predictors: one constant column, one leaf
        offset = 0
        rows = np.arange(n)
        for column in columns:
            spec = self._schema[column]
            if spec.categorical:
                design[rows, offset + values[column]] = 1.0
                offset += len(spec.levels)
            else:
                design[:, offset] = values[column]
                offset += 1
        return design

    def _fit_column(self, column: str, predictors: list[str], rules: list[Rule], seed: int) -> _ColumnTree:
        spec = self._schema[column]
        n = len(self._data)
        design = self._design(predictors, self._codes, n)
        settings = {
            "min_samples_leaf": self.min_samples_leaf,
            "ccp_alpha": self.ccp_alpha,
            "max_depth": self.max_depth,
            "random_state": seed,
        }
        if spec.categorical:
            target_codes = self._codes[column]
            tree = DecisionTreeClassifier(**settings).fit(design, target_codes)
        else:
            target_codes = np.searchsorted(spec.levels.astype(float), self._codes[column])
            tree = DecisionTreeRegressor(**settings).fit(design, self._codes[column])
        left, right = tree.tree_.children_left, tree.tree_.children_right
        n_nodes = len(left)
        is_leaf = left == -1  # sklearn.tree._tree.TREE_LEAF
        parent = np.full(n_nodes, -1, dtype=np.int64)
        parent[left[~is_leaf]] = np.flatnonzero(~is_leaf)
        parent[right[~is_leaf]] = np.flatnonzero(~is_leaf)
        # Depth-first order: the leaves under any node get consecutive ranks.
        order, stack = [], [0]
        while stack:
            node = stack.pop()
            order.append(node)
            if not is_leaf[node]:
                stack.extend((right[node], left[node]))
        leaf_rank = np.full(n_nodes, -1, dtype=np.int64)
        leaves = [node for node in order if is_leaf[node]]
        leaf_rank[leaves] = np.arange(len(leaves))
        first, last = leaf_rank.copy(), leaf_rank.copy()
        for node in reversed(order):
            if not is_leaf[node]:
                first[node] = first[left[node]]
                last[node] = last[right[node]]
        n_levels = len(spec.levels)
        key = leaf_rank[tree.apply(design)] * n_levels + target_codes
        pairs, counts = np.unique(key, return_counts=True)
        pair_leaf = pairs // n_levels
        leaf_start = np.searchsorted(pair_leaf, np.arange(len(leaves)), side="left")
        leaf_end = np.searchsorted(pair_leaf, np.arange(len(leaves)), side="right")
        return _ColumnTree(
            column=column,
            predictors=predictors,
            tree=tree,
            parent=parent,
            pair_start=leaf_start[first],
            pair_end=leaf_end[last],
            pair_code=(pairs % n_levels).astype(np.int64),
            pair_count=counts.astype(float),
            rules=rules,
        )

    # -- synthesis (Section 2, step 4) ---------------------------------------------------------------------

    def synthesize_dataset(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """One synthetic dataset: encoded values of every kept and synthesized column.

        The kept columns are the confidential values; each synthesized column is drawn in order, each record
        in the leaf its kept and earlier synthetic values lead to, from a fresh Bayesian bootstrap of every
        leaf's observed values restricted to the values the rules admit for that record.
        """
        self._check_fitted()
        n = len(self._data)
        values = {c: self._codes[c] for c in self.keep}
        for fitted in self._trees:
            spec = self._schema[fitted.column]
            design = self._design(fitted.predictors, values, n)
            nodes = fitted.tree.apply(design).astype(np.int64)
            weights = rng.standard_gamma(fitted.pair_count)  # Bayesian bootstrap of every leaf (see module doc)
            chosen = np.full(n, -1, dtype=np.int64)
            pending = np.arange(n)
            level = 0
            stats = self.fallbacks.setdefault(fitted.column, {"ancestor": 0, "whole_column": 0, "draws": 0})
            stats["draws"] += n
            while pending.size:
                picks = self._draw_in_nodes(fitted, nodes[pending], pending, weights, values, rng)
                found = picks >= 0
                chosen[pending[found]] = picks[found]
                if level > 0:
                    stats["ancestor"] += int(found.sum())
                    stats["whole_column"] += int((found & (nodes[pending] == 0)).sum())
                pending = pending[~found]
                if not pending.size:
                    break
                up = fitted.parent[nodes[pending]]
                if (up < 0).any():
                    record = int(pending[up < 0][0])
                    fixed = {c: _decode(self._schema[c], values[c][record]) for c in values}
                    raise CartSynthesisError(
                        f"no observed value of {fitted.column!r} satisfies the rules for a record with {fixed}: "
                        "the rules may need a value the confidential data never show, or conflict with each other"
                    )
                nodes[pending] = up
                level += 1
            code = fitted.pair_code[chosen]
            values[fitted.column] = code if spec.categorical else spec.levels.astype(float)[code]
        return values

    def _draw_in_nodes(
        self,
        fitted: _ColumnTree,
        nodes: np.ndarray,
        records: np.ndarray,
        weights: np.ndarray,
        values: Mapping[str, np.ndarray],
        rng: np.random.Generator,
    ) -> np.ndarray:
        """One weighted draw per record among its node's admissible (value, weight) pairs; -1 if none."""
        start, end = fitted.pair_start[nodes], fitted.pair_end[nodes]
        lengths = end - start
        uniforms = rng.random(len(nodes))
        picks = np.full(len(nodes), -1, dtype=np.int64)
        bounds = np.cumsum(lengths)
        chunk_start = 0
        while chunk_start < len(nodes):
            base = bounds[chunk_start - 1] if chunk_start else 0
            chunk_end = max(int(np.searchsorted(bounds, base + _MAX_PAIRS_PER_CHUNK, side="right")), chunk_start + 1)
            sl = slice(chunk_start, chunk_end)
            picks[sl] = self._draw_chunk(fitted, start[sl], lengths[sl], records[sl], weights, values, uniforms[sl])
            chunk_start = chunk_end
        return picks

    def _draw_chunk(
        self,
        fitted: _ColumnTree,
        start: np.ndarray,
        lengths: np.ndarray,
        records: np.ndarray,
        weights: np.ndarray,
        values: Mapping[str, np.ndarray],
        uniforms: np.ndarray,
    ) -> np.ndarray:
        owner = np.repeat(np.arange(len(start)), lengths)
        segment_begin = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        pair = np.repeat(start - segment_begin, lengths) + np.arange(int(lengths.sum()))
        w = weights[pair]
        if fitted.rules:
            spec = self._schema[fitted.column]
            candidate = fitted.pair_code[pair]
            if not spec.categorical:
                candidate = spec.levels.astype(float)[candidate]
            record_of_pair = records[owner]

            def env(column: str) -> np.ndarray:
                return candidate if column == fitted.column else values[column][record_of_pair]

            admissible = np.ones(len(pair), dtype=bool)
            for rule in fitted.rules:
                admissible &= np.broadcast_to(rule.holds(env, self._schema), admissible.shape)
            w = np.where(admissible, w, 0.0)
        cumulative = np.concatenate([[0.0], np.cumsum(w)])
        before = cumulative[segment_begin]
        total = cumulative[segment_begin + lengths] - before
        position = np.searchsorted(cumulative[1:], before + uniforms * total, side="right")
        position = np.minimum(position, segment_begin + lengths - 1)
        has_value = np.add.reduceat(w > 0, segment_begin) > 0
        # Rounding can land on a zero weight at the end of a segment: take the segment's last positive one.
        for k in np.flatnonzero(has_value & (w[position] <= 0)):
            positive = np.flatnonzero(w[segment_begin[k] : segment_begin[k] + lengths[k]] > 0)
            position[k] = segment_begin[k] + positive[-1]
        return np.where(has_value, pair[position], -1)

    def synthesize_datasets(self, m: int, seed: int | None = None) -> pd.DataFrame:
        """The ``m`` synthetic datasets as one long table with a ``synthetic`` column 1..m.

        Parameters
        ----------
        m
            Number of synthetic datasets.
        seed
            Seed of the bootstrap draws (default: the seed given to :meth:`fit`). Dataset ``k`` depends only
            on the seed and ``k``: the first 5 of ``m = 100`` datasets are the ``m = 5`` datasets.

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
        self.fallbacks = {}
        frames = []
        for k in range(1, m + 1):
            rng = np.random.default_rng(_dataset_seed(seed, k))
            values = self.synthesize_dataset(rng)
            frames.append(self._decode_dataset(values, k))
        return pd.concat(frames, ignore_index=True)

    def _decode_dataset(self, values: Mapping[str, np.ndarray], k: int) -> pd.DataFrame:
        columns: dict[str, Any] = {"synthetic": np.full(len(self._data), k, dtype=np.int64)}
        for column in self._data.columns:
            spec = self._schema[column]
            if spec.categorical:
                columns[column] = pd.Categorical.from_codes(values[column], categories=spec.levels)
            elif column in self.keep:
                columns[column] = self._data[column].to_numpy()
            else:
                columns[column] = values[column].astype(spec.levels.dtype)
        return pd.DataFrame(columns)

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
            "trees": kinds,
            "tree_settings": {
                "min_samples_leaf": self.min_samples_leaf,
                "ccp_alpha": self.ccp_alpha,
                "max_depth": self.max_depth,
                "criterion": {"classification": "gini", "regression": "squared_error"},
                "implementation": "scikit-learn DecisionTreeClassifier / DecisionTreeRegressor",
            },
            "predictor_encoding": "one-hot for categorical predictors, numbers for numeric ones",
            "leaf_draw": "Bayesian bootstrap: Dirichlet(1,...,1) weights over the leaf's observed values, "
            "one bootstrap per leaf per synthetic dataset, one draw per record; leaves found from synthetic "
            "values of earlier columns",
            "rules": [r.to_dict() for r in self.rules],
            "rule_enforcement": "draws restricted to the values admissible given the record's fixed values; "
            "a leaf without one falls back to the nearest ancestor node holding one",
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
        encoded = {}
        for column, spec in self._schema.items():
            if spec.categorical:
                codes = pd.Categorical(np.asarray(frame[column], dtype=object), categories=spec.levels).codes
                if (codes < 0).any():
                    raise ValueError(f"column {column!r} holds values the fitted data never take")
                encoded[column] = codes.astype(np.int64)
            else:
                encoded[column] = frame[column].to_numpy(dtype=float)
        violated = rule_violations(self.rules, encoded, self._schema)
        return {rule.name: len(violated.get(rule.name, ())) for rule in self.rules}

    @property
    def data(self) -> pd.DataFrame:
        """The released columns of the fitted data (confidential; for utility measures)."""
        self._check_fitted()
        return self._data

    def _check_fitted(self) -> None:
        if self._data is None:
            raise RuntimeError("fit the synthesizer first")


def _dataset_seed(seed: int, k: int) -> np.random.SeedSequence:
    """Seed of synthetic dataset ``k``: depends only on the run's seed and ``k`` (the scheme of
    ``bayessdc.synthesis.datasets.group_seed``, kept here because models/ does not import synthesis/)."""
    return np.random.SeedSequence([int(seed), zlib.crc32(f"cart-synthetic-{k}".encode())])


def _decode(spec: ColumnSchema, value: Any) -> Any:
    return spec.levels[int(value)] if spec.categorical else float(value)


# -- a bundled example ---------------------------------------------------------------------------------------

_GRADES = ("not attending", "preschool", "grades 1-8", "grades 9-12", "undergraduate", "graduate")
_EDUCATION = ("none", "less than high school", "high school", "some college", "bachelor", "graduate degree")


def simulate_acs_persons(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """A small ACS-like person file with the logical structure of the paper's example (Section 5).

    Columns: ``age`` (0-90), ``sex``, ``relationship`` (reference person, spouse, child, other), ``enrolled``
    (school enrolment), ``grade`` (grade attended, ``"not attending"`` for those not enrolled),
    ``education`` (attainment, bounded by age) and ``marital`` (spouses are married, children under 15 never
    married). The values satisfy :func:`acs_example_rules`.
    """
    rng = np.random.default_rng(seed)
    age = np.minimum(rng.gamma(2.2, 17.0, n).astype(int), 90)
    sex = rng.choice(["female", "male"], n)
    child = age < 18
    relationship = np.where(
        child,
        np.where(rng.random(n) < 0.9, "child", "other"),
        rng.choice(["reference person", "spouse", "child", "other"], n, p=[0.5, 0.3, 0.1, 0.1]),
    )
    p_enrolled = np.select([age < 3, age < 5, age < 18, age < 25, age < 35], [0.0, 0.5, 0.97, 0.45, 0.1], default=0.02)
    enrolled = np.where(rng.random(n) < p_enrolled, "yes", "no")
    grade = np.select(
        [age < 6, age < 14, age < 18, age < 23],
        ["preschool", "grades 1-8", "grades 9-12", "undergraduate"],
        default="graduate",
    ).astype(object)
    adult_student = (age >= 23) & (rng.random(n) < 0.5)
    grade[adult_student] = "undergraduate"
    grade[enrolled == "no"] = "not attending"
    level = np.select([age < 6, age < 18, age < 19, age < 22], [0, 1, 2, 3], default=5)
    education_code = np.minimum(rng.integers(0, 6, n), level)
    education_code[(age >= 18) & (education_code < 2) & (rng.random(n) < 0.8)] = 2
    education_code[grade == "graduate"] = np.maximum(education_code[grade == "graduate"], 4)
    education = np.asarray(_EDUCATION, dtype=object)[education_code]
    marital = np.where(
        age < 15, "never married", rng.choice(["never married", "married", "divorced", "widowed"], n)
    ).astype(object)
    marital[relationship == "spouse"] = "married"
    return pd.DataFrame(
        {
            "age": age,
            "sex": sex,
            "relationship": relationship,
            "enrolled": enrolled,
            "grade": grade,
            "education": education,
            "marital": marital,
        }
    )


def acs_example_rules() -> list[dict[str, Any]]:
    """The logical rules of :func:`simulate_acs_persons`, in the rule-file form."""
    return [
        {
            "name": "grade attended only by those enrolled",
            "allowed": {
                "columns": ["enrolled", "grade"],
                "combinations": [["no", "not attending"]] + [["yes", g] for g in _GRADES[1:]],
            },
        },
        {
            "name": "graduate school only from age 19",
            "if": {"age": {"max": 18}},
            "then": {"grade": {"not_in": ["graduate"]}},
        },
        {"name": "no schooling before age 3", "if": {"age": {"max": 2}}, "then": {"enrolled": "no"}},
        {
            "name": "attainment bounded by age (under 18)",
            "if": {"age": {"max": 17}},
            "then": {"education": {"in": list(_EDUCATION[:3])}},
        },
        {
            "name": "no degree before age 19",
            "if": {"age": {"max": 18}},
            "then": {"education": {"not_in": ["bachelor", "graduate degree"]}},
        },
        {
            "name": "graduate students hold a bachelor's degree",
            "if": {"grade": "graduate"},
            "then": {"education": ["bachelor", "graduate degree"]},
        },
        {"name": "spouses are married", "if": {"relationship": "spouse"}, "then": {"marital": "married"}},
        {"name": "children under 15 never married", "if": {"age": {"max": 14}}, "then": {"marital": "never married"}},
    ]
