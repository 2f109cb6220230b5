"""Near-duplicate texts: shingles, MinHash signatures, LSH banding, exact Jaccard of candidates.

Exact key overlap (:mod:`curate.overlap.sets`) misses a test question that is a train question with
one word changed. The standard remedy is MinHash (each text a set of shingles; the share of
equal signature entries estimates the Jaccard index) with locality-sensitive hashing (signatures
cut into ``b`` bands of ``r`` rows; texts that agree on a whole band become candidate pairs), and
every candidate is then checked against its exact Jaccard index, so a reported pair is never a
hash accident.

Why everything here works on all documents at once: the usual tools (``datasketch``) hash each
shingle in Python and build one signature per document in a Python loop; on 100k short texts
that loop *is* the run time. Here the texts become one array of token codes, the k-gram hashes
are ``k`` vector operations over that array, the signatures come from one hash per shingle, the
bands are grouped by a polars join, and the exact Jaccard of all candidates is one polars
``list.set_intersection`` over a table of pairs — no per-document, per-pair or per-permutation
Python loop over the data.

Signatures: ``method="oph"`` (default) is *one-permutation hashing* (Li, Owen & Zhang, NIPS
2012) with *optimal densification* (Shrivastava, ICML 2017): one hash per shingle picks a bin
(of ``num_perm``) and a value; a document's signature entry for a bin is the least value that
falls in it; an empty bin copies the entry of another bin chosen by a fixed pseudo-random
sequence that depends only on the bin — the same sequence for every document, which is what
keeps two documents' entries equal with probability exactly their Jaccard index. Cost: one
pass over the shingles instead of ``num_perm``. ``method="minhash"`` is the classic
``num_perm`` independent hash functions (``num_perm`` passes, vectorised per block of
permutations), kept for comparison and for users who want the textbook estimator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from curate.core.errors import UsageError

__all__ = [
    "Shingles",
    "candidate_pairs",
    "exact_jaccard",
    "lsh_params",
    "near_duplicates",
    "parse_shingles",
    "recall_params",
    "shingle",
    "signatures",
    "sketch",
]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_P = np.uint64(0x100000001B3)  # FNV prime: multiplier of the k-gram polynomial
#: Above every (31-bit) signature value: "no shingle in this bin".
_EMPTY = np.uint32(0xFFFFFFFF)
#: Tokens per block of texts sketched at once: the temporaries of one block (a few MB each) are
#: reused by the allocator from block to block instead of being faulted in afresh — on a
#: virtual machine, page faults on fresh arrays cost more than the arithmetic.
BLOCK_TOKENS = 1 << 18
_MASK = (1 << 64) - 1


def _u64(x: int) -> np.uint64:
    """A Python integer wrapped to 64 bits (numpy scalars warn on overflow; arrays do not)."""
    return np.uint64(x & _MASK)  # above every 32-bit signature value: "no shingle in this bin"


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise (uint64 in, uint64 out, wrapping arithmetic): every
    output bit depends on every input bit, so bins and values taken from one hash are
    independent enough for MinHash."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


@dataclass(frozen=True)
class Shingles:
    """All shingles of ``n_docs`` texts: ``doc`` (sorted) and ``hash`` (uint64) per shingle.

    ``empty`` marks texts with no token at all (they can match nothing)."""

    doc: np.ndarray
    hash: np.ndarray
    n_docs: int

    @property
    def empty(self) -> np.ndarray:
        return np.bincount(self.doc, minlength=self.n_docs) == 0


def parse_shingles(spec: str) -> tuple[str, int]:
    """``"char:5"`` or ``"word:2"`` → (kind, k); a usage error names the forms."""
    kind, _, k = spec.partition(":")
    if kind not in ("char", "word") or not k.isdigit() or int(k) < 1:
        raise UsageError(
            f"--shingles {spec!r}: use char:K (character K-grams) or word:N (word N-grams)"
        )
    return kind, int(k)


def _tokens(texts: pl.Series, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Token codes of all texts in one array, and each text's token count.

    Characters are their code points (one UTF-32 encode of the joined texts); words are runs
    of letters, digits and underscores, hashed by polars — both without a per-text loop.
    """
    texts = texts.cast(pl.String).fill_null("")
    if kind == "char":
        lens = texts.str.len_chars().to_numpy().astype(np.int64)
        joined = "".join(texts.to_list())
        codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        return codes + np.uint64(1), lens
    words = texts.str.extract_all(r"\w+")
    lens = words.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = words.explode().drop_nulls()
    codes = flat.hash(seed=0x5EED).to_numpy().astype(np.uint64)
    return codes, lens


def shingle(texts: Sequence[str] | pl.Series, kind: str = "char", k: int = 5) -> Shingles:
    """The k-gram shingles of every text as 64-bit hashes (``kind`` ``char`` or ``word``).

    A text shorter than ``k`` tokens is one shingle (all of it), as most shingling code does:
    otherwise short texts would have none and could never match. Hashes are a polynomial over
    the tokens (``k`` shifted-slice passes over all texts at once), then mixed; token codes
    are never 0 (the padding of short texts), and two different k-grams collide with
    probability about 2⁻⁶⁴.
    """
    s = texts if isinstance(texts, pl.Series) else pl.Series("text", list(texts), dtype=pl.String)
    codes, lens = _tokens(s, kind)
    n_docs, n = len(lens), len(codes)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    # every k-gram of the concatenated tokens, by k shifted slices (no gather) ...
    if n >= k:
        poly = codes[: n - k + 1].copy()
        for j in range(1, k):
            poly *= _P
            poly += codes[j : n - k + 1 + j]
    else:
        poly = np.zeros(0, dtype=np.uint64)
    # ... of which those inside one text are the shingles; a text shorter than k is one
    per_doc = np.where(lens >= k, lens - k + 1, (lens > 0).astype(np.int64))
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), per_doc)
    first = np.zeros(n_docs, dtype=np.int64)
    if n_docs > 1:
        np.cumsum(per_doc[:-1], out=first[1:])
    starts = offsets[:-1][doc] + (np.arange(doc.size, dtype=np.int64) - first[doc])
    short = np.flatnonzero((lens > 0) & (lens < k))
    if short.size:  # few: the whole text, padded with zeros to k tokens
        h = np.zeros(doc.size, dtype=np.uint64)
        long_rows = lens[doc] >= k
        h[long_rows] = poly[starts[long_rows]]
        rows = first[short]
        acc = np.zeros(short.size, dtype=np.uint64)
        padded = np.concatenate([codes, np.zeros(k, dtype=np.uint64)])
        for j in range(k):
            idx = offsets[short] + j
            acc = acc * _P + np.where(j < lens[short], padded[idx], np.uint64(0))
        h[rows] = acc
    else:
        h = poly[starts]
    return Shingles(doc=doc, hash=_mix(h ^ np.uint64(k)), n_docs=n_docs)


def signatures(
    sh: Shingles, num_perm: int = 128, *, seed: int = 1, method: str = "oph"
) -> np.ndarray:
    """MinHash signatures, ``(n_docs, num_perm)`` uint32 with 31-bit values (see the module
    docstring for the two methods). Rows of texts without shingles are all :data:`_EMPTY`."""
    if num_perm < 1:
        raise UsageError("--permutations must be at least 1")
    hv = _mix(sh.hash ^ _mix(np.array([seed], dtype=np.uint64) + _GOLDEN)[0])
    if method == "minhash":
        return _classic(sh, hv, num_perm, seed)
    if method != "oph":
        raise UsageError(f"unknown MinHash method {method!r} (oph or minhash)")
    bins = (((hv >> np.uint64(32)) * np.uint64(num_perm)) >> np.uint64(32)).astype(np.int64)
    vals = (hv & np.uint64(0x7FFFFFFF)).astype(np.uint32)
    sig = np.full(sh.n_docs * num_perm, _EMPTY, dtype=np.uint32)
    np.minimum.at(sig, sh.doc * num_perm + bins, vals)
    return _densify(sig.reshape(sh.n_docs, num_perm), sh.empty, seed)


def _densify(sig: np.ndarray, empty_doc: np.ndarray, seed: int) -> np.ndarray:
    """Fill empty bins by optimal densification: bin ``j``'s ``t``-th try is bin
    ``h(j, t) mod K``, the same for every document; the first try that is a filled bin (filled
    by a shingle, not by densification) gives its value.

    The tries of try number ``t`` are one small table over the ``K`` bins, so each round is a
    few gathers over the cells still empty (a shrinking set), not a hash per cell.
    """
    k = sig.shape[1]
    flat = sig.ravel()
    out = sig.copy()
    out_flat = out.ravel()
    cells = np.flatnonzero(flat == _EMPTY)
    j = cells % k
    row = cells - j
    keep = ~empty_doc[row // k]
    cells, j, row = cells[keep], j[keep], row[keep]
    bins = np.arange(k, dtype=np.uint64) * _M1 + _u64(seed * int(_GOLDEN))
    t = 0
    while cells.size and t < 64 * k:
        tries = (
            (_mix(bins + _u64((t + 1) * int(_M2))) >> np.uint64(32)) * np.uint64(k)
        ) >> np.uint64(32)
        v = flat[row + tries.astype(np.int64)[j]]
        ok = v != _EMPTY
        out_flat[cells[ok]] = v[ok]
        miss = ~ok
        cells, j, row = cells[miss], j[miss], row[miss]
        t += 1
    if cells.size:  # not reached in practice ((1 - 1/K)^(64K) < e^-64); deterministic fallback
        first_filled = np.argmax(sig != _EMPTY, axis=1)
        out_flat[cells] = flat[row + first_filled[row // k]]
    return out


def _classic(sh: Shingles, hv: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """``num_perm`` multiply-shift hash functions ``(a·x + b) >> 33`` (a odd), the minimum of
    each over every document's shingles with ``np.minimum.reduceat``; permutations go in
    blocks so that one block of hashed values stays near 8 MB."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 63, num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 1 << 63, num_perm, dtype=np.uint64)
    sig = np.full((sh.n_docs, num_perm), _EMPTY, dtype=np.uint32)
    has = np.flatnonzero(~sh.empty)
    if not has.size:
        return sig
    starts = np.searchsorted(sh.doc, has)
    block = max(1, (1 << 20) // max(1, hv.size))
    for p in range(0, num_perm, block):
        q = min(num_perm, p + block)
        v = (hv[None, :] * a[p:q, None] + b[p:q, None]) >> np.uint64(33)
        sig[has, p:q] = np.minimum.reduceat(v, starts, axis=1).T
    return sig


def sketch(
    texts: pl.Series,
    kind: str = "char",
    k: int = 5,
    num_perm: int = 128,
    *,
    seed: int = 1,
    method: str = "oph",
) -> tuple[np.ndarray, np.ndarray]:
    """Signatures of all ``texts`` (and which have no shingle), block by block of about
    :data:`BLOCK_TOKENS` tokens; the shingles themselves are not kept (the exact Jaccard of
    candidates shingles their few texts again)."""
    n = texts.len()
    sig = np.empty((n, num_perm), dtype=np.uint32)
    empty = np.zeros(n, dtype=bool)
    lens = texts.cast(pl.String).fill_null("").str.len_bytes().to_numpy().astype(np.int64)
    ends = np.searchsorted(
        np.cumsum(lens), np.arange(BLOCK_TOKENS, int(lens.sum()) + BLOCK_TOKENS, BLOCK_TOKENS)
    )
    a = 0
    for e in [*np.unique(np.minimum(ends + 1, n)).tolist(), n]:
        if e <= a:
            continue
        sh = shingle(texts.slice(a, e - a), kind, k)
        sig[a:e] = signatures(sh, num_perm, seed=seed, method=method)
        empty[a:e] = sh.empty
        a = e
    return sig, empty


def lsh_params(
    threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5
) -> tuple[int, int]:
    """Bands ``b`` and rows ``r`` (``b·r ≤ num_perm``) for a Jaccard ``threshold``, chosen as
    datasketch's ``MinHashLSH`` chooses them: minimise the weighted areas of false positives
    (∫₀ᵗ P(candidate | s) ds) and false negatives (∫ₜ¹ P(not candidate | s) ds), with
    P(candidate | s) = 1 − (1 − sʳ)ᵇ. The integrals are evaluated for all (b, r) at once on a
    fine grid (Simpson's rule), not one quadrature per pair."""
    if not 0.0 < threshold <= 1.0:
        raise UsageError(f"--threshold must be in (0, 1], not {threshold}")
    pairs = np.array(
        [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)],
        dtype=np.float64,
    )
    b, r = pairs[:, :1], pairs[:, 1:]

    def simpson(lo: float, hi: float, f: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        n = 512
        s = np.linspace(lo, hi, n + 1)[None, :]
        y = f(s)
        w = np.ones(n + 1)
        w[1:-1:2], w[2:-1:2] = 4, 2
        return (y * w).sum(axis=1) * (hi - lo) / (3 * n)

    fp = simpson(0.0, threshold, lambda s: 1 - (1 - s**r) ** b)
    fn = simpson(threshold, 1.0, lambda s: (1 - s**r) ** b)
    err = fp * fp_weight + fn * fn_weight
    best = int(np.argmin(err))  # first minimum, in datasketch's (b, r) order
    return int(pairs[best, 0]), int(pairs[best, 1])


def recall_params(threshold: float, num_perm: int, recall: float) -> tuple[int, int]:
    """Bands ``b`` and rows ``r`` (``b·r ≤ num_perm``) under which a pair *at* the Jaccard
    ``threshold`` becomes a candidate with probability ``recall`` or more, the cheapest such
    (least false-positive area ∫₀ᵗ P(candidate | s) ds); if none reaches it, the likeliest.

    Why beside :func:`lsh_params`: datasketch's choice weighs misses and false positives
    alike, which at 0.8 with 128 permutations (9 bands × 13 rows) makes a pair at the
    threshold a candidate only 40 % of the time (69 % at 0.85). Where every candidate's exact
    Jaccard is checked anyway (:func:`near_duplicates`), a false positive costs one check and
    a miss is a wrong answer, so a rule that promises "Jaccard ≥ t" asks for its recall here
    (0.99 at 0.8 with 128 permutations: 16 bands × 6 rows)."""
    if not 0.0 < threshold <= 1.0:
        raise UsageError(f"--threshold must be in (0, 1], not {threshold}")
    pairs = np.array(
        [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)],
        dtype=np.float64,
    )
    b, r = pairs[:, 0], pairs[:, 1]
    at = 1 - (1 - threshold**r) ** b
    s = np.linspace(0.0, threshold, 513)[None, :]
    fp = np.trapezoid(1 - (1 - s ** r[:, None]) ** b[:, None], s, axis=1)
    ok = at >= recall
    best = int(np.argmin(np.where(ok, fp, np.inf))) if ok.any() else int(np.argmax(at))
    return int(pairs[best, 0]), int(pairs[best, 1])


def candidate_pairs(
    sig: np.ndarray, bands: int, rows: int, skip: np.ndarray | None = None
) -> np.ndarray:
    """Pairs ``(i, j)``, ``i < j``, of documents equal on at least one band (``(m, 2)`` int64).

    Each band's ``rows`` entries are folded into one 64-bit key; documents sharing a (band,
    key) bucket are joined pairwise by polars. ``skip`` marks documents that take no part
    (texts without shingles, whose signature is all "empty"). Fed datasketch's signatures this
    returns exactly ``MinHashLSH``'s pairs (tests/test_minhash.py); on templated texts the
    *number* of candidates moves by tens of percent with the hash seed, in both tools, because
    one band whose rows all land on a template's shingles pairs that template's texts by the
    thousand (``bench/bench_overlap.py --seed-spread``).
    """
    n_docs = sig.shape[0]
    keep = np.arange(n_docs) if skip is None else np.flatnonzero(~skip)
    frames = []
    for band in range(bands):
        block = sig[keep, band * rows : (band + 1) * rows]
        key = np.full(keep.size, _u64((band + 1) * int(_GOLDEN)), dtype=np.uint64)
        for c in range(rows):
            key = _mix(key ^ block[:, c].astype(np.uint64))
        frames.append(
            pl.DataFrame(
                {"band": np.full(keep.size, band, dtype=np.int32), "key": key, "doc": keep}
            )
        )
    if not frames or not keep.size:
        return np.zeros((0, 2), dtype=np.int64)
    buckets = pl.concat(frames)
    # only buckets with two or more documents can give a pair
    buckets = buckets.with_columns(pl.len().over("band", "key").alias("size")).filter(
        pl.col("size") > 1
    )
    big = _oversized(buckets)
    whole = (buckets if big is None else buckets.filter(pl.col("size") <= big)).drop("size")
    parts = [
        whole.join(whole, on=["band", "key"], suffix="_r")
        .filter(pl.col("doc") < pl.col("doc_r"))
        .select("doc", "doc_r")
    ]
    if big is not None:
        # each document of an oversized bucket with the WINDOW after it, in document order
        over = buckets.filter(pl.col("size") > big).sort("band", "key", "doc")
        parts += [
            over.select(
                "doc", pl.col("doc").shift(-s).over("band", "key").alias("doc_r")
            ).drop_nulls()
            for s in range(1, WINDOW + 1)
        ]
    pairs = pl.concat(parts).unique().sort("doc", "doc_r")
    return pairs.to_numpy().astype(np.int64).reshape(-1, 2)


#: At most about this many candidate pairs come from pairing whole buckets (the rows of the
#: self-join, before duplicates across bands are dropped): a few hundred MB.
MAX_BUCKET_PAIRS = 10_000_000
#: How many documents after it each document of an oversized bucket is paired with.
WINDOW = 16


def _oversized(buckets: pl.DataFrame) -> int | None:
    """The largest bucket size still paired whole, when pairing every bucket whole would make
    more than :data:`MAX_BUCKET_PAIRS` pairs; ``None`` when it would not.

    Why a bound: a bucket of ``B`` documents makes ``B²/2`` pairs. Templated texts (``text
    number 123 foo``) put most documents of a band in one bucket: 200k rows asked for
    billions of pairs and were killed for memory (24 GB) where a bound keeps it linear. The
    biggest buckets are paired by a window instead (each document with the
    :data:`WINDOW` after it), so a near copy in such a bucket is found when it lies within
    the window in the file (a template's rows, written together, usually do), or through
    another band; beyond, recall is lower there, never the memory unbounded.
    """
    sizes = buckets.group_by("band", "key").agg(pl.first("size")).get_column("size")
    pairs = sizes * (sizes - 1) // 2
    if int(pairs.sum() or 0) <= MAX_BUCKET_PAIRS:
        return None
    by_size = (
        pl.DataFrame({"size": sizes, "pairs": pairs})
        .group_by("size")
        .agg(pl.sum("pairs"))
        .sort("size")
    )
    fits = by_size.filter(pl.col("pairs").cum_sum() <= MAX_BUCKET_PAIRS)
    return int(fits["size"].to_numpy().max()) if fits.height else 1


def exact_jaccard(
    texts: pl.Series, pairs: np.ndarray, kind: str = "char", k: int = 5
) -> np.ndarray:
    """The exact Jaccard index of each pair's shingle sets, for all pairs at once.

    Why not a loop over pairs: a candidate list holds hundreds of thousands of pairs, and a
    Python set intersection per pair, plus building the sets, costs more than the sketch
    itself. Why not one global join or hash set of ``(text, shingle)`` keys: with ~80 shingles
    a text, 300k pairs are ~24M probes into a table of millions of keys — every probe a cache
    miss. Here the texts in some pair are shingled again (one vectorised pass), grouped into
    one list of shingle hashes per text, and polars' ``list.set_intersection`` intersects the
    two lists of every pair in Rust: each pair's small hash set stays in cache, and the pairs
    are spread over the cores. Set sizes are ``list.n_unique``.
    """
    if not len(pairs):
        return np.zeros(0, dtype=np.float64)
    wanted = np.unique(pairs)
    sh = shingle(texts.gather(wanted), kind, k)
    # one list per wanted text, in ``wanted`` order (texts without a token get an empty list)
    lists = (
        pl.DataFrame({"doc": np.arange(wanted.size, dtype=np.int64)})
        .join(
            pl.DataFrame({"doc": sh.doc, "h": sh.hash}).group_by("doc").agg("h"),
            on="doc",
            how="left",
        )
        .sort("doc")
        .select(pl.col("h").fill_null([]))
        .with_columns(size=pl.col("h").list.n_unique())
    )
    idx = pl.DataFrame(
        {"i": np.searchsorted(wanted, pairs[:, 0]), "j": np.searchsorted(wanted, pairs[:, 1])}
    )
    out = (
        idx.lazy()
        .select(
            a=pl.lit(lists["h"]).gather(pl.col("i")),
            b=pl.lit(lists["h"]).gather(pl.col("j")),
            n=pl.lit(lists["size"]).gather(pl.col("i")) + pl.lit(lists["size"]).gather(pl.col("j")),
        )
        .select(both=pl.col("a").list.set_intersection("b").list.len(), n=pl.col("n"))
        .collect()
    )
    both = out["both"].to_numpy().astype(np.float64)
    union = out["n"].to_numpy() - both
    return np.divide(both, union, out=np.zeros(len(pairs)), where=union > 0)


def estimated_jaccard(sig: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Share of equal signature entries for each pair (the MinHash estimate)."""
    if not len(pairs):
        return np.zeros(0, dtype=np.float64)
    out = np.empty(len(pairs), dtype=np.float64)
    step = max(1, (1 << 22) // sig.shape[1])
    for a in range(0, len(pairs), step):
        p = pairs[a : a + step]
        out[a : a + step] = (sig[p[:, 0]] == sig[p[:, 1]]).mean(axis=1)
    return out


def near_duplicates(
    texts: Sequence[str] | pl.Series,
    *,
    threshold: float = 0.8,
    num_perm: int = 128,
    shingles: str = "char:5",
    seed: int = 1,
    method: str = "oph",
    verified_only: bool = True,
    recall: float | None = None,
) -> pl.DataFrame:
    """Pairs of texts whose shingle sets have a Jaccard index of about ``threshold`` or more.

    Returns ``i, j`` (positions in ``texts``, ``i < j``), ``estimated`` (MinHash) and ``exact``
    (over the shingle sets), sorted by ``exact`` descending. With ``verified_only`` (default)
    only candidates whose exact Jaccard reaches the threshold are kept: LSH candidates below it
    are false positives of the banding, reported by nobody (those whose estimate is already
    far below, :func:`verify_margin`, are not checked exactly). Without it every candidate is
    returned with both figures. ``b`` and ``r`` follow from the
    threshold (:func:`lsh_params`, datasketch's choice), so recall is high but not guaranteed
    near the threshold; ``recall`` asks instead for bands that make a pair at the threshold a
    candidate with that probability (:func:`recall_params`: more candidates, all checked).
    """
    kind, k = parse_shingles(shingles)
    s = texts if isinstance(texts, pl.Series) else pl.Series("text", list(texts), dtype=pl.String)
    if recall is None:
        b, r = lsh_params(threshold, num_perm)
    else:
        b, r = recall_params(threshold, num_perm, recall)
    sig, empty = sketch(s, kind, k, num_perm, seed=seed, method=method)
    pairs = candidate_pairs(sig, b, r, skip=empty)
    est = estimated_jaccard(sig, pairs)
    if verified_only:  # far below the threshold by the estimate: not worth an exact check
        near = est >= threshold - verify_margin(threshold, num_perm)
        pairs, est = pairs[near], est[near]
    exact = exact_jaccard(s, pairs, kind, k)
    df = pl.DataFrame(
        {"i": pairs[:, 0], "j": pairs[:, 1], "estimated": est, "exact": exact},
        schema={"i": pl.Int64, "j": pl.Int64, "estimated": pl.Float64, "exact": pl.Float64},
    )
    if verified_only:
        df = df.filter(pl.col("exact") >= threshold - 1e-12)
    return df.sort(["exact", "i", "j"], descending=[True, False, False])


def verify_margin(threshold: float, num_perm: int) -> float:
    """How far below the threshold a candidate's *estimate* may be and still get its exact
    Jaccard computed: three standard deviations of the estimator at the threshold
    (√(t(1−t)/K)), at least 0.05. A pair exactly at the threshold is then skipped with
    probability about 0.1 % (less the higher it is); the many candidates LSH makes between
    merely similar texts (templated questions at J ≈ 0.6) cost no exact check."""
    return max(0.05, 3 * (threshold * (1 - threshold) / num_perm) ** 0.5)


def bands_rows(threshold: float, num_perm: int) -> str:
    """``"b=… bands × r=… rows"`` for messages."""
    b, r = lsh_params(threshold, num_perm)
    return f"{b} bands x {r} rows (threshold {threshold:g}, {num_perm} permutations)"
