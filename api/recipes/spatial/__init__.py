"""The spatial Gaussian-process synthesizer's recipe with differential smoothing (Quick, Holan & Wikle): its prepared
input, checks, two-stage fit, draw, measures, description and report content; its command (``command.py``)."""

from .. import exports

__all__ = ["Spatial", "SpatialMeasures", "SpatialPrepared", "prepare_spatial"]
__getattr__ = exports(
    __name__,
    {"Spatial": "recipe", "SpatialPrepared": "recipe", "prepare_spatial": "recipe", "SpatialMeasures": "measures"},
)
