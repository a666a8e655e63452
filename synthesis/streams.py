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

This module imports nothing from bayessdc: it is the one module of synthesis/ that models/ may import
(``tests/test_layout.py``).
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["integer_seed", "name_word", "rng", "stream"]


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
