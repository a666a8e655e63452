"""The sequential-CART synthesizer's steps of the pipeline (Rodriguez, Freiman, Reiter & Lauger).

Column-partially synthetic data: the columns to synthesize are drawn, in order, each from a tree fitted on
the kept columns and the columns synthesized before it, with a Bayesian bootstrap of the observed values
in every leaf and the declared logical rules never violated (:mod:`bayessdc.models.cart`). Utility is the
paper's ``tau = 1 - L1/(2n)`` of count tables, set against bootstrap replicates of the original
(:mod:`bayessdc.synthesis.tables`).

What the pipeline's generic steps mean for CART
-----------------------------------------------
*Diagnostics.* No posterior is drawn by MCMC (each tree is fitted once; a dataset's only randomness is its
leaves' bootstrap weights), so the gate passes by construction; ``private/diagnostics.json`` holds per column
the tree's leaves and depth, the rules enforced and the fallbacks to an ancestor node, the times, the records.

*Risk.* No model-based disclosure risk: the release is measured as every release of records is
(:mod:`bayessdc.measures`: records copied, replicated uniques), each beside the same figure of a cross-fitted
release of the same records that never saw them (:mod:`bayessdc.models.cart.unlearned`); the default policy
removes the replicated uniques, judges the rest and tries ``donors="others"`` before it refuses.
``release.risk(known=[...])`` adds Hu & Savitsky's identification risk and attribute disclosures of
the categorical synthesized columns beside their inherent bounds (:mod:`bayessdc.measures.identification`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from bayessdc.models.cart import CartSynthesizer, check_rules_hold, encode_columns
from bayessdc.models.cart.areas import SynthesizedAreaCart
from bayessdc.models.cart.households import MAX_SIZE, HouseholdCart
from bayessdc.models.cart.rules import Rule, load_rules, parse_rules
from bayessdc.models.cart.strata import StrataPlan, StratifiedCart, default_min_stratum, plan_strata
from bayessdc.models.cart.synthesizer import FAN_OUT_FROM, FanOut
from bayessdc.synthesis.combining import kind_of_release
from bayessdc.synthesis.output import fingerprint_frame
from bayessdc.synthesis.runner import run_parts
from bayessdc.synthesis.tables import TableSpec

from ...errors import InputError
from ...pipeline.areas import (
    AreaInput,
    area_counts,
    area_datasets,
    area_roles,
    check_area_options,
    fit_area,
    prepare_area,
)
from ...pipeline.recipe import Drawn, Fitted, Lever, Prepared, Recipe
from ...release import Diagnostics, Release
from .. import area_recipe
from .areas import AreaStages, area_redraw, check_area_rules, describe_trees_area, more_area_chains, staged_fit
from .measures import CartMeasures, default_tables, parse_table, table_specs
from .reference import cart_levers, record_measure_input

__all__ = ["CART", "CartPrepared", "default_tables", "parse_table"]


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
    strata
        Which strata are fitted together, when the records are synthesized area by area.
    area
        The area model's input, when the area is synthesized before the within-area trees (``area_model=``); the
        area and the area columns are then among ``keep`` (the trees' kept columns), not released unchanged.
    """

    frame: pd.DataFrame
    synthesize: list[str]
    keep: list[str]
    rules: list[Rule]
    tables: list[TableSpec]
    dropped: list[str] = field(default_factory=list)
    strata: StrataPlan | None = None
    area: AreaInput | None = None

    @property
    def released_keep(self) -> list[str]:
        """The columns released unchanged: the kept ones but the area model's."""
        return self.keep if self.area is None else [c for c in self.keep if c not in self.area.columns]


@dataclass
class CART(Recipe):
    """Sequential CART synthesis with a Bayesian bootstrap in the leaves; defaults are the command line's.

    Parameters
    ----------
    rules
        Logical rules never violated by the synthetic data: rule objects or their plain form
        (:mod:`bayessdc.models.cart.rules`), a mapping ``{"rules": [...]}``, or the path of a JSON/YAML rules file.
    min_leaf
        Smallest number of records in a leaf (``--min-leaf``, default 50; synthpop's 5): the smallest of 5, 10, 20,
        50 at which the default policy releases the bundled ACS example (m = 20) and Adult (m = 5), measured by
        ``bench/cart_copies.py``; smaller leaves copy more records than a release that never saw them could.
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
    missing_codes
        Numeric column -> values standing for a missing value (``--missing-code hours=-8,-9``; synthpop's
        ``cont.na``): states synthesized before the value and released as the codes themselves.
    spikes
        Numeric column -> spikes of its distribution (``--spike income=0``; synthpop's ``semicont``).
    smoothing
        ``None`` (donor values) or ``"density"`` (``--smoothing density``): drawn numeric values perturbed by a
        Gaussian kernel with the leaf's ``bw.nrd0`` bandwidth, within the observed range.
    tree_builder
        ``"native"`` (default, compiled) or ``"sklearn"`` (``--tree-builder``): the same CART, but for ties.
    donors
        ``"all"`` (the paper's Bayesian bootstrap of every observation of a leaf) or ``"others"`` (``--donors``):
        a record's own observation left out of its own draw; tried when ``"all"`` fails the disclosure policy.
    strata
        A column of areas (``--strata``): the records of each area are fitted and synthesized by trees of their own
        (synthpop's ``syn.strata``; :mod:`bayessdc.models.cart.strata`). The column is kept (added to the kept
        columns when it is not among them): every record stays in its area (unless ``area_model`` draws it). The
        measures read the whole file, and each area's records copied (``stratum_copied_records``) against the same
        share of a release of its records that never saw them; the default policy judges both.
    min_stratum
        The fewest records an area's trees are fitted on (``--min-stratum``; default synthpop's ``minstratumsize``,
        10 + 10 per synthesized column); a smaller area is pooled with the other small areas of its ``pool_by``
        area, and what is left pooled together.
    pool_by
        A coarser area holding each area whole (``--pool-by``), within which the small areas are pooled.
    area_model
        The area synthesized first (``--area-model``; with ``strata``): ``"dpmpm"`` or ``"dp_areal"`` (``bsd.DPMPM()``,
        ``bsd.DPAreal()``), or such a recipe with settings of its own, draws each record's area (and the
        ``area_columns``) given its kept values (``area_given``), its posterior judged by its own release gate (a
        failing one refuses the release); then each record's synthesized columns are drawn by the trees of its
        synthetic area, given its kept values and the area model's, dataset l given the area model's dataset l
        (:mod:`bayessdc.pipeline.areas`, :mod:`bayessdc.recipes.cart.areas`). Each area's number of records is then
        synthetic, and ``release/model.json`` states none. ``None`` (the default): every record keeps its real area.
    area_columns
        Categorical columns synthesized with the area by the area model (``--area-columns``; the DPMPM only), then
        predictors of the within-area trees as kept columns are.
    area_given
        The kept columns the area model draws the area given (``--area-given``; default every kept column but the
        survey weight; each a column the categorical synthesizers take, a numeric one of few values).
    households
        The household id column (``--households``): persons are synthesized within households
        (:mod:`bayessdc.models.cart.households`). Each household's composition (its members' relationships, its
        size with them) is drawn as one value, then its household columns and its reference person's columns, then
        the other members' columns given their household; the kept columns must be the household's (an area). The
        release holds a new household id per dataset, never the original; rules across members name the reference
        person's values as ``"reference <column>"``. The measures add the households' risk
        (:mod:`bayessdc.measures.households`), and the cross-fitted release leaves whole households out.
    relationship
        The column of each member's relationship to the reference person (``--relationship``; needed with
        ``households``).
    reference
        The value of ``relationship`` marking the reference person (``--reference``, default "reference person").
    max_household
        Most members of a household (``--max-household``, default 20); a larger one is refused, naming it.
    scheduler, workers
        Where the trees are fitted and the m datasets drawn: each tree, then each dataset, is a part of
        :func:`bayessdc.synthesis.runner.run_parts` (``None``: a local dask cluster of ``workers`` threads,
        default one per core; ``"synchronous"``: one after another in this thread; or a scheduler's address).
        Below ``FAN_OUT_FROM`` records x synthesized columns, in this thread unless either is given. The
        release is the same on every path.

    Notes
    -----
    Survey weights (``bsd.synthesize(..., weights="wt")``): kept and a predictor of every tree under partial
    synthesis, the first synthesized column under full synthesis; the tables are then of weighted totals
    (:mod:`bayessdc.pipeline.weighting`). With ``households``, the weight is the household's, the same for every
    member (a weight differing within a household is refused before fitting, naming the household): kept, each
    synthetic household carries the weight of the real household it stands for and both stages' trees are drawn
    given it; synthesized, it is drawn once per household right after the composition. The tables of households are
    then of weighted totals of households, and the household risk measures never take the weight as known.

    Missing values are synthesized, never dropped (:mod:`bayessdc.models.cart.states`); the release holds NaN
    (or the declared code) where the trees put them. Columns neither kept nor synthesized are not released.

    Examples
    --------
    >>> import bayessdc as bsd
    >>> recipe = bsd.CART(min_leaf=10)
    >>> recipe.min_leaf, recipe.default_m, recipe.bootstrap
    (10, 5, 1000)
    """

    rules: Sequence[Rule | Mapping[str, Any]] | Mapping[str, Any] | str | os.PathLike[str] = ()
    min_leaf: int = 50
    ccp_alpha: float = 0.0
    max_depth: int | None = None
    categorical: Sequence[str] = ()
    tables: Sequence[TableSpec | str] | None = None
    bootstrap: int = 1000
    missing_codes: Mapping[str, Sequence[float]] | None = None
    spikes: Mapping[str, Sequence[float]] | None = None
    smoothing: str | None = None
    tree_builder: str = "native"
    donors: str = "all"
    strata: str | None = None
    min_stratum: int | None = None
    pool_by: str | None = None
    area_model: str | Recipe | None = None
    area_columns: Sequence[str] = ()
    area_given: Sequence[str] | None = None
    households: str | None = None
    relationship: str | None = None
    reference: Any = "reference person"
    max_household: int = MAX_SIZE
    scheduler: str | None = None
    workers: int | None = None
    name: ClassVar[str] = "cart"
    reads_roles_only: ClassVar[bool] = True
    takes_weights: ClassVar[bool] = True

    def _rules(self) -> list[Rule]:
        if isinstance(self.rules, str | os.PathLike):
            return load_rules(self.rules)
        return parse_rules(self.rules if isinstance(self.rules, Mapping) else list(self.rules or []))

    def _synthesizer(self, synthesize: list[str], keep: list[str], rules: list[Rule]
                     ) -> CartSynthesizer | HouseholdCart:  # fmt: skip
        synthesizer = self._persons(synthesize, keep, rules)
        if self.households is None:
            return synthesizer
        return HouseholdCart(synthesizer, self.households, self.relationship, self.reference, self.max_household,
                             areas=self.strata)  # fmt: skip

    def _persons(self, synthesize: list[str], keep: list[str], rules: list[Rule]) -> CartSynthesizer:
        return CartSynthesizer(
            synthesize,
            keep,
            rules,
            min_samples_leaf=self.min_leaf,
            ccp_alpha=self.ccp_alpha,
            max_depth=self.max_depth,
            categorical=list(self.categorical),
            missing_codes=dict(self.missing_codes or {}),
            spikes=dict(self.spikes or {}),
            smoothing=self.smoothing,
            tree_builder=self.tree_builder,
            donors=self.donors,
        )

    def _fan_out(self, prepared: CartPrepared, label: str) -> FanOut | None:
        """How the trees or the datasets run: as parts of the runner, or (``None``) in this thread."""
        if self.scheduler is self.workers is None and len(prepared.data) * len(prepared.synthesize) < FAN_OUT_FROM:
            return None
        return partial(run_parts, scheduler=self.scheduler, workers=self.workers, label=label)

    def kept_columns(self, keep: list[str]) -> list[str]:
        """``keep`` with the column of areas first when ``strata=`` names one it lacks (as :meth:`prepare` keeps it):
        a release by area keeps its areas, so a survey weight is kept with them.

        Examples
        --------
        >>> CART(strata="area").kept_columns(["sex"]), CART().kept_columns([])
        (['area', 'sex'], [])
        """
        return keep if self.strata is None or self.strata in keep else [self.strata, *keep]

    def prepare(
        self, frame: pd.DataFrame, synthesize: list[str] | None, keep: list[str] | None, seed: int = 0,
        weights: str | None = None,
    ) -> CartPrepared:
        """Check the columns, the tables and the rules against the data (errors name the column, rule or rows);
        the survey weight column ``weights`` is left out of the default tables."""
        if isinstance(self.bootstrap, bool) or not isinstance(self.bootstrap, int) or self.bootstrap < 1:
            raise InputError(f"bootstrap= must be at least 1, got {self.bootstrap!r}")
        synthesize, keep = list(synthesize or []), list(keep or [])
        if self.strata is not None:
            if self.strata in synthesize:
                raise InputError(f"strata={self.strata!r} is among the columns to synthesize: the areas are kept, "
                                 "every record synthesized within its own")  # fmt: skip
            keep = keep if self.strata in keep else [self.strata, *keep]
        elif self.pool_by is not None or self.min_stratum is not None:
            raise InputError("pool_by= and min_stratum= need strata=, the column of areas synthesized one by one")
        columns: list[str] = []
        if self.area_model is not None or self.area_columns or self.area_given is not None:
            columns, given = self._area_roles(frame, synthesize, keep, weights)
            keep = [*keep, *columns[1:]]  # the area columns: kept by the trees, drawn by the area model
        if self.households is not None:
            if self.relationship is None:
                raise InputError(f"households={self.households!r} needs relationship=, the column of each member's "
                                 "relationship to the reference person")  # fmt: skip
            if self.relationship in keep:
                raise InputError(f"relationship={self.relationship!r} is kept: in a household release the members' "
                                 "relationships are synthesized as the household's composition")  # fmt: skip
            if self.relationship not in synthesize:
                synthesize = [self.relationship, *synthesize]
        elif self.relationship is not None:
            raise InputError("relationship= needs households=, the household id column")
        try:
            synthesizer = self._synthesizer(synthesize, keep, self._rules())
        except ValueError as err:  # a setting out of range (smoothing=)
            raise InputError(str(err)) from None
        if weights is not None and self.households is not None and self.households in frame.columns:
            # before HouseholdCart.validate's generic check of the kept columns, which would name no weight
            check_household_weight(frame, self.households, weights)
        released = synthesizer.validate(frame)
        plan = None
        if self.strata is not None:
            minimum = default_min_stratum(synthesize) if self.min_stratum is None else self.min_stratum
            plan = plan_strata(frame, self.strata, minimum, self.pool_by)
        if columns:
            tables = table_specs(self.tables, frame, released, [*columns, *synthesize],
                                 [c for c in keep if c not in columns], weights)  # fmt: skip
            if self.tables is None:  # each column the trees draw by the (synthetic) area too
                tables += [parse_table(f"{c},{self.strata}", released) for c in synthesize if c != weights]
        else:
            tables = table_specs(self.tables, frame, released, synthesize, keep, weights)
        if isinstance(synthesizer, HouseholdCart):
            synthesizer.check(frame)
        else:
            _check_rules(synthesizer, released)
            check_area_rules(synthesizer.rules, columns, synthesize)
        area = prepare_area(area_recipe(self.area_model), frame, columns, given, seed) if columns else None
        identity = {
            "synthesizer": "cart",
            "input": fingerprint_frame(released),
            "synthesize": synthesize,
            "keep": keep,
            "rules": [r.to_dict() for r in synthesizer.rules],
            "tree_settings": {"min_samples_leaf": self.min_leaf, "ccp_alpha": self.ccp_alpha,
                              "max_depth": self.max_depth, "tree_builder": self.tree_builder},  # fmt: skip
            "categorical": list(self.categorical),
            "missing_codes": synthesizer.missing_codes,
            "spikes": synthesizer.spikes,
            "smoothing": self.smoothing, "donors": self.donors,
            "tables": {t.name: t.to_dict() for t in tables},
            "bootstrap": self.bootstrap,
        }
        if plan is not None:
            identity["strata"] = {"column": plan.column, "min_stratum": plan.min_size, "pool_by": plan.parent}
        if self.households is not None:
            identity["households"] = {"column": self.households, "relationship": self.relationship,
                                      "reference": str(self.reference), "max_household": self.max_household}
        notices = []
        if area is not None:
            model = dict(area.prepared.identity)
            # the area model's release gate at the top, as a categorical run's: a resumed run may raise its budget
            identity["release_gate"] = model.pop("release_gate", None)
            identity["area_model"] = {"columns": area.columns, "given": area.given, "model": model}
            notices = list(area.prepared.notices)
        dropped = [c for c in frame.columns if c not in released.columns]
        return CartPrepared(
            released, identity, notices, frame=frame, synthesize=synthesize, keep=keep, rules=list(synthesizer.rules),
            tables=tables, dropped=dropped, strata=plan, area=area, households=self.households,
        )  # fmt: skip

    def _area_roles(self, frame: pd.DataFrame, synthesize: list[str], keep: list[str], weights: str | None
                    ) -> tuple[list[str], list[str]]:  # fmt: skip
        """The area model's columns and the kept columns it is given (:func:`~bayessdc.pipeline.areas.area_roles`),
        after the options that need one another."""
        check_area_options(self.strata, self.area_model)
        if self.households is not None:
            raise InputError("households= with area_model=: persons within households with the area synthesized are "
                             "not built; leave area_model= out (every household keeps its area)")  # fmt: skip
        model = area_recipe(self.area_model)
        return area_roles(frame, self.strata, self.area_columns, self.area_given, synthesize, keep,
                          self.categorical, self.pool_by, weights, model.name)  # fmt: skip

    @property
    def gate(self) -> Any:
        """The area model's release gate policy, which decides the release when the area is synthesized (its
        stopping rule adds the area model's chains); ``None`` otherwise (CART draws no posterior)."""
        return None if self.area_model is None else getattr(area_recipe(self.area_model), "gate", None)

    def check_run(self, m: int, allow_unconverged: bool) -> None:
        """The area model's own checks of ``m`` and its chains (:meth:`Recipe.check_run`), when there is one."""
        if self.area_model is not None:
            area_recipe(self.area_model).check_run(m, allow_unconverged)

    def more_chains(self, prepared: CartPrepared, fitted: Fitted, chains: int, seed: int, workdir: Path | None,
                    progress: bool) -> Fitted | None:  # fmt: skip
        """The fit with the area model's chains brought to ``chains`` and its release gate judged again, the trees
        unchanged (:func:`~bayessdc.recipes.cart.areas.more_area_chains`); ``None`` without an area model."""
        if prepared.area is None:
            return None
        return more_area_chains(prepared.area, fitted.state, chains, workdir, progress)

    def fit(self, prepared: CartPrepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """Fit one tree per synthesized column, in order (state: the fitted :class:`CartSynthesizer`).

        CART's path through the pipeline is explicit: it draws no posterior, so there is nothing for a
        convergence gate to judge and the gate passes by construction; the m datasets come from the trees'
        leaves with Bayesian bootstrap weights (:meth:`draw`)."""
        synthesizer: Any = self._synthesizer(prepared.synthesize, prepared.keep, prepared.rules)
        if prepared.strata is not None:  # one synthesizer per group of strata, the groups run as parts
            synthesizer = StratifiedCart(synthesizer, prepared.strata)
        first = None
        if prepared.area is not None:  # the area model first: its release gate decides the release
            first = fit_area(prepared.area, m, workdir, progress, self.name)
            synthesizer = SynthesizedAreaCart(synthesizer, prepared.area.columns)
        synthesizer.fit(prepared.frame, seed, self._fan_out(prepared, "strata" if prepared.strata else "trees"))
        summary = {
            "trees": synthesizer.tree_summary(),
            "fit_seconds": synthesizer.fit_seconds,
            "synthesis_seconds": None,
            "n_records": len(prepared.data),
            "dropped_columns": prepared.dropped,
        }
        if first is not None:
            return staged_fit(prepared.area, first, synthesizer, summary)
        return Fitted(Diagnostics({}, summary, passed=True), None, what="the trees", state=synthesizer)

    def describe(self, prepared: CartPrepared, fitted: Fitted) -> dict[str, Any]:
        """The trees' settings, rules and column kinds (no split or leaf value), the number of records and the
        combining rules of the analyst's estimates (``kind_of_release``: ``"partial"`` or ``"simple"``)."""
        rules = kind_of_release(prepared.released_keep, self.name)  # the analyst's combining rules
        if prepared.area is not None:
            stages: AreaStages = fitted.state
            description = {**stages.trees.describe(), "area_model": describe_trees_area(prepared.area, stages.first)}
        else:
            description = fitted.state.describe()
        return {**description, "n_records": len(prepared.data), "combining_rules": rules}

    def report_content(self, prepared: CartPrepared, release: Release) -> Any:
        """The report's material: what was synthesized, the synthesized columns compared, the trees."""
        return cart_report_content(prepared, release)

    def draw(self, prepared: CartPrepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Drawn:
        """Draw the m datasets from the trees; the measures read them with the analyst's tables, the categorical
        columns and the cross-fitted datasets of the records (:func:`record_measure_input`)."""
        synthesizer: Any = fitted.state
        released, tables = prepared.data, prepared.tables
        start = time.perf_counter()
        if prepared.area is not None:  # the area model's m datasets, then the trees of each record's synthetic area
            areas = area_datasets(prepared.area, fitted.state, m)
            synthesizer = fitted.state.trees.with_areas(areas, area_redraw(prepared.area, fitted.state, m))
        synthetic = synthesizer.synthesize_datasets(m, fan_out=self._fan_out(prepared, "datasets"))
        synthesis_seconds = time.perf_counter() - start
        kinds = synthesizer.describe()["trees"]
        if prepared.area is not None:
            kinds = {**dict.fromkeys(prepared.area.columns, "classification"), **kinds}
        trees = synthesizer.tree_summary()
        measures = CartMeasures(released, synthetic, list(synthesizer.keep), kinds, seed, weights=prepared.weights)
        measures.tables, measures.bootstrap = list(tables), self.bootstrap
        data = record_measure_input(measures, synthesizer, prepared.frame, m, seed, self.bootstrap,
                                    self._fan_out(prepared, "unlearned"))  # fmt: skip
        facts = {
            "records": len(released),
            "fit_seconds": float(synthesizer.fit_seconds or 0.0),
            "synthesis_seconds": synthesis_seconds,
            "rule_fallbacks": {c: t["fallbacks"].get("ancestor", 0) for c, t in trees.items()},
        }
        private_tables, diagnostics = {}, {"trees": trees, "synthesis_seconds": synthesis_seconds}
        if self.households is not None:
            household_input(data, synthesizer, self.households, self.relationship)
            measures.households = self.households
            private_tables["households.parquet"] = _household_sizes(prepared.frame, self.households)
            facts.update(households=int(prepared.frame[self.households].nunique()))
        if prepared.strata is not None:
            data.strata = measures.strata = prepared.strata.column
            groups = synthesizer.group_summary()
            private_tables["strata.parquet"] = groups
            facts.update(strata=int(sum(len(v) for v in prepared.strata.groups.values())), strata_groups=len(groups))
        if prepared.area is not None:
            private_tables["area_counts.parquet"] = area_counts(released, synthetic, prepared.strata.column)
            facts.update(area_model=prepared.area.name)
            # the first-stage draws rejected for a rule no value of the synthetic area admits, beside the area model
            redrawn = {**synthesizer.redrawn, "why": "records of a dataset whose synthetic area's trees held no value "
                       "the rules admit: their area and area columns drawn again by the area model, then their other "
                       "columns (rows: such records; rejected: first-stage draws rejected; most: of one record)"}
            diagnostics["area_model"] = {**fitted.diagnostics.summary.get("area_model", {}), "redrawn": redrawn}
        return Drawn(
            synthetic, facts=facts, measures=measures, measure_input=data, private_tables=private_tables,
            diagnostics=diagnostics,
        )  # fmt: skip

    def levers(self) -> list[Lever]:
        """What lowers the records a CART release copies, in words (:func:`cart_levers`)."""
        return cart_levers()

    def no_refit_settings(self) -> list[dict[str, Any]]:
        """``donors = "others"`` after the paper's ``"all"``: the same trees, no record's own value drawn for it."""
        return [{"donors": "others"}] if self.donors == "all" else []

    def under(self, setting: dict[str, Any], fitted: Fitted) -> tuple[CART, Fitted]:
        """This recipe and its trees with other ``donors``: the same fit, another draw."""
        return replace(self, **setting), replace(fitted, state=fitted.state.drawing(**setting))


def _household_sizes(frame: pd.DataFrame, household: str) -> pd.DataFrame:
    """Per household size of the data: households and persons (private)."""
    sizes = frame.groupby(household, sort=False).size().value_counts().sort_index()
    counts = sizes.to_numpy()
    return pd.DataFrame({"size": sizes.index, "households": counts, "persons": sizes.index * counts})


def check_household_weight(frame: pd.DataFrame, household: str, weights: str) -> None:
    """Refuse a survey weight that differs between the members of a household (persons without a household id are
    left to :meth:`HouseholdCart.validate`).

    In a household release the weight is the household's: kept, each synthetic household carries the weight of the
    real household it stands in the place of, a kept household column every tree conditions on; synthesized, it is
    drawn once per household, as a household column. A person weight (calibrated member by member) is neither.

    Parameters
    ----------
    frame
        The confidential persons, with valid household ids.
    household
        The household id column.
    weights
        The survey weight column.

    Raises
    ------
    bayessdc.InputError
        Naming the first household (in the data's order) whose members' weights differ, its weights, and how many
        households are so.
    """
    spread = frame.groupby(household, sort=False)[weights].nunique()
    differing = spread.index[(spread > 1).to_numpy()]
    if not len(differing):
        return
    name = differing[0]
    values = ", ".join(f"{v:g}" for v in sorted(frame.loc[frame[household] == name, weights].unique()))
    raise InputError(
        f"weights={weights!r} differs between the members of household {name!r} ({values}; {len(differing)} "
        "household(s) so): a household release takes a household weight, the same for every member, which each "
        "synthetic household carries from the real household it stands for (or draws once, fully synthetic); pass "
        "the household's base (design) weight as weights=, not person weights calibrated member by member"
    )


def household_input(data: Any, synthesizer: Any, household: str, relationship: str) -> None:
    """Set the measure input of a household release up (:mod:`bayessdc.measures.households`): the household id,
    what the intruder knows of a household (its kept columns, and its members' relationships and person columns,
    numeric ones on their decile bands: the composition as a neighbour sees it) and what it would learn (the
    synthesized household columns, e.g. tenure). The survey weight (``data.weights``), kept or synthesized, is
    neither: a design variable whose nearly unique values the intruder is not assumed to know (as in the knowledge
    sets of a release of records), nor a secret. A household release has no row ``i`` standing for record ``i``:
    the person-level identification figures of a partially synthetic release are not set."""
    from bayessdc.measures.households import household_level_columns
    from bayessdc.risk.banding import band_edges, numeric_columns

    drawn = [c for c in synthesizer.synthesize if c not in (relationship, data.weights)]
    household_columns = household_level_columns(data.original, household, drawn)
    person = [c for c in synthesizer.synthesize if c not in household_columns and c != data.weights]
    data.households = household
    data.household_known = [*(c for c in synthesizer.keep if c != data.weights), *person]
    data.household_secrets = household_columns
    data.household_relationship = relationship
    data.known_sets, data.partially_synthetic, data.synthesized, data.kept = [], False, [], []
    data.bands = {c: band_edges(data.original[c]) for c in numeric_columns(data.original, person)}


def _check_rules(synthesizer: CartSynthesizer, released: pd.DataFrame) -> None:
    """The rules' columns and values, and the original data against the rules (what ``fit`` checks first).

    Done before the output folder is created, so that a violated rule leaves nothing behind.
    """
    schema, codes = encode_columns(released, synthesizer.categorical)
    check_rules_hold(synthesizer.rules, codes, schema)


def cart_report_content(prepared: CartPrepared, release: Release) -> Any:
    """What sequential CART did, for its report (:class:`bayessdc.report.ReportContent`): its trees among the
    diagnostics; risk and utility are laid out from the release's measures."""
    from bayessdc.report import Figure, ReportContent, Table, Text, plots

    released, synthesize, keep = prepared.data, prepared.synthesize, prepared.released_keep
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
    strata = release.description.get("strata")
    if strata:
        pooled = [g for g in strata["groups"] if len(g["strata"]) > 1]
        content.about.append(
            f"Synthesized area by area: the records of each {strata['column']} fitted and drawn by trees of their own "
            f"({len(strata['groups'])} groups of {sum(len(g['strata']) for g in strata['groups'])} areas; "
            f"{len(pooled)} pool(s) of areas under {strata['min_records']} records). The records copied are judged "
            "in each area too (stratum_copied_records)."
        )
    area = release.description.get("area_model")
    if area:
        content.about.append(
            f"The area {area['synthesizes'][0]} was synthesized first, by the {area['model']} given "
            f"{', '.join(area['given'])}" + (f" with {', '.join(area['synthesizes'][1:])}" if area["synthesizes"][1:]
                                             else "")
            + ", judged by its own release gate; each record's other columns were then drawn by the trees of its "
            "synthetic area, so each area's number of records is synthetic. The records copied are judged against "
            "cross-fitted trees given the same synthetic areas."
        )
        redrawn = release.diagnostics.summary.get("area_model", {}).get("redrawn", {})
        if redrawn.get("rows"):
            content.about.append(
                f"{redrawn['rows']:,} record(s) of the {release.m} datasets were placed by the area model in an area "
                "whose trees hold no value the rules admit for them: their area was drawn again by the area model "
                f"({redrawn['rejected']:,} draw(s) rejected, at most {redrawn['most']} for one record), then their "
                "other columns by their new area's trees."
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
