"""The sequential CART synthesizer's recipe with a Bayesian bootstrap (Rodriguez, Freiman, Reiter & Lauger): its
prepared input, checks, trees, draw, record measures and their cross-fitted reference, description and report
content; its command (``command.py``)."""

from .. import exports

__all__ = ["CART", "CartPrepared"]
__getattr__ = exports(__name__, {"CART": "recipe", "CartPrepared": "recipe"})
