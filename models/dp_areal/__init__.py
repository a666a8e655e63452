"""DP-areal synthesizer: Poisson-lognormal county-by-pattern counts with Dirichlet-process random effects.

Hu & Savitsky, *Bayesian Data Synthesis and Disclosure Risk Quantification: An Application to the Consumer
Expenditure Surveys*, Section 2.2
(eq. 7-14) with the settings of Section 2.3. A *pattern* ``b`` is a combination of the kept (non-geographic)
variables; ``c_i^(b)`` counts the records of pattern ``b`` with label ``i`` (the county), zeros included. The
counts are Poisson with lognormal rates (eq. 7-8) whose means come from a truncated Dirichlet-process mixture
of intercepts and pattern effects (eq. 9-12); synthesis draws each record's label from its pattern's rates
(eq. 13-14).

One file per part:

``data.py``
    The label counts of every pattern and their sufficient statistics (:func:`prepare_areal`).
``model.py``
    The PyMC declaration as the paper writes it, every cell's label and log rate explicit
    (:func:`paper_model`), and its priors (:class:`DPArealPriors`).
``marginal.py``, ``quadrature.py``
    The equivalent form the sampler uses: labels summed out and log rates integrated out by an adaptive
    trapezoid rule (:func:`build_model`, :func:`log_poisson_lognormal` and the compiled likelihood
    Ops); tested equal to the declaration at random points.
``conditionals.py``
    Exact draws of the labels and log rates given the parameters (:func:`draw_labels_and_log_rates`) and the
    Gibbs step of the labels (:func:`label_gibbs_step`).
``simulate.py``
    :func:`simulate_areal`.
``synthesizer.py``
    :class:`DPArealSynthesizer`, the contract of :mod:`bayessdc.models.base`.

The records are coded by :func:`bayessdc.models.categorical.prepare_categorical`, shared with the DPMPM.
"""

from ..categorical import CategoricalData, CategoricalDataError
from .conditionals import draw_labels_and_log_rates, draw_poisson_lognormal_log_rate, label_gibbs_step
from .data import MAX_CELLS, ArealData, prepare_areal
from .gibbs import DPArealGibbsSettings
from .marginal import (
    PARAMETERIZATIONS,
    build_model,
    identified_basis,
    identified_covariances,
    leading_components,
)
from .model import DEFAULT_K, DPArealPriors, paper_model
from .quadrature import (
    HALF_WIDTH,
    PoissonLognormalGivenLabels,
    PoissonLognormalMixture,
    cell_posterior,
    given_labels_value_and_grad,
    log_poisson_lognormal,
    mixture_value_and_grad,
    poisson_lognormal_mode,
    poisson_lognormal_moments,
)
from .simulate import simulate_areal
from .synthesizer import COMPILED_MODELS, NUTS_TARGET_ACCEPT, DPArealSynthesizer

__all__ = [
    "COMPILED_MODELS",
    "DEFAULT_K",
    "HALF_WIDTH",
    "MAX_CELLS",
    "PARAMETERIZATIONS",
    "ArealData",
    "CategoricalData",
    "CategoricalDataError",
    "DPArealGibbsSettings",
    "NUTS_TARGET_ACCEPT",
    "DPArealPriors",
    "DPArealSynthesizer",
    "PoissonLognormalGivenLabels",
    "PoissonLognormalMixture",
    "build_model",
    "cell_posterior",
    "draw_labels_and_log_rates",
    "draw_poisson_lognormal_log_rate",
    "given_labels_value_and_grad",
    "identified_basis",
    "identified_covariances",
    "label_gibbs_step",
    "leading_components",
    "log_poisson_lognormal",
    "mixture_value_and_grad",
    "paper_model",
    "poisson_lognormal_mode",
    "poisson_lognormal_moments",
    "prepare_areal",
    "simulate_areal",
]
