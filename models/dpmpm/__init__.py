"""DPMPM synthesizer: Dirichlet-process mixture of products of multinomials for categorical data.

Hu & Savitsky, *Bayesian Data Synthesis and Disclosure Risk Quantification: An Application to the Consumer
Expenditure Surveys*, Section 2.1
and 2.3, following Si & Reiter (2013) and Hu et al. (2014). Every record ``X_i = (X_i1, ..., X_ip)`` of ``p``
categorical variables belongs to one of ``K`` latent classes (eq. 1-2); the class weights come from a
truncated stick breaking (eq. 3-5) and every class has its own level probabilities for every variable (eq. 6).

One file per part:

``model.py``
    The PyMC declaration as the paper writes it, one latent class per record (:func:`paper_model`), and its
    priors (:class:`DPMPMPriors`).
``marginal.py``
    The equivalent form the sampler uses: classes summed out, records aggregated into cells
    (:func:`cell_log_likelihood`, :func:`log_prior`, and :func:`build_model` in PyMC, from which the sampler
    reads its priors: :func:`model_hyperparameters`); tested equal to the declaration at random points.
``gibbs.py``, ``moves.py``, ``records.py``
    The blocked Gibbs sampler on the cell counts and its exact moves, compiled with numba (:func:`run_gibbs`),
    and the records (numba ``NamedTuple`` arguments) its kernels take.
``predictive.py``
    Synthetic values of every record from one posterior draw, compiled.
``simulate.py``
    Simulators (:func:`simulate_latent_class`, :func:`simulate_ce_like`).
``synthesizer.py``
    :class:`DPMPMSynthesizer`, the contract of :mod:`bayessdc.models.base`.

The input is coded by :func:`bayessdc.models.categorical.prepare_categorical` (shared with the DP-areal
model) and the binomial and multinomial draws are those of :mod:`bayessdc.models.exact_draws`.
"""

from ..categorical import MISSING_LEVEL, CategoricalData, CategoricalDataError, prepare_categorical
from .gibbs import ALPHA_UPDATES, SAMPLER_DECISION, SMALL_CELL, GibbsSettings, run_gibbs
from .marginal import build_model, cell_log_likelihood, log_prior, model_hyperparameters
from .model import DEFAULT_K, DPMPMPriors, level_dim, paper_model
from .simulate import simulate_ce_like, simulate_latent_class
from .synthesizer import CONDITIONINGS, PATTERN_MONITOR_RECORDS, Conditioning, DPMPMSynthesizer

__all__ = [
    "ALPHA_UPDATES",
    "DEFAULT_K",
    "CONDITIONINGS",
    "MISSING_LEVEL",
    "PATTERN_MONITOR_RECORDS",
    "SAMPLER_DECISION",
    "SMALL_CELL",
    "CategoricalData",
    "CategoricalDataError",
    "Conditioning",
    "DPMPMPriors",
    "DPMPMSynthesizer",
    "GibbsSettings",
    "build_model",
    "cell_log_likelihood",
    "level_dim",
    "log_prior",
    "model_hyperparameters",
    "paper_model",
    "prepare_categorical",
    "run_gibbs",
    "simulate_ce_like",
    "simulate_latent_class",
]
