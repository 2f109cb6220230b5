"""``random.Random(seed).sample(range(n), k)``, the same positions, drawn with numpy.

Why: ``--edit-set random:K[:SEED]`` is defined as CPython's ``random.sample`` over the case ids
(the procedure behind MQuAKE-Remastered's edit lists), so the positions must be exactly the ones
it draws. CPython draws them in a Python loop, one ``getrandbits`` call and one list swap per
position: 0.17 s for 100 k positions of 1 M, a sixth of a whole contamination audit. Here the
same Mersenne Twister words are taken in one ``getrandbits`` call and the loop's two sequential
parts are solved as array operations:

* **rejection sampling** (``randbelow(m)`` draws ``m.bit_length()`` bits until the value is below
  ``m``): which word draws which position depends on how many were rejected before it. A guess
  of that count is improved until it is consistent with itself; a consistent one is the loop's
  own (each word's fate follows from the words before it), and it takes a few rounds because a
  word's fate changes only if its value lies within a few counts of the bound;
* **the pool** (CPython's branch for large ``k``: ``result[i] = pool[j]; pool[j] =
  pool[n - i - 1]``): the value at a position is the position itself unless the position was
  drawn before, in which case it is the value the last live position held then: chains
  followed for every position at once, each a few links long.

The set branch (small ``k``) draws ``randbelow(n)`` until the value is new: the first ``k``
distinct values of the stream. Anything this module does not cover (``n`` beyond 32 bits, a
subclass of ``Random``, a round limit reached) is handed to ``random.sample`` itself, and the
tests compare both on random ``n``, ``k`` and seeds.
"""

from __future__ import annotations

import random
from math import ceil, log

import numpy as np

#: Rounds of the rejection fixpoint before giving up to CPython (never reached in the tests).
_MAX_ROUNDS = 64


def sample_positions(rng: random.Random, n: int, k: int) -> np.ndarray:
    """``rng.sample(range(n), k)`` as an int64 array, ``rng`` left in an unspecified state."""
    if not 0 <= k <= n:
        raise ValueError("Sample larger than population or is negative")
    # past a quarter of n, the rejection fixpoint needs many rounds (49 for k = n = 1 M) and
    # CPython's loop is the faster
    if type(rng) is not random.Random or n >= 1 << 32 or k == 0 or 4 * k > n:
        return np.asarray(rng.sample(range(n), k), dtype=np.int64)
    state = rng.getstate()
    setsize = 21
    if k > 5:
        setsize += 4 ** ceil(log(k * 3, 4))
    out = _pool(rng, n, k) if n <= setsize else _distinct(rng, n, k)
    if out is None:  # give up: CPython's own loop, from the same state
        rng.setstate(state)
        return np.asarray(rng.sample(range(n), k), dtype=np.int64)
    return out


def _words(rng: random.Random, count: int) -> np.ndarray:
    """The next ``count`` 32-bit outputs of the generator, in the order ``getrandbits(b)``
    (b <= 32) would use them one by one: ``getrandbits(32 * count)`` puts the first in the
    lowest 32 bits."""
    if count == 0:
        return np.zeros(0, dtype=np.uint32)
    return np.frombuffer(rng.getrandbits(32 * count).to_bytes(4 * count, "little"), dtype="<u4")


def _distinct(rng: random.Random, n: int, k: int) -> np.ndarray | None:
    """The set branch: ``randbelow(n)`` until a new value, ``k`` times."""
    b = n.bit_length()
    # a word is kept with probability n / 2**b (>= 1/2), then new with probability >= 1 - k/n
    per_word = (n / (1 << b)) * max(1.0 - k / n, 1e-3)
    stream = np.zeros(0, dtype=np.int64)
    distinct = 0
    for _ in range(_MAX_ROUNDS):
        words = _words(rng, int((k - distinct) / per_word * 1.1) + 64)
        r = (words >> np.uint32(32 - b)).astype(np.int64)
        stream = np.concatenate([stream, r[r < n]])
        _, first = np.unique(stream, return_index=True)  # each value's first draw
        distinct = len(first)
        if distinct >= k:
            first.sort()
            return stream[first[:k]]
    return None


def _pool(rng: random.Random, n: int, k: int) -> np.ndarray | None:
    """The pool branch: ``j = randbelow(n - i)``, then the pool's swap, for i in 0..k-1."""
    j = _bounded_draws(rng, n, k)
    if j is None:
        return None
    # result[i] = value at position j[i] at time i. A position's value changes only when it is
    # drawn (it takes the last live position's value, n-1-i at time i): the value of x at
    # time t is x if x was not drawn before t, else that of n-1-t' at t', t' the last draw of
    # x before t. The draws as (position, time) keys, sorted, answer "last draw before t".
    width = k + 1
    keys = np.sort(j * width + np.arange(k, dtype=np.int64))
    x, t = j.copy(), np.arange(k, dtype=np.int64)
    result = np.empty(k, dtype=np.int64)
    active = np.arange(k, dtype=np.int64)
    while active.size:
        at = np.searchsorted(keys, x * width + t) - 1  # the greatest key below (x, t)
        prev = keys[np.maximum(at, 0)]
        drawn = (at >= 0) & (prev // width == x)
        done = ~drawn
        result[active[done]] = x[done]
        tp = prev[drawn] % width
        active, x, t = active[drawn], n - 1 - tp, tp
    return result


def _bounded_draws(rng: random.Random, n: int, k: int) -> np.ndarray | None:
    """``[randbelow(n - i) for i in range(k)]`` from one block of words.

    Word p is the attempt for draw i = p - c[p], c[p] the rejections among the words before
    it; a word is rejected when its top ``bit_length(n - i)`` bits are >= n - i. ``c`` is
    guessed (none), then recomputed from the rejections it implies until it no longer
    changes: a consistent ``c`` is the sequential loop's, since each word's fate follows
    from those before it.
    """
    # each draw accepts with probability > 1/2: twice the draws, plus slack, is ample
    words = _words(rng, 2 * k + 64)
    p = np.arange(len(words), dtype=np.int64)
    c = np.zeros(len(words), dtype=np.int64)
    for _ in range(_MAX_ROUNDS):
        i = np.minimum(p - c, k)  # draw k: past the last one
        m = n - np.minimum(i, k - 1)  # the bound of draw i
        # bit_length of m, exactly: frexp's exponent of an integer below 2**53
        r = words >> (32 - np.frexp(m.astype(np.float64))[1]).astype(np.uint32)
        rejected = (i < k) & (r >= m)
        nxt = np.empty_like(c)
        nxt[0] = 0
        np.cumsum(rejected[:-1], out=nxt[1:])
        if np.array_equal(nxt, c):
            accepted = np.flatnonzero((i < k) & ~rejected)
            if len(accepted) < k:  # the block ran out (never with 2k words in practice)
                return None
            return r[accepted[:k]].astype(np.int64)
        c = nxt
    return None
