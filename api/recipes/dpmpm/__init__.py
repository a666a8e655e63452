"""The DPMPM synthesizer's recipe (Hu & Savitsky's truncated Dirichlet-process mixture of products of multinomials), on
the categorical base recipe; its command (``command.py``)."""

from .. import exports

__all__ = ["DPMPM"]
__getattr__ = exports(__name__, {"DPMPM": "recipe"})
