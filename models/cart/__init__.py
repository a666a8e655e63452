"""Sequential CART synthesis with a Bayesian bootstrap in the leaves (Rodriguez, Freiman, Reiter & Lauger).

*Preserving privacy in person-level data for the ACS*.
Column-partially synthetic data (Section 5): the kept variables are released unchanged and predict, with
the variables synthesized before it, each synthesized variable through one CART (Section 2); synthetic
values are drawn sequentially from a Bayesian bootstrap of the leaves' observed values (Section 4; Reiter
2005), never violating the declared logical rules.

Modules:

* :mod:`~bayessdc.models.cart.tree`: one tree per synthesized column and its leaves' observed values;
* :mod:`~bayessdc.models.cart.bootstrap`: the Bayesian bootstrap in the leaves, restricted by the rules;
* :mod:`~bayessdc.models.cart.rules`: the logical rules;
* :mod:`~bayessdc.models.cart.data`: input checks and the encoding of the columns;
* :mod:`~bayessdc.models.cart.states`: missing values, missing-value codes and spikes of numeric columns, a state
  synthesized before the value (R synthpop's ``cont.na`` and ``semicont``);
* :mod:`~bayessdc.models.cart.smoothing`: the Gaussian-kernel smoothing of numeric draws (``smoothing="density"``);
* :mod:`~bayessdc.models.cart.simulate`: an ACS-like person file, its rules, and work columns with missing values;
* :mod:`~bayessdc.models.cart.synthesizer`: :class:`CartSynthesizer`.

There is no PyMC model: the synthesizer is nonparametric (trees and a Bayesian bootstrap), with no
posterior to sample.
"""

from .bootstrap import MAX_PAIRS_PER_CHUNK, CartSynthesisError, draw_column
from .data import CartDataError, check_rules_hold, encode_columns, validate_columns
from .simulate import acs_example_rules, simulate_acs_persons, simulate_acs_work
from .smoothing import ValueSmoother, bandwidth_nrd0
from .states import NumericStates, numeric_states
from .synthesizer import CartSynthesizer
from .tree import ColumnTree, design_matrix, fit_column_tree

__all__ = [
    "MAX_PAIRS_PER_CHUNK",
    "CartDataError",
    "CartSynthesisError",
    "CartSynthesizer",
    "ColumnTree",
    "NumericStates",
    "ValueSmoother",
    "acs_example_rules",
    "bandwidth_nrd0",
    "check_rules_hold",
    "design_matrix",
    "draw_column",
    "encode_columns",
    "fit_column_tree",
    "numeric_states",
    "simulate_acs_persons",
    "simulate_acs_work",
    "validate_columns",
]
