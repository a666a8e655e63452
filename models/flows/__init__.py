"""Truncated-Poisson synthesizer for small origin-destination counts.

Hawala, Reiter & Wang, *Synthesizing truncated count data for confidentiality* (the paper behind this
package).

Cells of a county-to-county flow table whose count ``n`` lies in ``lower..upper`` (1..9 in the paper) are
sensitive. Their shifted counts ``y = n - lower`` (0..8) are modelled, one model per (origin group,
destination group), for example per pair of states, by

* eq. (1): ``y_ij | lambda_ij ~ Poisson(lambda_ij)`` truncated to ``0..upper-lower``,
* Section 2.1: ``log lambda_ij = beta_i + gamma_j``, ``beta_i ~ N(mu_beta, phi_beta)``,
  ``gamma_j ~ N(mu_gamma, phi_gamma)``, ``mu_beta, mu_gamma ~ N(0, 1/25)``,
  ``phi_beta, phi_gamma ~ Gamma(0.01, 0.01)``, the second argument of ``N`` being a precision.

The default precision prior is the weakly informative Gamma(1, 1) (:data:`WEAKLY_INFORMATIVE_PRIORS`); the
paper's is :data:`PAPER_PRIORS` (``--phi-prior paper``).

Modules:

* :mod:`~bayessdc.models.flows.model`: the model as the paper writes it (:func:`paper_model`) and eq. (1);
* :mod:`~bayessdc.models.flows.marginal`: the equivalent form the sampler uses (``mu_beta - mu_gamma`` and the
  precisions integrated out, effects padded to a size class), with the change of variables that links them;
* :mod:`~bayessdc.models.flows.compiled`: that form's log density and gradient compiled for the sampler of
  :mod:`bayessdc.models.nuts`;
* :mod:`~bayessdc.models.flows.data`: column names, input checks, one :class:`FlowGroup` per group pair;
* :mod:`~bayessdc.models.flows.simulate`: data from the model and a national example table;
* :mod:`~bayessdc.models.flows.synthesizer`: :class:`FlowSynthesizer`, the contract of ``models/base.py``.
"""

from .data import FlowColumns, FlowDataError, FlowGroup, split_groups, validate_flows
from .marginal import (
    DESTINATION,
    ORIGIN,
    PARAMETERIZATIONS,
    UNUSED,
    build_model,
    draw_precision,
    effect_layout,
    hierarchical_effect_logp,
    padded_size,
    unused_effect_logp,
)
from .model import (
    NAMED_PRIORS,
    PAPER_PRIORS,
    WEAKLY_INFORMATIVE_PRIORS,
    FlowPriors,
    describe_priors,
    log_factorials,
    named_priors,
    paper_model,
    truncated_poisson_log_normaliser,
    truncated_poisson_log_normaliser_numpy,
    truncated_poisson_logp,
)
from .simulate import simulate_flow_table, simulate_group
from .synthesizer import COMPILED_MODELS, FLOW_SAMPLER_SETTINGS, FlowSynthesizer

__all__ = [
    "COMPILED_MODELS",
    "DESTINATION",
    "FLOW_SAMPLER_SETTINGS",
    "NAMED_PRIORS",
    "ORIGIN",
    "PAPER_PRIORS",
    "PARAMETERIZATIONS",
    "UNUSED",
    "WEAKLY_INFORMATIVE_PRIORS",
    "FlowColumns",
    "FlowDataError",
    "FlowGroup",
    "FlowPriors",
    "FlowSynthesizer",
    "build_model",
    "describe_priors",
    "draw_precision",
    "effect_layout",
    "hierarchical_effect_logp",
    "log_factorials",
    "named_priors",
    "padded_size",
    "paper_model",
    "simulate_flow_table",
    "simulate_group",
    "split_groups",
    "truncated_poisson_log_normaliser",
    "truncated_poisson_log_normaliser_numpy",
    "truncated_poisson_logp",
    "unused_effect_logp",
    "validate_flows",
]
