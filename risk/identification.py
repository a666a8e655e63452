"""Identification and attribute disclosure risk for synthesized categorical variables, and inherent bounds.

Hu & Savitsky, Section 4. Generic: nothing here knows the
synthesizer. The confidential records and every synthetic dataset are tables with the same rows in the same
order (partially synthetic data: the kept columns are identical, the synthesized ones replaced).

Identification (Section 4.2). An intruder knows the values of the columns ``known`` for a target record
``i`` (some synthesized, some not) and matches them against a released dataset. ``c_i`` is the number of
released records whose ``known`` values equal record ``i``'s true ones; ``T_i = 1`` when record ``i``'s own
released row is among them. Then (eq. 15-17)

* expected match risk ``sum_i T_i / c_i``,
* true match rate ``sum_i [c_i T_i = 1] / n``,
* false match rate ``sum_i [c_i (1 - T_i) = 1] / s``, ``s = #{i: c_i = 1}`` (undefined, NaN, when ``s = 0``).

Attribute (Section 4.3): an exact disclosure for record ``i`` when its synthesized values equal its true ones
(eq. 18); reported as a count and a share of ``n``.

Inherent references (Section 4.1), independent of any synthesizer: S "synthetic" datasets that keep the
other (released) columns and redraw the synthesized values of every record, at the two extremes of what a
release can carry about them:

* maximum: every record's synthesized values (jointly) redrawn from the empirical distribution of its pattern
  (the combination of the kept columns) in the original data: a 'perfect' synthesizer, the most a release
  built from the data distribution can reveal;
* minimum: every record's value of each synthesized column drawn uniformly over all levels the column takes
  anywhere in the original data, independently of the pattern and of the other columns: a release carrying no
  information about the label beyond its levels (the paper's uniform over the 133 counties; about n / L exact
  disclosures for one label of L levels).

The measures of the real synthetic datasets are then placed among the S repetitions of each;
:func:`inherent_expectations` gives the two scenarios' expectations exactly (the limits of those means).

Which figures the pair bounds. Both scenarios draw every record's values independently, so the expectations
have closed forms (:func:`inherent_expectations`); take a pattern of ``k`` records, known in full, a label of
``L`` levels, ``p_y`` the share of level ``y`` in the pattern (the maximum's draw), ``1 / L`` the minimum's:

* exact attribute disclosures, ``E = k sum_y p_y^2`` (maximum) against ``k / L`` (minimum): ordered by
  construction, since ``sum_y p_y^2 >= 1 / J >= 1 / L`` over the ``J <= L`` levels the pattern holds (several
  columns and bands alike). Not with survey ``weights``: a pattern of one level-``a`` record weighing 1,000 and
  nine level-``b`` records weighing 1 has ``E = 1000 / 1009 + 9 x 9 / 1009 = 1.07`` at the maximum, ``10 / 2 = 5``
  at the minimum with ``L = 2``.
* true match rate: a record of level ``y`` is a true unique match with probability ``f(p_y)`` at the maximum,
  ``f(1 / L)`` at the minimum, ``f(p) = p (1 - p)^(k - 1)``: not ordered. ``f`` rises to ``p = 1 / k`` and falls
  after it, so a level common in its pattern is rarely a unique match at the maximum (the pattern's other
  records redraw it too), while the minimum spreads the labels out. Two records of one level, ``L = 2``:
  ``f(1) = 0`` against ``f(1/2) = 1/4`` each. On the banded CPS 1988 (wage 10 bands, education 5, experience 8;
  all 28,155 records, education, smsa and region kept) ``0.0000861`` at the maximum against ``0.000244`` at the
  minimum, exact expectations: the crossing reported in issue 49 is of this kind, not a draw's.
* expected match risk, ``E = sum_y p_y (1 - (1 - p_y)^k)`` against ``1 - (1 - 1 / L)^k``: not ordered, though
  it crosses only in a pattern holding a level rarer than ``1 / L`` (were every ``p_y >= 1 / L``, each
  ``(1 - p_y)^k <= (1 - 1 / L)^k``): ``k = 4`` records ``a, a, a, b``, ``L = 2``: ``0.918`` against ``0.9375``;
  CPS 1988, region kept, the 19 years of education synthesized: ``3.99989`` against ``4.0``.
* false match rate, a ratio of two counts whose protection runs the other way (higher is safer): not ordered
  either. The maximum of a table of one-level patterns has no unique match at all (NaN); on the banded CPS 1988
  with experience, smsa and region kept the minimum's is the lower, 0.99643 against 0.99701 (S = 300, 4.8
  standard errors apart): random labels protect less there than the 'perfect' synthesizer.

So only the attribute pair (unweighted) is a range by definition; the identification figures' inherent maximum
is the risk of a 'perfect' synthesizer, and their minimum a reference beside it, which may lie above it.

References
----------
.. [1] Hu, J., & Savitsky, T. D. *Bayesian data synthesis and disclosure risk quantification: an application to
    the Consumer Expenditure Surveys*. Vassar College and U.S. Bureau of Labor Statistics, manuscript.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

import bayessdc.models.progress as progress
from bayessdc.synthesis import streams
from bayessdc.synthesis.streams import Stream

__all__ = [
    "IDENTIFICATION_MEASURES",
    "attribute_disclosures",
    "identification_from_cells",
    "identification_from_counts",
    "identification_from_keys",
    "identification_risk",
    "inherent_datasets",
    "inherent_expectations",
    "inherent_sources",
    "inherent_risk",
    "key_parts",
    "label_attribute_risk",
    "match_counts",
    "place_among",
    "risk_by_dataset",
]

IDENTIFICATION_MEASURES = ("expected_match_risk", "true_match_rate", "false_match_rate")

_BELOW_ONE = float(np.nextafter(1.0, 0.0))  # the largest q with a finite log(1 - q)
#: Panels of t = lam s for the expected match risk's integral (:func:`inherent_expectations`).
_PANELS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


def _keys(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """One integer per row identifying its combination of ``columns`` (dense codes 0..G-1)."""
    if not columns:
        return np.zeros(len(frame), dtype=np.int64)
    codes, sizes = [], []
    for col in columns:
        code, uniques = pd.factorize(frame[col], use_na_sentinel=False)
        codes.append(code.astype(np.int64))
        sizes.append(max(len(uniques), 1))
    if float(np.prod(np.asarray(sizes, dtype=float))) < 2**62:
        combined = np.ravel_multi_index(codes, sizes)
    else:
        combined = np.unique(np.column_stack(codes), axis=0, return_inverse=True)[1].ravel()
    return np.unique(combined, return_inverse=True)[1].ravel().astype(np.int64)


def match_counts(original: pd.DataFrame, synthetic: pd.DataFrame, known: Sequence[str]) -> pd.DataFrame:
    """``c_i`` and ``T_i`` of every target record (Section 4.2.1).

    Parameters
    ----------
    original
        The confidential records.
    synthetic
        One released dataset: the same records in the same order.
    known
        The columns the intruder knows for every target.

    Returns
    -------
    pandas.DataFrame
        ``c`` (released records matching the target's true known values), ``T`` (the target's own released
        record is among them), ``unique`` (``c == 1``), ``true_unique`` (``c T == 1``) and ``false_unique``
        (``c (1 - T) == 1``), one row per record.
    """
    known = list(known)
    if len(original) != len(synthetic):
        raise ValueError("the original and the synthetic dataset must hold the same records in the same order")
    missing = [c for c in known if c not in original.columns or c not in synthetic.columns]
    if missing:
        raise ValueError(f"known column(s) {', '.join(map(repr, missing))} are not in both tables")
    both = pd.concat([original[known], synthetic[known]], ignore_index=True)
    key = _keys(both, known)
    target, released = key[: len(original)], key[len(original) :]
    released_count = np.bincount(released, minlength=key.max() + 1)
    c = released_count[target]
    t = target == released
    return pd.DataFrame({"c": c, "T": t, "unique": c == 1, "true_unique": (c == 1) & t, "false_unique": (c == 1) & ~t})


def identification_risk(original: pd.DataFrame, synthetic: pd.DataFrame, known: Sequence[str]) -> dict[str, float]:
    """Expected match risk, true match rate and false match rate of one released dataset (eq. 15-17).

    Returns
    -------
    dict
        ``expected_match_risk``, ``true_match_rate``, ``false_match_rate`` (NaN when no record is uniquely
        matched), ``unique_matches`` (``s``).
    """
    m = match_counts(original, synthetic, known)
    n = len(m)
    s = int(m["unique"].sum())
    matched = m["T"].to_numpy()
    return {
        "expected_match_risk": float((1.0 / m["c"].to_numpy()[matched]).sum()),
        "true_match_rate": float(m["true_unique"].sum() / n),
        "false_match_rate": float(m["false_unique"].sum() / s) if s else float("nan"),
        "unique_matches": s,
    }


def attribute_disclosures(
    original: pd.DataFrame, synthetic: pd.DataFrame, synthesized: Sequence[str]
) -> dict[str, Any]:
    """Exact attribute disclosures (eq. 18): records whose synthesized values all equal the true ones.

    Returns
    -------
    dict
        ``disclosures`` (count) and ``share`` (count / n).
    """
    synthesized = list(synthesized)
    if len(original) != len(synthetic):
        raise ValueError("the original and the synthetic dataset must hold the same records in the same order")
    same = np.ones(len(original), dtype=bool)
    for col in synthesized:
        same &= original[col].to_numpy() == synthetic[col].to_numpy()
    return {"disclosures": int(same.sum()), "share": float(same.mean()) if len(same) else float("nan")}


def risk_by_dataset(
    original: pd.DataFrame,
    synthetic: pd.DataFrame,
    known_sets: Sequence[Sequence[str]],
    synthesized: Sequence[str],
    by: str = "synthetic",
) -> pd.DataFrame:
    """Identification measures for every knowledge set and the attribute disclosures, per dataset.

    Parameters
    ----------
    original
        Confidential records.
    synthetic
        All datasets in long form, each holding the records in the original order, numbered by ``by``.
    known_sets
        The intruder's knowledge sets.
    synthesized
        The synthesized columns.
    by
        Column numbering the datasets.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, knowledge set): ``known`` (columns joined by ``+``), the three measures,
        ``unique_matches``, and the dataset's ``disclosures`` and ``share``.
    """
    rows = []
    for number, frame in synthetic.groupby(by, sort=True):
        frame = frame.reset_index(drop=True)
        attribute = attribute_disclosures(original, frame, synthesized)
        for known in known_sets:
            rows.append(
                {by: number, "known": "+".join(known), **identification_risk(original, frame, known), **attribute}
            )
    return pd.DataFrame(rows)


def inherent_sources(
    original: pd.DataFrame,
    synthesized: Sequence[str],
    pattern: Sequence[str],
    scenario: Literal["max", "min"],
    repetitions: int,
    rng: np.random.Generator,
    weights: np.ndarray | None = None,
) -> Iterator[dict[str, np.ndarray]]:
    """For each of ``S`` repetitions of a scenario (Section 4.1), the row of ``original`` whose value of each
    synthesized column every record receives, one repetition at a time.

    With survey ``weights`` (one positive number per row) the maximum scenario draws each record's donor from
    its pattern with probability proportional to the donors' weights: the pattern's *weighted* empirical
    distribution, the design-consistent estimate of the population's, which Hu & Savitsky sample "under a
    weighted re-sampling scheme" (Section 4.1; the paper gives no formula, this is our reading). Equal weights
    give the unweighted draw (the same donors for the same random numbers, up to rounding).

    Yields
    ------
    dict
        ``{column: rows}`` for every synthesized column, ``rows`` an integer array of length ``n``.
        ``"max"``: one draw per record of a record of its own pattern (with replacement, so with the pattern's
        empirical distribution of the synthesized values jointly); every column gets the same array.
        ``"min"``: for each column in turn, one level per record drawn uniformly over all the levels the
        column takes in ``original`` (whatever the record's pattern and its other columns), written as the
        first row holding that level.
    """
    if scenario not in ("max", "min"):
        raise ValueError("scenario must be 'max' or 'min'")
    if repetitions < 1:
        raise ValueError("repetitions must be at least 1")
    synthesized, pattern = list(synthesized), list(pattern)
    n = len(original)
    if scenario == "min":
        # The first row of every level of every column, in the order of the levels' codes.
        first_rows = {}
        for col in synthesized:
            code = pd.factorize(original[col], use_na_sentinel=False)[0]
            first_rows[col] = np.unique(code, return_index=True)[1].astype(np.int64)
        for _ in range(repetitions):
            yield {col: rows[np.floor(rng.random(n) * len(rows)).astype(np.int64)] for col, rows in first_rows.items()}
        return
    group = _keys(original, pattern)
    label = _keys(original, synthesized)
    # A representative row of every label value, to write the drawn labels back as values.
    first_row = pd.Series(np.arange(n)).groupby(label).first().to_numpy()
    order = np.argsort(group, kind="stable")
    sizes = np.bincount(group)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pool = label[order]  # the labels of every pattern, pattern after pattern
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
        if weights.shape != (n,) or not (np.isfinite(weights).all() and (weights > 0).all()):
            raise ValueError("weights must hold one positive, finite number per row of original")
        cumulative = np.cumsum(weights[order])  # pattern after pattern; a pattern's donors are one run of it
        before = np.concatenate([[0.0], cumulative])[starts]  # the weight of the patterns before each one
        totals = np.bincount(group, weights=weights)
    for _ in range(repetitions):
        if weights is None:
            drawn = pool[starts[group] + np.floor(rng.random(n) * sizes[group]).astype(np.int64)]
        else:  # a donor with probability w_j / W_pattern: the first whose cumulative weight exceeds the target
            at = np.searchsorted(cumulative, before[group] + rng.random(n) * totals[group], side="right")
            drawn = pool[np.clip(at, starts[group], starts[group] + sizes[group] - 1)]
        source = first_row[drawn]
        yield {col: source for col in synthesized}


def inherent_datasets(
    original: pd.DataFrame,
    synthesized: Sequence[str],
    pattern: Sequence[str],
    scenario: Literal["max", "min"],
    repetitions: int,
    rng: np.random.Generator,
    weights: np.ndarray | None = None,
) -> pd.DataFrame:
    """``S`` datasets of the maximum or minimum reference scenario (Section 4.1), in long form (column
    ``repetition``); the kept columns as in ``original`` (``weights``: see :func:`inherent_sources`).

    ``"max"``: every record's synthesized values (jointly, when there are several) redrawn from the empirical
    distribution of its pattern in the original data (a record drawn with replacement from the pattern): a
    'perfect' synthesizer, the most a release built from the data distribution can reveal.
    ``"min"``: every record's value of each synthesized column drawn uniformly over all the levels the column
    takes in the original data, independently of the pattern and of the other columns: a release carrying no
    information about the label beyond its levels.
    """
    frames = []
    for s, source in enumerate(inherent_sources(original, synthesized, pattern, scenario, repetitions, rng, weights)):
        frame = original.copy()
        for col in synthesized:
            frame[col] = original[col].to_numpy()[source[col]]
        frame.insert(0, "repetition", s + 1)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def inherent_risk(
    original: pd.DataFrame,
    synthesized: Sequence[str],
    pattern: Sequence[str],
    known_sets: Sequence[Sequence[str]],
    *,
    repetitions: int = 100,
    seed: int = 0,
    weights: np.ndarray | None = None,
    bands: Mapping[str, np.ndarray] | None = None,
) -> dict[str, pd.DataFrame]:
    """Risk measures of the S repetitions of both reference scenarios (Section 4.1), independent of any
    synthesizer: ``"max"`` redraws the synthesized values from each pattern's empirical distribution in the
    original data (a 'perfect' synthesizer; weighted by the survey ``weights`` when given, see
    :func:`inherent_sources`), ``"min"`` draws each synthesized column uniformly over all its levels (a release
    carrying no information about the label beyond its levels); see :func:`inherent_datasets`.

    The same figures as :func:`risk_by_dataset` of :func:`inherent_datasets` (with the random streams
    ``bayessdc.synthesis.streams.rng(seed, "inherent", "minimum")`` and ``(..., "maximum")``), computed one
    repetition at a time on integer keys: a repetition gives every record the synthesized values of other
    rows, so its keys are the original's, reindexed (at 1,000,000 records and 100 repetitions about 150 s and
    100 million rows in memory through the data frames; seconds here, one repetition at a time).

    ``bands`` (:mod:`bayessdc.risk.banding`): numeric columns matched, and counted as disclosed, to their band,
    while the maximum's patterns are the kept values themselves (as released, and as a synthesizer may condition
    on them) and a redrawn value is another record's own, then banded; the minimum is uniform over the bands.

    The two scenarios order only the exact attribute disclosures by construction (without ``weights``): the
    identification figures' minimum can lie above their maximum (the module's 'Which figures the pair bounds';
    :func:`inherent_expectations` tells a crossing of the expectations from one of the S repetitions).

    Returns
    -------
    dict
        ``{"max": table, "min": table}``, each table as from :func:`risk_by_dataset` with a ``repetition``
        column (one row per repetition and knowledge set).
    """
    from .banding import banded

    synthesized = list(synthesized)
    n = len(original)
    columns = list(dict.fromkeys([c for k in known_sets for c in k] + synthesized))
    matched = banded(original, bands or {})
    codes = {c: pd.factorize(matched[c], use_na_sentinel=False)[0].astype(np.int64) for c in columns}
    sizes = {c: max(int(codes[c].max()) + 1, 1) if n else 1 for c in columns}
    # dense keys: the record's own (target) key and the kept columns' part of the released one, once; a
    # repetition adds its synthesized codes times their strides (the same integers as _joint_keys)
    dense = {}
    for known in known_sets:
        shape = [sizes[c] for c in known]
        if float(np.prod(np.asarray(shape, dtype=float))) < 4 * n + 1_000_000:
            base, varying = key_parts(known, shape, codes, synthesized)
            dense["+".join(known)] = (np.ravel_multi_index([codes[c] for c in known], shape), base, varying)
    out = {}
    with progress.bar(2 * repetitions, "inherent risk scenarios") as bar:
        for scenario, name in (("min", Stream.MINIMUM), ("max", Stream.MAXIMUM)):
            rng = streams.rng(seed, Stream.INHERENT, name)
            rows = []
            # the maximum's patterns are the kept values as released; the minimum is uniform over what is matched
            source_frame = matched if scenario == "min" else original
            sources = inherent_sources(source_frame, synthesized, pattern, scenario, repetitions, rng, weights)
            for s, source in enumerate(sources):
                drawn = {c: (codes[c][source[c]] if c in synthesized else codes[c]) for c in columns}
                same = np.ones(n, dtype=bool)
                for c in synthesized:
                    same &= drawn[c] == codes[c]
                attribute = {"disclosures": int(same.sum()), "share": float(same.mean()) if n else float("nan")}
                for known in known_sets:
                    if "+".join(known) in dense:
                        target, released, varying = dense["+".join(known)]
                        for c, stride in varying:
                            released = released + drawn[c] * stride
                    else:
                        target, released = _joint_keys(
                            [codes[c] for c in known], [drawn[c] for c in known], [sizes[c] for c in known]
                        )
                    measures = identification_from_keys(target, released)
                    rows.append({"repetition": s + 1, "known": "+".join(known), **measures, **attribute})
                bar.advance()
            out[scenario] = pd.DataFrame(rows)
    return out


def inherent_expectations(
    original: pd.DataFrame,
    synthesized: Sequence[str],
    pattern: Sequence[str],
    known_sets: Sequence[Sequence[str]],
    *,
    weights: np.ndarray | None = None,
    bands: Mapping[str, np.ndarray] | None = None,
    nodes: int = 16,
) -> dict[str, pd.DataFrame]:
    """The exact expectations of both reference scenarios' figures (Section 4.1): the limits of the means of
    :func:`inherent_risk`'s S repetitions as S grows, with no Monte Carlo error (same arguments).

    Both scenarios draw every record's synthesized values independently: record ``j`` shows a value ``v`` of a
    knowledge set's synthesized columns with probability ``q_j(v)``, the (weighted) share of ``v`` in ``j``'s
    pattern for the maximum, ``prod 1 / L_c`` over those columns for the minimum. For a target ``i`` of true
    value ``v``, with ``B_j ~ Bernoulli(q_j(v))`` for the other records ``j`` of its cell (the records sharing its
    known kept values), ``T_i ~ Bernoulli(q_i(v))`` and ``c_i = T_i + sum_j B_j``, so

    * ``P(c_i T_i = 1) = q_i(v) prod_j (1 - q_j(v))`` (the true match rate is their mean),
    * ``E[T_i / c_i] = q_i(v) E[1 / (1 + sum_j B_j)] = q_i(v) int_0^1 prod_j (1 - q_j(v) s) ds`` (the
      generating function integrated; the expected match risk is their sum): in closed form
      ``(1 - (1 - q)^k) / k`` when the ``k`` records of the cell share one ``q``, else by ``nodes``-point
      Gauss-Legendre on panels of ``t = s sum_j q_j`` doubling in width up to 64 (the integrand falls at least as
      ``e^-t``; within 1e-9 of the Poisson-binomial sum in the tests),
    * ``E[disclosures] = sum_i q_i(y_i)`` over all the synthesized columns.

    The false match rate, a ratio of two counts, has no such closed form and is left out.

    Returns
    -------
    dict
        ``{"max": table, "min": table}``, one row per knowledge set: ``known``, ``expected_match_risk``,
        ``true_match_rate``, ``disclosures`` and ``share`` (the expected disclosures over ``n``).
    """
    from .banding import banded

    synthesized, pattern = list(synthesized), list(pattern)
    n = len(original)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("weights must hold one positive, finite number per row of original")
    matched = banded(original, bands or {})
    group = _keys(original, pattern)  # the maximum's patterns: the kept values as released, as inherent_risk
    total = np.bincount(group, weights=w)
    levels = {c: max(int(pd.factorize(matched[c], use_na_sentinel=False)[0].max()) + 1, 1) if n else 1
              for c in synthesized}  # fmt: skip

    def share(key: np.ndarray) -> np.ndarray:
        """The (weighted) share of every record's value ``key`` in its own pattern: ``q_i(v_i)``, maximum."""
        both = _keys(pd.DataFrame({"g": group, "v": key}), ["g", "v"])
        return np.bincount(both, weights=w)[both] / total[group]

    label = _keys(matched, synthesized)
    disclosed = {"max": float(share(label).sum()), "min": n * float(np.prod([1.0 / levels[c] for c in synthesized]))}
    rows: dict[str, list[dict[str, Any]]] = {"max": [], "min": []}
    for known in known_sets:
        kept_part = [c for c in known if c not in synthesized]
        drawn_part = [c for c in known if c in synthesized]
        cell = _keys(matched, kept_part)
        value = _keys(matched, drawn_part)
        k = np.bincount(cell)[cell]
        # the minimum: one q for every record, c_i - T_i ~ Binomial(k - 1, q)
        q = float(np.prod([1.0 / levels[c] for c in drawn_part]))
        minimum = {
            "expected_match_risk": float(((1.0 - (1.0 - q) ** k) / k).sum()),
            "true_match_rate": float((q * (1.0 - q) ** (k - 1)).sum() / n) if n else float("nan"),
        }
        maximum = _pattern_expectations(cell, value, group, share(value), nodes)
        maximum["true_match_rate"] = maximum["true_match_rate"] / n if n else float("nan")
        for scenario, figures in (("min", minimum), ("max", maximum)):
            rows[scenario].append({
                "known": "+".join(known), **figures, "disclosures": disclosed[scenario],
                "share": disclosed[scenario] / n if n else float("nan"),
            })  # fmt: skip
    return {scenario: pd.DataFrame(table) for scenario, table in rows.items()}


def _pattern_expectations(
    cell: np.ndarray, value: np.ndarray, group: np.ndarray, own: np.ndarray, nodes: int
) -> dict[str, float]:
    """The maximum's ``sum_i E[T_i / c_i]`` and ``sum_i P(c_i T_i = 1)`` (see :func:`inherent_expectations`):
    ``cell``, ``value`` and ``group`` coded per record, ``own`` its ``q_i(v_i)``."""
    n = len(cell)
    if not n:
        return {"expected_match_risk": 0.0, "true_match_rate": 0.0}
    # units: the records of one pattern within one cell (they share every q_j(v)); for every (cell, v) a target
    # holds, the units of the cell whose pattern shows v, with their count m and q = q_pattern(v)
    frame = pd.DataFrame({"cell": cell, "g": group, "v": value, "q": own})  # q: the very numbers of own (a q = 1
    units = frame.groupby(["cell", "g"], sort=False).size().rename("m").reset_index()  # cancels exactly below)
    pv = frame.drop_duplicates(["g", "v"])[["g", "v", "q"]]
    targets = frame[["cell", "v"]].drop_duplicates()
    rows = units.merge(pv, on="g").merge(targets, on=["cell", "v"])
    target = _keys(pd.concat([frame[["cell", "v"]], rows[["cell", "v"]]], ignore_index=True), ["cell", "v"])
    at, row_at = target[:n], target[n:]  # every record's (cell, v) and every unit row's, one coding
    m, qr = rows["m"].to_numpy(dtype=float), rows["q"].to_numpy(dtype=float)
    size = int(target.max()) + 1
    certain = qr >= 1.0  # a factor 1 - q of zero: a record of a one-valued pattern shows v for sure
    logs = np.bincount(row_at, weights=np.where(certain, 0.0, m * np.log1p(-np.minimum(qr, _BELOW_ONE))),
                       minlength=size)  # fmt: skip
    zeros = np.bincount(row_at, weights=np.where(certain, m, 0.0), minlength=size)
    own_certain = own >= 1.0
    others_log = logs[at] - np.where(own_certain, 0.0, np.log1p(-np.minimum(own, _BELOW_ONE)))
    others_zero = zeros[at] - own_certain
    true_unique = np.where(others_zero > 0.5, 0.0, own * np.exp(others_log))
    # E[1 / (1 + sum_j B_j)] = int_0^1 prod_j (1 - q_j s) ds: Gauss-Legendre on panels of t = lam s, lam = sum q,
    # doubling in width (the integrand falls at least as e^-t: past t = 64 it is below e^-60 of the integral)
    lam = np.bincount(row_at, weights=m * qr, minlength=size)
    x, weight = np.polynomial.legendre.leggauss(nodes)
    integral = np.zeros(n)
    for lo, hi in itertools.pairwise(_PANELS):
        a, b = np.minimum(lo, lam), np.minimum(hi, lam)
        half = (b - a) / 2.0
        if not (half > 0).any():
            break
        for xk, wk in zip(x, weight, strict=True):
            s = np.where(half > 0, (a + half * (xk + 1.0)) / lam, 0.0)  # below 1: the nodes are inside the panel
            log_f = np.bincount(row_at, weights=m * np.log1p(-qr * s[row_at]), minlength=size)  # all units
            integral += wk * (half / lam)[at] * np.exp(log_f[at] - np.log1p(-own * s[at]))  # less the target
    return {"expected_match_risk": float((own * integral).sum()), "true_match_rate": float(true_unique.sum())}


def identification_from_keys(target: np.ndarray, released: np.ndarray) -> dict[str, float]:
    """Eq. 15-17 from integer keys of the known values: ``target`` (every record's true values) and
    ``released`` (its released values), in one coding of non-negative integers.

    Returns
    -------
    dict
        ``expected_match_risk``, ``true_match_rate``, ``false_match_rate`` (NaN without a unique match) and
        ``unique_matches``, as :func:`identification_risk`.
    """
    size = int(max(target.max(), released.max())) + 1 if len(target) else 0
    return identification_from_counts(np.bincount(released, minlength=size)[target], target == released)


def identification_from_counts(c: np.ndarray, t: np.ndarray) -> dict[str, float]:
    """Eq. 15-17 from every record's ``c_i`` (released records matching its true known values) and ``T_i`` (its
    own released record among them), as :func:`identification_from_keys` returns them."""
    t = np.asarray(t, dtype=bool)
    return identification_from_cells(c, t.astype(np.int64), np.ones(len(c), dtype=np.int64))


def identification_from_cells(c: np.ndarray, own: np.ndarray, records: np.ndarray) -> dict[str, float]:
    """Eq. 15-17 from groups of records that share ``c_i`` (records of one cell of identical true values): each
    group's ``c`` (released records matching its true known values), ``own`` (its records with ``T_i = 1``) and
    ``records``; one record per group is :func:`identification_from_counts`.

    ``expected_match_risk = sum_i T_i / c_i``, ``true_match_rate = #{c_i = 1, T_i = 1} / n``,
    ``false_match_rate = #{c_i = 1, T_i = 0} / #{c_i = 1}`` (NaN when no record is uniquely matched).
    """
    n = int(np.sum(records))
    unique = np.asarray(c) == 1
    count = int(records[unique].sum())
    return {
        "expected_match_risk": float((own / np.maximum(c, 1)).sum()),  # c_i >= 1 wherever T_i = 1
        "true_match_rate": float(own[unique].sum() / n),
        "false_match_rate": float((records - own)[unique].sum() / count) if count else float("nan"),
        "unique_matches": count,
    }


def key_parts(
    columns: Sequence[str], sizes: Sequence[int], codes: dict[str, np.ndarray], varying: Sequence[str]
) -> tuple[np.ndarray, list[tuple[str, int]]]:
    """``np.ravel_multi_index`` of the columns' codes (C order, ``sizes``) split into the part of the columns that
    do not vary (``base``, from ``codes``) and the stride of every column in ``varying``: the key of a dataset whose
    ``varying`` columns hold other codes is ``base + sum(stride * code)``, the same integers."""
    strides = np.cumprod([1, *list(sizes)[::-1]])[:-1][::-1].astype(np.int64)
    base = np.zeros(len(codes[columns[0]]) if columns else 0, dtype=np.int64)
    moving = []
    for column, stride in zip(columns, strides, strict=True):
        if column in varying:
            moving.append((column, int(stride)))
        else:
            base += codes[column] * stride
    return base, moving


def _joint_keys(
    target: Sequence[np.ndarray], released: Sequence[np.ndarray], sizes: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Dense integer keys of the combinations of several coded columns, shared by two tables."""
    if float(np.prod(np.asarray(sizes, dtype=float))) < 4 * len(target[0]) + 1_000_000:
        return np.ravel_multi_index(list(target), sizes), np.ravel_multi_index(list(released), sizes)
    both = np.unique(
        np.column_stack([np.concatenate([a, b]) for a, b in zip(target, released, strict=True)]),
        axis=0,
        return_inverse=True,
    )[1].ravel()
    return both[: len(target[0])], both[len(target[0]) :]


def place_among(values: Sequence[float], reference: Sequence[float]) -> dict[str, Any]:
    """Where values (of the m synthetic datasets) fall in a reference distribution (the S repetitions).

    Returns
    -------
    dict
        ``min``, ``mean`` and ``max`` of ``values`` and, for each, the share of ``reference`` below it
        (its percentile rank, as the vertical lines of the paper's Figure 4 on the histogram); NaNs ignored.
    """
    v = np.asarray(values, dtype=float)
    r = np.asarray(reference, dtype=float)
    r = r[np.isfinite(r)]
    out: dict[str, Any] = {}
    for name, value in (
        (("min", np.nanmin(v)), ("mean", np.nanmean(v)), ("max", np.nanmax(v))) if np.isfinite(v).any() else ()
    ):
        out[name] = float(value)
        out[f"{name}_percentile"] = float((r < value).mean()) if r.size else None
    out["reference_mean"] = float(r.mean()) if r.size else None
    return out


def label_attribute_risk(
    synthesizer: Any,
    posterior: Any,
    data: Any,
    synthetic: Any,
    rows: Sequence[int] | np.ndarray | None = None,
    chunk_size: int = 250,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Bayesian attribute risk of a categorical label by importance sampling (:func:`risk.attribute.attribute_risk`).

    The intruder knows every other value (the worst case of the foundation's attribute-risk module) and the
    m released datasets; for each record the posterior probability of its true label follows from the
    posterior draws as importance-sampling proposals, with Pareto-smoothed weights and their k-hat.

    Parameters
    ----------
    synthesizer
        Supplies ``candidate_log_prob`` and ``observed`` (and, when the released label depends on the true
        one, ``release_log_prob(posterior, data, synthetic)``), and ``data.take(rows)`` restricts the data.
    posterior
        Stacked posterior draws (dimension ``sample``) used as proposals.
    data
        The confidential data.
    synthetic
        Released values of the items, dimensions ``(synthetic, item)``.
    rows
        Records to assess (default all); computed ``chunk_size`` records at a time to bound memory.

    Returns
    -------
    records, summary
        Per record: ``record``, ``true_probability``, ``guess`` (candidate code of largest probability),
        ``correct`` (guess is the true label, untied), ``max_khat``, ``relevant_khat``. Summary:
        ``records_assessed``, ``mean_true_probability``, ``share_correct``, ``khat_over_0_7`` (records whose
        relevant k-hat exceeds 0.7) and ``max_true_probability``.
    """
    import xarray as xr

    from .attribute import attribute_risk

    rows = np.arange(synthetic.sizes["item"]) if rows is None else np.asarray(rows, dtype=np.int64)
    frames = []
    with progress.bar(len(rows), "Bayesian attribute risk, records") as bar:
        for start in range(0, len(rows), chunk_size):
            chunk = rows[start : start + chunk_size]
            part = data.take(chunk)
            released = synthetic.isel(item=xr.DataArray(chunk, dims="item")).drop_vars("item", errors="ignore")
            release = None
            if hasattr(synthesizer, "release_log_prob"):
                release = synthesizer.release_log_prob(posterior, part, released)
            risk = attribute_risk(
                synthesizer.candidate_log_prob(posterior, part),
                synthesizer.observed(part),
                released,
                release_log_prob=release,
            )
            frames.append(
                pd.DataFrame(
                    {
                        "record": chunk,
                        "true_probability": risk["true_probability"].to_numpy(),
                        "guess": risk["guess"].to_numpy(),
                        "correct": risk["correct"].to_numpy(),
                        "max_khat": risk["max_khat"].to_numpy(),
                        "relevant_khat": risk["relevant_khat"].to_numpy(),
                    }
                )
            )
            bar.advance(len(chunk))
    records = pd.concat(frames, ignore_index=True)
    summary = {
        "records_assessed": len(records),
        "mean_true_probability": float(records["true_probability"].mean()),
        "max_true_probability": float(records["true_probability"].max()),
        "share_correct": float(records["correct"].mean()),
        "khat_over_0_7": int((records["relevant_khat"] > 0.7).sum()),
    }
    return records, summary
