"""Attacks against a control set: singling out, linkability and inference, and the distance to the closest record.

The attack-based evidence regulators read beside the model-based risk figures (the design of anonymeter,
Giomi et al. 2023, which France's CNIL reviewed against the Article 29 Working Party's three criteria). Each
attack uses the synthetic data against the *training* records (those the synthesizer was fitted on) and,
identically, against a *control* set (real records of the same population the synthesizer never saw:
:attr:`~bayessdc.measures.MeasureInput.holdout`); the figure is the risk
``(r_train - r_control) / (1 - r_control)``, the share of what the control attack missed that the training attack
got (0: the synthetic data reveal no more of the training records than of anyone else; 1: every attack that
could succeed did). The computations are :mod:`bayessdc.risk.attacks`; the measures apply only when the input
has the original records and a control set.

Per measure, the values are each dataset's risk (bounded to [0, 1], as anonymeter reports it) and the
references, for the m datasets pooled (their successes and attacks summed): ``pooled_risk`` with its 95%
interval, and the success rates it is made of, ``training``, ``control`` and the naive ``baseline`` (random
guesses), each a Wilson estimate with its interval. The details table holds every dataset's counts and rates.
The pooled risk's interval is the one that says whether there is any risk at all: each dataset's value is
bounded at 0, so their mean leans above 0 when the true risk is 0.

What the attacks use (:class:`AttackSettings`, ``MeasureInput.attacks``; every field has a default):

* the attacker's *auxiliary* columns: the released columns;
* **singling out** (:class:`SinglingOut`), subsets ``univariate`` and ``multivariate``: predicates on the
  synthesized columns when some columns are kept, on all auxiliary columns otherwise, matching exactly one
  record distinct on all auxiliary columns. In a partially synthetic
  release the kept columns are the original values: a condition on one picks the same training records in the
  release as in the original, so predicates using them single out training records more often than control
  records whatever the synthesizer did (on kept columns alone, by construction: the agency's choice to keep
  them, not the synthesizer's doing);
* **linkability** (:class:`Linkability`), one subset naming the two sources (``a+b | c+d``): by default the kept
  columns against the synthesized ones, else the first half of the auxiliary columns against the second. On a
  partially synthetic release the kept half finds a target's own row (when its kept values are unique), so a
  link says that the synthesized values point back to the same row: the release ties a person's kept values to
  their true synthesized values. Two sources that share a kept column identifying people link through it alone
  (both halves find the target's own row); such a split is accepted when given, and scores near 1 whatever the
  synthesizer did;
* **inference** (:class:`Inference`), one subset per secret: each synthesized column (every auxiliary column
  when none is), guessed from the other auxiliary columns. Kept columns are never secrets by default: the
  release publishes them;
* **distance to the closest record** (:class:`DistanceToClosestRecord`, :class:`DistanceRatio`): over all
  auxiliary columns (Gower's mixed-type distance), and for a partially synthetic release also over its
  synthesized columns alone: over the released columns a partially synthetic record sits at its own original's
  kept values, so where the kept columns identify people its distance can measure them as much as the
  synthesizer.

References
----------
Giomi, M., Boenisch, F., Wehmeyer, C. & Tasnádi, B. (2023). A Unified Framework for Quantifying Privacy Risk in
Synthetic Data. Proceedings on Privacy Enhancing Technologies 2023(2), 312-328.

Article 29 Data Protection Working Party (2014). Opinion 05/2014 on Anonymisation Techniques (WP216).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .base import Z95, Measure, MeasureInput, MeasureResult, register

__all__ = [
    "AttackPlan",
    "AttackSettings",
    "DistanceRatio",
    "DistanceToClosestRecord",
    "Inference",
    "Linkability",
    "SinglingOut",
    "attack_plan",
]

#: Holdout quantiles of the distance to the closest record, by subset.
DCR_QUANTILES = {"holdout 5th percentile": 0.05, "holdout median": 0.5}


@dataclass(frozen=True)
class AttackSettings:
    """What the attack measures use (:attr:`bayessdc.measures.MeasureInput.attacks`).

    Attributes
    ----------
    secrets
        The inference attack's secrets, one attack each (default: each synthesized column; every auxiliary column
        when none is synthesized).
    auxiliary
        The columns the attacker knows and every attack uses (default: the released columns).
    split
        The linkability attack's two sources (default: the kept auxiliary columns against the others when some
        are kept, else the first half of the auxiliary columns against the second).
    n_attacks
        Attacks per synthetic dataset: targets of each set (training and control), singling-out predicates.
    n_neighbors
        Nearest synthetic records of each source that may link a target (10, as anonymeter's documentation links;
        with 1, a link needs both halves' single nearest record to be the target's, and ties among the
        synthesized columns' few levels make that a matter of chance: on the Adult bench 0.006 where 10 gave
        0.134).
    n_cols
        Conditions of a multivariate singling-out predicate.
    tolerance
        Relative tolerance of a numeric secret's guess.
    max_rows
        Records of each synthetic dataset and of the holdout whose distance to the closest training record is
        measured (a random sample; ``None``: all).
    compatibility
        The form of the singling-out figure: ``"bayessdc"`` (default), the rates of the predicates made and the
        control count scaled by the model fitted to the predicates' counts in the control set; or
        ``"anonymeter"``, anonymeter 1.1's figure, the rates over the ``n_attacks`` predicates asked for and its
        control factor (about ``(n_control + 1) / (n_training + 1)``), for comparing with anonymeter (see
        :func:`bayessdc.risk.attacks.singling_out`: on 30,000 Adult records its univariate risk is 0.004 where the
        3 to 6 predicates made give 0.49, and its factor 0.22 where the predicates' own is about 2).
    """

    secrets: tuple[str, ...] = ()
    auxiliary: tuple[str, ...] = ()
    split: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    n_attacks: int = 500
    n_neighbors: int = 10
    n_cols: int = 3
    tolerance: float = 0.05
    max_rows: int | None = 5000
    compatibility: str = "bayessdc"

    def __post_init__(self) -> None:
        for name in ("secrets", "auxiliary"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        if self.split is not None:
            sources = tuple(((s,) if isinstance(s, str) else tuple(s)) for s in self.split)
            if len(sources) != 2 or not all(sources):
                raise ValueError("split must be two non-empty lists of columns")
            object.__setattr__(self, "split", sources)
        for name in ("n_attacks", "n_neighbors", "n_cols"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_rows is not None and self.max_rows < 1:
            raise ValueError("max_rows must be at least 1 (or None)")
        if not self.tolerance >= 0:
            raise ValueError("tolerance must be non-negative")
        if self.compatibility not in ("bayessdc", "anonymeter"):
            raise ValueError(f"compatibility must be 'bayessdc' or 'anonymeter', not {self.compatibility!r}")

    @classmethod
    def preset(cls, name: str | None = None) -> AttackSettings:
        """Named settings: ``"bayessdc"`` (or ``None``), the defaults; ``"anonymeter"``, anonymeter 1.1's settings
        and form as its documentation runs them: 500 attacks, multivariate predicates of 3 columns, links through
        10 neighbours, a numeric secret right within 5%, and its singling-out figure
        (``compatibility="anonymeter"``), so that its figures can be set beside anonymeter's on the same files.

        Raises
        ------
        ValueError
            An unknown name (the message lists the presets).
        """
        if name in (None, "bayessdc"):
            return cls()
        if name == "anonymeter":
            return cls(n_attacks=500, n_neighbors=10, n_cols=3, tolerance=0.05, compatibility="anonymeter")
        raise ValueError(f"unknown attack preset {name!r}; the presets are 'bayessdc' and 'anonymeter'")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the run's description and identity)."""
        from dataclasses import asdict

        out = asdict(self)
        out["secrets"], out["auxiliary"] = list(self.secrets), list(self.auxiliary)
        out["split"] = None if self.split is None else [list(s) for s in self.split]
        return out


@dataclass(frozen=True)
class AttackPlan:
    """The columns every attack uses on one input, the defaults of :class:`AttackSettings` resolved."""

    auxiliary: list[str]
    synthesized: list[str]
    kept: list[str]
    secrets: list[str]
    split: tuple[list[str], list[str]] | None
    singling_out: list[str]
    distance: list[str]
    settings: AttackSettings


def attack_plan(data: MeasureInput) -> AttackPlan:
    """The columns of every attack on ``data`` (see the module): its settings, or their defaults.

    Raises
    ------
    KeyError
        A column of the settings that the original, the control set or the synthetic datasets lack.
    """
    settings = data.attacks or AttackSettings()
    auxiliary = list(settings.auxiliary or data.released)
    secrets = list(settings.secrets) or [c for c in data.synthesized if c in data.released] or auxiliary
    named = auxiliary + secrets + [c for s in settings.split or () for c in s]
    for name, frame in (("original", data.original), ("control set", data.holdout), ("synthetic", data.synthetic)):
        absent = [c for c in dict.fromkeys(named) if c not in frame.columns]
        if absent:
            raise KeyError(f"the {name} lacks the attack columns {absent}")
    synthesized = [c for c in data.synthesized if c in auxiliary]
    kept = [c for c in data.kept if c in auxiliary]
    secrets = [s for s in secrets if [c for c in auxiliary if c != s]]
    if settings.split is not None:
        split = (list(settings.split[0]), list(settings.split[1]))
    elif kept and len(kept) < len(auxiliary):
        split = (kept, [c for c in auxiliary if c not in kept])
    elif len(auxiliary) >= 2:
        half = (len(auxiliary) + 1) // 2
        split = (auxiliary[:half], auxiliary[half:])
    else:
        split = None
    partial = bool(kept and synthesized)
    return AttackPlan(
        auxiliary=auxiliary, synthesized=synthesized, kept=kept, secrets=secrets, split=split,
        singling_out=synthesized if partial else auxiliary, distance=auxiliary,
        settings=settings,
    )  # fmt: skip


def _cached(data: MeasureInput, key: str, compute: Any) -> pd.DataFrame:
    """A table computed once per input (``data.cache``)."""
    key = f"attacks:{key}"
    if key not in data.cache:
        data.cache[key] = compute()
    return data.cache[key]


ATTACK_REFERENCES = {
    "pooled_risk": "the risk of the m datasets' attacks pooled (successes and attacks summed), with its 95% interval",
    "training": "the attack's success rate on the training records, the datasets pooled (Wilson estimate and 95% "
    "interval)",
    "control": "the same attack's success rate on the control records, real records the synthesizer never saw",
    "baseline": "a naive attacker's success rate on the training records (random guesses)",
}


class _Attack(Measure):
    """An attack's risk per dataset, its pooled figures as references and its counts as details."""

    reads = ("original", "holdout", "released", "attacks", "kept", "synthesized")

    kind = "risk"
    better = "lower"
    unit = "risk, 0 to 1"
    references = ATTACK_REFERENCES
    bounds = (0.0, 1.0)

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and data.holdout is not None and bool(data.released or data.attacks)

    def _from_tables(self, tables: dict[str, pd.DataFrame], why: Any = None) -> MeasureResult:
        """The result of each subset's attack table: per-dataset risks, the pooled figures as references, the
        pooled risk's interval (Wilson's, propagated) as the figure's own interval, and ``why(subset, table)``'s
        note where a figure is missing or rests on few attacks."""
        values, references, details, intervals, notes = [], [], [], {}, {}
        for subset, table in tables.items():
            per = table[table["dataset"] != 0]
            values += [{"subset": subset, "dataset": int(d), "value": float(v)}
                       for d, v in zip(per["dataset"], per["risk"], strict=True)]  # fmt: skip
            pooled = table[table["dataset"] == 0].iloc[0]
            for name, column in (("pooled_risk", "risk"), ("training", "training"), ("control", "control"),
                                 ("baseline", "baseline")):  # fmt: skip
                references.append({"subset": subset, "reference": name, "value": float(pooled[column]),
                                   "lower": float(pooled[f"{column}_lower"]),
                                   "upper": float(pooled[f"{column}_upper"])})  # fmt: skip
            intervals[subset] = (float(pooled["risk_lower"]), float(pooled["risk_upper"]))  # the attacks' own
            note = why(subset, per) if why is not None else ""
            if not note and not per["attacks"].gt(0).all():
                note = "no attack could be made on some dataset(s)"
            if note:
                notes[subset] = note
            details.append(table.drop(columns=[c for c in ("secret",) if c in table]).assign(subset=subset))
        result = self.result(values, references)
        result.details = pd.concat(details, ignore_index=True) if details else None
        result.intervals, result.notes = intervals, notes
        return result


@register
class SinglingOut(_Attack):
    """Singling out: predicates derived from the synthetic records that single out one training record, against
    the same predicates on the control set (subsets ``univariate`` and ``multivariate``).

    For a partially synthetic release the predicates use the synthesized columns only: the kept columns are the
    original values, and a condition on one picks the same training records in the release as in the original."""

    name = "singling_out"
    title = "singling out (against a control set)"
    description = (
        "risk (r_train - r_control) / (1 - r_control) of predicates derived from the synthetic records that match "
        "exactly one training record, against the same predicates on the control set (anonymeter's design)"
    )
    subsets = "'univariate' or 'multivariate' predicates"
    subset_names = ("univariate", "multivariate")

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.risk.attacks import singling_out

        plan = attack_plan(data)
        s = plan.settings
        tables = {
            mode: _cached(data, f"singling_out:{mode}:{s.compatibility}", lambda mode=mode: singling_out(
                data.original, data.synthetic, data.holdout, plan.auxiliary, within=plan.singling_out, mode=mode,
                n_attacks=s.n_attacks, n_cols=s.n_cols, seed=data.seed, compatibility=s.compatibility,
            ))  # fmt: skip
            for mode in ("univariate", "multivariate")
        }
        columns = ", ".join(plan.singling_out)

        def why(mode: str, per: pd.DataFrame) -> str:
            made, asked = int(per["predicates"].min()), s.n_attacks
            if made == 0:
                return (f"not computed: no {mode} predicate on {columns} matches exactly one synthetic record in "
                        "some dataset (every value is shared by several records), so there is nothing to attack with")
            return f"rests on as few as {made} predicates of the {asked} asked for" if made < min(asked, 30) else ""

        return self._from_tables(tables, why)


@register
class Linkability(_Attack):
    """Linkability: two sources of the same people (their columns split) linked through the nearest synthetic
    records, against the same attack on the control set (one subset, the two sources ``a+b | c+d``).

    By default the kept columns form one source and the synthesized ones the other: a link then says that the
    synthesized values of a person's own row are nearer their true values than any other row's are. A split whose
    two sources share a kept column that identifies people links them through it, whatever the synthesizer."""

    name = "linkability"
    title = "linkability (against a control set)"
    description = (
        "risk (r_train - r_control) / (1 - r_control) that the nearest synthetic records of a person's two halves "
        "(two sources' columns) are the same record, against the same attack on the control set"
    )
    subsets = "the two sources' columns, 'a+b | c+d'"
    subset_names, subset_columns = None, True

    def applies(self, data: MeasureInput) -> bool:
        return super().applies(data) and attack_plan(data).split is not None

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.risk.attacks import linkability

        plan = attack_plan(data)
        s = plan.settings
        subset = " | ".join("+".join(source) for source in plan.split)
        table = _cached(data, "linkability", lambda: linkability(
            data.original, data.synthetic, data.holdout, plan.split, n_attacks=s.n_attacks,
            n_neighbors=s.n_neighbors, seed=data.seed,
        ))  # fmt: skip
        return self._from_tables({subset: table})


@register
class Inference(_Attack):
    """Inference: a secret column guessed as that of the nearest synthetic record on the other auxiliary columns,
    against the same attack on the control set (one subset per secret).

    The secrets are the synthesized columns (the release publishes the kept ones); the attacker knows the
    target's kept values and its other synthesized values."""

    name = "inference"
    title = "inference (against a control set)"
    description = (
        "risk (r_train - r_control) / (1 - r_control) of guessing a secret column as that of the nearest synthetic "
        "record on the other auxiliary columns, against the same attack on the control set"
    )
    subsets = "the secret column guessed"
    subset_names, subset_columns = None, True

    def applies(self, data: MeasureInput) -> bool:
        return super().applies(data) and bool(attack_plan(data).secrets)

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.risk.attacks import inference

        plan = attack_plan(data)
        s = plan.settings
        table = _cached(data, "inference", lambda: inference(
            data.original, data.synthetic, data.holdout, plan.secrets, plan.auxiliary, n_attacks=s.n_attacks,
            tolerance=s.tolerance, seed=data.seed,
        ))  # fmt: skip
        by_secret = table.groupby("secret", sort=False)
        return self._from_tables({secret: t.reset_index(drop=True) for secret, t in by_secret})


#: The subset suffix of the distance over a partially synthetic release's synthesized columns alone.
SYNTHESIZED_ONLY = ", synthesized columns"


def _column_sets(data: MeasureInput) -> dict[str, list[str]]:
    """The distance measures' column sets by subset suffix: every auxiliary column, and for a partially
    synthetic release also its synthesized columns alone."""
    plan = attack_plan(data)
    sets = {"": plan.distance}
    if plan.kept and plan.synthesized and plan.synthesized != plan.distance:
        sets[SYNTHESIZED_ONLY] = plan.synthesized
    return sets


def _distances(data: MeasureInput, columns: list[str]) -> pd.DataFrame:
    from bayessdc.risk.attacks import distance_to_closest_record

    plan = attack_plan(data)
    return _cached(data, "dcr:" + "+".join(columns), lambda: distance_to_closest_record(
        data.original, data.synthetic, data.holdout, columns, quantiles=tuple(DCR_QUANTILES.values()),
        max_rows=plan.settings.max_rows, seed=data.seed,
    ))  # fmt: skip


class _Distance(Measure):

    reads = ("original", "holdout", "released", "attacks", "kept", "synthesized")
    kind = "risk"
    bounds = (0.0, 1.0)

    def applies(self, data: MeasureInput) -> bool:
        return data.original is not None and data.holdout is not None and bool(data.released or data.attacks)


@register
class DistanceToClosestRecord(_Distance):
    """Share of synthetic records at most as far from their closest training record as the holdout's 5th
    percentile (median) of the same distance, against the holdout's own share (subsets
    ``holdout 5th percentile`` and ``holdout median``; for a partially synthetic release also each
    ``..., synthesized columns``).

    Fresh real records would show the holdout's share; a synthesizer that reproduces training records, more. The
    distance is the mixed-type one of :mod:`bayessdc.risk.neighbours` (Gower's: a numeric column's absolute
    difference over its range, a categorical column's 0 or 1 as equal or not, summed and divided by the number of
    columns) over every released column (the attacker's auxiliary columns). On a partially synthetic release a
    synthetic record sits at its own original's kept values, so its distance over every column is at most its
    synthesized values' distance from its own original: where the kept patterns are common (Adult: age, sex and
    race: a draw that learned nothing of the record shows about the holdout's share, and a copy 1; measured by
    ``bench/evaluate_adult.py``) and where the synthesized values vary widely, but where the kept columns identify
    people and the synthesized ones vary little, a release can show more than the holdout whatever the
    synthesizer did. The subsets ``..., synthesized columns`` take the distance over the synthesized columns
    alone, which that does not touch (and which say little where those columns are a few categorical ones: most
    records, synthetic and held out, then sit at distance 0)."""

    name = "distance_to_closest_record"
    better = "lower"
    title = "distance to the closest record (against a holdout)"
    unit = "share of synthetic records"
    description = (
        "share of synthetic records whose distance to the closest training record (Gower's mixed-type distance over "
        "the released columns, or the synthesized ones) is at most the holdout's 5th percentile (median) of the "
        "same distance"
    )
    subsets = ("'holdout 5th percentile' or 'holdout median': the threshold distance (', synthesized columns': "
               "over those alone)")  # fmt: skip
    subset_names = (*DCR_QUANTILES, *(f"{name}{SYNTHESIZED_ONLY}" for name in DCR_QUANTILES))
    references = {"holdout": "the holdout's own share at most that distance (real records the synthesizer never "
                             "saw), with its 95% Wilson interval"}  # fmt: skip

    def compute(self, data: MeasureInput) -> MeasureResult:
        from bayessdc.risk.attacks import wilson

        values, references, intervals, details = [], [], {}, []
        for suffix, columns in _column_sets(data).items():
            table = _distances(data, columns)
            details.append(table.assign(columns="+".join(columns)))
            for name, q in DCR_QUANTILES.items():
                subset, label = f"{name}{suffix}", f"p{100 * q:g}"
                values += [{"subset": subset, "dataset": int(d), "value": float(v)}
                           for d, v in zip(table["dataset"], table[f"share_{label}"], strict=True)]  # fmt: skip
                share, rows = float(table[f"holdout_share_{label}"].iloc[0]), int(table["holdout_rows"].iloc[0])
                centre, half = wilson(share * rows, rows)
                references.append({"subset": subset, "reference": "holdout", "value": share,
                                   "lower": max(centre - half, 0.0), "upper": min(centre + half, 1.0)})  # fmt: skip
                if len(table) == 1:  # one dataset: the Wilson interval of its share over the records measured
                    measured = int(table["rows"].iloc[0])
                    centre, half = wilson(float(table[f"share_{label}"].iloc[0]) * measured, measured)
                    intervals[subset] = (max(centre - half, 0.0), min(centre + half, 1.0))
        result = self.result(values, references)
        result.details, result.intervals = pd.concat(details, ignore_index=True), intervals
        return result


@register
class DistanceRatio(_Distance):
    """Mean nearest-neighbour distance ratio of the synthetic records (distance to the closest training record
    over the distance to the second closest), against the holdout's (columns as
    :class:`DistanceToClosestRecord`: subset ``all``, and ``synthesized columns`` of a partially synthetic release).

    Near 0, a record sits close to one training record in particular; a lower mean than the holdout's says the
    synthetic records lie nearer individual training records than fresh real records do."""

    name = "distance_ratio"
    better = "higher"
    title = "nearest-neighbour distance ratio (against a holdout)"
    unit = "mean ratio"
    description = (
        "mean over synthetic records of the distance to the closest training record over the distance to the "
        "second closest (near 0: close to one training record in particular)"
    )
    subsets = "'all' (the released columns) or 'synthesized columns'"
    subset_names = ("all", SYNTHESIZED_ONLY.removeprefix(", "))
    references = {"holdout": "the holdout's mean ratio (real records the synthesizer never saw), with its 95% interval"}

    def compute(self, data: MeasureInput) -> MeasureResult:
        values, references, intervals, details = [], [], {}, []
        for suffix, columns in _column_sets(data).items():
            subset = suffix.removeprefix(", ") or "all"
            table = _distances(data, columns)
            details.append(table.assign(columns="+".join(columns)))
            values += [{"subset": subset, "dataset": int(d), "value": float(v)}
                       for d, v in zip(table["dataset"], table["nndr_mean"], strict=True)]  # fmt: skip
            mean, se = float(table["holdout_nndr_mean"].iloc[0]), float(table["holdout_nndr_se"].iloc[0])
            references.append({"subset": subset, "reference": "holdout", "value": mean, "lower": mean - Z95 * se,
                               "upper": mean + Z95 * se, "mc_se": se,
                               "repetitions": int(table["holdout_rows"].iloc[0])})  # fmt: skip
            if len(table) == 1 and np.isfinite(table["nndr_se"].iloc[0]):  # one dataset: its records' own spread
                value, se = float(table["nndr_mean"].iloc[0]), float(table["nndr_se"].iloc[0])
                intervals[subset] = (value - Z95 * se, value + Z95 * se)
        result = self.result(values, references)
        result.details, result.intervals = pd.concat(details, ignore_index=True), intervals
        return result
