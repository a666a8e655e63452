"""bayessdc: Bayesian synthetic data with measured disclosure risk, and controlled tabular adjustment.

The public face, in a few verbs for every synthesizer::

    import bayessdc as bsd
    release = bsd.synthesize(frame, bsd.DPMPM(K=40), synthesize=["county"], keep=["gender", "age"], m=20, seed=1)
    release.synthetic        # all m datasets, a column `synthetic` = 1..m
    release.diagnostics      # the posterior of every fit and the gate's verdict
    release.risk(); release.utility(); release.save("out/"); release.report("report.html")

Synthesizers: :class:`Flows` (Hawala, Reiter & Wang), :class:`Spatial` (Quick, Holan & Wikle),
:class:`DPMPM` and :class:`DPAreal` (Hu & Savitsky), :class:`CART` (Rodriguez, Freiman, Reiter & Lauger);
:func:`adjust` for controlled tabular adjustment (Cox), its options in :class:`AdjustmentSettings` and
:class:`SolverSettings`; :func:`suppress` for complementary cell suppression, and :func:`compare_tables` to set the
two side by side. The layers below
(``bayessdc.models``, ``bayessdc.synthesis``, ``bayessdc.risk``, ``bayessdc.cta``) stay importable for their
details.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .threads import limit_blas_threads

limit_blas_threads()  # before anything below loads numpy: one BLAS thread, parallelism from chains and groups

from . import examples  # noqa: E402
from .errors import InputError, NotApplicableError  # noqa: E402
from .recipes import RECIPES  # noqa: E402

try:
    __version__ = version("bayessdc")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    __version__ = "0+unknown"

#: Public name -> module that defines it. Loaded on first use, so that ``import bayessdc`` and
#: ``bayessdc --help`` do not pay for PyMC until a synthesizer is asked for.
_LAZY = {
    "ConvergenceError": "bayessdc.models.sampling",
    "SamplerSettings": "bayessdc.models.sampling",
    "GibbsSettings": "bayessdc.models.dpmpm",
    "DPArealGibbsSettings": "bayessdc.models.dp_areal",
    "FlowPriors": "bayessdc.models.flows",
    "named_priors": "bayessdc.models.flows",
    "load_rules": "bayessdc.models.cart.rules",
    "ReleaseGatePolicy": "bayessdc.synthesis.release_gate",
    "RunMismatchError": "bayessdc.synthesis.output",
    "read_table": "bayessdc.io",
    "ReplicateDesign": "bayessdc.synthesis.replicates",
    "Recipe": "bayessdc.pipeline",
    "synthesize": "bayessdc.pipeline",
    **RECIPES,
    "adjust": "bayessdc.recipes.cta",
    "AdjustmentSettings": "bayessdc.cta",
    "SolverSettings": "bayessdc.cta",
    "Adjustment": "bayessdc.recipes.cta",
    "ProtectionNotMetError": "bayessdc.recipes.cta",
    "suppress": "bayessdc.recipes.suppress",
    "Suppression": "bayessdc.recipes.suppress",
    "SuppressionNotSafeError": "bayessdc.recipes.suppress",
    "compare_tables": "bayessdc.tables",
    "TableComparison": "bayessdc.tables",
    "Diagnostics": "bayessdc.release",
    "Release": "bayessdc.release",
    "compare_releases": "bayessdc.report",
    "Policy": "bayessdc.policy",
    "Criterion": "bayessdc.policy",
    "DisclosureRefused": "bayessdc.policy",
    "default_policy": "bayessdc.policy",
    "load_policy": "bayessdc.policy",
    "load": "bayessdc.loading",
    "evaluate": "bayessdc.evaluation",
    "MeasureInput": "bayessdc.measures",
    "AttackSettings": "bayessdc.measures",
    "Measure": "bayessdc.measures",
    "register_measure": "bayessdc.measures",
}

__all__ = [
    "CART",
    "DPAreal",
    "DPMPM",
    "Adjustment",
    "AdjustmentSettings",
    "AttackSettings",
    "Spatial",
    "adjust",
    "examples",
    "ConvergenceError",
    "Criterion",
    "Diagnostics",
    "DisclosureRefused",
    "Flows",
    "FlowPriors",
    "DPArealGibbsSettings",
    "GibbsSettings",
    "InputError",
    "Measure",
    "MeasureInput",
    "NotApplicableError",
    "Policy",
    "ProtectionNotMetError",
    "Recipe",
    "ReplicateDesign",
    "Release",
    "ReleaseGatePolicy",
    "RunMismatchError",
    "SamplerSettings",
    "SolverSettings",
    "Suppression",
    "SuppressionNotSafeError",
    "TableComparison",
    "__version__",
    "compare_releases",
    "compare_tables",
    "default_policy",
    "evaluate",
    "load",
    "load_policy",
    "load_rules",
    "named_priors",
    "read_table",
    "register_measure",
    "suppress",
    "synthesize",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name) or RECIPES.get(name)  # the registry read as it is now: a recipe registered later too
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bayessdc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
