"""The Bayesian bootstrap in the leaves (Rodriguez et al., Section 4; Reiter 2005), restricted by the rules.

For each record, the leaf is found from its kept values and its *synthetic* values of the earlier variables,
and the synthetic value is one draw from a Bayesian bootstrap of the leaf's observed values:
Dirichlet(1, ..., 1) weights over the leaf's observations, then a draw from the weighted values. One
bootstrap per leaf per synthetic dataset: the trees are the same for every dataset, the bootstrap weights are
what varies.

By the aggregation property of the Dirichlet distribution, Dirichlet(1, ..., 1) weights over the ``n_l``
observations of a leaf, summed over the observations sharing a value, are Dirichlet(c_1, ..., c_K) over the
leaf's distinct values with their counts ``c_k``; the weights are therefore drawn as independent Gamma(c_k)
variables per (leaf, value), normalised within the leaf. The same weights summed over a subtree are the
Bayesian bootstrap of the subtree's node.

Rules restrict the draw to the leaf's values that are admissible given the record's already-fixed values (the
bootstrap restricted to the admissible values, renormalised). A record whose leaf holds no admissible value
draws from the nearest ancestor node holding one (the root holds every observed value of the column).

With ``own`` given (``donors="others"`` of :class:`~bayessdc.models.cart.CartSynthesizer`), a record's own
observation is left out of its own draw: the draw is from the Bayesian bootstrap of the *other* observations of
its node. The weight of a (leaf, value) pair of ``c`` observations is a sum of ``c`` independent Gamma(1) shares,
and one share is ``W * Beta(1, c - 1)`` of the pair's weight ``W`` (independent of ``W``); the record's share is
drawn so, and taken from its own pair's weight for its draw only, every other record's draw unchanged. The
record's own observation is then no donor of its row, as in a release that never saw it; a node left with no
other admissible observation passes the record to its parent, and a record for which no other record of the whole
column holds an admissible value keeps its own (counted in ``stats["own"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .rules import ColumnSchema
from .tree import ColumnTree

__all__ = ["MAX_PAIRS_PER_CHUNK", "CartSynthesisError", "draw_column"]

#: Largest number of (record, candidate value) pairs examined at once when drawing (bounds memory).
MAX_PAIRS_PER_CHUNK = 2_000_000


class CartSynthesisError(ValueError):
    """A record for which no observed value of a column satisfies the rules given its fixed values.

    Rules are enforced when their last column is drawn; a rule set whose earlier draws can leave no admissible
    value for a later column needs an extra rule on the earlier column (as "graduate school only from age 19"
    in :func:`bayessdc.models.cart.acs_example_rules` keeps grade consistent with the attainment rules).
    """


def draw_column(
    fitted: ColumnTree,
    nodes: np.ndarray,
    values: Mapping[str, np.ndarray],
    schema: Mapping[str, ColumnSchema],
    rng: np.random.Generator,
    stats: dict[str, int],
    own: np.ndarray | None = None,
    infeasible: np.ndarray | None = None,
) -> np.ndarray:
    """One synthetic value of ``fitted.column`` per record: a fresh Bayesian bootstrap of every leaf, one draw.

    Parameters
    ----------
    fitted
        The column's tree.
    nodes
        The leaf of each record (from its kept and earlier synthetic values); changed in place as records fall
        back to ancestors.
    values
        Encoded values of the columns fixed so far (kept and already synthesized), one array per column.
    schema
        The encoding of every column.
    rng
        Random numbers: the bootstrap weights first, then one uniform per record and pass.
    stats
        Fallback counts, updated: ``draws``, ``ancestor`` (records drawn from an ancestor node) and
        ``whole_column`` (of those, from the root).
    own
        Per record, its own observation's pair (``fitted.own_pair`` of the record; -1: none), left out of its
        own draw; ``None``: every observation of the node is a donor (the paper's bootstrap).
    infeasible
        Per record, set True where not even the root holds an admissible value, instead of raising (the record's
        pick is then -1): a caller that can redraw the record's fixed values (a household's,
        :mod:`bayessdc.models.cart.households`) rejects it.

    Returns
    -------
    numpy.ndarray
        Per record, the position of the drawn (node, value) pair in ``fitted.pair_code``.

    Raises
    ------
    CartSynthesisError
        A record for which not even the root holds an admissible value.
    """
    n = len(nodes)
    weights = rng.standard_gamma(fitted.pair_count)  # Bayesian bootstrap of every leaf (see module doc)
    share = None
    if own is not None and (own >= 0).any():  # each record's own Gamma(1) share of its pair's weight
        share = np.zeros(n)
        mine = np.flatnonzero(own >= 0)
        count = fitted.pair_count[own[mine]]
        fraction = np.ones(mine.size)
        several = count > 1
        fraction[several] = rng.beta(1.0, count[several] - 1.0)
        share[mine] = weights[own[mine]] * fraction
    chosen = np.full(n, -1, dtype=np.int64)
    pending = np.arange(n)
    level = 0
    stats["draws"] += n
    while pending.size:
        exclude = None if share is None else (own[pending], share[pending])
        picks = _draw_in_nodes(fitted, nodes[pending], pending, weights, values, schema, rng, exclude)
        found = picks >= 0
        chosen[pending[found]] = picks[found]
        if level > 0:
            stats["ancestor"] += int(found.sum())
            stats["whole_column"] += int((found & (nodes[pending] == 0)).sum())
        pending = pending[~found]
        if not pending.size:
            break
        up = fitted.parent[nodes[pending]]
        alone = pending[up < 0]
        if share is not None and (share[alone] > 0).any():  # at the root, no donor but the record itself
            stats["own"] = stats.get("own", 0) + int((share[alone] > 0).sum())
            share[alone] = 0.0  # it keeps its own observation (counted): no other record holds an admissible one
            continue
        if (up < 0).any() and infeasible is not None:
            infeasible[pending[up < 0]] = True
            pending, up = pending[up >= 0], up[up >= 0]
            if not pending.size:
                break
        elif (up < 0).any():
            record = int(pending[up < 0][0])
            fixed = {c: _decode(schema[c], values[c][record]) for c in values}
            raise CartSynthesisError(
                f"no observed value of {fitted.column!r} satisfies the rules for a record with {fixed}: "
                "the rules may need a value the confidential data never show, or conflict with each other"
            )
        nodes[pending] = up
        level += 1
    return chosen


def _draw_in_nodes(
    fitted: ColumnTree,
    nodes: np.ndarray,
    records: np.ndarray,
    weights: np.ndarray,
    values: Mapping[str, np.ndarray],
    schema: Mapping[str, ColumnSchema],
    rng: np.random.Generator,
    exclude: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """One weighted draw per record among its node's admissible (value, weight) pairs; -1 if none. ``exclude``:
    per record, a pair and the weight taken from it for that record's draw only."""
    start, end = fitted.pair_start[nodes], fitted.pair_end[nodes]
    lengths = end - start
    uniforms = rng.random(len(nodes))
    if exclude is not None:  # the pair counts only where it is one of the record's node
        pair, taken = exclude
        inside = (pair >= start) & (pair < end)
        exclude = (np.where(inside, pair, -1), np.where(inside, taken, 0.0))
    if not fitted.rules:  # every value admissible: one cumulative sum over all pairs serves every record
        return _draw_unrestricted(start, end, weights, uniforms, exclude)
    picks = np.full(len(nodes), -1, dtype=np.int64)
    bounds = np.cumsum(lengths)
    chunk_start = 0
    while chunk_start < len(nodes):
        base = bounds[chunk_start - 1] if chunk_start else 0
        chunk_end = max(int(np.searchsorted(bounds, base + MAX_PAIRS_PER_CHUNK, side="right")), chunk_start + 1)
        sl = slice(chunk_start, chunk_end)
        taken = None if exclude is None else (exclude[0][sl], exclude[1][sl])
        picks[sl] = _draw_chunk(fitted, start[sl], lengths[sl], records[sl], weights, values, schema, uniforms[sl],
                                taken)  # fmt: skip
        chunk_start = chunk_end
    return picks


def _draw_chunk(
    fitted: ColumnTree,
    start: np.ndarray,
    lengths: np.ndarray,
    records: np.ndarray,
    weights: np.ndarray,
    values: Mapping[str, np.ndarray],
    schema: Mapping[str, ColumnSchema],
    uniforms: np.ndarray,
    exclude: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    owner = np.repeat(np.arange(len(start)), lengths)
    segment_begin = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    pair = np.repeat(start - segment_begin, lengths) + np.arange(int(lengths.sum()))
    w = weights[pair]
    if exclude is not None:  # each record's own share off its own pair, for its draw only
        own, taken = exclude
        at = np.flatnonzero(own >= 0)
        position = segment_begin[at] + own[at] - start[at]
        left = w[position] - taken[at]
        w[position] = np.where(left > 1e-12 * w[position], left, 0.0)  # the record the pair's only observation
    if fitted.rules:
        spec = schema[fitted.column]
        code = fitted.pair_code[pair]
        if fitted.rule_numbers is not None:  # a state tree: the number each state gives its column
            candidate = fitted.rule_numbers[code]
        elif not spec.categorical:
            candidate = spec.levels.astype(float)[code]
        else:
            candidate = code
        record_of_pair = records[owner]
        rule_column = fitted.rule_column or fitted.column

        def env(column: str) -> np.ndarray:
            return candidate if column == rule_column else values[column][record_of_pair]

        admissible = np.ones(len(pair), dtype=bool)
        for rule in fitted.rules:
            admissible &= np.broadcast_to(rule.holds(env, schema), admissible.shape)
        if fitted.unjudged is not None:  # the "value" state: its number is drawn, and judged, next
            admissible |= fitted.unjudged[code]
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


def _draw_unrestricted(
    start: np.ndarray, end: np.ndarray, weights: np.ndarray, uniforms: np.ndarray,
    exclude: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """One weighted draw per record among the pairs ``start .. end - 1`` of its node, without rules.

    The draw :func:`_draw_chunk` makes, without expanding every (record, pair): the pairs of a node are
    consecutive, so the weights' cumulative sum over all pairs locates each record's draw by one binary
    search (time linear in the pairs plus ``n log`` pairs, where the expansion is records x pairs per node:
    quadratic for a column without predictors, whose one leaf holds every value).
    """
    cumulative = np.concatenate([[0.0], np.cumsum(weights)])
    before = cumulative[start]
    total = cumulative[end] - before
    if exclude is None:
        target = before + uniforms * total
    else:  # the own pair's interval shortened by the record's share: points past its new end move on by it
        own, taken = exclude
        total = total - taken
        target = before + uniforms * total
        mine = own >= 0
        end_own = np.where(mine, cumulative[np.maximum(own, 0) + 1] - taken, np.inf)
        target = np.where(target >= end_own, target + taken, target)
    position = np.searchsorted(cumulative[1:], target, side="right")
    position = np.clip(position, start, end - 1)
    has_value = total > 1e-12 * np.maximum(cumulative[end] - before, 1e-300)
    # Rounding can land on a zero weight at the end of a segment: take the segment's last positive one.
    for k in np.flatnonzero(has_value & (weights[position] <= 0)):
        positive = np.flatnonzero(weights[start[k] : end[k]] > 0)
        position[k] = start[k] + positive[-1]
    return np.where(has_value, position, -1)


def _decode(spec: ColumnSchema, value: Any) -> Any:
    return spec.levels[int(value)] if spec.categorical else float(value)
