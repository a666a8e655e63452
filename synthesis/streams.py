"""Named random streams: every random number of the library comes from ``stream(seed, *names)``.

One seed per run; each part of the library that draws takes its own stream, named by what it is
(``stream(seed, "chain", c)``, ``stream(seed, "datasets")``, ``stream(seed, "inherent", "minimum")``), so

* a stream depends only on the seed and its names: the same names give the same numbers whatever order the
  parts run in, on one machine or on a cluster, and whichever other streams were asked for before;
* different names give streams that do not overlap (numpy's ``SeedSequence`` hashing);
* adding a stream, or drawing more from one, changes no other stream.

A name is a string (hashed by the CRC-32 of its UTF-8 text) or a non-negative integer (taken as itself, for
indices such as chains and datasets). The first name joins the seed in the ``SeedSequence``'s entropy, exactly as
the runner's group seeds always did (``stream(seed, name)`` is the former ``group_seed(seed, name)``,
``SeedSequence([seed, crc32(name)])``); the further names are its spawn key, so ``stream(seed, a, k)`` is the
``k``-th child of ``stream(seed, a).spawn(...)`` and names nest like a path. Spawn keys are mixed in after the
entropy pool, so a trailing ``0`` still counts (``stream(seed, "chain", 0)`` is not ``stream(seed, "chain")``).

Everything that draws takes a :class:`numpy.random.Generator` (:func:`rng`), numba kernels included; APIs that
want an integer (scikit-learn's ``random_state``, the NUTS samplers' seeds) take :func:`integer_seed`.

Every name of a stream is listed once, in :class:`Stream`, and the code names streams by its members
(``rng(seed, Stream.CHAIN, c)``); ``tests/synthesis/test_streams.py`` checks that no other name is used. The
names that are not listed are the ones that vary: indices, a group's name (the runner's groups) and an attack's
name (the attacks' repetitions).

This module imports nothing from bayessdc: it is the one module of synthesis/ that models/ may import
(``tests/test_layout.py``).
"""

from __future__ import annotations

import zlib
from enum import StrEnum

import numpy as np

__all__ = ["Stream", "integer_seed", "name_word", "rng", "stream"]


class Stream(StrEnum):
    """Every stream name of the library, spelled once (a ``str``: ``Stream.CHAIN == "chain"``, hashed alike).

    A stream's numbers depend on its names' spelling, so a spelling is never changed: the same seed gives the same
    release. Where two spellings are close, they name two streams: ``"chain"`` is one chain's generator,
    ``"chains"`` the seed of a fit of several chains at once.
    """

    #: One chain's generator, ``(seed, CHAIN, c)``: the Gibbs samplers' chains, the compiled NUTS's chains.
    CHAIN = "chain"
    #: The integer seed of a NUTS fit of chains ``a .. b - 1`` fitted apart, ``(seed, CHAINS, a)`` (the DP-areal's
    #: NUTS seeds its chains together from one seed).
    CHAINS = "chains"
    #: The NUTS samplers' own integer seed of a fit.
    NUTS = "nuts"
    #: The m synthetic datasets of a release (and, below a group's name, of a group).
    DATASETS = "datasets"
    #: The release gate's datasets, ``(seed, GATE, chain)``.
    GATE = "gate"
    #: The records whose risk is assessed when not all are (the DPMPM's ``risk_records``).
    RISK_RECORDS = "risk-records"
    #: The control (holdout) records set apart before a fit (:mod:`bayessdc.control`).
    HOLDOUT = "holdout"
    #: The bootstrap of the table figures.
    TABLES_BOOTSTRAP = "tables-bootstrap"
    #: Below a group's name: the seed of each fit attempt, ``(seed, group, FIT, attempt)``.
    FIT = "fit"
    #: Below a group's name: the assessment of a group's release.
    ASSESS = "assess"
    #: The inherent-risk scenarios, ``(seed, INHERENT, MINIMUM | MAXIMUM | REMOVAL)``.
    INHERENT = "inherent"
    MINIMUM = "minimum"
    MAXIMUM = "maximum"
    REMOVAL = "removal"
    #: The refits with one record's value replaced (exact attribute risk), ``(seed, ATTRIBUTE_REFIT, record,
    #: candidate)``.
    ATTRIBUTE_REFIT = "attribute-refit"
    #: The refits on a synthetic dataset's values (the no-knowledge reference), ``(seed, NO_KNOWLEDGE, l)``.
    NO_KNOWLEDGE = "no-knowledge"
    #: The attacks' repetitions, ``(seed, ATTACK, attack's name, k)``.
    ATTACK = "attack"
    #: CART: the trees' seed, each dataset's draws and its smoothing, the unlearned releases and their folds.
    TREE = "tree"
    CART_DATASET = "cart-dataset"
    CART_SMOOTHING = "cart-smoothing"
    CART_UNLEARNED = "cart-unlearned"
    FOLDS = "folds"
    #: Synthesis by area: each group of strata's own seed.
    STRATUM = "stratum"
    #: Synthesis by area with the area synthesized first: the area model's seed (its chains, gate and datasets).
    AREA_MODEL = "area-model"
    #: Persons within households: each stage's trees, ``(seed, HOUSEHOLDS, stage)``, and draws, ``(seed, HOUSEHOLDS,
    #: k, stream)`` (1, 2: the households' and the members' draws; 3, 4: their smoothing).
    HOUSEHOLDS = "households"
    #: Flows: the precisions' draws.
    PRECISIONS = "precisions"
    #: Spatial: the jitter of tied coordinates, the coefficients given the NNGP draws, the NNGP draws, the fit
    #: restricted to the synthesized area.
    JITTER = "jitter"
    BETA_PHI = "beta-phi"
    NNGP_DRAWS = "nngp-draws"
    RESTRICTED_FIT = "restricted-fit"


def name_word(name: str | int) -> int:
    """The 32-bit word that stands for one name in a stream: a string's CRC-32, an integer itself.

    Parameters
    ----------
    name
        A string, or a non-negative integer (``bool`` is refused: ``True`` would read as 1).

    Returns
    -------
    int

    Examples
    --------
    >>> name_word("fit"), name_word(3)
    (1347160907, 3)
    """
    if isinstance(name, str):
        return zlib.crc32(name.encode("utf-8"))
    if isinstance(name, bool) or not isinstance(name, int | np.integer) or int(name) < 0:
        raise TypeError(f"a stream name must be a string or a non-negative integer, got {name!r}")
    return int(name)


def stream(seed: int, *names: str | int) -> np.random.SeedSequence:
    """The seed sequence of the stream ``names`` of the run seeded by ``seed``.

    Parameters
    ----------
    seed
        The run's seed (a non-negative integer).
    *names
        At least one name: strings (what the stream is for) and non-negative integers (indices: chain, dataset).

    Returns
    -------
    numpy.random.SeedSequence
        ``SeedSequence([seed, word(names[0])], spawn_key=(word(names[1]), ...))`` with :func:`name_word`.

    Examples
    --------
    >>> a = stream(7, "chain", 0).generate_state(2)
    >>> b = stream(7, "chain", 1).generate_state(2)
    >>> bool((a == stream(7, "chain", 0).generate_state(2)).all()), bool((a == b).any())
    (True, False)
    >>> bool((stream(7, "chain").spawn(2)[1].generate_state(2) == b).all())  # names nest like spawned children
    True
    """
    if not names:
        raise TypeError("stream(seed, *names) needs at least one name: say what the stream is for")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    words = [name_word(name) for name in names]
    return np.random.SeedSequence([int(seed), words[0]], spawn_key=tuple(words[1:]))


def rng(seed: int, *names: str | int) -> np.random.Generator:
    """A generator (PCG64) on the stream ``names`` of ``seed``: ``np.random.default_rng(stream(seed, *names))``.

    Examples
    --------
    >>> float(rng(7, "jitter").random()) == float(rng(7, "jitter").random())
    True
    >>> float(rng(7, "jitter").random()) == float(rng(7, "tree").random())
    False
    """
    return np.random.default_rng(stream(seed, *names))


def integer_seed(seed: int, *names: str | int) -> int:
    """A 32-bit integer seed from the stream ``names`` of ``seed``, for APIs that take an integer.

    For scikit-learn's ``random_state`` (at most ``2**32 - 1``), the NUTS samplers' seeds, and the hidden
    per-thread generator of a numba kernel (``np.random.seed``, which takes 32 bits).

    Returns
    -------
    int
        In ``0 .. 2**32 - 1``.

    Examples
    --------
    >>> integer_seed(7, "tree") == integer_seed(7, "tree"), 0 <= integer_seed(7, "tree") < 2**32
    (True, True)
    """
    return int(stream(seed, *names).generate_state(1, dtype=np.uint32)[0])
