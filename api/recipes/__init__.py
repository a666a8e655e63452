"""One home per synthesizer: each package holds its recipe (:class:`bayessdc.pipeline.Recipe`): the prepared
input and its checks, the fit, the draw, the description, the levers and the report content; the generic steps are
:mod:`bayessdc.pipeline`'s. A recipe imports :mod:`bayessdc.pipeline`'s base and the model layer, never another
recipe but its base (the DPMPM and the DP-areal build on :mod:`bayessdc.recipes.categorical`); the pipeline
imports no recipe. A new synthesizer is its model folder, its package here and one line in
:data:`bayessdc.recipes.RECIPES`.
"""

#: Each synthesizer's public recipe class, by the name ``import bayessdc as bsd`` gives it, and its module.
RECIPES = {
    "Flows": "bayessdc.recipes.flows",
    "Spatial": "bayessdc.recipes.spatial",
    "DPMPM": "bayessdc.recipes.dpmpm",
    "DPAreal": "bayessdc.recipes.dp_areal",
    "CART": "bayessdc.recipes.cart",
}

__all__ = ["RECIPES"]
