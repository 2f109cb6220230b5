"""MinHash + LSH near-duplicates (:mod:`curate.audits.shared.minhash`): shingles, estimator,
banding, recall."""

from __future__ import annotations

import random
import re

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.audits.shared.minhash import (
    Shingles,
    candidate_pairs,
    estimated_jaccard,
    exact_jaccard,
    lsh_params,
    near_duplicates,
    parse_shingles,
    recall_params,
    shingle,
    signatures,
)
from curate.core.errors import UsageError

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(texts, min_size=1, max_size=8), st.sampled_from(["char", "word"]), st.integers(1, 6)
)
def test_shingles_of_a_text_do_not_depend_on_its_neighbours(batch, kind, k) -> None:
    """Shingling all texts at once gives each text exactly the shingles it has alone, and the
    set of its k-grams has as many distinct hashes as there are distinct k-grams."""
    sh = shingle(batch, kind, k)
    for i, t in enumerate(batch):
        alone = set(shingle([t], kind, k).hash.tolist())
        assert set(sh.hash[sh.doc == i].tolist()) == alone
        if kind == "char":
            grams = {t[p : p + k] for p in range(max(len(t) - k + 1, 1))} if t else set()
            assert len(alone) == len(grams)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 300),
    st.floats(0.0, 1.0),
    st.integers(0, 2**31),
    st.sampled_from(["oph", "minhash"]),
)
def test_estimate_close_to_exact_jaccard(n: int, share: float, seed: int, method: str) -> None:
    """For random sets, the MinHash estimate (256 entries) is within 0.2 of the exact Jaccard
    index (6.4 standard deviations at worst, J = 0.5)."""
    rng = np.random.default_rng(seed)
    a = np.unique(rng.integers(0, 1 << 62, n, dtype=np.uint64))
    common = a[: int(len(a) * share)]
    b = np.unique(
        np.concatenate([common, rng.integers(0, 1 << 62, n - len(common), dtype=np.uint64)])
    )
    exact = len(np.intersect1d(a, b)) / len(np.union1d(a, b))
    sh = Shingles(np.repeat([0, 1], [len(a), len(b)]), np.concatenate([a, b]), 2)
    sig = signatures(sh, 256, method=method)
    est = estimated_jaccard(sig, np.array([[0, 1]]))[0]
    assert abs(est - exact) <= 0.2


def test_identical_sets_estimate_one_and_disjoint_near_zero() -> None:
    sh = shingle(["the same text here", "the same text here", "zzzzzzzzqqqqqqqq"], "char", 4)
    sig = signatures(sh, 128)
    est = estimated_jaccard(sig, np.array([[0, 1], [0, 2]]))
    assert est[0] == 1.0 and est[1] < 0.1


def _grams(t: str, kind: str, k: int) -> set:
    """The shingle set as plain Python computes it (the reference for the vectorised code)."""
    if kind == "char":
        return {t[p : p + k] for p in range(max(len(t) - k + 1, 1))} if t else set()
    w = re.findall(r"\w+", t)
    return {tuple(w[p : p + k]) for p in range(max(len(w) - k + 1, 1))} if w else set()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="ab c", max_size=30), min_size=2, max_size=12),
    st.sampled_from(["char", "word"]),
    st.integers(1, 4),
    st.data(),
)
def test_exact_jaccard_equals_python_sets(batch, kind, k, data) -> None:
    """The vectorised exact Jaccard of any pairs (repeated, both orders, empty and short texts,
    duplicated shingles) equals |A & B| / |A | B| over Python sets of the same shingles (0 when
    both are empty). A small alphabet makes overlaps, repeats and identical texts common."""
    n = len(batch)
    pairs = np.array(
        data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1)),
        dtype=np.int64,
    )
    got = exact_jaccard(pl.Series(batch), pairs, kind, k)
    sets = [_grams(t, kind, k) for t in batch]
    for (i, j), x in zip(pairs.tolist(), got.tolist(), strict=True):
        union = len(sets[i] | sets[j])
        assert x == (len(sets[i] & sets[j]) / union if union else 0.0)


def test_banding_is_datasketchs() -> None:
    """Fed datasketch's own signatures, ``candidate_pairs`` returns exactly the pairs
    ``MinHashLSH`` returns with the same bands and rows: a difference in candidate counts
    between the tools comes from the signatures (their hash functions), not the banding."""
    datasketch = pytest.importorskip("datasketch")
    docs, _ = _corpus(600, 5)
    sets = [[" ".join(g).encode() for g in _grams(d, "word", 2)] for d in docs]
    mhs = datasketch.MinHash.bulk(sets, num_perm=64)
    lsh = datasketch.MinHashLSH(threshold=0.5, num_perm=64)
    for i, m in enumerate(mhs):
        lsh.insert(i, m)
    theirs = {(min(i, j), max(i, j)) for i, m in enumerate(mhs) for j in lsh.query(m) if i != j}
    b, r = lsh_params(0.5, 64)
    sig = np.array([m.hashvalues for m in mhs], dtype=np.uint64).astype(np.uint32)
    ours = {tuple(p) for p in candidate_pairs(sig, b, r).tolist()}
    assert len(theirs) >= 60
    assert ours == theirs


def test_lsh_params_match_datasketch() -> None:
    lsh = pytest.importorskip("datasketch.lsh")
    for threshold in (0.3, 0.5, 0.7, 0.8, 0.9):
        for perm in (32, 128, 256):
            assert lsh_params(threshold, perm) == lsh._optimal_param(threshold, perm, 0.5, 0.5)


def test_recall_params_find_pairs_at_the_threshold() -> None:
    """Pairs whose Jaccard is just above the threshold (0.80-0.82): datasketch's banding
    (9 x 13 at 0.8) finds about 40 % of them, ``recall=0.99`` (16 x 6) 99 % — measured on 1,000
    planted pairs of 100-word sets (word 1-grams, one in 11 words replaced: 89/111 = 0.802)."""
    rng = random.Random(11)
    docs: list[str] = []
    for _ in range(1000):
        words = rng.sample(range(10**7), 100)
        copy = words[:89] + rng.sample(range(10**7, 2 * 10**7), 11)
        docs += [" ".join(map(str, words)), " ".join(map(str, copy))]
    planted = {(i, i + 1) for i in range(0, len(docs), 2)}

    def share(**kw: float) -> float:
        found = near_duplicates(docs, threshold=0.8, shingles="word:1", **kw)
        assert found["exact"].min() >= 0.8
        return len(planted & set(found.select("i", "j").iter_rows())) / len(planted)

    assert recall_params(0.8, 128, 0.99) == (16, 6)
    b, r = recall_params(0.8, 128, 0.99)
    assert 1 - (1 - 0.8**r) ** b >= 0.99
    assert share(recall=0.99) >= 0.97
    assert share() < 0.6  # the default: the reason the recall option exists


def _corpus(n: int, seed: int) -> tuple[list[str], list[tuple[int, int]]]:
    """Random word texts and near-copies of some (one word changed in 25+ words)."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)]
    docs = [" ".join(rng.choices(vocab, k=rng.randrange(25, 40))) for _ in range(n)]
    planted = []
    for i in rng.sample(range(n), n // 10):
        words = docs[i].split()
        words[rng.randrange(len(words))] = rng.choice(vocab)
        planted.append((i, len(docs)))
        docs.append(" ".join(words))
    return docs, planted


@pytest.mark.parametrize("method", ["oph", "minhash"])
def test_recall_on_planted_pairs(method: str) -> None:
    """Every planted near-copy at Jaccard >= 0.8 (word 2-grams) is found, with its exact
    value; nothing below the threshold is reported."""
    docs, planted = _corpus(2000, 3)
    found = near_duplicates(docs, threshold=0.6, shingles="word:2", method=method)
    got = {(i, j): x for i, j, x in found.select("i", "j", "exact").iter_rows()}
    sets = [{tuple(d.split()[p : p + 2]) for p in range(len(d.split()) - 1)} for d in docs]
    truth = [(i, j) for i, j in planted if len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= 0.8]
    assert len(truth) >= 150
    missed = [p for p in truth if p not in got]
    assert len(missed) <= len(truth) // 100, missed
    for (i, j), x in got.items():
        assert x == pytest.approx(len(sets[i] & sets[j]) / len(sets[i] | sets[j]))
        assert x >= 0.6


def test_empty_and_short_texts() -> None:
    found = near_duplicates(["", "", "ab", "ab ", "xyz"], threshold=0.5)
    assert found.height == 0  # the empty texts match nothing; "ab" and "ab " are 1 shingle each
    found = near_duplicates(["abcd", "abcd!"], threshold=0.5, shingles="char:3")
    assert found.select("i", "j").rows() == [(0, 1)]


def test_bad_specs() -> None:
    with pytest.raises(UsageError):
        parse_shingles("chars:3")
    with pytest.raises(UsageError):
        lsh_params(0.0, 128)
    assert parse_shingles("word:3") == ("word", 3)


def test_an_oversized_bucket_is_paired_by_a_window_not_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Templated texts share a band by the thousand: a bucket of B documents makes B²/2 pairs
    (200k rows: killed for memory). Past the bound the biggest buckets pair each document with
    the WINDOW after it; the other buckets are still paired whole."""
    import curate.audits.shared.minhash as mh

    n, rows = 3_000, 2
    sig = np.arange(n * 4 * rows, dtype=np.uint32).reshape(n, 4 * rows)  # no band shared ...
    sig[:, :rows] = 7  # ... but band 0: one bucket of every document
    sig[10, rows : 2 * rows] = sig[2_000, rows : 2 * rows]  # and two far apart share band 1
    whole = n * (n - 1) // 2
    assert len(candidate_pairs(sig, 4, rows)) == whole  # under the bound: every pair
    monkeypatch.setattr(mh, "MAX_BUCKET_PAIRS", 1_000)
    pairs = {tuple(p) for p in candidate_pairs(sig, 4, rows).tolist()}
    window = {(i, j) for i in range(n) for j in range(i + 1, min(n, i + mh.WINDOW + 1))}
    assert pairs == window | {(10, 2_000)}
