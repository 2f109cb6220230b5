"""Conflicting labels: records equal on a key whose labels disagree, one implementation.

The common shape (read off deepfake's content-label conflict, DF305, and glycan's conflicting
labels, GL302): two rows that are the same thing by a declared key (a content hash, a glycan's
canonical key; :class:`~curate.core.keys.Keys`) and carry different labels. At most one label
is right, no model can score 100 % on both, and a majority vote says which label most rows
hold. :func:`label_conflicts` finds every row of such a key in one group-by (never a loop over
pairs) with what a finding needs: how many labels the key has, how many rows hold each, and
the key's majority label.

The families keep their codes, messages and details; which column is the label (an Enum
``real``/``fake``, a set of taxonomy levels coded as one integer) is theirs.

May import: ``curate.core`` (and ``curate.io``); nothing family-specific.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

__all__ = ["label_conflicts"]


def label_conflicts(
    df: pl.DataFrame,
    by: str | Sequence[str],
    label: str,
    *aggs: pl.Expr,
    shown: str | None = None,
) -> pl.DataFrame:
    """Rows of ``df`` (with ``row``) whose ``by`` key carries more than one distinct non-null
    ``label``, sorted by ``row``; rows without a key (a null in ``by``) take no part, rows of a
    conflicting key without a label are kept (they are in the conflict's group too).

    Added columns, over the key's *labelled* rows: ``n_labels`` (distinct labels), ``labels``
    (one ``{shown: value, len: rows}`` struct per distinct ``shown`` value, default the label
    itself, in value order), ``majority`` (the ``shown`` value most rows hold, the first in
    value order on a tie) and each of ``aggs``. ``shown`` names what a finding prints where the
    label compared is a code (glycan labels compare by an integer id, print as text)."""
    keys = [by] if isinstance(by, str) else list(by)
    shown = shown or label
    keyed = df.drop_nulls(keys)
    labelled = keyed.filter(pl.col(label).is_not_null())
    counts = (
        labelled.group_by(keys)
        .agg(pl.col(label).n_unique().alias("n_labels"), *aggs)
        .filter(pl.col("n_labels") > 1)
    )
    # every row of a conflicting key (one join over the table); the counts per label come from
    # those few rows, not from a second pass over the whole table
    hits = keyed.join(counts, on=keys)
    per_label = (
        hits.filter(pl.col(label).is_not_null())
        .group_by(*keys, shown)
        .len()
        .group_by(keys)
        .agg(
            pl.struct(shown, "len").sort_by(shown).alias("labels"),
            pl.col(shown)
            .sort_by(["len", shown], descending=[True, False])
            .first()
            .alias("majority"),
        )
    )
    return hits.join(per_label, on=keys).sort("row")
