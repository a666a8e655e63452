"""The DPMPM of Hu & Savitsky, Section 2.1, declared in PyMC as the paper writes it.

Hu & Savitsky, *Bayesian Data Synthesis and Disclosure Risk Quantification: An Application to the Consumer
Expenditure Surveys*, Section 2.1
(eq. 1-6) with the settings of Section 2.3, following Si & Reiter (2013) and Hu et al. (2014).

The blocked Gibbs sampler (:mod:`bayessdc.models.dpmpm.gibbs`) samples the equivalent form with the latent
classes summed out and the records aggregated into cells (:mod:`bayessdc.models.dpmpm.marginal`), whose PyMC
declaration it reads the priors from; ``tests/models/dpmpm/test_model.py`` checks that the two log densities
agree at random points and that both declarations give the sampler the same priors.

References
----------
.. [1] Hu, J., & Savitsky, T. D. *Bayesian data synthesis and disclosure risk quantification: an application to
    the Consumer Expenditure Surveys*. Vassar College and U.S. Bureau of Labor Statistics, manuscript.
.. [2] Si, Y., & Reiter, J. P. (2013). Nonparametric Bayesian multiple imputation for incomplete categorical
    variables in large-scale assessment surveys. *Journal of Educational and Behavioral Statistics*.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..categorical import CategoricalData

__all__ = ["DEFAULT_K", "DPMPMPriors", "level_dim", "paper_model"]

#: The truncation level K (mixture components) by default: the one value the model, the recipe and the command
#: line share. On the CE-like data fewer than 25 components are ever occupied, so 40 leaves room (the fit
#: reports whether K was large enough: ``occupied_components.K_large_enough``).
DEFAULT_K = 40


@dataclass(frozen=True)
class DPMPMPriors:
    """Hyperparameters of eq. (5) and (6) (Section 2.3's values are the defaults).

    Parameters
    ----------
    a_alpha, b_alpha
        Shape and rate of the gamma prior of the concentration ``alpha``.
    theta_concentration
        The common value of the Dirichlet parameters ``a_1^(j) = ... = a_dj^(j)``.
    """

    a_alpha: float = 0.25
    b_alpha: float = 0.25
    theta_concentration: float = 1.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not value > 0:
                raise ValueError(f"prior hyperparameter {name} must be positive, got {value}")


def level_dim(variable: str) -> str:
    """Name of the dimension holding the levels of ``variable``."""
    return f"{variable}_level"


def paper_model(data: CategoricalData, K: int = DEFAULT_K, priors: DPMPMPriors = DPMPMPriors()) -> Any:
    """Declare the DPMPM of Section 2.1 in PyMC, one latent class per record, as the paper writes it.

    * eq. (1): ``X_ij | z_i, theta ~ Multinomial(1; theta_{z_i}^(j))`` independently over records and variables;
    * eq. (2): ``z_i | pi ~ Multinomial(1; pi_1, ..., pi_K)``;
    * eq. (3): ``pi_k = beta_k prod_{l<k} (1 - beta_l)``;
    * eq. (4): ``beta_k ~ Beta(1, alpha)`` for ``k < K``, ``beta_K = 1`` (truncated stick breaking);
    * eq. (5): ``alpha ~ Gamma(a_alpha, b_alpha)`` (shape, rate; 0.25, 0.25 in Section 2.3);
    * eq. (6): ``theta_k^(j) ~ Dirichlet(a_1^(j), ..., a_dj^(j))`` (all ones in Section 2.3).

    PyMC needs a variable's parents first, so the code declares them from the top of the hierarchy down:
    eq. (5), (4), (3), (6), (2), (1).

    Parameters
    ----------
    data
        Coded records.
    K
        Truncation level: number of mixture components (40 in Section 2.3).
    priors
        Hyperparameters of eq. (5)-(6).

    Returns
    -------
    pymc.Model
        Dimensions ``record`` (n), ``component`` (K), ``stick`` (K - 1) and ``<variable>_level`` for every
        variable; free ``alpha``, ``beta`` (stick), ``theta_<variable>`` (component, level) and ``z``
        (record); deterministic ``pi``; observed ``x_<variable>`` (record).
    """
    import pymc as pm
    import pytensor.tensor as pt

    if K < 2:
        raise ValueError("K must be at least 2")
    coords = {"component": np.arange(K), "stick": np.arange(K - 1)}
    coords |= {level_dim(v): [str(x) for x in data.levels[v]] for v in data.variables}
    with pm.Model(coords=coords) as model:
        model.add_coord("record", length=data.n_records)
        alpha = pm.Gamma("alpha", alpha=priors.a_alpha, beta=priors.b_alpha)  # eq. (5)
        beta = pm.Beta("beta", alpha=1.0, beta=alpha, dims="stick")  # eq. (4), beta_K = 1 below
        remaining = pt.concatenate([pt.ones(1), pt.cumprod(1 - beta)])  # prod_{l<k} (1 - beta_l)
        pi = pm.Deterministic("pi", pt.concatenate([beta, pt.ones(1)]) * remaining, dims="component")  # eq. (3)
        theta = {
            v: pm.Dirichlet(  # eq. (6)
                f"theta_{v}",
                a=np.full((K, len(data.levels[v])), priors.theta_concentration),
                dims=("component", level_dim(v)),
            )
            for v in data.variables
        }
        z = pm.Categorical("z", p=pi, dims="record")  # eq. (2)
        for j, v in enumerate(data.variables):
            pm.Categorical(f"x_{v}", p=theta[v][z], observed=data.codes[:, j], dims="record")  # eq. (1)
    return model
