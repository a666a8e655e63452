"""The compiled CART (models/cart/fast_tree.py) grows scikit-learn's tree on the one-hot design.

The two trees are walked together from the root. At every node both hold the same records, the same
impurity, sample count and value; where both split, they split the records the same way (a binary predictor's
two one-hot columns make the same partition mirrored, so the children may come swapped) or, at an exact tie,
by two different splits of exactly the same impurity decrease (scikit-learn breaks ties by a random order of
the features, the compiled builder by the design's order). On data without ties in the criterion (a
continuous target; or classes with leaves large enough, checked by scikit-learn itself giving the same tree
under two seeds) the leaves must partition the records identically.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from bayessdc.models.cart.fast_tree import fit_native_tree


def _data(seed: int, n: int, classes: int) -> tuple[list[np.ndarray], list[int], np.ndarray, np.ndarray]:
    """Mixed predictors (categorical with 2 to 9 levels, continuous and rounded numbers), a class target
    (``classes`` codes) and a continuous target depending on them."""
    rng = np.random.default_rng(seed)
    levels = [3, 0, 2, 9, 0, 5, 0]
    predictors: list[np.ndarray] = []
    for k in levels:
        if k:
            predictors.append(rng.choice(k, size=n, p=rng.dirichlet(np.ones(k))))
        else:
            predictors.append(rng.normal(size=n) if len(predictors) % 2 else np.round(rng.gamma(2.0, 10.0, n), 1))
    signal = (predictors[0] == 1) * 1.5 + predictors[1] + 0.05 * predictors[4] + (predictors[3] % 3) * 0.7
    signal += np.sin(predictors[6] * 2) + (predictors[5] == 2) * predictors[1]
    y_class = np.digitize(signal + rng.normal(0, 0.8, n), np.quantile(signal, np.linspace(0, 1, classes + 1)[1:-1]))
    y_real = signal + rng.normal(0, 0.5, n)
    return predictors, levels, y_class, y_real


def _design(predictors: list[np.ndarray], levels: list[int]) -> np.ndarray:
    """The one-hot design of bayessdc.models.cart.tree.design_matrix."""
    blocks = [
        np.eye(k, dtype=np.float32)[p] if k else np.asarray(p, np.float32)[:, None]
        for p, k in zip(predictors, levels, strict=True)
    ]
    return np.hstack(blocks)


def _loss(y: np.ndarray, classification: bool) -> float:
    """``n`` times the impurity of the records ``y`` (Gini or squared error)."""
    if classification:
        counts = np.bincount(y).astype(float)
        return len(y) - (counts**2).sum() / len(y)
    return float(((y - y.mean()) ** 2).sum())


def _walk(reference, native, design: np.ndarray, y: np.ndarray, classification: bool) -> dict[str, int]:
    """Walk the two trees together (see the module doc); the counts of agreeing leaves, mirrored and tied splits."""
    a, b = reference.tree_, native.tree_
    found = {"leaves": 0, "mirrored": 0, "tied": 0}
    stack = [(0, 0, np.arange(len(y)))]
    while stack:
        i, j, rows = stack.pop()
        assert a.n_node_samples[i] == b.n_node_samples[j] == len(rows)
        assert np.isclose(a.impurity[i], b.impurity[j], rtol=1e-9, atol=1e-9 * a.impurity[0])  # rounding near 0
        value = a.value[i, 0]
        if classification:  # scikit-learn's classes are the codes present in the data
            assert np.allclose(value, b.value[j, 0, reference.classes_], rtol=1e-12)
        else:
            assert np.allclose(value, b.value[j, 0], rtol=1e-9)
        leaf_a, leaf_b = a.children_left[i] == -1, b.children_left[j] == -1
        if leaf_a and leaf_b:
            found["leaves"] += 1
            continue
        assert leaf_a == leaf_b, f"node {i}: one tree splits, the other does not"
        go_a = design[rows, a.feature[i]] <= a.threshold[i]
        go_b = design[rows, b.feature[j]] <= b.threshold[j]
        if (go_a == go_b).all():
            stack += [
                (a.children_left[i], b.children_left[j], rows[go_a]),
                (a.children_right[i], b.children_right[j], rows[~go_a]),
            ]
        elif (go_a != go_b).all():
            found["mirrored"] += 1
            stack += [
                (a.children_left[i], b.children_right[j], rows[go_a]),
                (a.children_right[i], b.children_left[j], rows[~go_a]),
            ]
        else:
            loss_a = _loss(y[rows[go_a]], classification) + _loss(y[rows[~go_a]], classification)
            loss_b = _loss(y[rows[go_b]], classification) + _loss(y[rows[~go_b]], classification)
            assert np.isclose(loss_a, loss_b, rtol=1e-9), f"node {i}: a worse split than scikit-learn's"
            found["tied"] += 1
    return found


def _partition(tree, design: np.ndarray) -> set[frozenset[int]]:
    leaves = tree.apply(design)
    return {frozenset(np.flatnonzero(leaves == leaf).tolist()) for leaf in np.unique(leaves)}


SETTINGS = [
    {"min_samples_leaf": 1, "ccp_alpha": 0.0, "max_depth": None},
    {"min_samples_leaf": 5, "ccp_alpha": 0.0, "max_depth": None},
    {"min_samples_leaf": 5, "ccp_alpha": 1e-3, "max_depth": None},
    {"min_samples_leaf": 40, "ccp_alpha": 0.0, "max_depth": 6},
    {"min_samples_leaf": 10, "ccp_alpha": 1e-4, "max_depth": None},
]


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regression_trees_partition_the_records_as_scikit_learn(seed, settings):
    """A continuous target has no ties in the squared error: the same leaves, node for node."""
    predictors, levels, _, y = _data(seed, 2000, 4)
    design = _design(predictors, levels)
    reference = DecisionTreeRegressor(random_state=seed, **settings).fit(design, y)
    native = fit_native_tree(predictors, levels, y, classification=False, **settings)
    found = _walk(reference, native, design, y, classification=False)
    assert found["tied"] == 0
    assert found["leaves"] == reference.get_n_leaves() == native.get_n_leaves()
    assert _partition(reference, design) == _partition(native, design)
    assert native.get_depth() == reference.get_depth()
    assert np.array_equal(native.apply(design), native.apply_predictors(predictors, levels, len(y)))
    assert np.array_equal(native.apply(design), native.fitted_leaves)  # the leaves the builder put the records in


@pytest.mark.parametrize("settings", SETTINGS[2:4])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_classification_trees_partition_the_records_as_scikit_learn(seed, settings):
    """Classes with leaves of at least 5 and pruning, or of 40: scikit-learn gives the same tree under two seeds
    (no tie decides it), and the compiled tree is that tree."""
    predictors, levels, y, _ = _data(seed, 3000, 5)
    design = _design(predictors, levels)
    reference = DecisionTreeClassifier(random_state=seed, **settings).fit(design, y)
    other = DecisionTreeClassifier(random_state=seed + 100, **settings).fit(design, y)
    assert _partition(reference, design) == _partition(other, design)  # no tie matters on these data
    native = fit_native_tree(predictors, levels, y, classification=True, n_classes=5, **settings)
    found = _walk(reference, native, design, y, classification=True)
    assert found["leaves"] == reference.get_n_leaves() == native.get_n_leaves()
    assert _partition(reference, design) == _partition(native, design)
    assert np.array_equal(native.apply(design), native.apply_predictors(predictors, levels, len(y)))
    assert np.array_equal(native.apply(design), native.fitted_leaves)  # the leaves the builder put the records in


@pytest.mark.parametrize("settings", [SETTINGS[0], SETTINGS[1], SETTINGS[4]])
@pytest.mark.parametrize("seed", [0, 1])
def test_tied_splits_are_equally_good(seed, settings):
    """Small class leaves tie often: where the trees part, both splits have the same impurity decrease."""
    predictors, levels, y, _ = _data(seed, 1500, 3)
    design = _design(predictors, levels)
    reference = DecisionTreeClassifier(random_state=seed, **settings).fit(design, y)
    native = fit_native_tree(predictors, levels, y, classification=True, n_classes=3, **settings)
    found = _walk(reference, native, design, y, classification=True)
    # where nothing tied, the leaves are scikit-learn's
    assert found["tied"] > 0 or _partition(reference, design) == _partition(native, design)
    if settings["min_samples_leaf"] == 1:
        assert found["tied"] > 0  # leaves of one record do tie, so the check above ran


def test_ties_go_to_the_first_column_of_the_design():
    """Two identical predictors: the split is on the first (scikit-learn would draw one at random)."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, 400)
    y = (x == 2).astype(int)
    native = fit_native_tree([x, x.copy()], [4, 4], y, classification=True, n_classes=2)
    assert native.tree_.feature[0] == 2  # level 2 of the first predictor against the rest
    assert native.get_n_leaves() == 2


def test_a_tree_without_predictors_is_one_leaf():
    y = np.arange(10.0)
    native = fit_native_tree([], [], y, classification=False)
    assert native.get_n_leaves() == 1
    assert np.array_equal(native.apply(np.zeros((10, 1), np.float32)), np.zeros(10, dtype=np.int64))
    assert native.tree_.value[0, 0, 0] == pytest.approx(4.5)


def test_the_trees_of_the_pinned_cli_release_are_scikit_learns_up_to_ties():
    """The data of tests/cli/test_cart_cli.py's pinned release: every tree of the compiled builder walks with
    scikit-learn's; they part only by mirrored splits of binary predictors or by exactly tied splits. So the
    release's digest changed with the default builder (the leaves' order and the tie-breaks changed), not its
    distribution; ``--tree-builder sklearn`` still gives the digest pinned before (test_cart_cli.py)."""
    from bayessdc.models.cart import CartSynthesizer, acs_example_rules, design_matrix, simulate_acs_persons

    frame = simulate_acs_persons(1200, seed=5)
    synthesize, keep = ["enrolled", "grade", "education", "marital"], ["age", "sex", "relationship"]
    fitted = {
        builder: CartSynthesizer(synthesize, keep, acs_example_rules(), tree_builder=builder).fit(frame, seed=0)
        for builder in ("sklearn", "native")
    }
    reference, native = fitted["sklearn"], fitted["native"]
    for tree_a, tree_b in zip(reference._trees, native._trees, strict=True):
        design = design_matrix(tree_a.predictors, reference._codes, len(frame), reference._schema)
        y = reference._codes[tree_a.column]
        found = _walk(tree_a.tree, tree_b.tree, design, y, reference._schema[tree_a.column].categorical)
        assert found["leaves"] > 10
