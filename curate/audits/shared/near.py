"""Near-duplicates: candidate pairs of items, as "later copy of an earlier original" row pairs.

The common shape (read off deepfake's near-duplicate images and ``curate overlap
--near-duplicates``):

1. a **pair source** finds items that are alike without being equal: perceptual hashes of
   images within a Hamming distance (:func:`curate.io.media.near_duplicate_pairs`), MinHash +
   LSH over the shingles of texts with their exact Jaccard checked (:func:`similar_texts`, on
   :mod:`~curate.audits.shared.minhash`), or any other. It works on *distinct* items (a file,
   a normalised text) and says how alike each pair is (``distance``, ``exact``, ...);
2. **orientation** (:func:`later_vs_earlier`): each item stands for the rows that hold it; each
   pair of items becomes the pairs of their rows, each oriented so that ``row`` is the *later*
   copy and ``other_row`` the earlier original — later split first (the declared
   :class:`~curate.core.keys.Keys` split order: train < validation < test; a row without a
   known split counts as earliest), then later row. That is the copy a finding is about: a
   test image that is a near-copy of a training image, not the other way round.

The families keep their rule codes, messages and the choice of which oriented pairs matter
(train → evaluation is a leak, validation → test a warning, one split a duplicate); a text key
a family declares (``Keys(text=True, normalise=...)``) gets the whole route from
:func:`near_copies`.

May import: ``curate.core`` (and ``curate.io``); nothing family-specific.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from curate.audits.shared.duplicates import split_rank
from curate.audits.shared.minhash import near_duplicates
from curate.core.keys import Keys

__all__ = ["later_vs_earlier", "near_copies", "similar_texts"]


def later_vs_earlier(
    pairs: pl.DataFrame,
    rows: pl.DataFrame,
    on: str,
    keys: Keys,
    *,
    carry: Sequence[str] = (),
) -> pl.DataFrame:
    """The row pairs behind item pairs, each oriented later copy vs earlier original.

    ``pairs`` names two items by ``<on>_a`` and ``<on>_b`` (any other column, a distance or a
    similarity, is the pair's and kept); ``rows`` holds ``row``, ``on`` (the item a row holds:
    a file, a text) and, when ``keys`` has one, the split column; an item held by several rows
    pairs each of them. Returns ``row``, the ``carry`` columns of the later row, ``other_row``
    and ``other_<c>`` for each ``carry`` column of the earlier one, then the pair's columns:
    first the pairs whose ``b`` side is the later, then the others (a row never pairs with
    itself). Later means a later split in ``keys.order`` (no split, or one not in the order:
    earliest), then a larger ``row``."""
    ends = (f"{on}_a", f"{on}_b")
    measures = [c for c in pairs.columns if c not in ends]
    if keys.split is not None:
        rank = split_rank(pl.col(keys.split), rows.schema[keys.split], keys.order)
    else:
        rank = pl.lit(None, pl.Int64)
    cols = list(dict.fromkeys(["row", on, *carry]))
    side = rows.select(*cols, rank.fill_null(-1).alias("__rank"))
    joined = (
        pairs.join(side.rename({c: f"{c}_a" for c in side.columns}), on=ends[0])
        .join(side.rename({c: f"{c}_b" for c in side.columns}), on=ends[1])
        .filter(pl.col("row_a") != pl.col("row_b"))
    )
    b_later = (pl.col("__rank_b") > pl.col("__rank_a")) | (
        (pl.col("__rank_b") == pl.col("__rank_a")) & (pl.col("row_b") > pl.col("row_a"))
    )

    def oriented(late: str, early: str) -> list[pl.Expr]:
        return [
            pl.col(f"row_{late}").alias("row"),
            *[pl.col(f"{c}_{late}").alias(c) for c in carry],
            pl.col(f"row_{early}").alias("other_row"),
            *[pl.col(f"{c}_{early}").alias(f"other_{c}") for c in carry],
            *[pl.col(m) for m in measures],
        ]

    return pl.concat(
        [
            joined.filter(b_later).select(oriented("b", "a")),
            joined.filter(~b_later).select(oriented("a", "b")),
        ]
    )


def similar_texts(
    df: pl.DataFrame,
    on: str,
    *,
    threshold: float = 0.8,
    shingles: str = "char:5",
    permutations: int = 128,
    seed: int = 1,
    recall: float | None = None,
) -> pl.DataFrame:
    """The text pair source: pairs of distinct texts of ``df[on]`` (nulls left out) whose
    shingle sets have a Jaccard index of ``threshold`` or more (MinHash + LSH, each candidate's
    exact Jaccard checked: :func:`~curate.audits.shared.minhash.near_duplicates`).

    Returns ``<on>_a``, ``<on>_b`` (``a`` the text met first in ``df``), ``estimated`` and
    ``exact``, most similar first (then in the texts' order). Distinct texts only: equal ones
    are exact duplicates, the business of :mod:`~curate.audits.shared.duplicates`.
    ``recall``: the chance a pair at the threshold is found
    (:func:`~curate.audits.shared.minhash.recall_params`; default: datasketch's banding)."""
    texts = df.get_column(on).drop_nulls().unique(maintain_order=True)
    found = near_duplicates(
        texts,
        threshold=threshold,
        num_perm=permutations,
        shingles=shingles,
        seed=seed,
        recall=recall,
    )
    i = found["i"].to_numpy().astype(np.int64)
    j = found["j"].to_numpy().astype(np.int64)
    return pl.DataFrame(
        [
            texts.gather(i).alias(f"{on}_a"),
            texts.gather(j).alias(f"{on}_b"),
            found["estimated"],
            found["exact"],
        ]
    )


def near_copies(
    df: pl.DataFrame,
    keys: Keys,
    *,
    threshold: float = 0.8,
    shingles: str = "char:5",
    permutations: int = 128,
    carry: Sequence[str] = (),
    recall: float | None = None,
) -> pl.DataFrame:
    """Near-duplicate texts as ``keys`` declares them: the rows of ``df`` (``row``, the key's
    text column ``keys.columns[0]``, its split) whose text, in the key's normal form
    (``keys.normalise``), is near another row's (:func:`similar_texts`), oriented later copy
    vs earlier original (:func:`later_vs_earlier`), with ``estimated`` and ``exact``.

    What a family that declares a text key gets without writing a rule's join: it picks the
    oriented pairs that matter (across splits, within one) and words the finding."""
    assert keys.text, f"key {keys.name!r} is not declared as text"
    column = keys.columns[0]
    normal = df.with_columns(keys.normalised(pl.col(column)).alias("__text")).filter(
        pl.col("__text").is_not_null() & (pl.col("__text") != "")
    )
    pairs = similar_texts(
        normal,
        "__text",
        threshold=threshold,
        shingles=shingles,
        permutations=permutations,
        recall=recall,
    )
    return later_vs_earlier(pairs, normal, "__text", keys, carry=carry)
