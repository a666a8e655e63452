"""Measures of a release: one class per risk or utility figure, the disclosure policy's vocabulary.

Every figure is a :class:`Measure` whose :meth:`~Measure.compute` gives a :class:`MeasureResult`: a tidy
table of values (measure, subset, dataset, value), the references it is read against (inherent minimum and
maximum, a held-out share, chance ...) and a summary with the pooled value, its Monte Carlo error and the worst
dataset. :func:`compute_measures` computes every registered measure that applies to a release;
:func:`bayessdc.synthesize` does so for every synthesizer, judges the result by the disclosure policy
(:mod:`bayessdc.policy`) and lays it out in the report, and one writer puts them in ``private/measures.json``,
``risk.json`` and ``utility.json`` (:mod:`bayessdc.measures.files`). A new measure is one file: a subclass of
:class:`Measure` decorated with :func:`register`, declaring in :attr:`Measure.reads` the fields of its
:class:`MeasureInput` it reads (it is handed a view of those only, :class:`~bayessdc.measures.base.InputView`).

Examples
--------
>>> import pandas as pd
>>> from bayessdc.measures import MeasureInput, compute_measures
>>> original = pd.DataFrame({"sex": ["f", "f", "m", "m"], "area": ["a", "b", "a", "c"]})
>>> synthetic = pd.concat([original.assign(synthetic=1), original.assign(synthetic=2, area="c")])
>>> measures = compute_measures(MeasureInput(synthetic, original, released=["sex", "area"]), ["copied_records"])
>>> measures["copied_records"].summary()[["subset", "pooled", "worst"]]
  subset  pooled  worst
0    all    0.75    1.0
"""

from __future__ import annotations

from . import builtin  # noqa: F401 - registers the built-in measures first, in their order
from .attacks import AttackSettings
from .base import (
    REFERENCE_COLUMNS,
    SUMMARY_COLUMNS,
    VALUE_COLUMNS,
    Measure,
    MeasureInput,
    MeasureResult,
    MeasureSet,
    compute_measures,
    register,
    registry,
)
from .proximity import ProximityInput
from .regression import RegressionInput

#: :func:`register` under the name ``bsd.register_measure``.
register_measure = register

__all__ = [
    "REFERENCE_COLUMNS",
    "SUMMARY_COLUMNS",
    "VALUE_COLUMNS",
    "AttackSettings",
    "Measure",
    "MeasureInput",
    "MeasureResult",
    "MeasureSet",
    "ProximityInput",
    "RegressionInput",
    "compute_measures",
    "register",
    "register_measure",
    "registry",
]
