"""The Examples of the public verbs and recipes run as written (doctests), so that they cannot go stale."""

import doctest
import importlib

import pytest

#: Modules whose docstrings hold Examples: the verbs (synthesize, adjust, load, the release's methods), the
#: recipes, the measures, the generic risk functions and the combining rules.
MODULES = (
    "bayessdc.pipeline",
    "bayessdc.models.categorical",
    "bayessdc.models.cart.strata",
    "bayessdc.recipes.dpmpm.recipe",
    "bayessdc.recipes.dp_areal.recipe",
    "bayessdc.recipes.cart.recipe",
    "bayessdc.recipes",
    "bayessdc.pipeline.areas",
    "bayessdc.recipes.flows.recipe",
    "bayessdc.recipes.spatial.recipe",
    "bayessdc.recipes.cta.recipe",
    "bayessdc.recipes.suppress.recipe",
    "bayessdc.tables",
    "bayessdc.cta.problem",
    "bayessdc.cta.audit",
    "bayessdc.cta.suppression",
    "bayessdc.release",
    "bayessdc.loading",
    "bayessdc.evaluation",
    "bayessdc.control",
    "bayessdc.measures",
    "bayessdc.measures.household_tables",
    "bayessdc.measures.households",
    "bayessdc.measures.strata",
    "bayessdc.risk.copies",
    "bayessdc.risk.attacks",
    "bayessdc.risk.neighbours",
    "bayessdc.synthesis.combining",
    "bayessdc.synthesis.tables",
    "bayessdc.synthesis.survey",
    "bayessdc.synthesis.replicates",
    "bayessdc.pipeline.weighting",
)


@pytest.mark.parametrize("name", MODULES)
def test_examples_run_as_written(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0, f"{name} has no Examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (see the output above)"
