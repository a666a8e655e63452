"""The spatial Gaussian-process synthesizer's recipe with differential smoothing (Quick, Holan & Wikle): its prepared
input, checks, two-stage fit, draw, measures, description and report content."""

from .measures import SpatialMeasures
from .recipe import Spatial, SpatialPrepared, prepare_spatial

__all__ = ["Spatial", "SpatialMeasures", "SpatialPrepared", "prepare_spatial"]
