"""The DPMPM synthesizer's recipe (Hu & Savitsky's truncated Dirichlet-process mixture of products of multinomials), on
the categorical base recipe."""

from .recipe import DPMPM

__all__ = ["DPMPM"]
