"""The checks of a categorical release's input before any sampling, and its typed prepared input.

Shared by the DPMPM and the DP-areal model (Hu & Savitsky): the intruder's knowledge sets, the analyst's
ordered logistic regressions, notices on dropped columns and patterns of a single record, and the plan of a release
synthesized area by area (``strata=``: :class:`CategoricalStrata`, :func:`check_strata_roles`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayessdc.models.cart.rules import Rule
from bayessdc.models.cart.strata import StrataPlan
from bayessdc.synthesis import streams
from bayessdc.synthesis.streams import Stream

from ...errors import InputError
from ...pipeline.recipe import Prepared

__all__ = [
    "CategoricalPrepared", "CategoricalStrata", "KnownSets", "OrderedLogits", "check_known_sets",
    "check_ordered_logits", "check_strata_roles",
]  # fmt: skip

#: An intruder's knowledge sets: each a list of columns or one comma-separated string.
KnownSets = Sequence[Sequence[str] | str] | None
#: The analyst's ordered logistic regressions as ``(response, predictors)``.
OrderedLogits = Sequence[tuple[str, Sequence[str]]]


@dataclass(kw_only=True)
class CategoricalPrepared(Prepared):
    """A categorical synthesizer's validated input: ``data`` is the model's coded table.

    Attributes
    ----------
    original
        The released columns of the confidential records, as labels.
    synthesize, keep
        The synthesized and the kept columns.
    known
        The intruder's knowledge sets, checked.
    singles
        Records alone in their pattern of kept values.
    ordered_logits
        The analyst's ordered logistic regressions, checked.
    structural_zeros
        The structural zeros (rules), checked against the data (:mod:`bayessdc.models.structural_zeros`).
    strata
        The groups of areas synthesized one by one and each group's own prepared input, when the release is
        synthesized area by area (``strata=``); ``None`` otherwise.
    area
        The area model's input (:class:`bayessdc.pipeline.areas.AreaInput`) when the area is synthesized before
        the within-area models (``area_model=``), on the run's input and on each group's; ``None`` otherwise.
    """

    original: pd.DataFrame
    synthesize: list[str]
    keep: list[str]
    known: list[list[str]]
    singles: int
    ordered_logits: list[tuple[str, list[str]]]
    structural_zeros: list[Rule] = field(default_factory=list)
    strata: CategoricalStrata | None = None
    area: Any = None


@dataclass
class CategoricalStrata:
    """A categorical release synthesized area by area: the plan of :func:`bayessdc.models.cart.strata.plan_strata`
    and, for each of its groups, the prepared input of the group's records alone.

    Attributes
    ----------
    plan
        Which areas are fitted together (a large area alone, pools of small ones).
    rows
        Group name -> the positions of its records in the data, in the data's order.
    parts
        Group name -> the group's own :class:`CategoricalPrepared`: its records coded on their own (the levels
        they take), the run's columns and knowledge sets.
    description
        The plan as ``release/model.json`` states it (:meth:`StrataPlan.describe` of the data).
    """

    plan: StrataPlan
    rows: dict[str, np.ndarray]
    parts: dict[str, CategoricalPrepared]
    description: dict[str, Any]

    @property
    def column(self) -> str:
        """The column of areas."""
        return self.plan.column

    def index(self, name: str) -> int:
        """The group's position in the plan (its stream and its fit's name)."""
        return list(self.plan.groups).index(name)

    def seed(self, seed: int, name: str) -> int:
        """The group's own seed: the run's ``seed`` and the group's position, stream ``"stratum"`` (as
        :class:`bayessdc.models.cart.strata.StratifiedCart`'s groups)."""
        return streams.integer_seed(seed, Stream.STRATUM, self.index(name))

    def fit_name(self, name: str) -> str:
        """The group's fit in ``private/diagnostics.json`` and its posterior file: ``group-<position>`` (a group's
        name may hold any character)."""
        return f"group-{self.index(name)}"


def check_strata_roles(
    strata: str | None, min_stratum: int | None, pool_by: str | None, synthesize: list[str], keep: list[str]
) -> list[str]:
    """The kept columns of a release synthesized area by area: the column of areas added first when it is not kept.

    Parameters
    ----------
    strata, min_stratum, pool_by
        The recipe's settings of synthesis by area.
    synthesize, keep
        The columns as given.

    Returns
    -------
    list of str
        ``keep``, with ``strata`` first when it was not among them (unchanged without ``strata``).

    Raises
    ------
    bayessdc.InputError
        ``strata`` among the columns to synthesize; ``min_stratum`` or ``pool_by`` without ``strata``.
    """
    if strata is None:
        if pool_by is not None or min_stratum is not None:
            raise InputError("pool_by= and min_stratum= need strata=, the column of areas synthesized one by one")
        return keep
    if strata in synthesize:
        raise InputError(f"strata={strata!r} is among the columns to synthesize: the areas are kept, every record "
                         "synthesized within its own")  # fmt: skip
    if pool_by is not None and (pool_by == strata or pool_by in synthesize):
        raise InputError(f"pool_by={pool_by!r} must be a coarser area than strata={strata!r}, not a synthesized "
                         "column nor the areas themselves")  # fmt: skip
    return keep if strata in keep else [strata, *keep]


def check_known_sets(known: KnownSets, synthesize: Sequence[str], keep: Sequence[str]) -> list[list[str]]:
    """The intruder's knowledge sets as lists of columns (default: every kept and synthesized column).

    Parameters
    ----------
    known
        Knowledge sets, each a list of columns or one comma-separated string (``"gender,county"``).
    synthesize, keep
        The released columns.

    Raises
    ------
    bayessdc.InputError
        A column that is neither kept nor synthesized, or an empty knowledge set.
    """
    variables = list(keep) + list(synthesize)
    if isinstance(known, str):
        known = [known]
    sets = []
    for entry in known or []:
        columns = [c.strip() for c in entry.split(",") if c.strip()] if isinstance(entry, str) else list(entry)
        if not columns:
            raise InputError("known=: an empty knowledge set; give the columns an intruder knows")
        sets.append(columns)
    sets = sets or [variables]
    for columns in sets:
        unknown = [c for c in columns if c not in variables]
        if unknown:
            raise InputError(
                f"known= column(s) {', '.join(map(repr, unknown))} are neither kept nor synthesized "
                f"(the release holds {', '.join(map(str, variables))})"
            )
    return sets


def check_ordered_logits(
    ordered_logits: OrderedLogits | None,
    levels: dict[str, Any],
    keep: Sequence[str],
    synthesize: Sequence[str],
) -> list[tuple[str, list[str]]]:
    """Check the analyst's ordered logistic regressions ``(response, predictors)`` before any sampling.

    Raises
    ------
    bayessdc.InputError
        A column neither kept nor synthesized, a column named twice, no synthesized column involved, or a
        response with a single level.
    """
    variables = list(keep) + list(synthesize)
    checked = [(str(r), [str(c) for c in preds]) for r, preds in (ordered_logits or [])]
    for response, predictors in checked:
        name = f"ordered_logits= ({response!r}, {predictors!r})"
        unknown = [c for c in [response, *predictors] if c not in variables]
        if unknown:
            raise InputError(
                f"{name}: column(s) {', '.join(map(repr, unknown))} are neither kept nor synthesized "
                f"(the release holds {', '.join(variables)})"
            )
        if response in predictors or len(set(predictors)) < len(predictors):
            raise InputError(f"{name}: a column appears twice (response and predictors must be distinct)")
        if not {response, *predictors} & set(synthesize):
            raise InputError(
                f"{name}: involves no synthesized column, so its estimates are the same on every synthetic "
                f"dataset; include one of {', '.join(synthesize)}"
            )
        if len(levels[response]) < 2:
            raise InputError(f"{name}: the response {response!r} has a single level")
    return checked


def release_notices(
    frame: pd.DataFrame, original: pd.DataFrame, synthesize: list[str], keep: list[str]
) -> tuple[list[str], int]:
    """Notices on dropped columns and single-record patterns, and the number of records alone in their pattern."""
    variables = keep + synthesize
    notices = []
    dropped = [c for c in frame.columns if c not in variables]
    if dropped:
        notices.append(f"column(s) {', '.join(map(str, dropped))} are neither kept nor synthesized: not released")
    pattern_size = original.groupby(keep, observed=True)[keep[0]].transform("size").to_numpy()
    singles = int((pattern_size == 1).sum())
    if singles:
        notices.append(f"{singles} pattern(s) of the kept columns hold a single record; their risk is reported")
    return notices, singles
