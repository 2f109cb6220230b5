"""``sample_positions`` draws exactly what ``random.Random(seed).sample(range(n), k)`` draws.

The edit set ``random:K[:SEED]`` is defined by CPython's ``random.sample``; the numpy version
must agree on every position, in order, for both of CPython's branches (the pool for large k,
the set for small k) and across the bit-length changes of the bounds ``n - i``.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.core.sampling import _bounded_draws, _distinct, _pool, sample_positions


def reference(n: int, k: int, seed: int) -> list[int]:
    rng = random.Random()
    rng.seed(seed)
    return rng.sample(range(n), k)


def ours(n: int, k: int, seed: int) -> list[int]:
    rng = random.Random()
    rng.seed(seed)
    return sample_positions(rng, n, k).tolist()


@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(1, 300_000) | st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 64, 65, 1024, 1025]),
    frac=st.floats(0, 1),
    seed=st.integers(0, 2**32),
)
def test_same_positions_as_cpython(n: int, frac: float, seed: int) -> None:
    k = int(n * frac)
    assert ours(n, k, seed) == reference(n, k, seed)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 50_000), k=st.integers(0, 12_500), seed=st.integers(0, 2**32))
def test_each_branch_as_cpython(n: int, k: int, seed: int) -> None:
    """Both numpy branches directly (``sample_positions`` hands k > n/4 to CPython)."""
    k = min(k, n)
    if k == 0:
        return
    rng = random.Random()
    rng.seed(seed)
    setsize = 21 + (4 ** int(np.ceil(np.log(k * 3) / np.log(4))) if k > 5 else 0)
    branch = _pool if n <= setsize else _distinct
    got = branch(rng, n, k)
    assert got is not None and got.tolist() == reference(n, k, seed)


def test_bounded_draws_cross_powers_of_two() -> None:
    """Draws whose bounds n - i cross several powers of two (bit lengths 11 down to 1)."""
    for seed in range(50):
        rng = random.Random()
        rng.seed(seed)
        j = _bounded_draws(rng, 1030, 1030)
        ref_rng = random.Random()
        ref_rng.seed(seed)
        assert j is not None
        assert j.tolist() == [ref_rng._randbelow(1030 - i) for i in range(1030)]


def test_edit_set_sizes() -> None:
    """The sizes the benchmarks and the README use, at a million cases."""
    for k in (100, 10_000, 100_000):
        assert ours(1_000_000, k, 100) == reference(1_000_000, k, 100)
    assert ours(1_000_000, 0, 100) == []
