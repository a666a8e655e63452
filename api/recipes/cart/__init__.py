"""The sequential CART synthesizer's recipe with a Bayesian bootstrap (Rodriguez, Freiman, Reiter & Lauger): its
prepared input, checks, trees, draw, record measures and their cross-fitted reference, description and report
content."""

from .recipe import CART, CartPrepared

__all__ = ["CART", "CartPrepared"]
