"""Exact duplicates and split leakage: one implementation for every family.

The common shape (read off the four families' duplicate and leakage rules):

1. a **key table**, one row per thing compared: ``row`` (position across the inputs, what
   "earlier" means), ``record`` (the id findings show), the split, and the key columns a
   family declares (:class:`~curate.core.keys.Keys`): glycan canonical key and labels,
   content hash, fact chain and edits, ruleset triple or history digest;
2. **groups of equal keys**: a window (``min(row) over key``) or a group-by, never a loop over
   pairs, so a million rows cost one hash group-by;
3. **findings per later copy**, each naming the first occurrence: a *duplicate* repeats an
   earlier row of its group in the same split (:func:`later_copies`,
   :func:`later_occurrences`); a *leak* is a copy in a later split than the key's first
   (:func:`cross_split_copies`: train < validation < test) or an evaluation row whose key the
   training rows (of this table or another dataset) hold (:func:`seen_in`).

The families keep their rule codes, messages, details and fixes: they build the key table,
call one of these joins, and format. What is *not* here: which columns form a key (the
family's declaration) and what a finding says.

May import: ``curate.core`` (and ``curate.io``); nothing family-specific.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from curate.core.findings import clip_expr
from curate.core.keys import SPLIT_ORDER, Keys

__all__ = [
    "cross_split_copies",
    "duplicates",
    "first_occurrences",
    "later_copies",
    "later_occurrences",
    "leaks",
    "leaks_from",
    "name_firsts",
    "repeats",
    "seen_in",
    "split_rank",
]

#: rows below 2**40 (a trillion); the split rank sits above them in one Int64
_SHIFT = 1 << 40


def _candidates(df: pl.DataFrame, prefilter: str | None) -> pl.DataFrame:
    """Rows whose ``prefilter`` value repeats (all rows when there is no prefilter column).

    Why: a 64-bit hash of a long key (see ``deepfake_tables.hash_keys``) groups several times
    faster than the key; rows with a unique hash cannot repeat a full key, so the exact
    grouping then runs on the few candidates. A precomputed ``repeated`` flag is used as is."""
    if prefilter is None or prefilter not in df.columns:
        return df
    if "repeated" in df.columns:
        return df.filter(pl.col("repeated"))
    return df.filter(pl.col(prefilter).is_duplicated())


def later_copies(
    df: pl.DataFrame, by: Sequence[str], *, prefilter: str | None = None
) -> pl.DataFrame:
    """Rows of ``df`` (with ``row``) that repeat an earlier row of their ``by`` group, with
    ``first_row`` (the earliest row of the group), in ``df``'s order.

    Nulls in ``by`` compare equal (a window groups them): filter them out first where a null
    means "no key". ``prefilter`` names a hash column to narrow the candidates (exact)."""
    df = _candidates(df, prefilter)
    return df.with_columns(pl.col("row").min().over(list(by)).alias("first_row")).filter(
        pl.col("row") != pl.col("first_row")
    )


def name_firsts(
    hits: pl.DataFrame, records: pl.DataFrame, *, extra: Sequence[str] = ()
) -> pl.DataFrame:
    """``hits`` (with ``first_row``) plus ``first_record`` (the first row's ``record`` cut as
    findings show it) and ``first_<c>`` for each ``extra`` column, from ``records`` (``row``,
    ``record``, the extras); sorted by ``row``. Hits whose first row is not in ``records``
    are dropped."""
    firsts = records.select(
        pl.col("row").alias("first_row"),
        clip_expr("record", digest=True).alias("first_record"),
        *[pl.col(c).alias(f"first_{c}") for c in extra],
    )
    return hits.join(firsts, on="first_row").sort("row")


def later_occurrences(
    df: pl.DataFrame, by: Sequence[str], records: pl.DataFrame, *, extra: Sequence[str] = ()
) -> pl.DataFrame:
    """Rows of ``df`` that repeat an earlier row of their ``by`` group, each with its first
    occurrence named (:func:`later_copies` then :func:`name_firsts`): the pattern behind every
    "duplicate of an earlier record" rule, sorted by ``row``."""
    return name_firsts(later_copies(df, by), records, extra=extra)


def first_occurrences(
    df: pl.DataFrame, by: Sequence[str], *, order: Sequence[str] = ("row",), **named: str
) -> pl.DataFrame:
    """One row per key of ``df`` (a null in ``by``: no key): ``by``, ``first_row`` (the key's
    first row in ``order`` order, e.g. ``("file", "row")``: the earliest input first) and, for
    each ``alias=column``, that row's ``column``.

    One sort and one group-by, so the first row's columns come with it even where ``row``
    does not identify a row (HDF5 task groups without histories share their neighbour's)."""
    return (
        df.drop_nulls(list(by))
        .sort(list(order), maintain_order=True)
        .group_by(list(by), maintain_order=True)
        .agg(
            pl.col("row").first().alias("first_row"),
            *[pl.col(c).first().alias(a) for a, c in named.items()],
        )
    )


def repeats(df: pl.DataFrame, by: Sequence[str], **named: str) -> pl.DataFrame:
    """Rows of ``df`` that repeat an earlier row of their ``by`` group (nulls never match),
    with ``first_row`` and the first row's columns as :func:`first_occurrences` names them;
    sorted by ``row``. :func:`later_copies` for frames whose ``row`` is not unique."""
    firsts = first_occurrences(df, by, **named)
    return df.join(firsts, on=list(by)).filter(pl.col("row") != pl.col("first_row")).sort("row")


def split_rank(split: pl.Expr, dtype: pl.DataType, order: Sequence[str]) -> pl.Expr:
    """The split's position in ``order`` (null for a split not in it): what "earlier" means
    for leaks and near-copies alike. An Enum whose categories are ``order`` is its own rank
    (its physical codes): no string compared."""
    if isinstance(dtype, pl.Enum) and list(dtype.categories) == list(order):
        return split.to_physical().cast(pl.Int64)
    return (
        split.cast(pl.String)
        .replace_strict(list(order), list(range(len(order))), default=None, return_dtype=pl.Int64)
        .cast(pl.Int64)
    )


def cross_split_copies(
    df: pl.DataFrame,
    key: str | Sequence[str] = "key",
    *,
    split: str = "split",
    order: Sequence[str] = SPLIT_ORDER,
    prefilter: str | None = None,
) -> pl.DataFrame:
    """Rows whose ``key`` also occurs in an *earlier* split (``order``: train < validation <
    test), with ``first_split`` (the earliest split the key is in) and ``first_row`` (its first
    row there), sorted by ``row``.

    The leakage pattern of every split-disjointness rule: the copy in the later split is the
    one an evaluation should not have seen. Rows without a split (or with one not in
    ``order``) take no part."""
    keys = [key] if isinstance(key, str) else list(key)
    rank = split_rank(pl.col(split), df.schema[split], order)
    s = _candidates(
        df.with_columns(rank.alias("__rank")).filter(pl.col("__rank").is_not_null()), prefilter
    ).with_columns(
        # rank and row in one integer: its minimum is the first row of the earliest split
        ((pl.col("__rank") * _SHIFT) + pl.col("row")).alias("__order")
    )
    first = pl.col("__order").min().over(keys)
    hits = s.with_columns(first.alias("__first")).filter(
        (pl.col("__order") // _SHIFT) > (pl.col("__first") // _SHIFT)
    )
    names = pl.Series(list(order), dtype=pl.String)
    return (
        hits.with_columns(
            (pl.col("__first") % _SHIFT).alias("first_row"),
            (pl.col("__first") // _SHIFT)
            .replace_strict(list(range(len(names))), names, return_dtype=pl.String)
            .alias("first_split"),
        )
        .drop("__rank", "__order", "__first")
        .sort("row")
    )


def seen_in(
    rows: pl.DataFrame, reference: pl.DataFrame, key: str | Sequence[str], *aggs: pl.Expr
) -> pl.DataFrame:
    """Rows of ``rows`` whose ``key`` the ``reference`` rows hold, each with ``aggs`` over the
    reference rows of its key (how many, which records, which labels).

    Leakage from a *named* source: the training rows of the same table (glycan GL401/GL402)
    or of another table or dataset (GL403, ``curate overlap``). One group-by of the reference
    and one join, in ``rows``' order."""
    keys = [key] if isinstance(key, str) else list(key)
    return rows.join(reference.group_by(keys).agg(*aggs), on=keys)


def duplicates(df: pl.DataFrame, keys: Keys, *, prefilter: str | None = None) -> pl.DataFrame:
    """Exact duplicates as ``keys`` declares them: :func:`later_copies` by the key's columns
    and its split (copies within one split; across splits is :func:`leaks`)."""
    return later_copies(df, keys.within_split(), prefilter=prefilter)


def leaks_from(
    df: pl.DataFrame,
    keys: Keys,
    *aggs: pl.Expr,
    source: Sequence[str] = ("train",),
    into: Sequence[str] = ("validation", "test"),
) -> pl.DataFrame:
    """Leakage from named splits as ``keys`` declares it: the rows of the ``into`` splits
    whose groups the ``source`` splits' rows hold (:func:`seen_in`, with ``aggs`` over the
    source rows of each group). Unlike :func:`leaks`, a validation row whose key is only in
    test is no leak here: what counts is what training saw."""
    assert keys.split is not None, "a family without splits has no split leakage"
    split = pl.col(keys.split)
    return seen_in(
        df.filter(split.is_in(list(into))),
        df.filter(split.is_in(list(source))),
        keys.group_columns,
        *aggs,
    )


def leaks(df: pl.DataFrame, keys: Keys, *, prefilter: str | None = None) -> pl.DataFrame:
    """Split leakage as ``keys`` declares it: :func:`cross_split_copies` by its groups (what
    must not cross splits) over its split and order. A family without splits has none."""
    if keys.split is None:
        return df.head(0).with_columns(
            pl.lit(None, pl.Int64).alias("first_row"), pl.lit(None, pl.String).alias("first_split")
        )
    return cross_split_copies(
        df, keys.group_columns, split=keys.split, order=keys.order, prefilter=prefilter
    )
