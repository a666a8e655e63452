"""A conjugate synthesizer for testing the generic layers against exact answers.

Items are categorical values 0..K-1 sharing one probability vector theta ~ Dirichlet(alpha); the posterior
is Dirichlet(alpha + counts), drawn exactly, so every risk and synthesis figure has a closed form.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import arviz as az
import numpy as np
import xarray as xr

from bayessdc.models.base import sample_candidates


@dataclass
class DirichletSynthesizer:
    alpha: np.ndarray = field(default_factory=lambda: np.ones(4))
    chains: int = 2
    draws: int = 2000
    name: str = "dirichlet"
    fits: list = field(default_factory=list)

    def fit(self, data, seed):
        self.fits.append(seed)
        rng = np.random.default_rng(seed)
        counts = np.bincount(np.asarray(data), minlength=len(self.alpha))
        theta = rng.dirichlet(self.alpha + counts, size=(self.chains, self.draws))
        return az.from_dict(
            posterior={"theta": theta},
            sample_stats={"diverging": np.zeros((self.chains, self.draws), dtype=bool)},
            dims={"theta": ["category"]},
        )

    def observed(self, data):
        return xr.DataArray(np.asarray(data), dims="item")

    def candidates(self, data):
        k = np.arange(len(self.alpha))
        return xr.DataArray(k, dims="candidate", coords={"candidate": k})

    def candidate_log_prob(self, posterior, data):
        theta = posterior["theta"].transpose("sample", "category").to_numpy()
        n = len(np.asarray(data))
        values = np.broadcast_to(np.log(theta)[:, None, :], (theta.shape[0], n, theta.shape[1]))
        return xr.DataArray(
            values,
            dims=("sample", "item", "candidate"),
            coords={"sample": posterior["sample"].to_numpy(), "candidate": np.arange(len(self.alpha))},
        )

    def posterior_predictive(self, posterior, data, rng):
        return sample_candidates(self.candidate_log_prob(posterior, data), rng)

    def describe(self):
        return {"synthesizer": self.name}
