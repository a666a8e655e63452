"""Differential smoothing (Quick, Holan & Wikle, Sections 3.1-3.3 and 6): risk weights, ``A`` and the restriction.

Stage 1 (the unrestricted fit, eq. 6) gives ``phi_hat``; records whose nearest neighbour lies beyond
``M = -log(0.20) / phi_hat`` are at risk (``a_i = 1``; or the continuous weights of Section 6), and stage 2
(eq. 7) scales their spatial effect by ``A_ii = 1 / sqrt(1 + gamma a_i)`` with ``phi`` fixed at ``phi_hat``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import arviz as az
import numpy as np

from .data import SpatialData
from .geometry import nearest_neighbour_distance

__all__ = [
    "Restriction",
    "RiskWeights",
    "gamma_from_smoothing",
    "make_restriction",
    "outlier_threshold",
    "risk_weights",
    "smoothing_diagonal",
]

RiskWeights = Literal["binary", "continuous"]


def outlier_threshold(phi_hat: float, correlation: float = 0.20) -> float:
    """``M = -log(correlation) / phi_hat`` (Section 3.2): beyond ``M`` the correlation is below ``correlation``."""
    if not 0 < correlation < 1:
        raise ValueError(f"correlation must be in (0, 1), got {correlation}")
    return -math.log(correlation) / phi_hat


def risk_weights(
    coords: np.ndarray, phi_hat: float, kind: RiskWeights = "binary", correlation: float = 0.20
) -> np.ndarray:
    """Risk weights ``a_i``.

    ``"binary"`` (Section 3.2): 1 when the nearest-neighbour distance is at least
    ``M = -log(correlation)/phi_hat``, else 0. ``"continuous"`` (Section 6): ``1 - exp(-phi_hat min_j d_ij)``.
    """
    nn = nearest_neighbour_distance(coords)
    if kind == "binary":
        return (nn >= outlier_threshold(phi_hat, correlation)).astype(float)
    if kind == "continuous":
        return 1.0 - np.exp(-phi_hat * nn)
    raise ValueError(f"risk weights must be 'binary' or 'continuous', got {kind!r}")


def smoothing_diagonal(weights: np.ndarray, gamma: float) -> np.ndarray:
    """``A_ii = 1 / sqrt(1 + gamma a_i)`` (Section 3.1); exactly 0 where ``gamma = inf`` and ``a_i > 0``."""
    weights = np.asarray(weights, float)
    if gamma < 0:
        raise ValueError(f"gamma must be non-negative, got {gamma}")
    if math.isinf(gamma):
        return np.where(weights > 0, 0.0, 1.0)
    return 1.0 / np.sqrt(1.0 + gamma * weights)


def gamma_from_smoothing(alpha: float, sigma_sq: float, tau_sq: float) -> float:
    """The ``gamma`` giving smoothing level ``alpha`` at an isolated outlier (eq. 5).

    ``alpha = (sigma^2/(1+gamma)) / (tau^2 + sigma^2/(1+gamma))``, so ``gamma = sigma^2 (1-alpha)/(alpha tau^2) - 1``;
    ``alpha = 1/2`` gives ``gamma = sigma^2/tau^2 - 1``. ``alpha`` must lie in ``(0, sigma^2/(sigma^2+tau^2)]``.
    """
    top = sigma_sq / (sigma_sq + tau_sq)
    if not 0 < alpha <= top:
        raise ValueError(
            f"smoothing level alpha must be in (0, {top:.3f}] (sigma^2/(sigma^2+tau^2)); got {alpha}; "
            "alpha = 0 is gamma = inf"
        )
    return max(0.0, sigma_sq * (1 - alpha) / (alpha * tau_sq) - 1.0)


@dataclass
class Restriction:
    """What stage 1 hands to stage 2 (Section 3.3).

    Attributes
    ----------
    phi_hat
        Posterior median of ``phi`` from the unrestricted fit; ``phi`` is fixed there in stage 2.
    weights
        Risk weights ``a_i``.
    gamma
        Global risk parameter (``inf``: full smoothing).
    smoothing
        ``A_ii = 1/sqrt(1 + gamma a_i)``.
    threshold
        ``M = -log(correlation)/phi_hat`` (binary weights).
    kind
        ``"binary"`` or ``"continuous"``.
    initial
        Starting values for stage 2: posterior medians of ``sigma`` and ``tau`` from stage 1.
    alpha
        Target smoothing level when ``gamma`` was derived from it (eq. 5), else ``None``.
    """

    phi_hat: float
    weights: np.ndarray
    gamma: float
    smoothing: np.ndarray
    threshold: float
    kind: str = "binary"
    initial: dict[str, Any] = field(default_factory=dict)
    alpha: float | None = None

    @property
    def at_risk(self) -> np.ndarray:
        """Boolean mask of the at-risk records (``a_i > 0`` for binary weights; ``a_i`` at least the
        binary threshold's weight ``1 - correlation`` for continuous ones)."""
        if self.kind == "binary":
            return self.weights > 0
        return self.weights >= 1 - math.exp(-self.phi_hat * self.threshold)

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary (private: contains ``phi_hat``)."""
        return {
            "phi_hat": self.phi_hat,
            "threshold_M": self.threshold,
            "risk_weights": self.kind,
            "gamma": "inf" if math.isinf(self.gamma) else self.gamma,
            "alpha": self.alpha,
            "n_at_risk": int(self.at_risk.sum()),
        }


def make_restriction(
    data: SpatialData,
    unrestricted: az.InferenceData,
    *,
    kind: RiskWeights = "binary",
    correlation: float = 0.20,
    gamma: float = math.inf,
    alpha: float | None = None,
) -> Restriction:
    """Flag the at-risk records from the unrestricted fit and build ``A`` (Sections 3.2-3.3 and 6).

    Parameters
    ----------
    data
        The data.
    unrestricted
        Stage-1 posterior (with ``phi``, ``beta``, ``sigma``, ``tau``, ``sigma_sq``, ``tau_sq``).
    kind
        ``"binary"`` or ``"continuous"`` risk weights.
    correlation
        The 0.20 of ``M = -log(0.20)/phi_hat``.
    gamma
        Global risk parameter; ignored when ``alpha`` is given.
    alpha
        Target smoothing level; ``gamma`` then follows from eq. (5) at the posterior medians of
        ``sigma^2`` and ``tau^2``.
    """
    post = unrestricted.posterior
    phi_hat = float(post["phi"].median())
    if alpha is not None:
        gamma = gamma_from_smoothing(alpha, float(post["sigma_sq"].median()), float(post["tau_sq"].median()))
    weights = risk_weights(data.coords, phi_hat, kind, correlation)
    if kind == "continuous" and math.isinf(gamma):
        raise ValueError(
            "continuous risk weights are positive everywhere, so gamma = inf would remove the spatial effect "
            "of every record; choose a finite gamma or a smoothing level alpha"
        )
    initial = {
        "sigma": float(post["sigma"].median()),
        "tau": float(post["tau"].median()),
    }
    return Restriction(
        phi_hat=phi_hat,
        weights=weights,
        gamma=float(gamma),
        smoothing=smoothing_diagonal(weights, gamma),
        threshold=outlier_threshold(phi_hat, correlation),
        kind=kind,
        initial=initial,
        alpha=alpha,
    )
