"""Regrouping splits so that every group sits in one split: the leak fix of every family.

Read off glycan's re-split (GL4xx), where a glycan whose rows span train and test moves whole;
the ``table`` family's leak fix (TB405) regroups by its declared key or group the same way. One
implementation, so a seed gives the same regrouping whichever family asks.

May import: ``curate.core``; nothing family-specific.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import orjson
import polars as pl

__all__ = ["move_edits", "regroup_split"]


def regroup_split(
    keys: pl.Series,
    current: pl.Series,
    *,
    seed: int = 0,
    proportions: dict[str, float] | None = None,
    settled: Mapping[str, int] | None = None,
) -> pl.Series:
    """A new split per row such that rows with the same key share one split.

    Moves as few rows as it can: a key whose rows all sit in one split stays there. Keys whose
    rows span splits (the leaks) or have no split are shuffled with ``random.Random(seed)`` (from
    their sorted order, so input row order does not matter) and each goes, whole, to the split
    furthest below its target share. Targets are the current proportions (80/10/10 when there is
    no split). Rows without a key (unparseable glycans) form a group of their own.

    ``settled``: rows left out of ``keys`` because each is the only row of its key and has a
    split, counted per split (they stay, and fill their split's share): the same result as
    passing them, for a caller that knows which keys repeat (the table family's hashes of 10 M
    keys, of which a few repeat) and need not group the rest.
    """
    settled = dict(settled or {})
    n = keys.len() + sum(settled.values())
    known = current.drop_nulls()
    if proportions is None:
        counts = dict(settled)
        for s, c in known.value_counts().iter_rows():
            counts[s] = counts.get(s, 0) + c
        total = sum(counts.values())
        if total:
            proportions = {s: c / total for s, c in counts.items()}
        else:
            proportions = {"train": 0.8, "validation": 0.1, "test": 0.1}
    order_of = {"train": 0, "validation": 1, "test": 2}
    names = sorted(proportions, key=lambda s: (order_of.get(s, 9), s))
    # grouped by the key as it is (a 64-bit hash stays an integer: formatting 10 M of them as
    # text and grouping and joining the text cost 12 s); a row without a key is a group of its
    # own, named as before ("\x00row<i>"), and only the loose groups' names are formatted
    frame = pl.DataFrame({"g": keys, "s": current.cast(pl.String)}).with_row_index("i")
    keyless = frame.filter(pl.col("g").is_null()).select(
        pl.format("\x00row{}", "i").alias("name"), "s", pl.lit(1, pl.UInt32).alias("n")
    )
    groups = (
        frame.filter(pl.col("g").is_not_null())
        .group_by("g")
        .agg(
            pl.len().alias("n"),
            pl.col("s").drop_nulls().n_unique().alias("n_splits"),
            pl.col("s").drop_nulls().first().alias("first"),
            pl.col("s").null_count().alias("nulls"),
        )
        .with_columns(
            (
                (pl.col("n_splits") == 1) & (pl.col("nulls") == 0) & pl.col("first").is_in(names)
            ).alias("stays")
        )
    )
    # a key whose rows all sit in one known split stays there (columnar: no Python per group)
    filled = dict.fromkeys(names, 0) | {s: c for s, c in settled.items() if s in names}
    kept = pl.concat(
        [
            groups.filter("stays").select(pl.col("first").alias("t"), "n"),
            keyless.filter(pl.col("s").is_in(names)).select(pl.col("s").alias("t"), "n"),
        ]
    )
    for split, size in kept.group_by("t").agg(pl.col("n").sum()).iter_rows():
        filled[split] += size
    # the loose keys (leaks, keys without a split) in the sorted order of their names, then
    # shuffled: Python only for them, so a table of millions with a few leaks costs one group-by
    loose_keys = groups.filter(~pl.col("stays")).select(
        "g", pl.col("g").cast(pl.String).alias("name"), "n"
    )
    loose = pl.concat(
        [
            loose_keys.select("name", "n"),
            keyless.filter(~pl.col("s").is_in(names).fill_null(False)).select("name", "n"),
        ]
    ).sort("name")
    order = list(loose.iter_rows())
    random.Random(seed).shuffle(order)
    target = {s: proportions[s] * n for s in names}
    assign: dict[str, str] = {}
    for g, size in order:
        best = max(
            names,
            key=lambda s: ((target[s] - filled[s]) / max(target[s], 1e-9), -order_of.get(s, 9)),
        )
        assign[g] = best
        filled[best] += size
    moved = pl.DataFrame(
        {"name": list(assign), "t": list(assign.values())},
        schema={"name": pl.String, "t": pl.String},
    )
    # a row keeps its split unless its group moved: only the loose groups are joined back
    by_key = loose_keys.join(moved, on="name").select("g", pl.col("t").alias("tk"))
    by_row = keyless.join(moved, on="name").select("name", pl.col("t").alias("tr"))
    out = frame.join(by_key, on="g", how="left", maintain_order="left")
    if by_row.height:
        out = out.with_columns(pl.format("\x00row{}", "i").alias("name")).join(
            by_row, on="name", how="left", maintain_order="left"
        )
    else:
        out = out.with_columns(pl.lit(None, pl.String).alias("tr"))
    return out.select(pl.coalesce("tk", "tr", "s").alias("t"))["t"]


def move_edits(hits: pl.DataFrame, placed: pl.DataFrame, reason: str) -> list[str | None]:
    """The fix engine's ``move`` edit of each leak finding (``hits``: ``row``, ``unit``,
    ``split``, in the findings' order), given every row's ``target`` split (``placed``:
    ``row``, ``unit``, ``split``, ``target``, from :func:`regroup_split`): the finding's row
    and, with it, every other row of its unit not yet in the target (the training rows of a
    glycan or a group sent to test are no findings, but must move too). Every finding of a
    unit states the whole unit, so whichever is applied first moves it; None where nothing
    moves. A row without a split is in train, for the fix engine and when published."""
    placed = placed.with_columns(pl.col("split").fill_null("train").alias("s"))
    movers = (
        placed.filter(pl.col("s") != pl.col("target"))
        .join(hits.select("unit").unique(), on="unit", how="semi")
        .group_by("unit")
        .agg(pl.col("row").alias("m_rows"), pl.col("s").alias("m_splits"))
    )
    info = (
        hits.select("row", "unit", "split")
        .join(placed.select("row", "target"), on="row", how="left", maintain_order="left")
        .join(movers, on="unit", how="left", maintain_order="left")
    )
    out: list[str | None] = []
    for row, _, split, new, m_rows, m_splits in info.iter_rows():
        others = [[r, s] for r, s in zip(m_rows or (), m_splits or (), strict=True) if r != row]
        if new is None or (split == new and not others):
            out.append(None)
            continue
        edit = {"op": "move", "old": split, "new": new, "with": others, "reason": reason}
        out.append(orjson.dumps(edit).decode())
    return out
